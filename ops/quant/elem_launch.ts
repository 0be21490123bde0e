/**
 * Launches of the element-wise cast kernels (`kernels-src/cuda/quant/cast.cu`): the RN element conversion of
 * `cast` and the stochastic rounding of `stochasticCast` / `cast` with `stochasticRounding`.
 * @module
 */
import { config } from "../../core/config.ts";
import { elementBytes } from "../../core/dtype.ts";
import { type Device, type DeviceTensor, deviceEmptyStrided, deviceRuntime, type Stream, type Tensor } from "../../core/tensor.ts";
import { kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { CastParams } from "./elem.params.ts";

/**
 * Internal launch tuning of `cast` and `stochasticCast`, for A/B runs and tests (not part of the API; measured by
 * bench/cast_tuning.ts, docs/perf-notes/perf9-cast.md). Same bytes under every setting.
 * - `elemAligned`: the element conversions that have an aligned-only form (cast.cu `tk_cast__<in>_<out>[_sr]_a`: RN
 *   and SR bf16 → e4m3, fp32 → e4m3, fp32 → bf16) take it when x and out start on a chunk boundary (8 elements of
 *   each dtype), i.e. when main's kernel would take its 16-byte path anyway; every other view keeps main's kernel.
 * - `blockShaped`: the staged block cast (cast_block.cu) takes its form with the block shape compiled in
 *   (`tk_cast_block_staged__<in>_e4m3_r<R>c<C>_a`: bf16 [16, 64], fp16 [1, 128]) when every block is whole
 *   (T % R = 0, H % C = 0); otherwise `tk_cast_block_staged__*` as before.
 * Both off by default until the device A/B decides.
 */
export const castLaunchTuning = { elemAligned: false, blockShaped: false };

/** The pairs of cast.cu with an aligned-only `_a` form (RN and SR). */
const ALIGNED_FORMS: ReadonlySet<string> = new Set(["bf16_e4m3", "fp32_e4m3", "fp32_bf16"]);

const packet = new LaunchPacket(CastParams);
const W = packet.w;
const THREADS = 256;
const CHUNK = 8;

/** The stream of a device call: the caller's, else the device's default stream. */
export function streamFor(op: string, device: Device, stream: Stream | undefined): Stream {
  return stream ?? deviceRuntime(op).defaultStream(device);
}

/** A contiguous device output of `x`'s shape in `dtype` (or the caller's `out`). */
export function contiguousOut(op: string, device: Device, stream: Stream, shape: readonly number[], dtype: Tensor["dtype"], out: Tensor | null): DeviceTensor {
  if (out) return out as DeviceTensor;
  const strides = new Array<number>(shape.length);
  let n = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = n;
    n *= shape[i];
  }
  return deviceEmptyStrided(op, device, shape, strides, dtype, n, stream);
}

/** Whether the launch takes the aligned-only form (`castLaunchTuning.elemAligned`, a pair with an `_a` form, chunk-aligned x and out). */
export function alignedForm(x: Tensor, out: Tensor): boolean {
  if (!castLaunchTuning.elemAligned || !ALIGNED_FORMS.has(`${x.dtype}_${out.dtype}`)) return false;
  return (x as DeviceTensor).addr % (CHUNK * elementBytes(x.dtype)) === 0 && (out as DeviceTensor).addr % (CHUNK * elementBytes(out.dtype)) === 0;
}

/**
 * cast.cu's launch: `tk_cast__<in>_<out>` (RN) or `…_sr` with `idxBase = uint32(offset/4 + seed)`, or their `_a`
 * forms (see {@link castLaunchTuning}). grid.x = max(1, min(⌈⌈numel / 8⌉ / (256 · U)⌉, 4 · SMs)), U = 2 for fp32
 * sources, 4 otherwise. Nothing for 0 elements.
 */
export function launchElementCast(op: string, device: Device, stream: Stream, x: Tensor, out: Tensor, sr: boolean, idxBase: number): void {
  const n = x.numel;
  if (n === 0) return;
  const fn = kernelFunction(op, device, `tk_cast__${x.dtype}_${out.dtype}${sr ? "_sr" : ""}${alignedForm(x, out) ? "_a" : ""}`);
  const u = x.dtype === "fp32" ? 2 : 4;
  const grid = Math.max(1, Math.min(Math.ceil(Math.ceil(n / CHUNK) / (THREADS * u)), 4 * config.getNumSms(device)));
  const p = packet;
  p.u64(W.x, (x as DeviceTensor).addr);
  p.u64(W.out, (out as DeviceTensor).addr);
  p.u64(W.numel, n);
  p.u32(W.idx_base, idxBase >>> 0);
  p.setLaunch(fn, stream.handle, grid, THREADS, 0, false, device.index);
  p.launch(op);
}

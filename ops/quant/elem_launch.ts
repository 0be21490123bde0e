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
 * The pairs of cast.cu with an aligned-only `_a` form (RN `tk_cast__<in>_<out>_a` and SR `…_sr_a`): bf16 → e4m3, the
 * unaligned fallback compiled out (+0.2–0.7 points of copy RN, +3.0–3.6 SR on an H200; fp32 → e4m3 and fp32 → bf16
 * tied and have none: docs/perf-notes/perf9-cast.md).
 */
const ALIGNED_FORMS: ReadonlySet<string> = new Set(["bf16_e4m3"]);

/**
 * Launch choices of the element casts that tests and benches may flip (restore them after use).
 * - `srScaledEncode` (default on since round 13): where `tk_cast__bf16_e4m3_sr_a` would run, `…_sr_a12` instead
 *   (cast_sr12.cu: the same kernel with §7.3's e4m3 rounding done on rz(v·2^-120), 3 fewer instructions per value, as
 *   perTokenCast's `_g128_sr_wu12`; docs/perf-notes/perf13-csr.md). Same bytes. Interleaved A/B on the H200
 *   (bench/csr13_tuning.ts): 86.7 → 88.9% of copy at 16384 × 7168, 83.1 → 85.2% at 8192. Off: `_sr_a`.
 */
export const castLaunchTuning = { srScaledEncode: true };

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

/**
 * Whether the launch takes the aligned-only form: a pair with an `_a` form, x and out on a chunk boundary (8 elements
 * of each dtype, where the plain kernel takes its 16-byte path anyway); every other view takes the plain kernel.
 */
export function alignedForm(x: Tensor, out: Tensor): boolean {
  if (!ALIGNED_FORMS.has(`${x.dtype}_${out.dtype}`)) return false;
  return (x as DeviceTensor).addr % (CHUNK * elementBytes(x.dtype)) === 0 && (out as DeviceTensor).addr % (CHUNK * elementBytes(out.dtype)) === 0;
}

/**
 * cast.cu's launch: `tk_cast__<in>_<out>` (RN) or `…_sr` with `idxBase = uint32(offset/4 + seed)`, or their `_a`
 * forms (see {@link alignedForm}; `_sr_a12` of cast_sr12.cu for `_sr_a` under {@link castLaunchTuning}).
 * grid.x = max(1, min(⌈⌈numel / 8⌉ / (256 · U)⌉, 4 · SMs)), U = 2 for fp32 sources, 4 otherwise. Nothing for 0
 * elements.
 */
export function launchElementCast(op: string, device: Device, stream: Stream, x: Tensor, out: Tensor, sr: boolean, idxBase: number): void {
  const n = x.numel;
  if (n === 0) return;
  const a = alignedForm(x, out);
  const sr12 = sr && a && castLaunchTuning.srScaledEncode;
  const fn = kernelFunction(op, device, `tk_cast__${x.dtype}_${out.dtype}${sr ? "_sr" : ""}${a ? "_a" : ""}${sr12 ? "12" : ""}`);
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

/**
 * The function handle and the PDL flag of the launch header cast.cu's launches last sent (tests: the element casts
 * never carry the PDL attribute; their PDL forms lost on the H200, docs/perf-notes/perf10-pdl.md, Measured).
 */
export function elementCastLastLaunch(): { fn: number; pdl: boolean } {
  const u = new Uint32Array(packet.bytes.buffer, packet.bytes.byteOffset, 16);
  return { fn: u[0] + u[1] * 4294967296, pdl: (u[11] & 1) === 1 };
}

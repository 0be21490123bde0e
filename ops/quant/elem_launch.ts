/**
 * Launches of the element-wise cast kernels (`kernels-src/cuda/quant/cast.cu`): the RN element conversion of
 * `cast` and the stochastic rounding of `stochasticCast` / `cast` with `stochasticRounding`.
 * @module
 */
import { config } from "../../core/config.ts";
import { elementBytes } from "../../core/dtype.ts";
import { type Device, type DeviceTensor, deviceEmptyStrided, deviceRuntime, type Stream, type Tensor } from "../../core/tensor.ts";
import { kernelFunction, kernelFunctionWithSmem, LaunchPacket } from "../../ffi/cuda.ts";
import { CastParams } from "./elem.params.ts";

/**
 * The pairs of cast.cu with an aligned-only `_a` form (RN `tk_cast__<in>_<out>_a` and SR `…_sr_a12`, cast_sr12.cu): bf16 → e4m3, the
 * unaligned fallback compiled out (+0.2–0.7 points of copy RN, +3.0–3.6 SR on an H200; fp32 → e4m3 and fp32 → bf16
 * tied and have none: docs/perf-notes/perf9-cast.md).
 */
const ALIGNED_FORMS: ReadonlySet<string> = new Set(["bf16_e4m3"]);

/**
 * Launch choices of the element casts that tests and benches may flip (restore them after use).
 * - (Removed in trim24: `srScaledEncode`. The aligned SR form is `…_sr_a12` (cast_sr12.cu: cast.cu's aligned kernel
 *   with §7.3's e4m3 rounding done on rz(v·2^-120), 3 fewer instructions per value, as perTokenCast's `_g128_sr_wu12`;
 *   docs/perf-notes/perf13-csr.md; interleaved A/B on the H200, bench/csr13_tuning.ts: 86.7 → 88.9% of copy at
 *   16384 × 7168, 83.1 → 85.2% at 8192 against round 9's `tk_cast__bf16_e4m3_sr_a`, which the knob's off ran and
 *   which left the package with it: docs/branches/trim24-removed.patch.)
 * - `srRing` (default "w2" since round 23; docs/perf-notes/perf23-csr.md): "w2", where `…_sr_a12` would run, numel
 *   < 2^34, out on a 16-byte boundary and the rows (numel over the last dimension: the tokens of a [tokens, hidden]
 *   activation) in [`srRingMinRows`, `srRingMaxRows`], runs `…_sr_a12w2` (cast_sr23.cu: `_sr_a12`'s chunk conversion
 *   and tail fed by a warp's 2-stage cp.async ring in shared memory, each lane converting 2 consecutive chunks a step
 *   and storing them with one 16-byte store; {@link SR_RING} has the shared memory). Same bytes, same grid. 0:
 *   `…_sr_a12` at every size. Interleaved A/B on the H200 (bench/csr23_tuning.ts, % of copy,
 *   `_sr_a12` → w2, × 7168, Deno and Bun): 4096 rows 89.1–89.4 → 84.5–84.8, 5120 82.5 → 86.0, 6144 82.7 → 87.8–87.9,
 *   8192 85.6 → 90.6, 10240 87.1 → 92.2, 12288 87.5–87.8 → 92.7–93.2, 14336 88.5–88.6 → 89.1–89.5, 16384 89.0–89.3
 *   → 88.9–89.3 (a tie), 20480 89.9 → 89.1. Round 21's one-chunk ring `_sr_a12c5` (the default for 5120 … 12288
 *   rows from the nineteenth run to round 23) and round 23's 3-stage `_sr_a12w3` measured below w2 from 10240 rows
 *   on and within 0.3 µs of it below, and left the package (their source: git history, docs/perf-notes/perf21-csr.md,
 *   perf23-csr.md).
 * - `srRingMinRows` (default 5120), `srRingMaxRows` (default 14336): the rows the ring takes, the sizes where it won
 *   at every measured point (5120 … 14336, seven sizes); it loses at 4096 and 20480 and ties at 16384, so `…_sr_a12`
 *   keeps those.
 */
export const castLaunchTuning: { srRing: 0 | "w2"; srRingMinRows: number; srRingMaxRows: number } = {
  srRing: "w2",
  srRingMinRows: 5120,
  srRingMaxRows: 14336,
};

/**
 * The ring form by `castLaunchTuning.srRing` (cast_sr23.cu's w2): the symbol suffix after `_sr_a12`, the dynamic
 * shared memory (2 stages × 256 threads × 2 chunks of 16 bytes), a carveout that fits 4 CTAs per SM (4 · (16 KiB +
 * 1 KiB reserved) of 228 KiB), and the alignment the output needs (a 16-byte store holds 2 chunks of e4m3).
 */
export const SR_RING = {
  w2: { suffix: "w2", smem: 2 * 256 * 32, carveout: 50, outAlign: 16 },
} as const;
/** The ring form indexes chunks in 32 bits (cast_sr23.cu): numel below this takes it. */
const SR_RING_MAX_NUMEL = 2 ** 34;

/** The rows `srRingMinRows` / `srRingMaxRows` count: numel over the last dimension (1 for a 0-D tensor). */
function castRows(x: Tensor): number {
  return x.shape.length === 0 ? 1 : x.numel / x.shape[x.shape.length - 1];
}

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
 * cast.cu's launch: `tk_cast__<in>_<out>` (RN) or `…_sr` with `idxBase = uint32(offset/4 + seed)`, or their aligned
 * forms (see {@link alignedForm}: RN `_a`, SR `_sr_a12` of cast_sr12.cu, and `_sr_a12w2` of cast_sr23.cu in place of
 * `_sr_a12` under {@link castLaunchTuning}).
 * grid.x = max(1, min(⌈⌈numel / 8⌉ / (256 · U)⌉, 4 · SMs)), U = 2 for fp32 sources, 4 otherwise. Nothing for 0
 * elements.
 */
export function launchElementCast(op: string, device: Device, stream: Stream, x: Tensor, out: Tensor, sr: boolean, idxBase: number): void {
  const n = x.numel;
  if (n === 0) return;
  const a = alignedForm(x, out);
  const t = castLaunchTuning;
  const sr12 = sr && a;
  const form = sr12 && t.srRing !== 0 ? SR_RING[t.srRing] : null;
  const ring = form && n < SR_RING_MAX_NUMEL && castRows(x) >= t.srRingMinRows && castRows(x) <= t.srRingMaxRows &&
      (out as DeviceTensor).addr % form.outAlign === 0 ? form : null;
  const sym = `tk_cast__${x.dtype}_${out.dtype}${sr ? "_sr" : ""}${a ? "_a" : ""}${sr12 ? "12" : ""}${ring ? ring.suffix : ""}`;
  const fn = ring ? kernelFunctionWithSmem(op, device, sym, ring.smem, ring.carveout) : kernelFunction(op, device, sym);
  const u = x.dtype === "fp32" ? 2 : 4;
  const grid = Math.max(1, Math.min(Math.ceil(Math.ceil(n / CHUNK) / (THREADS * u)), 4 * config.getNumSms(device)));
  const p = packet;
  p.u64(W.x, (x as DeviceTensor).addr);
  p.u64(W.out, (out as DeviceTensor).addr);
  p.u64(W.numel, n);
  p.u32(W.idx_base, idxBase >>> 0);
  p.setLaunch(fn, stream.handle, grid, THREADS, ring ? ring.smem : 0, false, device.index);
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

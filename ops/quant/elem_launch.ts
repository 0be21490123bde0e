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
 * - `srRing` (default 5 since round 21; docs/perf-notes/perf21-csr.md): 5, where `…_sr_a12` would run, numel < 2^34
 *   and the rows (numel over the last dimension: the tokens of a [tokens, hidden] activation) are in
 *   [`srRingMinRows`, `srRingMaxRows`], runs `…_sr_a12c5` (cast_sr21.cu: `_sr_a12`'s chunk conversion and tail, each thread's next 4
 *   chunks copied by 16-byte cp.async into its own slots of a 5-stage ring in shared memory, so they stay in flight
 *   through every conversion without registers; {@link SR_RING} has the shared memory). Same bytes, same grid. Needs
 *   `srScaledEncode`. 0: `…_sr_a12` at every size. Interleaved A/B on the H200 (bench/csr21_tuning.ts, % of copy,
 *   `_sr_a12` → c5, × 7168): 2048 rows 79.4 → 101.4 (L2-resident), 3072 87.2 → 83.6, 4096 88.7–89.8 → 85.2–86.1,
 *   5120 83.1 → 86.7, 6144 82.5 → 87.2, 7168 85.2 → 89.6, 8192 84.6 → 89.6–89.9, 10240 86.5 → 89.3, 12288
 *   86.8–88.4 → 87.1–89.0, 13312 88.9 → 88.5, 14336 88.2 → 86.7, 16384 88.6 → 86.6. (Round 20's 9-stage ring was
 *   below c5 at every size and left the package.)
 *   "w3" / "w2" (round 23, not measured yet; docs/perf-notes/perf23-csr.md): `…_sr_a12w3` / `…_sr_a12w2` (cast_sr23.cu)
 *   in c5's place, with out also on a 16-byte boundary (else `…_sr_a12`): a warp's ring of 3 / 2 stages of 64-chunk
 *   units, each lane converting 2 consecutive chunks a step (both chunks' hash chains before either NaN probe) and
 *   storing them with one 16-byte store; w3 keeps c5's 64 B a lane in flight, w2 32 B. Same bytes, same grid.
 * - `srRingMinRows` (default 5120), `srRingMaxRows` (default 12288): the rows the ring takes, the sizes where it won
 *   at every measured point (5120 … 12288, six sizes); it loses at 3072 and 4096 and from 13312 on (the note's
 *   analysis: the ring's steady start pays over a middle range of laps a thread), so `…_sr_a12` keeps those.
 */
export const castLaunchTuning: { srScaledEncode: boolean; srRing: 0 | 5 | "w3" | "w2"; srRingMinRows: number; srRingMaxRows: number } = {
  srScaledEncode: true,
  srRing: 5,
  srRingMinRows: 5120,
  srRingMaxRows: 12288,
};

/**
 * The ring forms by `castLaunchTuning.srRing` (cast_sr21.cu's c5, cast_sr23.cu's w3 / w2): the symbol suffix after
 * `_sr_a12`, the dynamic shared memory (stages × 256 threads × 16 bytes a chunk × 1 or 2 chunks a step), a carveout
 * that fits 4 CTAs per SM (4 · (ring + 1 KiB reserved) of 228 KiB: 84 KiB for c5, 100 for w3, 68 for w2), and the
 * alignment the output needs (w3 / w2 store 16 bytes: 2 chunks of e4m3).
 */
export const SR_RING = {
  5: { suffix: "c5", smem: 5 * 256 * 16, carveout: 50, outAlign: 8 },
  w3: { suffix: "w3", smem: 3 * 256 * 32, carveout: 50, outAlign: 16 },
  w2: { suffix: "w2", smem: 2 * 256 * 32, carveout: 50, outAlign: 16 },
} as const;
/** The ring forms index chunks in 32 bits (cast_sr21.cu, cast_sr23.cu): numel below this takes them. */
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
 * cast.cu's launch: `tk_cast__<in>_<out>` (RN) or `…_sr` with `idxBase = uint32(offset/4 + seed)`, or their `_a`
 * forms (see {@link alignedForm}; `_sr_a12` of cast_sr12.cu for `_sr_a`, and `_sr_a12c5` of cast_sr21.cu or
 * `_sr_a12w3` / `_sr_a12w2` of cast_sr23.cu for `_sr_a12`, under {@link castLaunchTuning}).
 * grid.x = max(1, min(⌈⌈numel / 8⌉ / (256 · U)⌉, 4 · SMs)), U = 2 for fp32 sources, 4 otherwise. Nothing for 0
 * elements.
 */
export function launchElementCast(op: string, device: Device, stream: Stream, x: Tensor, out: Tensor, sr: boolean, idxBase: number): void {
  const n = x.numel;
  if (n === 0) return;
  const a = alignedForm(x, out);
  const t = castLaunchTuning;
  const sr12 = sr && a && t.srScaledEncode;
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

/**
 * CUDA launches of the SwiGLU family (`kernels-src/cuda/swiglu/swiglu.cu`): kernel choice, the parameter packet
 * and the launch geometry of the .cu's table. Used by `swiglu.ts` and `swiglu_backward.ts`; tensors are checked
 * and placed by the callers.
 * @module
 */
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { type Device, type DeviceTensor, deviceRuntime, type Stream, type Tensor } from "../../core/tensor.ts";
import { errorWordPtr, kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { registerOpId } from "../../ffi/op_ids.ts";
import { PER_TOKEN_FLAG } from "./per_token_cast.params.ts";
import type { SfGeometry } from "./sf_layout.ts";
import { SWIGLU_FLAG, SwigluParams } from "./swiglu.params.ts";

const PSUM_CONDITIONS = {
  1: "psumNumTokensPerExpert[e] is below the aligned start of expert e (spec/quant.md §8.1)",
  2: "psumNumTokensPerExpert[e] exceeds the rows of x",
};

/** Op ids of the SwiGLU ops (reserved in ffi/op_ids.ts) with the condition bits of the psum guard. */
export const SWIGLU_OP_ID = {
  swigluForward: registerOpId(16, "swigluForward", PSUM_CONDITIONS),
  swigluForwardAndPerTokenCast: registerOpId(17, "swigluForwardAndPerTokenCast", PSUM_CONDITIONS),
  swigluBackward: registerOpId(18, "swigluBackward", PSUM_CONDITIONS),
  swigluBackwardAndPerTokenCast: registerOpId(19, "swigluBackwardAndPerTokenCast", PSUM_CONDITIONS),
} as const;

const THREADS = 256;
/** Rows a block works on at once (8 lanes per row). */
const ROWS_PER_BLOCK = THREADS / 8;
/** Column parts of a row group in the forward kernels (kFwdParts of swiglu.cu): a warp's unit is 4 rows × a third. */
const FORWARD_PARTS = 3;
/** Column parts of the lean cast form `_anl` (kFwdLeanParts of swiglu.cu: 4 CTAs per SM on sm_90a). */
const FORWARD_LEAN_PARTS = 4;

/** The row forms `_anrs` / `_anrps` (kernels-src/cuda/swiglu/swiglu_rows.cu): the one hidden size they are built for (kRowHidden). */
const ROW_HIDDEN = 7168;
/** Threads of a row-form block (kRowThreads): 56 teams of 8 lanes, one group of 128 output columns each. */
const ROW_THREADS = 448;
/** Resident row-form blocks per SM (kRowMinBlocks: 2); the grid is one wave of them, min(T, 2 · SMs). */
const ROW_CTAS_PER_SM = 2;
/** Rows a block of the 16-lane team forms `_t16x` / `_t16y` works on at once (swiglu_bwd_t16.cuh's kT16Threads / kT16Team). */
const T16_ROWS_PER_BLOCK = THREADS / 16;

/**
 * A/B knobs of the SwiGLU launches (bench/sbc11_tuning.ts, bench/swr11_tuning.ts); the kernels write the same bytes
 * in every setting.
 * - `backwardCastForm`: swigluBackwardAndPerTokenCast with bf16 dy and groups of 128, where the 16-lane team form's
 *   conditions hold (see {@link swigluFormSuffix}), by the team form `tk_swiglu_backward__e4m3_bf16_g128_t16x`
 *   ("team16x", the default since round 28's A/B: kernels-src/cuda/swiglu/swiglu_bwd_t16x.cu,
 *   docs/perf-notes/perf28-sbc.md), or by swiglu.cu's kernel `tk_swiglu_backward__e4m3_bf16_g128` ("main", kept for
 *   A/B); the same bytes. Main's kernel serves every launch the team form does not take in either setting. `_t16x` is
 *   round 11's 16-lane team compute (swiglu_bwd_t16.cuh; 64 registers and 4 CTAs per SM on sm_90a against main's 116
 *   and 2) with round 17's swizzled shared-memory park (swiglu_bwd_t16w.cuh: a lane writes 16 consecutive columns of
 *   one half, 2 bf16 and 1 e4m3 16-byte stores a lane-step) and the fast-path verdicts of its exponentials and
 *   reciprocals folded into one flag each, the bf16 NaN fix done only when the lane's e4m3 codes show a NaN (about 65
 *   fewer instructions of ~865 a warp-step on sm_90a). H200 at 16384 × 7168 (bench/RESULTS.md): round 11's `_t16` 54.6%
 *   of copy against main's 46.3%; round 17's `_t16w` 57.3% against `_t16`'s 54.7% (sixteenth run); `_t16x`
 *   (bench/sbc28_tuning.ts, twenty-first run; retired in trim32) 8192 × 7168 54.8 → 59.8%, 16384 57.7 → 63.2% against
 *   `_t16w`. `_t16` ("team16", the default from round 11 to 17) left the package in trim20
 *   (docs/branches/trim20-removed.patch), `_t16w` ("team16w", the default from round 17 to 28) in trim32
 *   (docs/branches/trim32-removed.patch). "team16y" (round 32, the default since its A/B): where `_t16x` would run and
 *   the sf entries are binary32 (neither roundSf nor packed), `tk_swiglu_backward__e4m3_bf16_g128_t16y`
 *   (kernels-src/cuda/swiglu/swiglu_bwd_t16y.cu, docs/perf-notes/perf32-sbc.md): `_t16x` with the slot compute run
 *   for every team (no `real` branch), the amax's |v| as an operand modifier, the reciprocals' range verdict for
 *   b ≥ 1, and binary32-only sf code (789 → 723 warp instructions a step on sm_90a); `_t16x` with other sf entries.
 *   The same bytes. H200 (bench/sbc32_tuning.ts, twenty-second run, fp32 sf): 8192 × 7168 59.3 → 65.5%, 16384 61.7 →
 *   67.3% of copy against `_t16x`.
 * - `rowForm`: swigluForwardAndPerTokenCast with H = 7168 by the row form `tk_swiglu_forward__bf16_e4m3_g128_anrs`
 *   (true, the default: kernels-src/cuda/swiglu/swiglu_rows.cu) where the lean cast form `_anl` would run, or by `_anl`
 *   (false, kept for A/B). `_anl` (or main's kernel) serves every launch the row form does not take in either setting.
 *   `_anrs` is round 11's `_anr2` (docs/perf-notes/perf11-swr.md: one row per 448-thread block, 2 CTAs per SM, a grid
 *   of one wave; H200, 16384 × 7168: 85.5% of copy against `_anl`'s 81.2%) with the block's expert kept in registers
 *   between its rows (round 17, docs/perf-notes/perf17-swl.md: a row needs no psum load until it passes psum[e], then
 *   one coalesced warp load and a ballot, instead of each warp's binary search per row; 16384 × 7168 85.4 → 86.1%,
 *   8192 × 7168 83.5 → 84.5% of copy). The same bytes.
 * - `rowPrefetch` (default true): swigluForward at H = 7168 runs the row-prefetch form
 *   `tk_swiglu_forward__bf16_bf16_anrps` (kernels-src/cuda/swiglu/swiglu_rows.cu) where `_an` would run: whole rows
 *   per 448-thread block, 2 CTAs per SM, a grid of one wave, the block's next row's input loaded while the current
 *   row is computed (round 15's `_anrp`, docs/perf-notes/perf15-swf.md: 16384 × 7168 86.4 → 88.2%, 8192 × 7168 84.3 →
 *   86.7% of copy against `_an`), each row's realness decided by `_anrs`'s expert cursor one row ahead, so that a
 *   padding row's input is not loaded (round 18, docs/perf-notes/perf18-swf.md: 88.5 → 90.2%, 86.8 → 88.8%). The
 *   same bytes. false: `_an` (kept for A/B). The same walk for swigluForwardAndPerTokenCast lost to `_anr2` (85.9 →
 *   78.4%) and is not built.
 * - `castTailPrefetch` (round 33, default true since its A/B): where `_anrs` would run (rowForm set), the form
 *   `tk_swiglu_forward__bf16_e4m3_g128_anrt` (kernels-src/cuda/swiglu/swiglu_rows.cu, docs/perf-notes/perf33-swc.md):
 *   `_anrs` with the block's next row loaded into the current row's raw words as soon as its values exist, so the
 *   loads run under the row's cast (amax, shuffles, divisions, encodes, stores); the same geometry and bytes.
 *   Interleaved A/B on the H200 (bench/swc33_tuning.ts, twenty-second run, 64 experts × 7168): 8192 rows 84.6 →
 *   88.6%, 16384 86.6 → 90.8% of copy. false: `_anrs` (kept for A/B).
 * (`castRowScan` and `forwardRowScan`, whose false ran `_anr2` and `_anrp`, left with those kernels in trim24:
 * docs/branches/trim24-removed.patch.)
 */
export const swigluLaunchTuning = {
  backwardCastForm: "team16y" as "main" | "team16x" | "team16y",
  rowForm: true,
  rowPrefetch: true,
  castTailPrefetch: true,
};

const packet = new LaunchPacket(SwigluParams);
const W = packet.w;

/** The expert-layout, weight and clamp fields every SwiGLU launch has. */
export type SwigluLaunchCommon = Pick<SwigluLaunch, "tokens" | "hidden" | "x" | "weights" | "psum" | "tokenAlignment" | "scale" | "clamp">;

/** Everything one SwiGLU launch needs (device tensors; null = absent). */
export interface SwigluLaunch {
  readonly op: keyof typeof SWIGLU_OP_ID;
  readonly symbol: string;
  readonly tokens: number;
  readonly hidden: number;
  readonly x: Tensor;
  readonly xSf?: Tensor | null;
  readonly dy?: Tensor | null;
  readonly weights: Tensor | null;
  readonly psum: Tensor | null;
  readonly tokenAlignment: number;
  readonly scale: number | null;
  readonly clamp: number | null;
  readonly out?: Tensor | null;
  readonly data?: Tensor | null;
  readonly sf?: Tensor | null;
  readonly sfGeometry?: SfGeometry | null;
  readonly sfFlags?: { roundSf: boolean; packed: boolean };
  readonly actOut?: Tensor | null;
  readonly weightGrad?: Tensor | null;
  readonly counts?: Tensor | null;
  readonly recompute?: boolean;
}

function addr(t: Tensor | null | undefined): number {
  return t ? (t as DeviceTensor).addr : 0;
}

/**
 * The kernels that have aligned-only forms (swiglu.cu's SwigluForm; docs/perf-notes/perf9-swiglu.md), with the
 * forms built: those that were faster than main's kernel on the H200 (2026-12-01). forward__bf16_e4m3_g128 has no
 * `_a` (it spills at 80 registers), and its no-clamp form is the lean cast form `_anl` (`_an`'s conditions,
 * kFormLeanCast; docs/perf-notes/perf10-swc.md: it replaced that kernel's `_an`); backward__bf16_bf16 has no `_an`
 * (it was slower than main's kernel).
 */
const ALIGNED_FORMS: ReadonlyMap<string, readonly ("_a" | "_an" | "_anl")[]> = new Map([
  ["tk_swiglu_forward__bf16_bf16", ["_a", "_an"]],
  ["tk_swiglu_forward__bf16_e4m3_g128", ["_anl"]],
  ["tk_swiglu_backward__bf16_bf16", ["_a"]],
]);

/**
 * The suffix of the kernel form a launch uses ("" = main's kernel): an aligned-only form (the same kernel with the
 * vector alignment of every view compiled in, so no element-wide fallback, which ptxas turns into predicated 2-byte
 * loads issued on every step; `_an` also without a clamp) when `a.symbol` has one and every alignment the kernel
 * tests at run time holds, so that main's kernel would take its vector path everywhere too: x 16-byte aligned (rows
 * are multiples of 256 bytes); forward bf16 out: base and row stride multiples of 16 bytes; forward cast: the e4m3
 * data 8-byte aligned; backward: dy, xGrad and actOut (when present) 16-byte aligned (contiguous, rows multiples
 * of 128 bytes). The no-clamp form (`_an`, or forward__bf16_e4m3_g128's `_anl`) where it is built and the launch
 * has no clamp (then there are no counters either), else `_a` where it is built. Where forward__bf16_e4m3_g128's
 * `_anl` would run with H = 7168, the row form `_anrs` (`_anrt` while castTailPrefetch is set) instead while {@link swigluLaunchTuning}.rowForm is set (the
 * default; the same conditions and bytes); where swigluForward's `_an` would run with H = 7168, the row-prefetch form
 * `_anrps` while rowPrefetch is set (the default). swigluBackwardAndPerTokenCast's
 * `tk_swiglu_backward__e4m3_bf16_g128` takes the 16-lane team form `_t16x` while
 * {@link swigluLaunchTuning}.backwardCastForm is "team16x", or `_t16y` while it is "team16y" (the default) and the sf
 * entries are binary32, and its conditions hold (team16Suffix). Exported for the GPU tests only.
 */
export function swigluFormSuffix(a: SwigluLaunch): "" | "_a" | "_an" | "_anl" | "_anrps" | "_anrs" | "_anrt" | "_t16x" | "_t16y" {
  if (a.symbol === "tk_swiglu_backward__e4m3_bf16_g128") return team16Suffix(a);
  const f = alignedSuffix(a);
  if (a.hidden !== ROW_HIDDEN) return f;
  if (swigluLaunchTuning.rowPrefetch && f === "_an" && a.symbol === "tk_swiglu_forward__bf16_bf16") return "_anrps";
  if (f !== "_anl" || !swigluLaunchTuning.rowForm) return f;
  return swigluLaunchTuning.castTailPrefetch ? "_anrt" : "_anrs";
}

function alignedSuffix(a: SwigluLaunch): "" | "_a" | "_an" | "_anl" {
  const built = ALIGNED_FORMS.get(a.symbol);
  if (!built) return "";
  const noClamp = built.find((f) => f !== "_a");
  const form = a.clamp === null && !a.counts && noClamp ? noClamp : built.includes("_a") ? "_a" : "";
  if (form === "") return "";
  const a16 = (t: Tensor | null | undefined) => addr(t) % 16 === 0;
  if (!a16(a.x)) return "";
  if (a.op === "swigluForward") {
    if (!a.out || !a16(a.out) || (a.out.strides[0] * 2) % 16 !== 0) return "";
  } else if (a.op === "swigluForwardAndPerTokenCast") {
    if (addr(a.data) % 8 !== 0) return "";
  } else if (a.op === "swigluBackward") {
    if (!a16(a.dy) || !a16(a.out) || !a16(a.actOut)) return "";
  } else {
    return "";
  }
  return form;
}

/**
 * `_t16x` (swigluLaunchTuning.backwardCastForm = "team16x") or `_t16y` ("team16y", the default; binary32 sf entries
 * only: `_t16x` with roundSf or packed) where the 16-lane team form's conditions hold: no clamp, no recompute (so no
 * actOut), x, dy, xGrad and the e4m3 data 16-byte aligned; "" (main's kernel) otherwise and for "main".
 */
function team16Suffix(a: SwigluLaunch): "" | "_t16x" | "_t16y" {
  if (swigluLaunchTuning.backwardCastForm === "main" || a.op !== "swigluBackwardAndPerTokenCast") return "";
  if (a.clamp !== null || a.recompute || a.actOut || a.counts) return "";
  const a16 = (t: Tensor | null | undefined) => !!t && addr(t) % 16 === 0;
  if (!(a16(a.x) && a16(a.dy) && a16(a.out) && a16(a.data))) return "";
  if (swigluLaunchTuning.backwardCastForm === "team16y") return a.sfFlags?.roundSf || a.sfFlags?.packed ? "_t16x" : "_t16y";
  return "_t16x";
}

/** Enqueues one kernel of swiglu.cu on `stream`. 0 rows (and no sf padding rows) launch nothing. */
export function launchSwiglu(device: Device, stream: Stream, a: SwigluLaunch): void {
  const g = a.sfGeometry ?? null;
  const sfRows = g ? g.paddedRows : 0;
  if (a.tokens === 0 && sfRows === 0) return;
  const op = a.op;
  const form = swigluFormSuffix(a);
  const fn = kernelFunction(op, device, a.symbol + form);
  const p = packet;
  p.u64(W.x, addr(a.x));
  p.u64(W.x_sf, addr(a.xSf));
  p.u64(W.dy, addr(a.dy));
  p.u64(W.weights, addr(a.weights));
  p.u64(W.psum, addr(a.psum));
  p.u64(W.out, addr(a.out));
  p.u64(W.data, addr(a.data));
  p.u64(W.sf, addr(a.sf));
  p.u64(W.act_out, addr(a.actOut));
  p.u64(W.weight_grad, addr(a.weightGrad));
  p.u64(W.counts, addr(a.counts));
  p.u64(W.error_word, errorWordPtr(op, device));
  p.u64(W.out_row_stride, a.out ? a.out.strides[0] : 0);
  p.u64(W.sf_stride0, g ? g.strides[0] : 0);
  p.u64(W.sf_stride1, g ? g.strides[1] : 0);
  p.u64(W.counts_stride, a.counts ? a.counts.strides[0] : 0);
  p.u32(W.num_tokens, a.tokens);
  p.u32(W.hidden, a.hidden);
  p.u32(W.num_experts, a.psum ? a.psum.shape[0] : 0);
  p.u32(W.token_alignment, a.tokenAlignment);
  p.u32(W.sf_rows, sfRows);
  p.u32(W.sf_flags, (a.sfFlags?.roundSf ? PER_TOKEN_FLAG.roundSf : 0) | (a.sfFlags?.packed ? PER_TOKEN_FLAG.packedUe8m0 : 0));
  p.u32(
    W.flags,
    (a.weights ? SWIGLU_FLAG.weights : 0) | (a.scale !== null ? SWIGLU_FLAG.scale : 0) | (a.clamp !== null ? SWIGLU_FLAG.clamp : 0) |
      (a.counts ? SWIGLU_FLAG.counts : 0) | (a.recompute ? SWIGLU_FLAG.recompute : 0),
  );
  p.f32(W.clamp, a.clamp ?? 0);
  p.f32(W.scale, a.scale ?? 1);
  p.f32(W.amax_clamp, config.amaxClamp.e4m3);
  p.u32(W.op_id, SWIGLU_OP_ID[op]);
  const forward = op === "swigluForward" || op === "swigluForwardAndPerTokenCast";
  const parts = form === "_anl" ? FORWARD_LEAN_PARTS : forward ? FORWARD_PARTS : 1;
  const rows = form === "_anrps" || form === "_anrs" || form === "_anrt";
  const team = form === "_t16x" || form === "_t16y";
  const rowsPerBlock = team ? T16_ROWS_PER_BLOCK : ROWS_PER_BLOCK;
  const grid = rows
    ? Math.max(1, Math.min(a.tokens, ROW_CTAS_PER_SM * config.getNumSms(device)))
    : Math.max(1, Math.min(Math.ceil(a.tokens / rowsPerBlock) * parts, 8 * parts * config.getNumSms(device)));
  // PDL (docs/perf-notes/perf10-pdl.md): the aligned-only forms (`_a`, `_an`, `_anl`, `_anrps`, `_anrs`, `_anrt`) are
  // compiled with the griddepcontrol prologue (swiglu.cu kFormPdl: launch_dependents first, wait before the first access to memory
  // another grid may write) and are launched as programmatic dependents of the previous kernel in the stream while
  // `config.pdl` is set (read at every launch); main's kernels, and these with `config.pdl` off, launch plainly.
  p.setLaunch(fn, stream.handle, grid, rows ? ROW_THREADS : THREADS, 0, config.pdl && form !== "" && !team, device.index);
  p.launch(op);
}

/**
 * The function handle and the PDL flag of the launch header the SwiGLU family last sent (tests: which kernel ran,
 * and whether with the programmatic-stream-serialization attribute).
 */
export function swigluLastLaunch(): { fn: number; pdl: boolean } {
  const u = new Uint32Array(packet.bytes.buffer, packet.bytes.byteOffset, 16);
  return { fn: u[0] + u[1] * 4294967296, pdl: (u[11] & 1) === 1 };
}

/**
 * Runs `tk_swiglu_expf_check` (tests): `out[i] = expf(x[i])` on the device for fp32 device tensors of n elements;
 * with `symbol` "tk_swiglu_recip_check", `out[i] = 1 / x[i]` by the backward's branch-free reciprocal (recip.cuh)
 * instead (the same geometry). Either writes the NaN pattern 0xffffffff where its two forms disagree.
 */
export function launchExpfCheck(
  device: Device,
  stream: Stream,
  x: Tensor,
  out: Tensor,
  symbol: "tk_swiglu_expf_check" | "tk_swiglu_recip_check" = "tk_swiglu_expf_check",
): void {
  const n = x.numel;
  if (n === 0) return;
  if (n >= 2 ** 32) throw new TkError("expfCheck", "x", "SHAPE", "at most 2^32 − 1 elements");
  const fn = kernelFunction("expfCheck", device, symbol);
  const p = packet;
  p.u64(W.x, addr(x));
  p.u64(W.out, addr(out));
  p.u64(W.error_word, errorWordPtr("expfCheck", device));
  p.u32(W.num_tokens, n);
  p.setLaunch(fn, stream.handle, Math.max(1, Math.min(Math.ceil(n / THREADS), 8 * config.getNumSms(device))), THREADS, 0, false, device.index);
  p.launch("expfCheck");
}

/** The device stream of a call: `stream` when given (same device), else the device's default stream. */
export function callStream(op: string, device: Device, stream: Stream | undefined): Stream {
  if (stream && (stream.device.kind !== device.kind || stream.device.index !== device.index)) {
    throw new TkError(op, "stream", "DEVICE_MISMATCH", `the stream belongs to ${stream.device.kind}:${stream.device.index}, the inputs to ${device.kind}:${device.index}`);
  }
  return stream ?? deviceRuntime(op).defaultStream(device);
}

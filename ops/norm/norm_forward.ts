/**
 * RMSNorm forward: `normForward` (spec/API.md §3.2; numerics and legal arguments: spec/norm-rope-rand.md §A.3,
 * D.2, D.4, D.10). Checks, then dispatch to the CPU reference (`norm_forward.ref.ts`) or the CUDA kernels
 * (`kernels-src/cuda/norm/norm_forward.cu`, whose launch {@link launchNormForward} also serves the fused casts).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, overlaps, selfOverlapping } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged } from "../../core/stage.ts";
import { type Device, type DeviceTensor, deviceEmptyStrided, type HostTensor, type Stream, type Tensor } from "../../core/tensor.ts";
import type { DType } from "../../core/dtype.ts";
import { kernelFunction, kernelFunctionWithSmem, LaunchPacket } from "../../ffi/cuda.ts";
import type { SfGeometry } from "../quant/sf_layout.ts";
import { checkCudaHidden, checkWeight, shapeText } from "./checks.ts";
import { forwardBlocksPerSm, NORM_BLOCK_THREADS, normLaunchTuning, normStream, teamThreads } from "./launch.ts";
import { NORM_FWD_FLAG, NormForwardParams } from "./norm_forward.params.ts";
import { normForwardRef, type NormForwardOut } from "./norm_forward.ref.ts";

/** Options of {@link normForward}. */
export interface NormForwardOptions extends OpOptions {
  /** Added to the mean square before the square root; required, finite, ≥ 0 (rounded to binary32). */
  eps: number;
  /** Added to `x` first (rounded to `x.dtype`); the sum is normalized and returned as `normInput`. */
  residual?: Tensor;
  /** Multiplier folded into the weight (rounded to binary32). Default 1. */
  outScale?: number;
  /**
   * Preallocated outputs: `out` like `x` (last stride 1), `rstd` fp32 `x.shape[:-1]` contiguous, `residualOut`
   * like `x` (only with `residual`; may be the very view of `residual` or `x`, the in-place forms).
   */
  out?: { out?: Tensor; rstd?: Tensor; residualOut?: Tensor };
}

const KEYS = ["eps", "residual", "outScale"];
const OUT_KEYS = ["out", "rstd", "residualOut"];

/** True when `a` and `b` are the same view: same storage, dtype, offset, shape and strides. */
function sameView(a: Tensor, b: Tensor): boolean {
  if (a === b) return true;
  if (a.dtype !== b.dtype || a.offset !== b.offset || a.shape.length !== b.shape.length) return false;
  if (a.shape.some((d, i) => d !== b.shape[i] || (d > 1 && a.strides[i] !== b.strides[i]))) return false;
  return a.numel === 0 || overlaps(a, b);
}

/** A row tensor like `x`: same dtype and shape, last stride 1 (spec D.10). */
function checkLikeX(op: string, arg: string, t: unknown, x: Tensor): Tensor {
  const r = checkTensor(op, arg, t, [x.dtype]);
  if (r.shape.length !== x.shape.length || r.shape.some((d, i) => d !== x.shape[i])) {
    throw new TkError(op, arg, "SHAPE", `expected shape ${shapeText(x.shape)} (as x), got ${shapeText(r.shape)}`);
  }
  if (r.strides[r.strides.length - 1] !== 1) throw new TkError(op, arg, "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${r.strides[r.strides.length - 1]}`);
  return r;
}

/** An output row tensor: dtype and shape of `x`, last stride 1, no two elements at one address. */
function checkOutLikeX(op: string, arg: string, t: unknown, x: Tensor): Tensor {
  const o = checkOutTensor(op, arg, t, x.dtype);
  if (o.shape.length !== x.shape.length || o.shape.some((d, i) => d !== x.shape[i])) {
    throw new TkError(op, arg, "OUT_MISMATCH", `expected shape ${shapeText(x.shape)} (as x), got ${shapeText(o.shape)}`);
  }
  if (o.strides[o.strides.length - 1] !== 1) throw new TkError(op, arg, "OUT_MISMATCH", `last dimension must be contiguous (stride 1), got stride ${o.strides[o.strides.length - 1]}`);
  if (selfOverlapping(o)) throw new TkError(op, arg, "OUT_MISMATCH", `two of its elements share an address (strides [${o.strides.join(", ")}])`);
  return o;
}

/**
 * RMSNorm over the last dimension of `x` (fp32 or bf16, `[T, H]` or `[B, T, H]`, last stride 1, `H` a multiple of
 * 16): `s = x (+ residual, rounded to x.dtype)`, `rstd = 1 / √(mean(s²) + eps)`, `out = s · rstd · (weight ·
 * outScale)` rounded to `x.dtype`. The sum of squares follows the fixed tree of spec/norm-rope-rand.md D.2, so
 * the bits do not depend on the backend or the launch shape. `weight` is `[H]` of x's dtype, or `null` (unit).
 * Returns `[out, rstd, normInput]`: `rstd` fp32 `x.shape[:-1]`; `normInput` is `s` (the residual output when
 * `residual` is given, else `x` itself).
 *
 * Device inputs run the CUDA kernel on `stream` (outputs allocated there, contiguous); host inputs run the CPU
 * reference unless `backend` / `TK_BACKEND` says `"cuda"`. Both give the same bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normForward } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const x = tensor(new Float32Array(16).fill(2), [1, 16], "fp32");
 * const [out, rstd, normInput] = normForward(x, null, { eps: 0 });
 * assert.equal((rstd as { data: Float32Array }).data[0], 0.5);
 * assert.equal((out as { data: Float32Array }).data[3], 1);
 * assert.equal(normInput, x);
 * ```
 */
export function normForward(x: Tensor, weight: Tensor | null, options: NormForwardOptions): [out: Tensor, rstd: Tensor, normInput: Tensor] {
  const op = "normForward";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "eps is required");
  const out = options.out;
  if (out !== undefined && (typeof out !== "object" || out === null || Array.isArray(out))) {
    throw new TkError(op, "out", "VALUE", "expected { out?, rstd?, residualOut? }");
  }
  if (out) for (const k in out) if (!OUT_KEYS.includes(k)) throw new TkError(op, `out.${k}`, "VALUE", `unknown output (expected one of ${OUT_KEYS.join(", ")})`);
  const r = resolveNorm(op, x, weight, options);
  const { xt, w, residual, resOut, outOut, outRstd } = r;
  // Four tensors at most go to place(); the outputs are checked to live with the inputs by a second call.
  const pl = place(op, options.backend, xt, w, residual, resOut);
  place(op, options.backend, xt, outOut, outRstd);
  checkCudaHidden(op, pl.backend, xt.shape[xt.shape.length - 1]);

  if (pl.backend === "cuda" && !pl.staged) {
    const stream = normStream(op, pl, options.stream);
    const o = outOut ?? rowsLike(op, pl.device, xt, xt.dtype, stream);
    const rs = outRstd ?? rowsLike(op, pl.device, xt, "fp32", stream, true);
    const ro = residual ? (resOut ?? rowsLike(op, pl.device, xt, xt.dtype, stream)) : null;
    launchNormForward(op, pl.device, stream, r, { out: o, rstd: rs, residualOut: ro, cast: null });
    return [o, rs, ro ?? xt];
  }
  if (pl.backend === "cuda") {
    const local = { eps: r.eps, outScale: r.outScale };
    const res = runOnDeviceStaged(op, pl.device, [xt, w, residual], [outOut, outRstd, resOut], ([dx, dw, dr]) => {
      const [o, rs, s] = normForward(dx!, dw, { ...local, residual: dr ?? undefined });
      return dr ? [o, rs, s] : [o, rs];
    });
    return [res[0], res[1], residual ? res[2] : xt];
  }

  // CPU reference (device inputs with backend "cpu" are staged through the host).
  const hx = onHost(xt) as HostTensor;
  const hw = onHost(w);
  const hr = onHost(residual);
  if (!pl.staged) {
    const given: NormForwardOut = {
      out: (outOut as HostTensor | null) ?? undefined,
      rstd: (outRstd as HostTensor | null) ?? undefined,
      residualOut: (resOut as HostTensor | null) ?? undefined,
    };
    return normForwardRef(hx, hw, hr, r.eps, r.outScale, given);
  }
  const [o, rs, s] = normForwardRef(hx, hw, hr, r.eps, r.outScale, {});
  const device = pl.device;
  return [
    resultToDevice(op, o, outOut, device),
    resultToDevice(op, rs, outRstd, device),
    residual ? resultToDevice(op, s, resOut, device) : xt,
  ];
}

/** The checked arguments of a norm forward (shared with the fused casts). */
export interface ResolvedNorm {
  readonly xt: Tensor;
  readonly w: Tensor | null;
  readonly residual: Tensor | null;
  readonly resOut: Tensor | null;
  readonly outOut: Tensor | null;
  readonly outRstd: Tensor | null;
  readonly eps: number;
  readonly outScale: number;
}

/**
 * The argument checks of spec D.10 for `x`, `weight`, `eps`, `outScale`, `residual` and `out.{out, rstd,
 * residualOut}` (options keys and `out` keys are the caller's), with errors under `op`'s name.
 */
export function resolveNorm(
  op: string,
  x: Tensor,
  weight: Tensor | null,
  options: { eps: number; residual?: Tensor; outScale?: number; out?: { out?: Tensor; rstd?: Tensor; residualOut?: Tensor } },
): ResolvedNorm {
  const xt = checkTensor(op, "x", x, ["fp32", "bf16"]);
  const rank = xt.shape.length;
  if (rank !== 2 && rank !== 3) throw new TkError(op, "x", "SHAPE", `expected a 2-D [T, H] or 3-D [B, T, H] tensor, got shape ${shapeText(xt.shape)}`);
  const H = xt.shape[rank - 1];
  if (H < 16 || H % 16 !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a positive multiple of 16 (got ${H})`);
  if (xt.strides[rank - 1] !== 1) throw new TkError(op, "x", "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${xt.strides[rank - 1]}`);
  const w = checkWeight(op, weight, xt, H);
  const eps = options.eps;
  if (typeof eps !== "number" || !Number.isFinite(eps) || eps < 0) throw new TkError(op, "eps", "VALUE", `must be a finite number ≥ 0 (got ${describe(eps)})`);
  const outScale = options.outScale ?? 1;
  if (typeof outScale !== "number" || !Number.isFinite(outScale)) throw new TkError(op, "outScale", "VALUE", `must be a finite number (got ${describe(outScale)})`);
  const residual = options.residual !== undefined ? checkLikeX(op, "residual", options.residual, xt) : null;

  const out = options.out;
  const inputs: Tensor[] = [xt];
  if (w) inputs.push(w);
  if (residual) inputs.push(residual);
  let resOut: Tensor | null = null;
  if (out?.residualOut !== undefined) {
    if (!residual) throw new TkError(op, "out.residualOut", "VALUE", "is only written with residual (without it, normInput is x itself)");
    resOut = checkOutLikeX(op, "out.residualOut", out.residualOut, xt);
    // The in-place forms: exactly the view of residual or of x. Any other overlap is refused.
    for (const i of inputs) {
      if (overlaps(resOut, i) && !((i === residual || i === xt) && sameView(resOut, i))) {
        throw new TkError(op, "out.residualOut", "OUT_MISMATCH", "overlaps an input (only the very view of residual or x is allowed)");
      }
    }
  }
  let outOut: Tensor | null = null;
  if (out?.out !== undefined) {
    outOut = checkOutLikeX(op, "out.out", out.out, xt);
    for (const i of inputs) if (overlaps(outOut, i)) throw new TkError(op, "out.out", "OUT_MISMATCH", "overlaps an input");
    if (resOut && overlaps(outOut, resOut)) throw new TkError(op, "out.out", "OUT_MISMATCH", "overlaps out.residualOut");
  }
  let outRstd: Tensor | null = null;
  if (out?.rstd !== undefined) {
    outRstd = checkOutTensor(op, "out.rstd", out.rstd, "fp32");
    const lead = xt.shape.slice(0, -1);
    if (outRstd.shape.length !== lead.length || outRstd.shape.some((d, i) => d !== lead[i])) {
      throw new TkError(op, "out.rstd", "OUT_MISMATCH", `expected shape ${shapeText(lead)}, got ${shapeText(outRstd.shape)}`);
    }
    if (!outRstd.isContiguous()) throw new TkError(op, "out.rstd", "OUT_MISMATCH", `must be contiguous, got strides [${outRstd.strides.join(", ")}]`);
    for (const i of inputs) if (overlaps(outRstd, i)) throw new TkError(op, "out.rstd", "OUT_MISMATCH", "overlaps an input");
    if ((outOut && overlaps(outRstd, outOut)) || (resOut && overlaps(outRstd, resOut))) {
      throw new TkError(op, "out.rstd", "OUT_MISMATCH", "overlaps another output");
    }
  }
  return { xt, w, residual, resOut, outOut, outRstd, eps, outScale };
}

/** A contiguous device tensor of x's rows (`lead`: x.shape without its last dimension, for rstd). */
export function rowsLike(op: string, device: Device, x: Tensor, dtype: DType, stream: Stream, lead = false): DeviceTensor {
  const shape = lead ? x.shape.slice(0, -1) : x.shape;
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  return deviceEmptyStrided(op, device, shape, strides, dtype, shape.reduce((a, b) => a * b, 1), stream);
}

// ---- CUDA launch ------------------------------------------------------------------------------------------

/** The cast part of a fused launch: e4m3 data and sf (geometry per batch), optional bf16 copy, the sf rule. */
export interface NormCastTarget {
  readonly numPerChannels: 32 | 128;
  readonly data: Tensor;
  readonly sf: Tensor;
  readonly g: SfGeometry;
  readonly outBf16: Tensor | null;
  readonly roundSf: boolean;
  readonly packedUe8m0: boolean;
}

const packet = new LaunchPacket(NormForwardParams);
const W = packet.w;

function addr(t: Tensor | null): number {
  return t ? (t as DeviceTensor).addr : 0;
}

/** [batch stride, row stride] of a 2-D or 3-D row tensor, 0 for dimensions of size 1 (any stride is legal there). */
function rowStrides(t: Tensor | null): [number, number] {
  if (!t) return [0, 0];
  const r = t.shape.length;
  const bs = r === 3 && t.shape[0] > 1 ? t.strides[0] : 0;
  const rs = t.shape[r - 2] > 1 ? t.strides[r - 2] : 0;
  return [bs, rs];
}

/** Whether a bf16 row tensor allows 16-byte accesses on every row: base and (batch, row) strides as the kernel tests. */
function vec16(t: Tensor | null): boolean {
  if (!t) return false;
  const [bs, rs] = rowStrides(t);
  return (t as DeviceTensor).addr % 16 === 0 && (2 * bs) % 16 === 0 && (2 * rs) % 16 === 0;
}

/**
 * Whether the views of a fused cast allow the aligned-only kernels (`_e4m3_g<N>_br4y`, `_e4m3_g<N>_tp16c_res`; with
 * normLaunchTuning.castRowForm 0 the residual casts stay on `_e4m3_g<N>_wr_res`), the defaults wherever `_e4m3_g<N>_br4` /
 * `_e4m3_g<N>_wr_res` would run on such views): the bases and row / batch strides of the bf16
 * rows (x, and residual and residualOut when given), the weight, data and outBf16 at multiples of 16 bytes (data and
 * outBf16 are contiguous with H a multiple of 16, so their rows follow their bases).
 */
export function castViewsAligned(
  x: Tensor,
  w: Tensor | null,
  data: Tensor,
  outBf16: Tensor | null,
  residual: Tensor | null = null,
  residualOut: Tensor | null = null,
): boolean {
  const al = (bytes: number) => bytes % 16 === 0;
  const rowsAl = (t: Tensor | null) => {
    if (!t) return true;
    const [b, r] = rowStrides(t);
    return al(addr(t)) && al(2 * b) && al(2 * r);
  };
  return rowsAl(x) && rowsAl(residual) && rowsAl(residualOut) && (!w || al(addr(w))) && al(addr(data)) && (!outBf16 || al(addr(outBf16)));
}

/**
 * Launches `tk_norm_forward__<dtype>` (plain: `out`) or `tk_norm_forward__<dtype>_e4m3_g<N>` (fused cast) per the
 * launch table of norm_forward.cu. Zero rows: no launch.
 */
export function launchNormForward(
  op: string,
  device: Device,
  stream: Stream,
  r: ResolvedNorm,
  o: { out: Tensor | null; rstd: Tensor; residualOut: Tensor | null; cast: NormCastTarget | null },
): void {
  const x = r.xt;
  const rank = x.shape.length;
  const B = rank === 3 ? x.shape[0] : 1;
  const T = x.shape[rank - 2];
  const H = x.shape[rank - 1];
  if (B * T === 0) return;
  const c = o.cast;
  // bf16, enough rows (not when a test asks for a team width: that is a team kernel's knob): the row forms; fewer
  // rows, fp32, or a row form's knob off: the team kernels
  const t = normLaunchTuning;
  const rowsForm = x.dtype === "bf16" && t.teamThreads === 0 && B * T >= t.forwardWarpRowsMinRowsPerSm * config.getNumSms(device);
  // any H, no residual: one block of 4 warps per row, for normForward the row held in registers
  // (`_rr4_l2`; on views that allow 16-byte accesses `_tp16hr` below), for the cast landed in shared memory by a bulk
  // copy (`_e4m3_g<N>_br4`: 2H bytes of dynamic shared memory, the carveout of `bulkRowsCarveout`; `_e4m3_g<N>_br4y`,
  // compiled for aligned views only, where the views allow it)
  const bulkRows = rowsForm && !r.residual && !!c && t.castBulkRows;
  const regRows = rowsForm && !r.residual && !c && t.forwardRegRows;
  // H > 256 (N ≥ 32), with a residual, plain or cast: one warp per row (`_wr_res`, 8 rows per block; on views that
  // allow 16-byte accesses the casts run `_e4m3_g<N>_tp16c_res` by default, below)
  const wr = rowsForm && !!r.residual && H > 256 && t.residualWarpRows;
  // the register-rows case on views that allow 16-byte accesses (x, out, the weight): one block of 512 threads per
  // row, two passes, x held in registers between them (`_tp16hr`); other views keep `_rr4_l2`
  const twoPass = regRows && vec16(x) && vec16(o.out) && (!r.w || (r.w as DeviceTensor).addr % 16 === 0);
  // (the aligned-only forms of the casts, `_br4y` / `_tp16c_res`, where the views allow them)
  const aligned = () => !!c && castViewsAligned(x, r.w, c.data, c.outBf16, r.residual, o.residualOut);
  // (round 11, normLaunchTuning.castRowForm 1, the default: the residual casts on aligned views in `_tp16hr`'s
  // geometry, `_e4m3_g<N>_tp16c_res` (norm_cast_tp16.cu); 0: `_wr_res` (its aligned-only compile `_wr_resa` was
  // removed from the package in round 11))
  const castRow = t.castRowForm === 1 && wr && aligned();
  const form = castRow
    ? "_tp16c_res"
    : bulkRows
    ? (aligned() ? "_br4y" : "_br4")
    : twoPass
    ? "_tp16hr"
    : regRows
    ? "_rr4_l2"
    : wr
    ? "_wr_res"
    : "";
  const sym = (c ? `tk_norm_forward__${x.dtype}_e4m3_g${c.numPerChannels}` : `tk_norm_forward__${x.dtype}`) + form;
  const smem = castRow ? 0 : bulkRows ? 2 * H : wr ? normLaunchTuning.warpRowsSmemPad : 0;
  const fn = castRow ? kernelFunction(op, device, sym) : bulkRows ? kernelFunctionWithSmem(op, device, sym, smem, t.bulkRowsCarveout) : smem ? kernelFunctionWithSmem(op, device, sym, smem) : kernelFunction(op, device, sym);
  const P = teamThreads(H);
  const p = packet;
  p.u64(W.x, addr(x));
  p.u64(W.residual, addr(r.residual));
  p.u64(W.residual_out, addr(o.residualOut));
  p.u64(W.weight, addr(r.w));
  p.u64(W.out, addr(o.out));
  p.u64(W.rstd, addr(o.rstd));
  p.u64(W.data, c ? addr(c.data) : 0);
  p.u64(W.sf, c ? addr(c.sf) : 0);
  p.u64(W.out_bf16, c ? addr(c.outBf16) : 0);
  const [xb, xr] = rowStrides(x);
  const [rb, rr] = rowStrides(r.residual);
  const [ob, or] = rowStrides(o.residualOut);
  const [tb, tr] = rowStrides(o.out);
  p.u64(W.x_batch_stride, xb);
  p.u64(W.x_row_stride, xr);
  p.u64(W.residual_batch_stride, rb);
  p.u64(W.residual_row_stride, rr);
  p.u64(W.residual_out_batch_stride, ob);
  p.u64(W.residual_out_row_stride, or);
  p.u64(W.out_batch_stride, tb);
  p.u64(W.out_row_stride, tr);
  p.u64(W.sf_batch_stride, c ? c.g.storage : 0);
  p.u64(W.sf_stride0, c ? c.g.strides[0] : 0);
  p.u64(W.sf_stride1, c ? c.g.strides[1] : 0);
  p.u32(W.num_batches, B);
  p.u32(W.num_tokens, T);
  p.u32(W.hidden, H);
  p.u32(W.team_threads, P);
  p.u32(W.sf_rows, c ? c.g.paddedRows : 0);
  p.u32(
    W.flags,
    (r.w ? NORM_FWD_FLAG.weight : 0) | (r.residual ? NORM_FWD_FLAG.residual : 0) | (c?.outBf16 ? NORM_FWD_FLAG.outBf16 : 0) |
      (c?.roundSf ? NORM_FWD_FLAG.roundSf : 0) | (c?.packedUe8m0 ? NORM_FWD_FLAG.packedUe8m0 : 0),
  );
  p.f32(W.eps, r.eps); // the packer's Float32Array rounds: RN32(eps), RN32(outScale)
  p.f32(W.out_scale, r.outScale);
  p.f32(W.amax_clamp, config.amaxClamp.e4m3);
  // team kernels: 8 blocks per SM by default, two full waves of the 4 resident bf16 blocks (plain and cast: 64
  // registers), four of the 2 fp32 ones (a count that is not a multiple of the resident blocks leaves a part-empty
  // last wave). _wr_res: a warp per row, one block per 8 rows by default (the block scheduler balances the tail).
  // _rr4_l2, _e4m3_g<N>_br4[y]: one block of 128 threads per row, one block per row by default; _tp16hr: one block
  // of 512 threads per row, one block per row by default.
  // _e4m3_g<N>_tp16c_res: one block of 512 threads per row, one block per row by default.
  const oneRow = regRows || bulkRows || castRow;
  const rowsPerBlock = oneRow ? 1 : wr ? NORM_BLOCK_THREADS / 32 : NORM_BLOCK_THREADS / P;
  const perSm = forwardBlocksPerSm(wr || oneRow ? 1 << 20 : 8);
  const grid = Math.max(1, Math.min(Math.ceil((B * T) / rowsPerBlock), perSm * config.getNumSms(device), 2 ** 31 - 1));
  // PDL (docs/perf-notes/perf10-pdl.md): the kernels that issue griddepcontrol.launch_dependents first and
  // griddepcontrol.wait before their first global access (`_tp16hr`, `_e4m3_g<N>_br4y`, `_e4m3_g<N>_tp16c_res`) are launched as programmatic dependents of
  // the previous kernel in the stream while `config.pdl` is set (read at every launch); every other form, and these
  // with `config.pdl` off, launch plainly (the two instructions then have no effect).
  const pdl = config.pdl && pdlForms.has(form);
  p.setLaunch(fn, stream.handle, grid, twoPass || castRow ? 512 : oneRow ? 128 : NORM_BLOCK_THREADS, smem, pdl, device.index);
  p.launch(op);
}

/** The forms of norm_forward.cu compiled with the griddepcontrol prologue (launched with PDL while config.pdl). */
const pdlForms: ReadonlySet<string> = new Set(["_tp16hr", "_br4y", "_tp16c_res"]);

/**
 * The function handle and the PDL flag of the launch header the norm forward family (normForward,
 * normForwardAndPerTokenCast, addRmsnormForwardAndPerTokenCast) last sent (tests: which kernel ran, and whether with
 * the programmatic-stream-serialization attribute).
 */
export function normForwardLastLaunch(): { fn: number; pdl: boolean } {
  const u = new Uint32Array(packet.bytes.buffer, packet.bytes.byteOffset, 16);
  return { fn: u[0] + u[1] * 4294967296, pdl: (u[11] & 1) === 1 };
}

/**
 * RMSNorm backward: `normBackward` (spec/API.md §3.2; numerics and legal arguments: spec/norm-rope-rand.md §A.5,
 * D.2, D.3, D.10). Checks, then dispatch to the CPU reference (`norm_backward.ref.ts`) or the CUDA kernels
 * (`kernels-src/cuda/norm/norm_backward.cu`).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged } from "../../core/stage.ts";
import { type Device, type DeviceTensor, deviceEmptyStrided, deviceRuntime, type HostTensor, type Stream, type Tensor } from "../../core/tensor.ts";
import { kernelFunction, kernelFunctionWithSmem, LaunchPacket } from "../../ffi/cuda.ts";
import { checkCudaHidden, checkWeight, shapeText } from "./checks.ts";
import { NORM_BLOCK_THREADS, normLaunchTuning, normStream, teamThreads } from "./launch.ts";
import { NORM_BWD_FLAG, NormBackwardParams } from "./norm_backward.params.ts";
import { normBackwardRef, WEIGHT_GRAD_SLOTS } from "./norm_backward.ref.ts";

/** Options of {@link normBackward}. */
export interface NormBackwardOptions extends OpOptions {
  /** The forward's `outScale` (rounded to binary32). Default 1. */
  outScale?: number;
  /** Gradient flowing into the forward's residual output, added to `xGrad`; like `gradOut`. */
  residualOutGrad?: Tensor;
  /** dtype of the weight gradient. Default `"fp32"`. */
  weightGradDtype?: "fp32" | "bf16";
  /** Add the new weight gradient to `out.weightGrad` (required then) instead of overwriting it. Default false. */
  accumulateWeightGrad?: boolean;
  /** Preallocated outputs: `xGrad` like `x` (contiguous), `weightGrad` `[H]` of `weightGradDtype` (contiguous). */
  out?: { xGrad?: Tensor; weightGrad?: Tensor };
}

const KEYS = ["outScale", "residualOutGrad", "weightGradDtype", "accumulateWeightGrad"];
const OUT_KEYS = ["xGrad", "weightGrad"];

/** `gradOut` / `residualOutGrad`: shape and dtype of `x`, last stride 1 (spec D.10). */
function checkLikeX(op: string, arg: string, t: unknown, x: Tensor): Tensor {
  const r = checkTensor(op, arg, t, [x.dtype]);
  if (r.shape.length !== 2 || r.shape[0] !== x.shape[0] || r.shape[1] !== x.shape[1]) {
    throw new TkError(op, arg, "SHAPE", `expected shape ${shapeText(x.shape)} (as x), got ${shapeText(r.shape)}`);
  }
  if (r.strides[1] !== 1) throw new TkError(op, arg, "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${r.strides[1]}`);
  return r;
}

/**
 * Gradients of {@link normForward}'s output with respect to its normalized input and its weight. `x` is the
 * forward's `normInput` (2-D `[T, H]`, fp32 or bf16, last stride 1, `H` a multiple of 32), `gradOut` the gradient
 * of `out` (like `x`), `rstd` the forward's fp32 `[T]`. Per row: `xh = x·rstd`, `g = gradOut·outScale`,
 * `gw = g·w`, `xGrad = (gw − xh·(Σ xh·gw)/H)·rstd (+ residualOutGrad)` in x's dtype (row sum by the fixed tree
 * of spec D.2). The weight gradient `Σ_t xh·g` is summed in 512 token slots in a fixed order (spec D.3), so its
 * bits are the same on every backend and GPU. Returns `[xGrad, weightGrad]` (`weightGrad` is `null` when
 * `weight` is `null`).
 *
 * Device inputs run the CUDA kernels on `stream` (`xGrad` allocated there, contiguous); host inputs run the CPU
 * reference unless `backend` / `TK_BACKEND` says `"cuda"`. Both give the same bytes, whatever the GPU.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normBackward, normForward } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const x = tensor(new Float32Array(32).map((_, i) => i - 16), [1, 32], "fp32");
 * const w = tensor(new Float32Array(32).fill(1), [32], "fp32");
 * const [, rstd] = normForward(x, w, { eps: 1e-6 });
 * const dy = tensor(new Float32Array(32).fill(0.5), [1, 32], "fp32");
 * const [xGrad, wGrad] = normBackward(x, w, dy, rstd, {});
 * assert.deepEqual(xGrad.shape, [1, 32]);
 * assert.equal(wGrad!.dtype, "fp32");
 * ```
 */
export function normBackward(
  x: Tensor,
  weight: Tensor | null,
  gradOut: Tensor,
  rstd: Tensor,
  options: NormBackwardOptions = {},
): [xGrad: Tensor, weightGrad: Tensor | null] {
  const op = "normBackward";
  checkOptions(op, options, KEYS);
  const o = options ?? {};
  const xt = checkTensor(op, "x", x, ["fp32", "bf16"]);
  if (xt.shape.length !== 2) throw new TkError(op, "x", "SHAPE", `expected a 2-D [T, H] tensor, got shape ${shapeText(xt.shape)}`);
  const [T, H] = xt.shape;
  if (H < 32 || H % 32 !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a positive multiple of 32 (got ${H})`);
  if (xt.strides[1] !== 1) throw new TkError(op, "x", "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${xt.strides[1]}`);
  const w = checkWeight(op, weight, xt, H);
  const dy = checkLikeX(op, "gradOut", gradOut, xt);
  const rs = checkTensor(op, "rstd", rstd, ["fp32"]);
  if (rs.shape.length !== 1 || rs.shape[0] !== T) throw new TkError(op, "rstd", "SHAPE", `expected shape [${T}], got ${shapeText(rs.shape)}`);
  if (!rs.isContiguous()) throw new TkError(op, "rstd", "LAYOUT", `must be contiguous, got strides [${rs.strides.join(", ")}]`);
  const ro = o.residualOutGrad !== undefined ? checkLikeX(op, "residualOutGrad", o.residualOutGrad, xt) : null;
  const outScale = o.outScale ?? 1;
  if (typeof outScale !== "number" || !Number.isFinite(outScale)) throw new TkError(op, "outScale", "VALUE", `must be a finite number (got ${describe(outScale)})`);
  const wgDtype = o.weightGradDtype === undefined ? "fp32" : oneOf(op, "weightGradDtype", o.weightGradDtype, ["fp32", "bf16"] as const);
  const accumulate = optBool(op, "accumulateWeightGrad", o.accumulateWeightGrad);

  const out = o.out;
  if (out !== undefined && (typeof out !== "object" || out === null || Array.isArray(out))) {
    throw new TkError(op, "out", "VALUE", "expected { xGrad?, weightGrad? }");
  }
  if (out) for (const k in out) if (!OUT_KEYS.includes(k)) throw new TkError(op, `out.${k}`, "VALUE", `unknown output (expected one of ${OUT_KEYS.join(", ")})`);
  if (accumulate && !w) throw new TkError(op, "accumulateWeightGrad", "VALUE", "requires a weight (there is no weight gradient without one)");
  if (accumulate && out?.weightGrad === undefined) throw new TkError(op, "accumulateWeightGrad", "VALUE", "requires out.weightGrad, the tensor to accumulate into");
  const inputs: Tensor[] = [xt, dy, rs];
  if (w) inputs.push(w);
  if (ro) inputs.push(ro);
  let outWg: Tensor | null = null;
  if (out?.weightGrad !== undefined) {
    if (!w) throw new TkError(op, "out.weightGrad", "OUT_MISMATCH", "is only written with a weight");
    outWg = checkOutTensor(op, "out.weightGrad", out.weightGrad, wgDtype);
    if (outWg.shape.length !== 1 || outWg.shape[0] !== H) throw new TkError(op, "out.weightGrad", "OUT_MISMATCH", `expected shape [${H}], got ${shapeText(outWg.shape)}`);
    if (!outWg.isContiguous()) throw new TkError(op, "out.weightGrad", "OUT_MISMATCH", `must be contiguous, got strides [${outWg.strides.join(", ")}]`);
    for (const i of inputs) if (overlaps(outWg, i)) throw new TkError(op, "out.weightGrad", "OUT_MISMATCH", "overlaps an input");
  }
  let outDx: Tensor | null = null;
  if (out?.xGrad !== undefined) {
    outDx = checkOutTensor(op, "out.xGrad", out.xGrad, xt.dtype);
    if (outDx.shape.length !== 2 || outDx.shape[0] !== T || outDx.shape[1] !== H) {
      throw new TkError(op, "out.xGrad", "OUT_MISMATCH", `expected shape ${shapeText(xt.shape)} (as x), got ${shapeText(outDx.shape)}`);
    }
    if (!outDx.isContiguous()) throw new TkError(op, "out.xGrad", "OUT_MISMATCH", `must be contiguous, got strides [${outDx.strides.join(", ")}]`);
    for (const i of inputs) if (overlaps(outDx, i)) throw new TkError(op, "out.xGrad", "OUT_MISMATCH", "overlaps an input");
    if (outWg && overlaps(outDx, outWg)) throw new TkError(op, "out.xGrad", "OUT_MISMATCH", "overlaps out.weightGrad");
  }
  // Four tensors at most go to place(); the rest are checked to live with them by a second call.
  const pl = place(op, o.backend, xt, w, dy, rs);
  place(op, o.backend, xt, ro, outDx, outWg);
  checkCudaHidden(op, pl.backend, H);

  if (pl.backend === "cuda" && !pl.staged) {
    const stream = normStream(op, pl, o.stream);
    const dx = outDx ?? deviceEmptyStrided(op, pl.device, [T, H], [H, 1], xt.dtype, T * H, stream);
    const wg = w ? (outWg ?? deviceEmptyStrided(op, pl.device, [H], [1], wgDtype, H, stream)) : null;
    launchNormBackward(op, pl.device, stream, { x: xt, weight: w, gradOut: dy, rstd: rs, residualOutGrad: ro, xGrad: dx, weightGrad: wg }, outScale, accumulate);
    return [dx, wg];
  }
  if (pl.backend === "cuda") {
    // Host inputs on the device; an accumulated gradient travels in as an input and comes back whole.
    const local = { outScale, weightGradDtype: wgDtype, accumulateWeightGrad: accumulate };
    const res = runOnDeviceStaged(op, pl.device, [xt, w, dy, rs, ro, accumulate ? outWg : null], [outDx, outWg], ([dx, dw, ddy, drs, dro, dwg]) => {
      const [g, gw] = normBackward(dx!, dw, ddy!, drs!, { ...local, residualOutGrad: dro ?? undefined, out: dwg ? { weightGrad: dwg } : undefined });
      return gw ? [g, gw] : [g];
    });
    return [res[0], w ? res[1] : null];
  }

  const args = { outScale, weightGradDtype: wgDtype, accumulateWeightGrad: accumulate };
  const hx = onHost(xt) as HostTensor;
  const hw = onHost(w);
  const hdy = onHost(dy) as HostTensor;
  const hrs = onHost(rs) as HostTensor;
  const hro = onHost(ro);
  if (!pl.staged) {
    return normBackwardRef(hx, hw, hdy, hrs, hro, args, {
      xGrad: (outDx as HostTensor | null) ?? undefined,
      weightGrad: (outWg as HostTensor | null) ?? undefined,
    });
  }
  // Staged: an accumulated gradient is read from the device first, then written back whole.
  const hwg = accumulate ? (onHost(outWg) as HostTensor) : undefined;
  const [dx, wg] = normBackwardRef(hx, hw, hdy, hrs, hro, args, { weightGrad: hwg });
  return [resultToDevice(op, dx, outDx, pl.device), wg ? resultToDevice(op, wg, outWg, pl.device) : null];
}

// ---- CUDA launch ------------------------------------------------------------------------------------------

const packet = new LaunchPacket(NormBackwardParams);
const W = packet.w;
/**
 * Dynamic shared memory of the bf16 rows kernels (norm_backward.cu kAccBytes): the 32 weight-gradient partials of
 * each of the 256 threads, fp32. With their static shared memory (34 KiB; `_b4` and `_b4swc` 18 KiB) that
 * is above 48 KiB, so the launch raises the function's limit first. fp32 rows kernels take none.
 */
const BF16_ACC_SMEM = 2 * 16 * 4 * NORM_BLOCK_THREADS;
/**
 * `_b4sw7_unit` (norm_backward_sw7.cu, {@link normLaunchTuning}.backwardForm "sw7"): the one hidden size it is
 * compiled for (K = 448 chunks), its block (224 threads, two chunks each) and its partials (28 KiB).
 */
const SW7_HIDDEN = 7168;
const SW7_THREADS = SW7_HIDDEN / 32;
const SW7_ACC_SMEM = 2 * 16 * 4 * SW7_THREADS;

/** normLaunchTuning.backwardPrefetch → the flag bit (read by the `_b4` kernels only). */
const PREFETCH_FLAG: Record<string, number> = { bulk: NORM_BWD_FLAG.prefetchBulk, thread: NORM_BWD_FLAG.prefetchThread, off: 0 };

function addr(t: Tensor | null): number {
  return t ? (t as DeviceTensor).addr : 0;
}

/** Whether a view's base and row stride (elements of `bytes` each) allow 16-byte accesses on every row. */
function aligned16(t: Tensor, rows: number, bytes: number): boolean {
  return addr(t) % 16 === 0 && (rows <= 1 || (t.strides[0] * bytes) % 16 === 0);
}

/**
 * Whether the bf16 rows kernel is the one with the launch conditions compiled in (`_b4swc_unit`; see
 * {@link backwardRowsForm}): a bf16 launch of the four-block form with a weight, no residualOutGrad, outScale = 1
 * (after RN32), 4096 < H ≤ 8192 (one team of 256 threads a block, a tree of 512 nodes) and 16-byte aligned x,
 * gradOut, xGrad and weight views. Otherwise `_b4` (same bits). (Round 8's `_b4swx_unit`, the first kernel with them
 * compiled in: 67.7% of copy against 59.0% for `_b4` at 16384 × 7168, docs/perf-notes/perf8-nbw.md; replaced by
 * `_b4swc_unit` in round 11, removed in trim24.) Exported for the GPU tests only (not re-exported by mod.ts).
 */
export function usesB4swc(
  t: { x: Tensor; weight: Tensor | null; gradOut: Tensor; residualOutGrad: Tensor | null; xGrad: Tensor },
  outScale: number,
): boolean {
  const [T, H] = t.x.shape;
  if (t.x.dtype !== "bf16" || Math.fround(outScale) !== 1) return false;
  if (!t.weight || t.residualOutGrad || H <= 4096 || H > 8192) return false;
  return aligned16(t.x, T, 2) && aligned16(t.gradOut, T, 2) && addr(t.xGrad) % 16 === 0 && addr(t.weight) % 16 === 0;
}

/**
 * The rows kernel's form suffix of a launch: where {@link usesB4swc}, `_b4swc` (norm_backward_sw.cu, whole 128-byte
 * lines of x, gradOut and xGrad per warp instruction; H200, 16384 × 7168: 72.2% of copy against 68.5% for round 8's
 * `_b4swx`, 8192: 67.1% against 63.0%; docs/perf-notes/perf11-nbw.md; outScale = 1 only), or there at H = 7168 with
 * {@link normLaunchTuning}.backwardForm "sw7" `_b4sw7` (norm_backward_sw7.cu, docs/perf-notes/perf32-nbw.md); `_b4`
 * for every other bf16 launch; "" for fp32. Exported for the GPU tests only (not re-exported by mod.ts).
 */
export function backwardRowsForm(
  t: { x: Tensor; weight: Tensor | null; gradOut: Tensor; residualOutGrad: Tensor | null; xGrad: Tensor },
  outScale: number,
): "" | "_b4" | "_b4swc" | "_b4sw7" {
  if (usesB4swc(t, outScale)) {
    return normLaunchTuning.backwardForm === "sw7" && t.x.shape[1] === SW7_HIDDEN ? "_b4sw7" : "_b4swc";
  }
  return t.x.dtype === "bf16" ? "_b4" : "";
}

/**
 * Launches norm_backward.cu per its launch table: `tk_norm_backward__<dtype>` (bf16: `_b4swc_unit` of
 * norm_backward_sw.cu, where {@link usesB4swc}, else `_b4`, with 32 KiB
 * of dynamic shared memory;
 * `_unit` for outScale = 1) over the
 * 512 token slots, then (with a weight) `tk_norm_backward_weight_grad` over the columns, the slot partials living in a stream-ordered fp32 workspace `[min(T, 512), H]`. `T = 0`: no launch;
 * an allocated gradient is zero-filled, an accumulated one left as it is (spec D.3).
 */
function launchNormBackward(
  op: string,
  device: Device,
  stream: Stream,
  t: { x: Tensor; weight: Tensor | null; gradOut: Tensor; rstd: Tensor; residualOutGrad: Tensor | null; xGrad: Tensor; weightGrad: Tensor | null },
  outScale: number,
  accumulate: boolean,
): void {
  const [T, H] = t.x.shape;
  const wg = t.weightGrad as DeviceTensor | null;
  if (T === 0) {
    if (wg && !accumulate) deviceRuntime(op).memset(device, wg.addr, 0, H * (wg.dtype === "bf16" ? 2 : 4), stream);
    return;
  }
  const slots = Math.min(T, WEIGHT_GRAD_SLOTS);
  const ws = wg ? deviceEmptyStrided(op, device, [slots, H], [H, 1], "fp32", slots * H, stream) : null;
  const P = teamThreads(H);
  const p = packet;
  p.u64(W.x, addr(t.x));
  p.u64(W.grad_out, addr(t.gradOut));
  p.u64(W.residual_out_grad, addr(t.residualOutGrad));
  p.u64(W.rstd, addr(t.rstd));
  p.u64(W.weight, addr(t.weight));
  p.u64(W.x_grad, addr(t.xGrad));
  p.u64(W.workspace, addr(ws));
  p.u64(W.weight_grad, addr(wg));
  p.u64(W.x_row_stride, T > 1 ? t.x.strides[0] : 0);
  p.u64(W.grad_out_row_stride, T > 1 ? t.gradOut.strides[0] : 0);
  p.u64(W.residual_out_grad_row_stride, t.residualOutGrad && T > 1 ? t.residualOutGrad.strides[0] : 0);
  p.u32(W.num_tokens, T);
  p.u32(W.hidden, H);
  p.u32(W.team_threads, P);
  p.u32(
    W.flags,
    (t.weight ? NORM_BWD_FLAG.weight : 0) | (t.residualOutGrad ? NORM_BWD_FLAG.residualOutGrad : 0) |
      (accumulate ? NORM_BWD_FLAG.accumulate : 0) | (wg?.dtype === "bf16" ? NORM_BWD_FLAG.weightGradBf16 : 0) |
      (PREFETCH_FLAG[normLaunchTuning.backwardPrefetch] ?? 0),
  );
  p.f32(W.out_scale, outScale);
  const teams = NORM_BLOCK_THREADS / P;
  // outScale = 1 (after RN32, as the kernel sees it): the kernel without the dy ⊗ outScale multiplications
  // bf16: the four-blocks-per-SM form (_b4); where its compiled-in launch conditions hold (outScale = 1 only),
  // _b4swc of norm_backward_sw.cu
  const form = backwardRowsForm(t, outScale);
  const sym = `tk_norm_backward__${t.x.dtype}${form}${Math.fround(outScale) === 1 ? "_unit" : ""}`;
  // _b4sw7: one slot per block of 224 threads (teams = 1, as _b4swc's P = 256 at H = 7168)
  const sw7 = form === "_b4sw7";
  const smem = sw7 ? SW7_ACC_SMEM : t.x.dtype === "bf16" ? BF16_ACC_SMEM : 0;
  const fn = smem ? kernelFunctionWithSmem(op, device, sym, smem) : kernelFunction(op, device, sym);
  const block = sw7 ? SW7_THREADS : NORM_BLOCK_THREADS;
  p.setLaunch(fn, stream.handle, Math.ceil(slots / teams), block, smem, false, device.index);
  p.launch(op);
  if (ws) {
    // the fold: 8 subtree warps (256 threads)
    const fold = kernelFunction(op, device, "tk_norm_backward_weight_grad");
    // programmatic dependent launch: the fold's launch overlaps the rows kernel; it waits for that grid's end
    const pdl = config.pdl && normLaunchTuning.backwardFoldPdl;
    p.setLaunch(fold, stream.handle, H / 32, NORM_BLOCK_THREADS, 0, pdl, device.index);
    p.launch(op);
    ws.dispose(); // stream-ordered: freed after the fold
  }
}

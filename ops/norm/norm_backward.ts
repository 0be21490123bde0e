/**
 * RMSNorm backward: `normBackward` (spec/API.md §3.2; numerics and legal arguments: spec/norm-rope-rand.md §A.5,
 * D.2, D.3, D.10). Checks, then dispatch to the CPU reference (`norm_backward.ref.ts`). There is no CUDA kernel
 * yet: device inputs run only with `backend: "cpu"` (staged through the host).
 * @module
 */
import { type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice } from "../../core/stage.ts";
import type { HostTensor, Tensor } from "../../core/tensor.ts";
import { checkWeight, shapeText } from "./checks.ts";
import { normBackwardRef } from "./norm_backward.ref.ts";

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
 * There is no CUDA kernel yet: host tensors run the CPU reference; device tensors need `backend: "cpu"`.
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
  const pl = placeWithoutKernel(op, o.backend, xt, w, dy, rs);
  placeWithoutKernel(op, o.backend, xt, ro, outDx, outWg);

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

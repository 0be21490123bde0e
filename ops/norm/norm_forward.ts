/**
 * RMSNorm forward: `normForward` (spec/API.md §3.2; numerics and legal arguments: spec/norm-rope-rand.md §A.3,
 * D.2, D.4, D.10). Checks, then dispatch to the CPU reference (`norm_forward.ref.ts`). There is no CUDA kernel
 * yet: device inputs run only with `backend: "cpu"` (staged through the host).
 * @module
 */
import { type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, overlaps, selfOverlapping } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice } from "../../core/stage.ts";
import type { HostTensor, Tensor } from "../../core/tensor.ts";
import { checkWeight, shapeText } from "./checks.ts";
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
 * There is no CUDA kernel yet: host tensors run the CPU reference; device tensors need `backend: "cpu"`.
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
  if (out !== undefined && (typeof out !== "object" || out === null || Array.isArray(out))) {
    throw new TkError(op, "out", "VALUE", "expected { out?, rstd?, residualOut? }");
  }
  if (out) for (const k in out) if (!OUT_KEYS.includes(k)) throw new TkError(op, `out.${k}`, "VALUE", `unknown output (expected one of ${OUT_KEYS.join(", ")})`);
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
  // Four tensors at most go to place(); the outputs are checked to live with the inputs by a second call.
  const pl = placeWithoutKernel(op, options.backend, xt, w, residual, resOut);
  placeWithoutKernel(op, options.backend, xt, outOut, outRstd);

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
    return normForwardRef(hx, hw, hr, eps, outScale, given);
  }
  const [o, r, s] = normForwardRef(hx, hw, hr, eps, outScale, {});
  const device = pl.device;
  return [
    resultToDevice(op, o, outOut, device),
    resultToDevice(op, r, outRstd, device),
    residual ? resultToDevice(op, s, resOut, device) : xt,
  ];
}

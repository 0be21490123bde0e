/**
 * Argument checks shared by `normForward` and `normBackward` (spec/norm-rope-rand.md D.10).
 * @module
 */
import { checkTensor } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import type { Tensor } from "../../core/tensor.ts";

/** `[a, b, …]` for messages. */
export function shapeText(s: readonly number[]): string {
  return `[${s.join(", ")}]`;
}

/** `weight`: `null` (unit weight) or `[H]` of x's dtype, contiguous. */
export function checkWeight(op: string, weight: unknown, x: Tensor, H: number): Tensor | null {
  if (weight === null) return null;
  if (weight === undefined) throw new TkError(op, "weight", "VALUE", "expected a tensor or null (unit weight), got undefined");
  const w = checkTensor(op, "weight", weight, ["fp32", "bf16"]);
  if (w.dtype !== x.dtype) throw new TkError(op, "weight", "DTYPE", `expected dtype ${x.dtype} (as x), got ${w.dtype}`);
  if (w.shape.length !== 1 || w.shape[0] !== H) throw new TkError(op, "weight", "SHAPE", `expected shape [${H}], got ${shapeText(w.shape)}`);
  if (!w.isContiguous()) throw new TkError(op, "weight", "LAYOUT", `must be contiguous, got strides [${w.strides.join(", ")}]`);
  return w;
}

/** D.8: the largest hidden size the CUDA kernels take (the CPU reference takes any H the formulas allow). */
export const CUDA_MAX_HIDDEN = 8192;

/** D.8 / D.10: on the CUDA backend `H ≤ 8192` (`SHAPE` on `x`), checked before any allocation or launch. */
export function checkCudaHidden(op: string, backend: "cpu" | "cuda", H: number): void {
  if (backend === "cuda" && H > CUDA_MAX_HIDDEN) {
    throw new TkError(op, "x", "SHAPE", `hidden size must be at most ${CUDA_MAX_HIDDEN} on the CUDA backend (got ${H}; the CPU backend takes it)`);
  }
}

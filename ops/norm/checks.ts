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

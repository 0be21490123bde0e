/**
 * Where the result of a kernel-less quant op goes (spec/API.md §1.6): the host result itself, a caller's `out`
 * rewritten with it, or — for device inputs run with `backend: "cpu"` — a device copy (into `out` when given).
 * @module
 */
import type { HostPlacement } from "../../core/backend.ts";
import { copyInto, resultToDevice } from "../../core/stage.ts";
import type { HostTensor, Tensor } from "../../core/tensor.ts";

/** Delivers host result `res` of `op` according to placement `pl`, into `out` when one is given. */
export function deliverHostResult(op: string, res: HostTensor, out: Tensor | null, pl: HostPlacement): Tensor {
  if (pl.staged) return resultToDevice(op, res, out, pl.device);
  if (!out) return res;
  copyInto(op, out, res);
  return out;
}

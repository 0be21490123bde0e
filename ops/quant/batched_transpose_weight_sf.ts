/**
 * `batchedTransposeWeightSf` (spec/API.md §3.1; layouts and legal arguments: spec/quant.md §9.1, §11.1).
 * Checks, then dispatch to the CPU reference (`batched_transpose_weight_sf.ref.ts`). There is no CUDA kernel
 * yet: a call that would run on a device is refused.
 * @module
 */
import { type HostPlacement, type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkContiguous, checkOptions, checkOutTensor, checkTensor, describe, oneOf, overlaps } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost } from "../../core/stage.ts";
import { DeviceTensor, type HostTensor, type Tensor } from "../../core/tensor.ts";
import { batchedTransposeWeightSfRef, weightSfGeometry } from "./batched_transpose_weight_sf.ref.ts";

/** Options of {@link batchedTransposeWeightSf}. */
export interface BatchedTransposeWeightSfOptions extends OpOptions {
  /** Weight block size of the scales: 32 or 128. */
  blockSize: number;
  /** Per weight: return sf1 as `[G?, ⌈nS/4⌉, k]` (same storage) instead of `[G?, k, ⌈nS/4⌉]`. */
  transposeSf1: readonly boolean[];
  /** Per weight, a previously returned `[sf0, sf1]` pair to rewrite in place, or null for new outputs. */
  out?: readonly (readonly [Tensor, Tensor] | null)[];
}

const KEYS = ["blockSize", "transposeSf1"];

/** Checks `t` against an expected int32 output geometry and 32-byte alignment (§9.1). */
function checkOutPair(op: string, arg: string, t: unknown, shape: readonly number[], strides: readonly number[], inputs: readonly Tensor[]): Tensor {
  const o = checkOutTensor(op, arg, t, "int32");
  const ok = o.shape.length === shape.length && shape.every((d, i) => o.shape[i] === d && (d <= 1 || o.strides[i] === strides[i]));
  if (!ok) {
    throw new TkError(op, arg, "OUT_MISMATCH", `expected shape [${shape.join(", ")}] with strides [${strides.join(", ")}], got [${o.shape.join(", ")}] / [${o.strides.join(", ")}]`);
  }
  const addr = o instanceof DeviceTensor ? o.addr : (o as HostTensor).data.byteOffset + o.offset * 4;
  if (addr % 32 !== 0) throw new TkError(op, arg, "OUT_MISMATCH", `storage must be 32-byte aligned (starts at byte offset ${addr})`);
  for (const i of inputs) if (overlaps(o, i)) throw new TkError(op, arg, "OUT_MISMATCH", "overlaps an input");
  return o;
}

/**
 * Converts the fp32 power-of-two block scales of several weights into the two packed-UE8M0 layouts DeepGEMM
 * reads (spec/quant.md §9.1). `sfs[i]` is fp32 contiguous `[nS, kS]` or `[G, nS, kS]` (`G > 0`) for an
 * `n × k` weight with `n = nS·blockSize`, `k = kS·blockSize`, both multiples of 128. Per weight it returns
 * `[sf0, sf1]`, int32: sf0 `[G?, n, ⌈kS/4⌉]` with strides `[…, 1, n]` (row index fastest), sf1
 * `[G?, k, ⌈nS/4⌉]` with strides `[…, 1, k]`, or with `transposeSf1[i]` the same storage as
 * `[G?, ⌈nS/4⌉, k]`. Each word packs the exponent bytes `(bits >>> 23) & 0xFF` of four consecutive blocks, the
 * first in the low byte. `out[i]`, when given, is a previously returned pair, rewritten in place.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { batchedTransposeWeightSf, tensor } from "../../mod.ts";
 * const sf = tensor([1, 2, 4, 0.5], [1, 4], "fp32"); // a 128 × 512 weight, blocks of 128
 * const [[sf0, sf1]] = batchedTransposeWeightSf([sf], { blockSize: 128, transposeSf1: [false] });
 * assert.deepEqual([sf0.shape, sf0.strides, sf1.shape], [[128, 1], [1, 128], [512, 1]]);
 * assert.equal((sf0 as { data: Int32Array }).data[0], 0x7e81807f); // bytes 127, 128, 129, 126
 * ```
 */
export function batchedTransposeWeightSf(sfs: readonly Tensor[], options: BatchedTransposeWeightSfOptions): [Tensor, Tensor][] {
  const op = "batchedTransposeWeightSf";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "blockSize and transposeSf1 are required");
  if (!Array.isArray(sfs)) throw new TkError(op, "sfs", "VALUE", `expected an array of fp32 tensors, got ${describe(sfs)}`);
  const bs = oneOf(op, "blockSize", options.blockSize, [32, 128]);
  const tr = options.transposeSf1;
  if (!Array.isArray(tr) || tr.length !== sfs.length || tr.some((b) => typeof b !== "boolean")) {
    throw new TkError(op, "transposeSf1", "VALUE", `expected ${sfs.length} booleans, one per scale tensor (got ${describe(tr)})`);
  }
  const outs = options.out;
  if (outs !== undefined && (!Array.isArray(outs) || outs.length !== sfs.length)) {
    throw new TkError(op, "out", "VALUE", `expected ${sfs.length} entries ([sf0, sf1] or null), got ${describe(outs)}`);
  }
  const checked: { sf: Tensor; out: [Tensor, Tensor] | null; pl: HostPlacement }[] = [];
  sfs.forEach((s, i) => {
    const arg = `sfs[${i}]`;
    const t = checkTensor(op, arg, s, ["fp32"]);
    if (t.shape.length !== 2 && t.shape.length !== 3) throw new TkError(op, arg, "SHAPE", `expected [nS, kS] or [G, nS, kS], got [${t.shape.join(", ")}]`);
    checkContiguous(op, arg, t);
    const dense = t.shape.length === 2;
    if (!dense && t.shape[0] <= 0) throw new TkError(op, arg, "SHAPE", `the group count G must be positive (got ${t.shape[0]})`);
    const [nS, kS] = dense ? t.shape : t.shape.slice(1);
    if ((nS * bs) % 128 !== 0) throw new TkError(op, arg, "SHAPE", `n = ${nS}·${bs} must be a multiple of 128`);
    if ((kS * bs) % 128 !== 0) throw new TkError(op, arg, "SHAPE", `k = ${kS}·${bs} must be a multiple of 128`);
    let out: [Tensor, Tensor] | null = null;
    const o = outs?.[i];
    if (o !== undefined && o !== null) {
      if (!Array.isArray(o) || o.length !== 2) throw new TkError(op, `out[${i}]`, "VALUE", `expected an [sf0, sf1] pair or null, got ${describe(o)}`);
      const geo = weightSfGeometry(dense ? null : t.shape[0], nS, kS, bs, tr[i]);
      const o0 = checkOutPair(op, `out[${i}][0]`, o[0], geo.sf0.shape, geo.sf0.strides, sfs);
      const o1 = checkOutPair(op, `out[${i}][1]`, o[1], geo.sf1.shape, geo.sf1.strides, sfs);
      if (overlaps(o0, o1)) throw new TkError(op, `out[${i}][1]`, "OUT_MISMATCH", "overlaps its sf0");
      for (const c of checked) if (c.out && c.out.some((p) => overlaps(p, o0) || overlaps(p, o1))) throw new TkError(op, `out[${i}]`, "OUT_MISMATCH", "overlaps another out entry");
      out = [o0, o1];
    }
    const pl = placeWithoutKernel(op, options.backend, sfs[0], t, out?.[0], out?.[1]);
    checked.push({ sf: t, out, pl });
  });
  return checked.map(({ sf, out, pl }, i) => {
    const [sf0, sf1] = batchedTransposeWeightSfRef(onHost(sf) as HostTensor, bs, tr[i]);
    return [deliverHostResult(op, sf0, out?.[0] ?? null, pl), deliverHostResult(op, sf1, out?.[1] ?? null, pl)];
  });
}

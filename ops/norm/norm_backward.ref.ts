/**
 * CPU reference of `normBackward` — spec/norm-rope-rand.md §A.5 (row gradient; the row dot product by the D.2
 * tree) and D.3 (the weight gradient: 512 token slots accumulated in ascending token order, then folded by
 * halving — independent of any SM count). Every binary32 operation is `Math.fround` of the binary64 result, in the
 * order the spec writes. Numerics only: arguments are checked by `norm_backward.ts`.
 * @module
 */
import { decodeBf16, encodeBf16 } from "../../core/dtype.ts";
import { type HostTensor, hostZeros } from "../../core/tensor.ts";
import { loadRow, rmsTree, rowOffsets, storeRow } from "./norm_forward.ref.ts";

const fr = Math.fround;

/** Token slots of the weight-gradient reduction (spec D.3): a constant of the algorithm, not of the device. */
export const WEIGHT_GRAD_SLOTS = 512;

/** Resolved options of one backward call. */
export interface NormBackwardArgs {
  readonly outScale: number;
  readonly weightGradDtype: "fp32" | "bf16";
  /** Add the new gradient to `weightGrad`'s contents (which must then be given). */
  readonly accumulateWeightGrad: boolean;
}

/**
 * `normBackward` (§A.5, D.3) over the rows of 2-D `x`. Writes `xGrad` (allocated contiguous when not given) and,
 * with `weight`, `weightGrad` (allocated zero-filled when not given). Returns `[xGrad, weightGrad | null]`.
 */
export function normBackwardRef(
  x: HostTensor,
  weight: HostTensor | null,
  gradOut: HostTensor,
  rstd: HostTensor,
  residualOutGrad: HostTensor | null,
  a: NormBackwardArgs,
  given: { xGrad?: HostTensor; weightGrad?: HostTensor },
): [HostTensor, HostTensor | null] {
  const [T, H] = x.shape;
  const xGrad = given.xGrad ?? hostZeros(x.shape, x.dtype);
  const weightGrad = weight ? (given.weightGrad ?? hostZeros([H], a.weightGradDtype)) : null;
  const xRows = rowOffsets(x);
  const dyRows = rowOffsets(gradOut);
  const roRows = residualOutGrad ? rowOffsets(residualOutGrad) : null;
  const dxRows = rowOffsets(xGrad);
  const os32 = fr(a.outScale);
  const w = new Float32Array(H);
  if (weight) loadRow(weight, weight.offset, H, w);
  const xh = new Float32Array(H);
  const g = new Float32Array(H);
  const gw = new Float32Array(H);
  const p = new Float32Array(H);
  const ro = new Float32Array(H);
  const d = new Float32Array(H);
  // A[σ·H + j]: slot σ = t mod 512 of column j, starting at +0 (D.3).
  const A = weight ? new Float32Array(WEIGHT_GRAD_SLOTS * H) : null;
  const rstdData = rstd.data as Float32Array;
  for (let t = 0; t < T; t++) {
    const rs = rstdData[rstd.offset + t];
    loadRow(x, xRows[t], H, xh);
    loadRow(gradOut, dyRows[t], H, g);
    for (let j = 0; j < H; j++) {
      xh[j] = fr(xh[j] * rs); // xh_j = x_j ⊗ rstd_t
      g[j] = fr(g[j] * os32); // g_j = dy_j ⊗ os32
      gw[j] = weight ? fr(g[j] * w[j]) : g[j];
      p[j] = fr(xh[j] * gw[j]);
    }
    const m = fr(rmsTree(p, H) / H);
    for (let j = 0; j < H; j++) d[j] = fr(fr(gw[j] - fr(xh[j] * m)) * rs);
    if (residualOutGrad) {
      loadRow(residualOutGrad, roRows![t], H, ro);
      for (let j = 0; j < H; j++) d[j] = fr(d[j] + ro[j]);
    }
    storeRow(xGrad, dxRows[t], H, d);
    if (A) {
      const base = (t % WEIGHT_GRAD_SLOTS) * H;
      for (let j = 0; j < H; j++) A[base + j] = fr(A[base + j] + fr(xh[j] * g[j])); // c_{t,j} = xh ⊗ g
    }
  }
  if (!A || !weightGrad) return [xGrad, null];
  if (T === 0 && a.accumulateWeightGrad) return [xGrad, weightGrad]; // D.3: an accumulated gradient is untouched
  for (let h = WEIGHT_GRAD_SLOTS / 2; h >= 1; h >>= 1) {
    for (let s = 0; s < h; s++) {
      const lo = s * H;
      const hi = (s + h) * H;
      for (let j = 0; j < H; j++) A[lo + j] = fr(A[lo + j] + A[hi + j]);
    }
  }
  const o = weightGrad.offset;
  if (weightGrad.dtype === "fp32") {
    const wg = weightGrad.data as Float32Array;
    for (let j = 0; j < H; j++) {
      const v = a.accumulateWeightGrad ? fr(A[j] + wg[o + j]) : A[j];
      wg[o + j] = v === v ? v : NaN; // one NaN pattern, as storeRow
    }
  } else {
    const wg = weightGrad.data as Uint16Array;
    for (let j = 0; j < H; j++) wg[o + j] = encodeBf16(a.accumulateWeightGrad ? fr(A[j] + decodeBf16(wg[o + j])) : A[j]);
  }
  return [xGrad, weightGrad];
}

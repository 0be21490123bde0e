/**
 * CPU reference of `normForward` — spec/norm-rope-rand.md §A.3 (forward numerics), D.2 (the fixed reduction
 * tree) and D.4 (`rstd = 1 ⊘ √(S ⊘ H ⊕ eps)`, no `rsqrt`). Every binary32 operation is `Math.fround` of the
 * binary64 result, one per step, in the order the spec writes (§0). Numerics only: arguments are checked by
 * `norm_forward.ts`.
 * @module
 */
import { decodeBf16, encodeBf16 } from "../../core/dtype.ts";
import { type HostTensor, hostZeros } from "../../core/tensor.ts";

const fr = Math.fround;

/** Scratch of {@link rmsTree}: 16 chunk lanes and the chunk sums (grown on demand). */
const lanes = new Float32Array(16);
let chunkSums = new Float32Array(16);

/**
 * `TREE(q)` of spec/norm-rope-rand.md D.2 over `q[0..H)`, `H` a multiple of 16: each chunk of 16 summed by the
 * 8/4/2/1 halving tree, the chunk sums padded with +0 to a power of two and folded by halving.
 */
export function rmsTree(q: Float32Array, H: number): number {
  const K = H / 16;
  let N = 1;
  while (N < K) N *= 2;
  if (chunkSums.length < N) chunkSums = new Float32Array(N);
  const c = chunkSums;
  for (let k = 0; k < K; k++) {
    for (let j = 0; j < 16; j++) lanes[j] = q[16 * k + j];
    for (let h = 8; h >= 1; h >>= 1) for (let j = 0; j < h; j++) lanes[j] = fr(lanes[j] + lanes[j + h]);
    c[k] = lanes[0];
  }
  c.fill(0, K, N); // +0 padding
  for (let h = N / 2; h >= 1; h /= 2) for (let k = 0; k < h; k++) c[k] = fr(c[k] + c[k + h]);
  return c[0];
}

/** Element offsets of the first element of every row of a 2-D or 3-D view, in row-major row order. */
export function rowOffsets(t: HostTensor): number[] {
  const r = t.shape.length;
  const out: number[] = [];
  if (r === 2) {
    for (let i = 0; i < t.shape[0]; i++) out.push(t.offset + i * t.strides[0]);
  } else {
    for (let b = 0; b < t.shape[0]; b++) for (let i = 0; i < t.shape[1]; i++) out.push(t.offset + b * t.strides[0] + i * t.strides[1]);
  }
  return out;
}

/** Widens `H` contiguous fp32/bf16 elements at `base` to binary32 (exact). */
export function loadRow(t: HostTensor, base: number, H: number, dst: Float32Array): void {
  if (t.dtype === "fp32") {
    const d = t.data as Float32Array;
    for (let j = 0; j < H; j++) dst[j] = d[base + j];
  } else {
    const d = t.data as Uint16Array;
    for (let j = 0; j < H; j++) dst[j] = decodeBf16(d[base + j]);
  }
}

/**
 * Stores binary32 values at `base` in the tensor's dtype: as is for fp32, `RNbf16` for bf16 (§0 `RNx`). A NaN is
 * stored as the one pattern 0x7FC00000 (bf16 0x7FC0), as the kernels store it: any NaN conforms (spec "NaN"), and
 * one pattern keeps CPU and GPU bytes equal in every runtime (V8 keeps the sign of an arithmetic NaN).
 */
export function storeRow(t: HostTensor, base: number, H: number, src: Float32Array): void {
  if (t.dtype === "fp32") {
    const d = t.data as Float32Array;
    for (let j = 0; j < H; j++) d[base + j] = src[j] === src[j] ? src[j] : NaN;
  } else {
    const d = t.data as Uint16Array;
    for (let j = 0; j < H; j++) d[base + j] = encodeBf16(src[j]);
  }
}

/** Outputs of one forward call; absent ones are allocated contiguous. */
export interface NormForwardOut {
  out?: HostTensor;
  rstd?: HostTensor;
  residualOut?: HostTensor;
}

/**
 * `normForward` (§A.3) over every row of 2-D or 3-D `x`. Returns `[out, rstd, normInput]`; `normInput` is the
 * residual output when `residual` is given, else `x` itself.
 */
export function normForwardRef(
  x: HostTensor,
  weight: HostTensor | null,
  residual: HostTensor | null,
  eps: number,
  outScale: number,
  given: NormForwardOut,
): [HostTensor, HostTensor, HostTensor] {
  const H = x.shape[x.shape.length - 1];
  const lead = x.shape.slice(0, -1);
  const out = given.out ?? hostZeros(x.shape, x.dtype);
  const rstdT = given.rstd ?? hostZeros(lead, "fp32");
  const resOut = residual ? (given.residualOut ?? hostZeros(x.shape, x.dtype)) : null;
  const xRows = rowOffsets(x);
  const rRows = residual ? rowOffsets(residual) : null;
  const sRows = resOut ? rowOffsets(resOut) : null;
  const oRows = rowOffsets(out);
  const s = new Float32Array(H);
  const r = new Float32Array(H);
  const q = new Float32Array(H);
  const y = new Float32Array(H);
  const w = new Float32Array(H);
  const eps32 = fr(eps);
  const os32 = fr(outScale);
  // Step 4: w'_j = w_j ⊗ os32 does not depend on the row.
  if (weight) {
    loadRow(weight, weight.offset, H, w);
    for (let j = 0; j < H; j++) w[j] = fr(w[j] * os32);
  }
  const rstdData = rstdT.data as Float32Array;
  for (let i = 0; i < xRows.length; i++) {
    // Step 1: s_j = RNx(x_j ⊕ r_j), written to residualOut (a whole row is read before any of it is written,
    // so residualOut may be the very view of x or residual).
    loadRow(x, xRows[i], H, s);
    if (residual && resOut) {
      loadRow(residual, rRows![i], H, r);
      for (let j = 0; j < H; j++) s[j] = fr(s[j] + r[j]);
      storeRow(resOut, sRows![i], H, s);
      if (x.dtype === "bf16") for (let j = 0; j < H; j++) s[j] = decodeBf16(encodeBf16(s[j]));
    }
    // Steps 2–3: S = TREE(s ⊗ s); rstd = 1 ⊘ √((S ⊘ H) ⊕ eps32).
    for (let j = 0; j < H; j++) q[j] = fr(s[j] * s[j]);
    const S = rmsTree(q, H);
    const mean = fr(S / H);
    const v = fr(mean + eps32);
    const rstd = fr(1 / fr(Math.sqrt(v)));
    rstdData[rstdT.offset + i] = rstd === rstd ? rstd : NaN; // one NaN pattern, as storeRow
    // Step 4: y_j = (s_j ⊗ rstd) ⊗ w'_j, or (s_j ⊗ rstd) ⊗ os32; out_j = RNx(y_j).
    if (weight) for (let j = 0; j < H; j++) y[j] = fr(fr(s[j] * rstd) * w[j]);
    else for (let j = 0; j < H; j++) y[j] = fr(fr(s[j] * rstd) * os32);
    storeRow(out, oRows[i], H, y);
  }
  return [out, rstdT, resOut ?? x];
}

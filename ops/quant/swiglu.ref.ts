/**
 * CPU reference of the SwiGLU forward ops — spec/quant.md §8.1 (expert layout), §8.2 (row weights), §8.3 (value in
 * exact order), §8.4 (outputs and counters). The fused cast is the per-token cast of the binary32 forward value,
 * done by `perTokenCastRef` (one implementation of the cast). Numerics only: arguments are checked by `swiglu.ts`.
 * @module
 */
import { encodeBf16 } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import { hostZeros, type HostTensor } from "../../core/tensor.ts";
import { expf } from "./expf.ref.ts";
import { type PerTokenArgs, perTokenCastRef } from "./per_token_cast.ref.ts";

/** Resolved arguments of one SwiGLU forward call (host tensors, already checked). */
export interface SwigluArgs {
  readonly tokens: number;
  /** H: the output width; x is [T, 2H]. */
  readonly hidden: number;
  /** int32 [E] expert prefix sums, or null (every row real). */
  readonly psum: HostTensor | null;
  readonly tokenAlignment: number;
  /** fp32 [T], or null. */
  readonly topkWeights: HostTensor | null;
  readonly routedScalingFactor: number | null;
  readonly clampValue: number | null;
}

/** The forward value of every real row, and the counter increments (§8.4). */
export interface SwigluValues {
  /** binary32 [T · H]; padding rows hold +0 (never read by the callers). */
  readonly val: Float32Array;
  /** 1 for a real row, 0 for a padding row (§8.1). */
  readonly real: Uint8Array;
  /** [g > c, u > c, u < −c, H × real rows]. */
  readonly counts: readonly [number, number, number, number];
}

/**
 * Real rows of the expert layout (§8.1): expert e owns `[align(psum[e−1], A), psum[e])`, every other row is
 * padding. A psum breaking the contract of §11.2 throws `DEVICE_VALUE` (the GPU guards the same contract).
 */
export function swigluRealRows(op: string, T: number, psum: HostTensor | null, A: number): Uint8Array {
  const real = new Uint8Array(T);
  if (psum === null) return real.fill(1);
  const E = psum.shape[0];
  const p = psum.data as Int32Array;
  let start = 0;
  for (let e = 0; e < E; e++) {
    const end = p[psum.offset + e * psum.strides[0]];
    if (end < start || end > T) {
      const why = end > T ? `exceeds the ${T} rows of x` : `is below the aligned start ${start} of expert ${e}`;
      throw new TkError(op, "psumNumTokensPerExpert", "DEVICE_VALUE", `psumNumTokensPerExpert[${e}] = ${end} ${why}`);
    }
    real.fill(1, start, end);
    start = Math.ceil(end / A) * A;
  }
  return real;
}

function at(t: HostTensor, r: number, c: number): number {
  return (t.data as Float32Array)[t.offset + r * t.strides[0] + c * t.strides[1]];
}

/** §8.3 for every real row (x fp32 values as read: bf16 is widened by the tensor's decode). */
export function swigluValues(op: string, x: HostTensor, a: SwigluArgs): SwigluValues {
  const T = a.tokens, H = a.hidden;
  const real = swigluRealRows(op, T, a.psum, a.tokenAlignment);
  const val = new Float32Array(T * H);
  const xf = x.dtype === "bf16" ? widenBf16(x) : x;
  const c = a.clampValue === null ? null : Math.fround(a.clampValue);
  const s = a.routedScalingFactor === null ? null : Math.fround(a.routedScalingFactor);
  const wt = a.topkWeights;
  let c0 = 0, c1 = 0, c2 = 0, rows = 0;
  for (let t = 0; t < T; t++) {
    if (!real[t]) continue;
    rows++;
    let w = 1;
    if (wt !== null) {
      w = (wt.data as Float32Array)[wt.offset + t * wt.strides[0]];
      if (s !== null) w = Math.fround(w * s);
    }
    for (let j = 0; j < H; j++) {
      let g = at(xf, t, j);
      let u = at(xf, t, H + j);
      if (c !== null) {
        if (g > c) c0++;
        g = g > c ? c : g;
        if (u > c) c1++;
        if (u < -c) c2++;
        u = u > c ? c : (u < -c ? -c : u);
      }
      const e = expf(-g);
      const den = Math.fround(1 + e);
      const sl = Math.fround(g / den);
      let v = Math.fround(sl * u);
      if (wt !== null) v = Math.fround(v * w);
      val[t * H + j] = v;
    }
  }
  return { val, real, counts: [c0, c1, c2, H * rows] };
}

/** A contiguous fp32 copy of a bf16 tensor (exact widening, §1.1-1). */
function widenBf16(x: HostTensor): HostTensor {
  const out = hostZeros(x.shape, "fp32");
  const d = out.data as Float32Array;
  const src = x.data as Uint16Array;
  const u = new Uint32Array(d.buffer);
  const [R, C] = x.shape;
  for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) u[r * C + c] = src[x.offset + r * x.strides[0] + c * x.strides[1]] << 16;
  return out;
}

/**
 * `swigluForward` (§8.4): writes the real rows of `out` (fp32 or bf16 [T, H], any strides) and leaves padding rows
 * as they are. Returns the counter increments.
 */
export function swigluForwardRef(op: string, x: HostTensor, a: SwigluArgs, out: HostTensor): SwigluValues["counts"] {
  const v = swigluValues(op, x, a);
  const H = a.hidden;
  const bf = out.dtype === "bf16";
  for (let t = 0; t < a.tokens; t++) {
    if (!v.real[t]) continue;
    for (let j = 0; j < H; j++) {
      const i = out.offset + t * out.strides[0] + j * out.strides[1];
      if (bf) (out.data as Uint16Array)[i] = encodeBf16(v.val[t * H + j]);
      else (out.data as Float32Array)[i] = v.val[t * H + j] === v.val[t * H + j] ? v.val[t * H + j] : NaN; // canonical NaN 0x7FC00000
    }
  }
  return v.counts;
}

/**
 * `swigluForwardAndPerTokenCast` (§8.4): the per-token cast (`perTokenCastRef`, §2) of the binary32 forward value.
 * The cast runs over all T rows; the entries of padding rows are unspecified by §8.4 (here: the cast of a row of
 * +0, whose data is 0x00 and whose scale is the clamp's).
 */
export function swigluForwardAndPerTokenCastRef(
  op: string,
  x: HostTensor,
  a: SwigluArgs,
  cast: PerTokenArgs,
): { data: HostTensor; sf: HostTensor; counts: SwigluValues["counts"] } {
  const v = swigluValues(op, x, a);
  const val = hostZeros([a.tokens, a.hidden], "fp32");
  (val.data as Float32Array).set(v.val);
  const res = perTokenCastRef(val, cast, true);
  return { data: res.data!, sf: res.sf, counts: v.counts };
}

/**
 * CPU reference of the SwiGLU backward ops — spec/quant.md §8.1 (expert layout, `swigluRealRows` of
 * `swiglu.ref.ts`), §8.2 (row weights), §8.5 (gradients in exact order, the FMA-corrected silu, the fixed-order
 * weight gradient, padding rows written as +0). The fused cast is the per-token cast (`perTokenCastRef`) of the
 * binary32 gradients over the 2H columns, with the sf entries of padding rows then set to 0. Numerics only:
 * arguments are checked by `swiglu_backward.ts`.
 * @module
 */
import { decodeBf16, decodeE4m3, encodeBf16 } from "../../core/dtype.ts";
import { contiguousHost, HostTensor, hostZeros } from "../../core/tensor.ts";
import { fmaf } from "../transform/rope.ref.ts";
import { expf } from "./expf.ref.ts";
import { type PerTokenArgs, perTokenCastRef } from "./per_token_cast.ref.ts";
import { type SwigluArgs, swigluRealRows } from "./swiglu.ref.ts";

/** Resolved arguments of one SwiGLU backward call (host tensors, already checked). */
export interface SwigluBackwardArgs extends SwigluArgs {
  readonly doRecompute: boolean;
}

/** The binary32 results of §8.5 for all T rows (padding rows +0). */
export interface SwigluBackwardValues {
  /** [T · 2H]: gx in columns [0, H), gu in [H, 2H). */
  readonly grad: Float32Array;
  /** [T] with topkWeights, else null. */
  readonly weightGrad: Float32Array | null;
  /** [T · H] `fl(act · w)` with doRecompute, else null. */
  readonly actOut: Float32Array | null;
  /** 1 for a real row (§8.1). */
  readonly real: Uint8Array;
}

/** The x operand of §8.5: fp32/bf16 values, or e4m3 codes with fp32 row-major scales `[T, 2H/N]`. */
export type SwigluBackwardX = HostTensor | { readonly data: HostTensor; readonly sf: HostTensor; readonly numPerChannels: number };

const FLT_MAX = 3.4028234663852886e38;

/** Flat contiguous fp32 reader of a fp32/bf16 host tensor. */
function reader(t: HostTensor): (i: number) => number {
  const c = t.isContiguous() ? t : contiguousHost(t);
  const o = c.offset;
  if (c.dtype === "bf16") {
    const d = c.data as Uint16Array;
    return (i) => decodeBf16(d[o + i]);
  }
  const d = c.data as Float32Array;
  return (i) => d[o + i];
}

/** §8.5 for every real row; padding rows (and their inputs) are never read and stay +0. */
export function swigluBackwardValues(op: string, x: SwigluBackwardX, actXGrad: HostTensor, a: SwigluBackwardArgs): SwigluBackwardValues {
  const T = a.tokens, H = a.hidden, H2 = 2 * H;
  const real = swigluRealRows(op, T, a.psum, a.tokenAlignment);
  let load: (t: number, k: number) => number;
  if (x instanceof HostTensor) {
    const r = reader(x);
    load = (t, k) => r(t * H2 + k);
  } else {
    const q = x.data.isContiguous() ? x.data : contiguousHost(x.data);
    const qd = q.data as Uint8Array, qo = q.offset;
    const sf = x.sf.isContiguous() ? x.sf : contiguousHost(x.sf);
    const sd = sf.data as Float32Array, so = sf.offset, nb = H2 / x.numPerChannels, N = x.numPerChannels;
    load = (t, k) => Math.fround(decodeE4m3(qd[qo + t * H2 + k]) * sd[so + t * nb + Math.floor(k / N)]);
  }
  const dyAt = reader(actXGrad);
  const c = a.clampValue === null ? null : Math.fround(a.clampValue);
  const scale = a.routedScalingFactor === null ? null : Math.fround(a.routedScalingFactor);
  const wt = a.topkWeights;
  const wd = wt === null ? null : (wt.data as Float32Array);
  const needAct = wt !== null || a.doRecompute;
  const grad = new Float32Array(T * H2);
  const weightGrad = wt === null ? null : new Float32Array(T);
  const actOut = a.doRecompute ? new Float32Array(T * H) : null;
  const P = new Float64Array(64);
  for (let t = 0; t < T; t++) {
    if (!real[t]) continue;
    let w = 1;
    if (wd !== null) {
      w = wd[wt!.offset + t * wt!.strides[0]];
      if (scale !== null) w = Math.fround(w * scale);
    }
    P.fill(0);
    for (let j = 0; j < H; j++) {
      let g = load(t, j);
      let u = load(t, H + j);
      let clampedG = false, clampedU = false;
      if (c !== null) {
        clampedG = g > c;
        clampedU = u > c || u < -c;
        g = g > c ? c : g;
        u = u > c ? c : (u < -c ? -c : u);
      }
      const dy = dyAt(t * H + j);
      const tmp = Math.fround(1 + expf(-g));
      const s = Math.fround(1 / tmp);
      let act = 0;
      if (needAct) {
        const est = Math.fround(g * s);
        const tmpF = tmp !== tmp ? FLT_MAX : (tmp > FLT_MAX ? FLT_MAX : tmp); // minimumNumber(tmp, FLT_MAX)
        const res = fmaf(est, tmpF, -g);
        const sl = fmaf(-res, s, est);
        act = Math.fround(sl * u);
      }
      const ws = Math.fround(Math.fround(dy * w) * s);
      const gx = clampedG ? 0 : Math.fround(Math.fround(ws * u) * fmaf(g, Math.fround(1 - s), 1));
      const gu = clampedU ? 0 : Math.fround(ws * g);
      grad[t * H2 + j] = gx;
      grad[t * H2 + H + j] = gu;
      if (actOut !== null) actOut[t * H + j] = Math.fround(act * w);
      if (weightGrad !== null) {
        const l = j & 63;
        P[l] = Math.fround(P[l] + Math.fround(dy * act));
      }
    }
    if (weightGrad !== null) {
      for (let step = 32; step >= 1; step >>= 1) for (let l = 0; l < step; l++) P[l] = Math.fround(P[l] + P[l + step]);
      weightGrad[t] = scale === null ? P[0] : Math.fround(P[0] * scale);
    }
  }
  return { grad, weightGrad, actOut, real };
}

/**
 * A contiguous host tensor of `shape` in `dtype` (fp32 or bf16) holding binary32 `v`. fp32 NaN is written as the
 * one pattern 0x7FC00000 (the kernels' canonical NaN; an arithmetic NaN's sign is platform dependent in JS).
 */
export function binary32To(v: Float32Array, shape: readonly number[], dtype: "fp32" | "bf16"): HostTensor {
  const out = hostZeros(shape, dtype);
  if (dtype === "fp32") {
    const d = out.data as Float32Array;
    d.set(v);
    for (let i = 0; i < d.length; i++) if (d[i] !== d[i]) d[i] = NaN;
  } else {
    const d = out.data as Uint16Array;
    for (let i = 0; i < v.length; i++) d[i] = encodeBf16(v[i]);
  }
  return out;
}

/** The outputs of §8.5 as host tensors (leading dims of `xShape` kept); absent outputs are null. */
export interface SwigluBackwardOutputs {
  readonly xGrad: HostTensor;
  readonly weightGrad: HostTensor | null;
  readonly actOut: HostTensor | null;
}

function outputs(v: SwigluBackwardValues, xShape: readonly number[], a: SwigluBackwardArgs, fmt: "fp32" | "bf16"): SwigluBackwardOutputs {
  const lead = xShape.slice(0, -1);
  return {
    xGrad: binary32To(v.grad, xShape, fmt),
    weightGrad: v.weightGrad === null ? null : binary32To(v.weightGrad, [a.tokens], "fp32"),
    actOut: v.actOut === null ? null : binary32To(v.actOut, [...lead, a.hidden], fmt),
  };
}

/** `swigluBackward` (§8.5): outputs in `fmt`; padding rows +0. */
export function swigluBackwardRef(op: string, x: HostTensor, actXGrad: HostTensor, a: SwigluBackwardArgs, fmt: "fp32" | "bf16"): SwigluBackwardOutputs {
  return outputs(swigluBackwardValues(op, x, actXGrad, a), x.shape, a, fmt);
}

/**
 * `swigluBackwardAndPerTokenCast` (§8.5): bf16 outputs, plus the per-token cast of the binary32 gradients over the
 * 2H columns (`cast.tokens = T`, `cast.hidden = 2H`). Padding rows: data 0x00 (the cast of +0) and every sf entry
 * of the row (the whole storage word of a packed sf) set to 0.
 */
export function swigluBackwardAndPerTokenCastRef(
  op: string,
  x: { data: HostTensor; sf: HostTensor; numPerChannels: number },
  actXGrad: HostTensor,
  a: SwigluBackwardArgs,
  cast: PerTokenArgs,
): SwigluBackwardOutputs & { xGradQ: HostTensor; xGradSf: HostTensor } {
  const v = swigluBackwardValues(op, x, actXGrad, a);
  const val = hostZeros([a.tokens, 2 * a.hidden], "fp32");
  (val.data as Float32Array).set(v.grad);
  const res = perTokenCastRef(val, cast, true);
  const sf = res.sf;
  const [s0, s1] = sf.strides;
  for (let t = 0; t < a.tokens; t++) {
    if (v.real[t]) continue;
    for (let k = 0; k < sf.shape[1]; k++) (sf.data as Float32Array | Int32Array)[sf.offset + t * s0 + k * s1] = 0;
  }
  const q = res.data!;
  const xGradQ = new HostTensor(q.data, "e4m3", x.data.shape, x.data.shape.map((_, i) => x.data.shape.slice(i + 1).reduce((p, n) => p * n, 1)), q.offset);
  return { ...outputs(v, x.data.shape, a, "bf16"), xGradQ, xGradSf: sf };
}

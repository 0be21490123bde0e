/**
 * CPU reference of the per-token cast family — spec/quant.md §2 (per-token cast), §4 (scale layouts) and §4.4
 * (re-quantization of a quantized input, upstream 2.0 order `q · (s_in · inv)`). Numerics only: arguments are
 * checked by `per_token_cast.ts`.
 * @module
 */
import { decodeBf16, decodeE2m1, decodeE4m3 } from "../../core/dtype.ts";
import { HostTensor, hostStrided, hostZeros } from "../../core/tensor.ts";
import { encoderFor, maxNum, type QuantFmt, type ScaleRule, sfAndInv } from "./scale.ref.ts";
import { type SfInput, type SfLayout, sfGeometry, sfLoad, sfStore } from "./sf_layout.ts";

/** A quantized input `[data, sf]` with its block size (§4.4). */
export interface QuantizedInput {
  readonly data: HostTensor; // e4m3 [T, H] or e2m1x2 [T, H/2]
  readonly sf: HostTensor;
  readonly sfIn: SfInput;
  readonly blockRows: number;
  readonly blockCols: number;
}

/** Resolved arguments of one per-token cast. */
export interface PerTokenArgs {
  readonly tokens: number;
  readonly hidden: number; // logical H
  readonly numPerChannels: number; // N (== H for one scale per row)
  readonly rule: ScaleRule;
  readonly layout: SfLayout;
}

/**
 * Widens row `t` of the input into `vals` (binary32), and for a quantized input also fills `scales` with each
 * element's decoded input scale and `vals` with the decoded codes `q` (§4.4).
 */
function loadRow(x: HostTensor | QuantizedInput, t: number, h: number, vals: Float32Array, scales: Float32Array | null): void {
  if (x instanceof HostTensor) {
    const base = x.offset + t * x.strides[0];
    const s1 = x.strides[1];
    if (x.dtype === "fp32") {
      const d = x.data as Float32Array;
      for (let j = 0; j < h; j++) vals[j] = d[base + j * s1];
    } else {
      const d = x.data as Uint16Array;
      for (let j = 0; j < h; j++) vals[j] = decodeBf16(d[base + j * s1]);
    }
    return;
  }
  const q = x.data;
  const base = q.offset + t * q.strides[0];
  const d = q.data as Uint8Array;
  if (q.dtype === "e4m3") {
    for (let j = 0; j < h; j++) vals[j] = decodeE4m3(d[base + j]);
  } else {
    for (let j = 0; j < h; j += 2) {
      const b = d[base + (j >> 1)];
      vals[j] = decodeE2m1(b & 0xf);
      vals[j + 1] = decodeE2m1(b >> 4);
    }
  }
  const m = Math.floor(t / x.blockRows);
  for (let j = 0; j < h; j++) scales![j] = sfLoad(x.sf, x.sfIn, m, Math.floor(j / x.blockCols));
}

function allocData(fmt: QuantFmt, t: number, h: number): HostTensor {
  return fmt === "e4m3" ? hostZeros([t, h], "e4m3") : hostZeros([t, h / 2], "e2m1x2");
}

/** Allocates the sf tensor of a per-token cast in the requested layout (padding zeroed). */
export function allocPerTokenSf(a: PerTokenArgs): HostTensor {
  const g = sfGeometry(a.tokens, Math.ceil(a.hidden / a.numPerChannels), a.layout);
  return hostStrided(g.shape, g.strides, g.dtype, g.storage);
}

function putCode(data: HostTensor, fmt: QuantFmt, t: number, j: number, code: number): void {
  const d = data.data as Uint8Array;
  const row = data.offset + t * data.strides[0];
  if (fmt === "e4m3") d[row + j] = code;
  else if ((j & 1) === 0) d[row + (j >> 1)] = (d[row + (j >> 1)] & 0xf0) | code;
  else d[row + (j >> 1)] = (d[row + (j >> 1)] & 0x0f) | (code << 4);
}

/**
 * `perTokenCast` / `perTokenCastWithSfOnly` (spec/quant.md §2.4–§2.5, §4.4). Writes into `out` when given
 * (contiguous data, row-major sf), else allocates. `wantData: false` computes scales only.
 */
export function perTokenCastRef(
  x: HostTensor | QuantizedInput,
  a: PerTokenArgs,
  wantData: boolean,
  out?: { data?: HostTensor; sf?: HostTensor },
): { data: HostTensor | null; sf: HostTensor } {
  const { tokens: T, hidden: H, numPerChannels: N, rule } = a;
  const data = wantData ? (out?.data ?? allocData(rule.fmt, T, H)) : null;
  const sf = out?.sf ?? allocPerTokenSf(a);
  const nbk = Math.ceil(H / N);
  const vals = new Float32Array(H);
  const scales = x instanceof HostTensor ? null : new Float32Array(H);
  const si: [number, number] = [0, 0];
  const encode = encoderFor(rule.fmt);
  for (let t = 0; t < T; t++) {
    loadRow(x, t, H, vals, scales);
    if (rule.packedUe8m0) {
      for (let w = 0; w < Math.ceil(nbk / 4); w++) (sf.data as Int32Array)[sf.offset + t * sf.strides[0] + w * sf.strides[1]] = 0;
    }
    for (let g = 0; g < nbk; g++) {
      const j0 = g * N;
      const j1 = Math.min(j0 + N, H);
      let amax = 0;
      for (let j = j0; j < j1; j++) {
        const m = scales ? Math.fround(Math.abs(vals[j]) * scales[j]) : Math.abs(vals[j]);
        amax = maxNum(amax, m);
      }
      sfAndInv(amax, rule, si);
      sfStore(sf, a.layout, t, g, si[0]);
      if (!data) continue;
      const inv = si[1];
      for (let j = j0; j < j1; j++) {
        const v = scales ? Math.fround(vals[j] * Math.fround(scales[j] * inv)) : Math.fround(vals[j] * inv);
        putCode(data, rule.fmt, t, j, encode(v));
      }
    }
  }
  return { data, sf };
}

/**
 * `perTokenCastWithPrecomputedSf` (spec/quant.md §2.5): `inv = fl(1 / s)` of the given row-major fp32 / e4m3
 * scale, then §2.4.
 */
export function perTokenCastWithPrecomputedSfRef(
  x: HostTensor,
  sf: HostTensor,
  sfIn: SfInput,
  fmt: QuantFmt,
  hidden: number,
  numPerChannels: number,
  out?: HostTensor,
): HostTensor {
  const T = x.shape[0];
  const data = out ?? allocData(fmt, T, hidden);
  const vals = new Float32Array(hidden);
  const encode = encoderFor(fmt);
  for (let t = 0; t < T; t++) {
    loadRow(x, t, hidden, vals, null);
    for (let j = 0; j < hidden; j++) {
      const inv = Math.fround(1 / sfLoad(sf, sfIn, t, Math.floor(j / numPerChannels)));
      putCode(data, fmt, t, j, encode(Math.fround(vals[j] * inv)));
    }
  }
  return data;
}

export { maxNum };

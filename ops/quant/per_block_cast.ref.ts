/**
 * CPU reference of the 2-D block casts — spec/quant.md §3 (per-block cast) with the block grid of §4 (block
 * `(m, k)` covers rows `[m·r, min((m+1)r, T))` and columns `[k·c, min((k+1)c, H))`; amax over the real elements
 * only), and §4.4 / §5.1 for an already-quantized input. Any positive block shape: `perBlockCast` uses
 * `{32, 128}²`, the generic `cast` (§7.1) any shape. Numerics only: arguments are checked by the op files.
 * @module
 */
import { decodeBf16, decodeE2m1, decodeE4m3, decodeFp16 } from "../../core/dtype.ts";
import { HostTensor, hostStrided } from "../../core/tensor.ts";
import { allocCodes, putCode } from "./codes.ref.ts";
import type { QuantizedInput } from "./per_token_cast.ref.ts";
import { encoderFor, maxNum, type QuantFmt, type ScaleRule, sfAndInv } from "./scale.ref.ts";
import { type SfGeometry, type SfInput, type SfLayout, sfGeometry, sfLoad, sfStore } from "./sf_layout.ts";

/** Resolved arguments of one block cast. */
export interface BlockCastArgs {
  readonly tokens: number;
  /** Logical H. */
  readonly hidden: number;
  readonly blockRows: number;
  readonly blockCols: number;
  readonly rule: ScaleRule;
  readonly layout: SfLayout;
}

/**
 * Encodes the scaled values of one block row in place of the RN encode of §2.4: `v[0..n)` are the values of
 * columns `j0 … j0 + n − 1` of one row; `put(j, code)` stores the code of column `j`. The stochastic cast (§7.3–7.4)
 * uses it because its random bits hash quads of neighbouring values.
 */
export type RowEncoder = (v: Float32Array, n: number, j0: number, put: (j: number, code: number) => void) => void;

/** The element values of a plain `[T, H]` input (fp32 / bf16 / fp16), widened to binary32, row-major. */
function widen(x: HostTensor, T: number, H: number): Float32Array {
  const v = new Float32Array(T * H);
  const [s0, s1] = x.strides;
  for (let t = 0; t < T; t++) {
    const base = x.offset + t * s0;
    for (let j = 0; j < H; j++) {
      const e = x.data[base + j * s1] as number;
      v[t * H + j] = x.dtype === "fp32" ? e : x.dtype === "bf16" ? decodeBf16(e) : decodeFp16(e);
    }
  }
  return v;
}

/** Decoded codes `q` and each element's decoded input scale `s_in` of a quantized input (§4.4). */
function decodeQuantized(x: QuantizedInput, T: number, H: number): { q: Float32Array; s: Float32Array } {
  const q = new Float32Array(T * H);
  const s = new Float32Array(T * H);
  const d = x.data.data as Uint8Array;
  const fp4 = x.data.dtype === "e2m1x2";
  for (let t = 0; t < T; t++) {
    const base = x.data.offset + t * x.data.strides[0];
    const m = Math.floor(t / x.blockRows);
    for (let j = 0; j < H; j++) {
      q[t * H + j] = fp4 ? decodeE2m1(j & 1 ? d[base + (j >> 1)] >> 4 : d[base + (j >> 1)] & 0xf) : decodeE4m3(d[base + j]);
      s[t * H + j] = sfLoad(x.sf, x.sfIn, m, Math.floor(j / x.blockCols));
    }
  }
  return { q, s };
}

/** Zeroes every storage slot of an sf tensor of geometry `g`, alignment padding included (§4 padding rule). */
function clearSf(sf: HostTensor, g: SfGeometry): void {
  const d = sf.data as Float32Array | Int32Array | Uint8Array;
  for (let w = 0; w < g.shape[1]; w++) {
    for (let m = 0; m < g.paddedRows; m++) d[sf.offset + m * g.strides[0] + w * g.strides[1]] = 0;
  }
}

/**
 * `perBlockCast` / `perBlockCastWithSfOnly` (spec/quant.md §3), and the block-scaled `cast` (§7.1). For each block
 * `(m, k)`: `amax = max |x|` over its real elements, `(sf, inv) = sfAndInv(amax)` (§2.3), `data = encode(fl(x ·
 * inv))` (§2.4). A quantized input `[q, s_in]` follows §4.4 (`amax = max fl(|q|·s_in)`, `v = fl(q · fl(s_in ·
 * inv))`), except for per-channel blocks `[r, 1]`, which dequantize first (§5.1: `d = fl(q·s_in)`, `v = fl(d ·
 * inv)`). Writes into `out` when given (contiguous data, sf with the geometry of the layout), else allocates.
 * `encodeRow`, when given, replaces the RN encode (the scales are unchanged): §2.5 `stochasticCast`.
 */
export function perBlockCastRef(
  x: HostTensor | QuantizedInput,
  a: BlockCastArgs,
  wantData: boolean,
  out?: { data?: HostTensor; sf?: HostTensor },
  encodeRow?: RowEncoder,
): { data: HostTensor | null; sf: HostTensor } {
  const { tokens: T, hidden: H, blockRows: r, blockCols: c, rule } = a;
  const nbm = Math.ceil(T / r);
  const nbk = Math.ceil(H / c);
  const g = sfGeometry(nbm, nbk, a.layout);
  const sf = out?.sf ?? hostStrided(g.shape, g.strides, g.dtype, g.storage);
  clearSf(sf, g);
  const data = wantData ? (out?.data ?? allocCodes(rule.fmt, T, H)) : null;
  const { q, s } = x instanceof HostTensor ? { q: widen(x, T, H), s: null } : decodeQuantized(x, T, H);
  const dequantizeFirst = s !== null && c === 1;
  if (dequantizeFirst) for (let i = 0; i < q.length; i++) q[i] = Math.fround(q[i] * s[i]);
  const encode = encoderFor(rule.fmt);
  const row = encodeRow && data ? new Float32Array(c) : null;
  const si: [number, number] = [0, 0];
  for (let m = 0; m < nbm; m++) {
    const t1 = Math.min((m + 1) * r, T);
    for (let k = 0; k < nbk; k++) {
      const j1 = Math.min((k + 1) * c, H);
      let amax = 0;
      for (let t = m * r; t < t1; t++) {
        for (let j = k * c; j < j1; j++) {
          const i = t * H + j;
          amax = maxNum(amax, s !== null && !dequantizeFirst ? Math.fround(Math.abs(q[i]) * s[i]) : Math.abs(q[i]));
        }
      }
      sfAndInv(amax, rule, si);
      sfStore(sf, a.layout, m, k, si[0]);
      if (!data) continue;
      const inv = si[1];
      for (let t = m * r; t < t1; t++) {
        for (let j = k * c; j < j1; j++) {
          const i = t * H + j;
          const v = s !== null && !dequantizeFirst ? Math.fround(q[i] * Math.fround(s[i] * inv)) : Math.fround(q[i] * inv);
          if (row) row[j - k * c] = v;
          else putCode(data, rule.fmt, t, j, encode(v));
        }
        if (row && encodeRow) encodeRow(row, j1 - k * c, k * c, (j, code) => putCode(data, rule.fmt, t, j, code));
      }
    }
  }
  return { data, sf };
}

/**
 * `perBlockCastWithPrecomputedSf` (spec/quant.md §3) and `cast` with a given `sf` (§7.1): `inv = fl(1 / s)` of the
 * block's decoded scale, then `data = encode(fl(x · inv))`.
 */
export function perBlockCastWithPrecomputedSfRef(
  x: HostTensor,
  sf: HostTensor,
  sfIn: SfInput,
  fmt: QuantFmt,
  hidden: number,
  blockRows: number,
  blockCols: number,
  out?: HostTensor,
): HostTensor {
  const T = x.shape[0];
  const data = out ?? allocCodes(fmt, T, hidden);
  const vals = widen(x, T, hidden);
  const encode = encoderFor(fmt);
  for (let t = 0; t < T; t++) {
    const m = Math.floor(t / blockRows);
    for (let j = 0; j < hidden; j++) {
      const inv = Math.fround(1 / sfLoad(sf, sfIn, m, Math.floor(j / blockCols)));
      putCode(data, fmt, t, j, encode(Math.fround(vals[t * hidden + j] * inv)));
    }
  }
  return data;
}

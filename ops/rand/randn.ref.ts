/**
 * CPU reference of `randn` — spec/norm-rope-rand.md §C.2 (normative): Philox4x32-10 counter words (§C.2.1), the
 * binary64 Box–Muller transform with the fixed polynomials of §C.2.2, and the storage roundings of §C.2.3. Every
 * binary64 step is one JS operation in the order the spec writes; no `Math.log/sin/cos/pow` (§0). The value of
 * element `i` depends only on `(seed, offset, i, dtype)`. Numerics only: arguments are checked by `randn.ts`.
 * @module
 */
import { encodeBf16, encodeFp16 } from "../../core/dtype.ts";
import type { HostTensor } from "../../core/tensor.ts";

/** The storage dtypes of `randn` (§C.2.3). */
export type RandnDType = "fp32" | "bf16" | "fp16";

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
// Index of the high (sign/exponent) word of a binary64 in the shared view: little-endian on every supported host.
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const LO = 1 - HI;

/** The binary64 whose C99 hex form is `s` (`±0x1.<13 hex digits>p±e`, normal numbers), exact. */
function hexDouble(s: string): number {
  const m = /^(-?)0x1\.([0-9a-f]{13})p([+-]\d+)$/.exec(s);
  if (!m) throw new Error(`bad hex constant ${s}`);
  const mant = m[2];
  u32[HI] = (m[1] ? 0x80000000 : 0) | ((Number(m[3]) + 1023) << 20) | parseInt(mant.slice(0, 5), 16);
  u32[LO] = parseInt(mant.slice(5), 16);
  return f64[0];
}

// §C.2.2 constants, exactly as the spec's hex column.
const SQRT2 = hexDouble("0x1.6a09e667f3bcdp+0");
const LN2_HI = hexDouble("0x1.62e42fee00000p-1");
const LN2_LO = hexDouble("0x1.a39ef35793c76p-33");
const PI_2P31 = hexDouble("0x1.921fb54442d18p-30");
const L = [
  "0x1.0000000000000p+1", "0x1.5555555555555p-1", "0x1.999999999999ap-2", "0x1.2492492492492p-2", "0x1.c71c71c71c71cp-3",
  "0x1.745d1745d1746p-3", "0x1.3b13b13b13b14p-3", "0x1.1111111111111p-3", "0x1.e1e1e1e1e1e1ep-4", "0x1.af286bca1af28p-4",
].map(hexDouble);
const S = [
  "", "-0x1.5555555555555p-3", "0x1.1111111111111p-7", "-0x1.a01a01a01a01ap-13", "0x1.71de3a556c734p-19",
  "-0x1.ae64567f544e4p-26", "0x1.6124613a86d09p-33", "-0x1.ae7f3e733b81fp-41", "0x1.952c77030ad4ap-49",
].map((h) => (h ? hexDouble(h) : 0));
const C = [
  "", "", "0x1.5555555555555p-5", "-0x1.6c16c16c16c17p-10", "0x1.a01a01a01a01ap-16", "-0x1.27e4fb7789f5cp-22",
  "0x1.1eed8eff8d898p-29", "-0x1.93974a8c07c9dp-37", "0x1.ae7f3e733b81fp-45", "-0x1.6827863b97d97p-53",
].map((h) => (h ? hexDouble(h) : 0));
const TWO_M32 = 1 / 4294967296; // 2⁻³², exact

/** High 32 bits of the 64-bit product of two uint32 values (16-bit limbs keep every step exact in binary64). */
function mulhi(a: number, b: number): number {
  const bl = b & 0xffff;
  const bh = b >>> 16;
  return Math.floor((a * bh + Math.floor((a * bl) / 65536)) / 65536) >>> 0;
}

/** Philox4x32-10 of §C.2.1: `philox(c; k)` into `out[0..3]`. */
export function philox4x32(c0: number, c1: number, c2: number, c3: number, k0: number, k1: number, out: Uint32Array): void {
  for (let r = 0; r < 10; r++) {
    const hi0 = mulhi(0xd2511f53, c0);
    const lo0 = Math.imul(0xd2511f53, c0) >>> 0;
    const hi1 = mulhi(0xcd9e8d57, c2);
    const lo1 = Math.imul(0xcd9e8d57, c2) >>> 0;
    c0 = (hi1 ^ c1 ^ k0) >>> 0;
    c1 = lo1;
    c2 = (hi0 ^ c3 ^ k1) >>> 0;
    c3 = lo0;
    k0 = (k0 + 0x9e3779b9) >>> 0;
    k1 = (k1 + 0xbb67ae85) >>> 0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/** `R(w1)` of §C.2.2: `√(−2 ln u)`, `u = (w1 + 1)·2⁻³²`, through the fixed atanh series. */
function radius(w1: number): number {
  f64[0] = (w1 + 1) * TWO_M32;
  let e = ((u32[HI] >>> 20) & 0x7ff) - 1023;
  u32[HI] = (u32[HI] & 0x800fffff) | (1023 << 20); // f ∈ [1, 2), exact
  let m = f64[0];
  if (m > SQRT2) {
    m = m * 0.5;
    e = e + 1;
  }
  const a = m - 1.0;
  const b = m + 1.0;
  const s = a / b;
  const z2 = s * s;
  let P = L[9];
  for (let k = 8; k >= 0; k--) P = P * z2 + L[k];
  const lnm = s * P;
  const lnu = e * LN2_HI + (e * LN2_LO + lnm);
  return Math.sqrt(-2.0 * lnu);
}

/** `(sinθ, cosθ)` of §C.2.2 for `θ = 2π·w2/2³²`, into `sc[0]`, `sc[1]`. */
function sinCos(w2: number, sc: Float64Array): void {
  const A = (w2 + 0x20000000) >>> 0;
  const q = A >>> 30;
  const d = (A & 0x3fffffff) - 0x20000000;
  const phi = d * PI_2P31;
  const z2 = phi * phi;
  let Ps = S[8];
  for (let k = 7; k >= 1; k--) Ps = Ps * z2 + S[k];
  const sn = phi + (phi * z2) * Ps;
  let Pc = C[9];
  for (let k = 8; k >= 2; k--) Pc = Pc * z2 + C[k];
  const cs = (1.0 - 0.5 * z2) + (z2 * z2) * Pc;
  if (q === 0) (sc[0] = sn), (sc[1] = cs);
  else if (q === 1) (sc[0] = cs), (sc[1] = -sn);
  else if (q === 2) (sc[0] = -sn), (sc[1] = -cs);
  else (sc[0] = -cs), (sc[1] = sn);
}

const MASK32 = 0xffffffffn;

/**
 * The binary64 values `z` of elements `[start, start + n)` of stream `(seed, offset)` (§C.2.1–§C.2.2), into `dst`.
 * `start + n ≤ 2⁵³`; blocks are `⌊i/4⌋`, lanes `i mod 4`, so any split of a range gives the same values.
 */
export function randnValues(seed: bigint, offset: bigint, start: number, n: number, dst: Float64Array): void {
  const k0 = Number(seed & MASK32);
  const k1 = Number((seed >> 32n) & MASK32);
  const c2 = Number(offset & MASK32);
  const c3 = Number((offset >> 32n) & MASK32);
  const w = new Uint32Array(4);
  const sc = new Float64Array(2);
  const z = new Float64Array(4);
  const end = start + n;
  for (let j = Math.floor(start / 4); 4 * j < end; j++) {
    philox4x32(j % 4294967296, Math.floor(j / 4294967296), c2, c3, k0, k1, w);
    for (let p = 0; p < 2; p++) {
      const R = radius(w[2 * p]);
      sinCos(w[2 * p + 1], sc);
      z[2 * p] = R * sc[1]; // even lane: R ⊗ cosθ
      z[2 * p + 1] = R * sc[0]; // odd lane: R ⊗ sinθ
    }
    for (let l = 0; l < 4; l++) {
      const i = 4 * j + l;
      if (i >= start && i < end) dst[i - start] = z[l];
    }
  }
}

/** Number of elements generated per step of {@link randnFill} (bounded scratch). */
const CHUNK = 1 << 16;

/**
 * Writes element `i` of stream `(seed, offset)` into logical element `i` (row-major) of `out`, stored per §C.2.3:
 * fp32 `RN32(z)`, bf16 `RNbf16(RN32(z))`, fp16 `RNfp16(RN32(z))`. `out` may have any strides.
 */
export function randnFill(out: HostTensor, seed: bigint, offset: bigint): void {
  const n = out.numel;
  const rank = out.shape.length;
  const idx = new Array<number>(rank).fill(0);
  const buf = new Float64Array(Math.min(CHUNK, n));
  const d = out.data;
  let pos = out.offset;
  for (let s = 0; s < n; s += CHUNK) {
    const m = Math.min(CHUNK, n - s);
    randnValues(seed, offset, s, m, buf);
    for (let i = 0; i < m; i++) {
      const v = Math.fround(buf[i]);
      d[pos] = out.dtype === "fp32" ? v : out.dtype === "bf16" ? encodeBf16(v) : encodeFp16(v);
      // Advance the row-major logical index and its storage position.
      for (let k = rank - 1; k >= 0; k--) {
        idx[k]++;
        pos += out.strides[k];
        if (idx[k] < out.shape[k]) break;
        pos -= idx[k] * out.strides[k];
        idx[k] = 0;
      }
    }
  }
}

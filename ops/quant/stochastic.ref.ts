/**
 * CPU reference of stochastic rounding — spec/quant.md §7.3 (the software rounding with `n` random bits), §7.4
 * (upstream's quad hash and this library's seed/offset tweak), §7.1–§7.2 (the generic SR cast) and §2.5
 * (`perTokenCast` with `stochasticCast`: the block cast of `per_block_cast.ref.ts` with this encode, scales
 * unchanged). Numerics only: arguments are checked by `stochastic_cast.ts`, `cast.ts` and `per_token_cast.ts`.
 * @module
 */
import {
  decodeFp16,
  encodeBf16,
  encodeE2m1,
  encodeE4m3,
  encodeFp16,
  f32Bits,
  f32FromBits,
} from "../../core/dtype.ts";
import { type HostTensor, hostZeros } from "../../core/tensor.ts";
import { perBlockCastRef, type RowEncoder } from "./per_block_cast.ref.ts";
import type { PerTokenArgs, QuantizedInput } from "./per_token_cast.ref.ts";

/** Targets of stochastic rounding (§7.3). */
export type SrTarget = "bf16" | "fp16" | "e4m3" | "e2m1";

/** Targets of the generic SR cast (§7.1). */
export type StochasticDtype = "bf16" | "fp16" | "e4m3";

/**
 * The quantum rule of §7.3 per target: below `minNormal` the quantum is `subQ`, else `2^(floor(log2 a) − mant)`;
 * `n` random bits; magnitudes above `max` saturate (bf16/fp16 overflow to ±Inf through their encoders instead).
 */
const RULE: Readonly<Record<SrTarget, { n: number; minNormal: number; subQ: number; mant: number; max: number }>> = {
  e4m3: { n: 8, minNormal: 2 ** -6, subQ: 2 ** -9, mant: 3, max: 448 },
  e2m1: { n: 8, minNormal: 1, subQ: 2 ** -1, mant: 1, max: 6 },
  bf16: { n: 16, minNormal: 2 ** -126, subQ: 2 ** -133, mant: 7, max: Infinity },
  fp16: { n: 16, minNormal: 2 ** -14, subQ: 2 ** -24, mant: 10, max: Infinity },
};

/** The (exact, since the value is representable) encoder of each target. */
const ENCODE: Readonly<Record<SrTarget, (v: number) => number>> = {
  e4m3: encodeE4m3,
  e2m1: encodeE2m1,
  bf16: encodeBf16,
  fp16: encodeFp16,
};

/** Random bits used per element: 8 for 8-bit targets, 16 for 16-bit ones (§7.3). */
export function srBits(target: SrTarget): number {
  return RULE[target].n;
}

/**
 * `mix(v0, v1, v2, v3, idx)` of spec/quant.md §7.4 (uint32 arithmetic, wrapping): the two random words of a quad,
 * written to `out` (`out[1]` is only used by 16-bit targets).
 */
export function mix(v0: number, v1: number, v2: number, v3: number, idx: number, out: [number, number]): void {
  // Each Math.imul is exact mod 2^32; the sum of five such terms is exact in a double, then reduced mod 2^32.
  let h = (Math.imul(v0, 0x5671d42b) + Math.imul(v1, 0x9995e499) + Math.imul(v2, 0xace1b8a5) + Math.imul(v3, 0xe153538d) + idx) >>> 0;
  h = (h ^ (h >>> 23)) >>> 0;
  h = Math.imul(h, 0x7feb352d) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  const r0 = Math.imul(h, 0x846ca68b) >>> 0;
  const r1 = Math.imul(h, 0xd35a2d97) >>> 0;
  out[0] = (r0 ^ (r0 >>> 11)) >>> 0;
  out[1] = (r1 ^ (r1 >>> 11)) >>> 0;
}

/**
 * `srEncode(v, R, target)` of spec/quant.md §7.3, with `v` given by its binary32 pattern `u` (so that a NaN's sign
 * is the stored one) and `R ∈ [0, 2ⁿ)`. Rounds `|v|` down to a multiple of the quantum, then up by one quantum iff
 * `D + R ≥ 2ⁿ` with `D` the `n` dropped bits; all of it is exact in binary64.
 */
export function srEncode(u: number, R: number, target: SrTarget): number {
  const s = u >>> 31;
  const mag = (u & 0x7fffffff) >>> 0;
  if (mag > 0x7f800000) return target === "e4m3" ? 0x7f : target === "e2m1" ? (s << 3) | 7 : target === "bf16" ? 0x7fc0 : 0x7e00 | (s << 15);
  const f = RULE[target];
  const a = f32FromBits(mag);
  let m: number;
  if (mag === 0x7f800000) m = Infinity;
  else {
    const q = a < f.minNormal ? f.subQ : 2 ** ((mag >>> 23) - 127 - f.mant); // a is a normal binary32 in the else
    const k = Math.floor(a / q);
    const D = Math.floor((a / q - k) * 2 ** f.n);
    m = (k + (D + R >= 2 ** f.n ? 1 : 0)) * q;
  }
  if (m > f.max) m = f.max;
  return ENCODE[target](s ? -m : m);
}

/** The binary32 pattern of each element of a contiguous fp32 / bf16 / fp16 tensor, widened exactly (§1.1). */
function widenBits(x: HostTensor): Uint32Array {
  const bits = new Uint32Array(x.numel);
  const d = x.data as Float32Array | Uint16Array;
  if (x.dtype === "fp32") bits.set(new Uint32Array(d.buffer, d.byteOffset + x.offset * 4, x.numel));
  else if (x.dtype === "bf16") for (let i = 0; i < x.numel; i++) bits[i] = (d[x.offset + i] << 16) >>> 0;
  else {
    for (let i = 0; i < x.numel; i++) {
      const b = d[x.offset + i];
      // A NaN keeps its sign and payload (quieted), as the hardware widening does; everything else is exact.
      bits[i] = (b & 0x7c00) === 0x7c00 && (b & 0x3ff) !== 0
        ? ((((b & 0x8000) << 16) | 0x7fc00000 | ((b & 0x3ff) << 13)) >>> 0)
        : f32Bits(decodeFp16(b));
    }
  }
  return bits;
}

/**
 * `stochasticCast(x, {dtype, seed, offset})` (§7.2; `cast` with `stochasticRounding` is `seed = offset = 0`):
 * quad `Q` = flat elements `4Q … 4Q+3`, `idx = uint32(Q + offset/4 + seed)`; 8-bit targets take byte `i` of `r0`
 * for element `4Q+i`, 16-bit targets take the low then the high half of `r0` (elements 0, 1) and `r1` (2, 3).
 * `x` is contiguous with `numel % 4 == 0`; writes into `out` (contiguous, same shape) when given.
 */
export function stochasticCastRef(x: HostTensor, dtype: StochasticDtype, seed: bigint, offset: bigint, out?: HostTensor): HostTensor {
  const o = out ?? hostZeros(x.shape, dtype);
  const dst = o.data as Uint16Array | Uint8Array;
  const bits = widenBits(x);
  const base = Number(BigInt.asUintN(32, offset / 4n + seed));
  const wide = srBits(dtype) === 16;
  const r: [number, number] = [0, 0];
  for (let Q = 0; Q < x.numel / 4; Q++) {
    const i0 = 4 * Q;
    mix(bits[i0], bits[i0 + 1], bits[i0 + 2], bits[i0 + 3], (base + Q) >>> 0, r);
    for (let i = 0; i < 4; i++) {
      const R = wide ? (r[i >> 1] >>> (16 * (i & 1))) & 0xffff : (r[0] >>> (8 * i)) & 0xff;
      dst[o.offset + i0 + i] = srEncode(bits[i0 + i], R, dtype);
    }
  }
  return o;
}

/**
 * The binary32 pattern of a scaled value `fl(x·inv)` (or `fl(q·factor)`) as §7.4 hashes it. A NaN product is the
 * canonical NaN 0x7FFFFFFF, whatever the NaN operand's sign and payload: that is what the GPU's binary32 multiply
 * returns (upstream's kernels hash it too), and it does not depend on how a JavaScript engine stores a NaN (V8 keeps
 * the operand's quieted pattern, others canonicalize to 0x7FC00000). The spec writes `bits(fl(x·inv))` and IEEE 754
 * leaves a NaN result's payload open; this is the library's decision (docs/DECISIONS.md, the tenth round).
 */
function productBits(v: number): number {
  return v !== v ? 0x7fffffff : f32Bits(v);
}

/**
 * The encode of `perTokenCast` with `stochasticCast` (§7.4): quads are columns `4Q … 4Q+3` of one row, counted
 * from the row start (the row is not hashed), `idx = Q`, element `4Q+i` takes byte `i` of `r0`. Every group
 * starts at a multiple of 4 columns (`numPerChannels ∈ {16, 32, 64, 128}` or `H`, `H % 64 == 0`).
 */
export function stochasticRowEncoder(fmt: "e4m3" | "e2m1"): RowEncoder {
  const r: [number, number] = [0, 0];
  return (v, n, j0, put) => {
    if (j0 % 4 !== 0 || n % 4 !== 0) throw new Error(`stochastic encode: groups must cover whole quads (columns ${j0}…${j0 + n - 1})`);
    for (let i = 0; i < n; i += 4) {
      const b0 = productBits(v[i]), b1 = productBits(v[i + 1]), b2 = productBits(v[i + 2]), b3 = productBits(v[i + 3]);
      mix(b0, b1, b2, b3, (j0 + i) / 4, r);
      put(j0 + i, srEncode(b0, r[0] & 0xff, fmt));
      put(j0 + i + 1, srEncode(b1, (r[0] >>> 8) & 0xff, fmt));
      put(j0 + i + 2, srEncode(b2, (r[0] >>> 16) & 0xff, fmt));
      put(j0 + i + 3, srEncode(b3, r[0] >>> 24, fmt));
    }
  };
}

/**
 * `perTokenCast` with `stochasticCast: true` (§2.5): the per-token block cast (blocks `[1, N]`) with the encode of
 * {@link stochasticRowEncoder}; the scales are those of the RN call.
 */
export function perTokenStochasticCastRef(
  x: HostTensor | QuantizedInput,
  a: PerTokenArgs,
  out?: { data?: HostTensor; sf?: HostTensor },
): { data: HostTensor | null; sf: HostTensor } {
  const blocks = { tokens: a.tokens, hidden: a.hidden, blockRows: 1, blockCols: a.numPerChannels, rule: a.rule, layout: a.layout };
  return perBlockCastRef(x, blocks, true, out, stochasticRowEncoder(a.rule.fmt));
}

// Stochastic rounding in software (spec/quant.md §7.3) with upstream's quad hash (§7.4), and the fp16 codec the
// generic cast needs (§1.5). The PTX cvt.rs instruction is never used: the software rule is the definition on
// every architecture, so CPU and GPU give the same bytes. The rounding itself is integer arithmetic on bit
// patterns. The floating-point operations here are exact (scalings by powers of two, which may overflow to ±Inf
// only where the code saturates anyway; the hardware e4m3 conversion of a value that already is an e4m3 value),
// truncate once on purpose (the rz FMA of sr_encode_8bit), or only test for NaN (sr_encode_e4m3_quads' probe).
#pragma once
#include <math.h>
#include <stdint.h>
#include "codec.cuh"
#include "fp.cuh"

namespace tk {

// ---- fp16 ---------------------------------------------------------------------------------------------------
// §1.5: binary32 → binary16, RNE; |v| ≥ 65520 and ±Inf → ±Inf; subnormals kept; NaN → 0x7E00 | sign.
TK_HD uint32_t encode_fp16(float v) {
  const uint32_t u = f2u(v);
  const uint32_t s = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7e00u | s;
  if (a >= 0x477ff000u) return 0x7c00u | s;  // 65520 = halfway between 65504 and 2^16: ties-to-even goes up
  if (a < 0x38800000u) {
    // |v| < 2^-14: grid 2^-24; |v|·2^24 < 1024 is exact, and adding 2^23 rounds it to an integer (ties to even);
    // 1024 lands on the smallest normal's code, 0x400
    return s | (f2u(add_rn(mul_rn(u2f(a), 0x1p24f), 8388608.0f)) - 0x4b000000u);
  }
  // round 23 mantissa bits to 10 (ties to even; a carry bumps the exponent), rebias 127 → 15
  return s | (((a + 0xfffu + ((a >> 13) & 1u)) >> 13) - (112u << 10));
}

// fp16 → binary32 pattern, exact; a NaN keeps its sign and payload and is quieted (the widening the stochastic
// hash sees, stochastic.ref.ts widenBits).
TK_HD uint32_t widen_fp16_bits(uint32_t h) {
  const uint32_t s = (h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 31u) return s | (m == 0u ? 0x7f800000u : (0x7fc00000u | (m << 13)));
  if (e == 0u) return s | f2u(mul_rn(static_cast<float>(m), 0x1p-24f));  // m·2^-24: exact
  return s | ((e + 112u) << 23) | (m << 13);
}

// ---- the quad hash (§7.4) -------------------------------------------------------------------------------------
struct SrBits {
  uint32_t r0, r1;
};

TK_HD SrBits sr_mix(uint32_t v0, uint32_t v1, uint32_t v2, uint32_t v3, uint32_t idx) {
  uint32_t h = v0 * 0x5671d42bu + v1 * 0x9995e499u + v2 * 0xace1b8a5u + v3 * 0xe153538du + idx;
  h ^= h >> 23;
  h *= 0x7feb352du;
  h ^= h >> 16;
  SrBits r;
  r.r0 = h * 0x846ca68bu;
  r.r0 ^= r.r0 >> 11;
  r.r1 = h * 0xd35a2d97u;
  r.r1 ^= r.r1 >> 11;
  return r;
}

// ---- srEncode (§7.3) ------------------------------------------------------------------------------------------
enum class SrTarget { kE4m3, kE2m1, kBf16, kFp16 };

// n random bits, mantissa bits and the exponent of the smallest normal of each target: the quantum of |v| is
// 2^(max(E, kMinExp) − kMant), E = floor(log2 |v|) (for binary32 subnormals E < kMinExp of every target).
template <SrTarget kT>
struct SrRule;
template <>
struct SrRule<SrTarget::kE4m3> {
  static constexpr int kN = 8, kMant = 3, kMinExp = -6;
};
template <>
struct SrRule<SrTarget::kE2m1> {
  static constexpr int kN = 8, kMant = 1, kMinExp = 0;
};
template <>
struct SrRule<SrTarget::kBf16> {
  static constexpr int kN = 16, kMant = 7, kMinExp = -126;
};
template <>
struct SrRule<SrTarget::kFp16> {
  static constexpr int kN = 16, kMant = 10, kMinExp = -14;
};

#if !defined(__CUDA_ARCH__)
// The low term of sr_encode_8bit in integers (the host's form of the device FMA): where |v| < 2^m,
// 2^(m−1) + ⌊|v|·2^(23−m)⌋·2^(m−24) with |v| = M·2^(e−150); else 0.
template <SrTarget kT>
inline uint32_t sr_low_term_host(uint32_t mag) {
  constexpr uint32_t kHalfMinNormal = static_cast<uint32_t>(126 + SrRule<kT>::kMinExp) << 23;
  const uint32_t biased = mag >> 23;
  const uint32_t M = biased != 0u ? ((mag & 0x7fffffu) | 0x800000u) : mag;
  const uint32_t e = biased != 0u ? biased : 1u;
  constexpr uint32_t kBelow = 126u + SrRule<kT>::kMinExp;  // largest biased exponent under 2^m
  const uint32_t sh = e <= kBelow ? kBelow + 1u - e : 0u;  // ≥ 1
  return e <= kBelow ? kHalfMinNormal + (sh > 31u ? 0u : M >> sh) : 0u;
}
#endif

// The 8-bit targets on the bit pattern (e4m3, e2m1), equal to the general form below (tools/sr_encode_check.cpp
// checks every u, at the carry boundary of its dropped bits and at other R). With m = kMinExp: for |v| ≥ 2^m the
// quantum is the pattern's bit 23 − kMant, so adding R just below the kept bits and truncating is §7.3 (the lower
// bits never carry; a carry out of the mantissa bumps the exponent, as m_int = 2^(kMant+1) does). For |v| < 2^m
// the quantum stays 2^(m − kMant); p is then the pattern of 2^(m−1) + |v|/2 truncated toward zero: exponent m − 1,
// so the same bit is the same quantum, and the truncation only drops bits far below the n = 8 bits used. max()
// picks that form exactly when |v| < 2^m (for |v| ≥ 2^m it is ≤ |v|). Subtracting 2^(m−1)'s pattern rebiases both
// to the target's code (its smallest normal exponent is m = 1 − bias). About 14 operations per element instead of
// ~75 for the 64-bit general form, which is what bounded the SR casts (the hash is 12 per quad). ±Inf and NaN
// saturate in the min() (a NaN's p may differ between host and device, both saturate); e4m3 then overrides NaN
// (0x7F, sign dropped), and e2m1's NaN code (s<<3)|7 is what the min() gives.
template <SrTarget kT>
TK_HD uint32_t sr_encode_8bit(uint32_t u, uint32_t R) {
  using Rule = SrRule<kT>;
  static_assert(Rule::kN == 8, "sr_encode_8bit: 8 random bits");
  constexpr int kShift = 23 - Rule::kMant;  // pattern bits below the kept mantissa
  constexpr uint32_t kHalfMinNormal = static_cast<uint32_t>(126 + Rule::kMinExp) << 23;  // pattern of 2^(m−1)
  constexpr uint32_t kMaxCode = kT == SrTarget::kE4m3 ? 0x7eu : 7u;
  const uint32_t mag = u & 0x7fffffffu;
#if defined(__CUDA_ARCH__)
  // one exact-then-truncated FMA: |v|·0.5 + 2^(m−1), rounded toward zero once
  const uint32_t low = f2u(__fmaf_rz(u2f(mag), 0.5f, u2f(kHalfMinNormal)));
#else
  const uint32_t low = sr_low_term_host<kT>(mag);
#endif
  const uint32_t p = mag > low ? mag : low;
  const uint32_t t = (p + (R << (kShift - 8)) - kHalfMinNormal) >> kShift;
  const uint32_t code = t < kMaxCode ? t : kMaxCode;
  if constexpr (kT == SrTarget::kE4m3) {
    return mag > 0x7f800000u ? 0x7fu : (code | ((u >> 24) & 0x80u));
  } else {
    return code | ((u >> 28) & 8u);
  }
}

// srEncode(v, R) with v given by its binary32 pattern u and R ∈ [0, 2^n): |v| truncated to a multiple of the
// quantum q (k = ⌊|v|/q⌋), one quantum up iff D + R ≥ 2^n with D the n bits below q, then the exact encode of
// ±(k + up)·q (e4m3/e2m1 saturate at 448/6 through their encoders, fp16 overflows to ±Inf through its own).
template <SrTarget kT>
TK_HD uint32_t sr_encode_general(uint32_t u, uint32_t R) {
  using Rule = SrRule<kT>;
  const uint32_t s = u >> 31;
  const uint32_t mag = u & 0x7fffffffu;
  if constexpr (kT == SrTarget::kBf16) {
    // q is the bf16 LSB and the n = 16 dropped bits are the low half of the pattern: (bits + R) >> 16, Inf on
    // overflow. ±Inf must not take the sum (it would become a NaN pattern).
    if (mag > 0x7f800000u) return 0x7fc0u;
    if (mag == 0x7f800000u) return (s << 15) | 0x7f80u;
    return (s << 15) | ((mag + R) >> 16);
  } else {
    if (mag > 0x7f800000u) {
      if constexpr (kT == SrTarget::kE4m3) return 0x7fu;
      if constexpr (kT == SrTarget::kE2m1) return (s << 3) | 7u;
      return 0x7e00u | (s << 15);
    }
    if (mag == 0x7f800000u) {
      if constexpr (kT == SrTarget::kE4m3) return (s << 7) | 0x7eu;
      if constexpr (kT == SrTarget::kE2m1) return (s << 3) | 7u;
      return (s << 15) | 0x7c00u;
    }
    // |v| = M · 2^e0 with M < 2^24 (binary32 subnormals: M = mag, e0 = −149)
    const bool normal = mag >= 0x00800000u;
    const uint64_t M = normal ? ((mag & 0x7fffffu) | 0x800000u) : mag;
    const int e0 = normal ? static_cast<int>(mag >> 23) - 150 : -149;
    const int E = e0 + 23;
    const int qe = (normal && E >= Rule::kMinExp ? E : Rule::kMinExp) - Rule::kMant;
    int sh = qe - e0;  // bits of M below the quantum, ≥ 23 − kMant ≥ 13
    if (sh > 63) sh = 63;  // then k = 0 and D = M >> (63 − n) = 0, as for the exact shift
    const uint64_t k = M >> sh;
    const uint64_t frac = M & ((1ull << sh) - 1ull);
    const uint64_t D = sh >= Rule::kN ? frac >> (sh - Rule::kN) : frac << (Rule::kN - sh);
    const uint32_t m_int = static_cast<uint32_t>(k) + ((D + R >= (1ull << Rule::kN)) ? 1u : 0u);
    // (k + up)·2^qe: m_int ≤ 2^(kMant+1) is exact in binary32 and 2^qe is a normal binary32 (qe ∈ [−24, 124]), so
    // the product is exact or overflows to +Inf (which every encoder below saturates or keeps as Inf)
    const float m = mul_rn(static_cast<float>(m_int), u2f(static_cast<uint32_t>(qe + 127) << 23));
    const float sv = u2f(f2u(m) | (s << 31));
    if constexpr (kT == SrTarget::kE4m3) return encode_e4m3(sv);
    if constexpr (kT == SrTarget::kE2m1) return encode_e2m1(sv);
    return encode_fp16(sv);
  }
}

// srEncode (§7.3): the pattern form for the 8-bit targets, the general form for fp16 (bf16 is its own shortcut).
template <SrTarget kT>
TK_HD uint32_t sr_encode(uint32_t u, uint32_t R) {
  if constexpr (SrRule<kT>::kN == 8) {
    return sr_encode_8bit<kT>(u, R);
  } else {
    return sr_encode_general<kT>(u, R);
  }
}

// ---- e4m3 on the device: the rounded value, then the hardware conversion ---------------------------------------
// sr_encode_8bit spends ~15 integer operations per element on the code (clamp, NaN select, sign, byte packing),
// and those bounded the SR casts (stochasticCast bf16 → e4m3 at ~0.9 T elements/s, perTokenCast with
// stochasticCast at ~0.7 T: the integer pipe, not HBM). Here the same first steps give the signed binary32 value
// y = ±(k + up)·q of §7.3 instead, and the hardware RN conversion (encode_e4m3x4, codec.cuh) encodes two per
// instruction: exact on a representable y, ±448 for |y| > 448 (§7.3's saturation, ±Inf included), −0 → 0x80.
// A NaN does not survive these steps (it ends as a large finite y), so groups with a NaN are ruled out first
// (sr_encode_e4m3_quads).
//
// With p and K = 2^(m−1)'s pattern as in sr_encode_8bit, the code magnitude is c = (p + R·2^12 − K) >> 20. Left in
// place (bits 20–30, lower bits cleared, the sign of v at bit 31) that is a binary32 whose exponent field is c's
// e4m3 exponent field e and whose top mantissa bits are c's: its value is 2^(e−127)·1.m for e ≥ 1 and, as a
// binary32 subnormal, 0.m·2^−126 for e = 0, while the e4m3 value of c is 2^(e−7)·1.m or 0.m·2^−6: the binary32
// times 2^120 in both cases. That product is exact, or (c ≥ 0x400, from |v| near the binary32 maximum or ±Inf)
// overflows to ±Inf, which saturates like every c > 0x7E. The kernels keep subnormals (no -ftz), which e = 0 needs.
TK_HD float sr_e4m3_value(uint32_t u, uint32_t R) {
  constexpr uint32_t kHalfMinNormal = 120u << 23;  // K, the pattern of 2^−7
  const float a = fabsf(u2f(u));
#if defined(__CUDA_ARCH__)
  const uint32_t p = f2u(fmaxf(a, __fmaf_rz(a, 0.5f, 0x1p-7f)));  // max(|v|, low) of sr_encode_8bit, non-NaN
#else
  const uint32_t p = f2u(fmaxf(a, u2f(sr_low_term_host<SrTarget::kE4m3>(f2u(a)))));  // tools/sr_encode_check.cpp
#endif
  const uint32_t t = p + R * 4096u - kHalfMinNormal + (u & 0x80000000u);  // p + R·2^12 − K < 2^31: bit 31 free
  return mul_rn(u2f(t & 0xfff00000u), 0x1p120f);
}

#if defined(__CUDACC__)
// ---- §7.3's e4m3 rounding in a domain scaled by 2^-120 (docs/perf-notes/perf12-sr.md) --------------------------
// sr_e4m3_value forms t = max(|v|, rz(|v|/2 + 2^-7)) + R·2^12 − K + sign (K = 2^-7's pattern): the max() and the rz
// FMA build the 2^-9 quantum of the e4m3 subnormals out of a binary32 normal. s = rz(v · 2^-120) (signed) does the
// same with the binary32 subnormals: for |v| ≥ 2^-6 the product is exact and its pattern is bits(|v|) − K; for
// |v| < 2^-6 it is a binary32 subnormal whose pattern is ⌊|v|·2^29⌋, which is p − K there as well (p = 2^-7 + |v|/2
// truncated on the 2^-30 grid). So t = bits(s) + R·2^12 is the same integer (the sign rides in bit 31: no carry
// reaches it) for every non-NaN v but ±Inf, where t differs and both y saturate to ±448 in the conversion.
// tools/sr12_all_check.cpp proves the two forms' codes equal for every pattern and every R on the host. Per value:
// FMUL.RZ, byte of r0, IMAD, LOP3, FMUL (and half an F2FP) instead of sr_e4m3_value's eight.
TK_DEV float sr12_e4m3_value(float v, uint32_t R) {
  const uint32_t t = f2u(__fmul_rz(v, 0x1p-120f)) + R * 4096u;
  return mul_rn(u2f(t & 0xfff00000u), 0x1p120f);
}

// kQuads quads of §7.3 e4m3 codes from binary32 patterns u; element 4q + i takes byte i of r0[q] (§7.4); four
// codes per word, the first in the low byte. A group without NaN takes sr_e4m3_value and the conversion (~6 integer
// operations per element); a group with one takes sr_encode_8bit per element (NaN → 0x7F, sign dropped). The probe
// is a sum of |v| on the FP32 pipe: NaN exactly when some v is (every term is ≥ +0: no Inf − Inf). kScaled: the
// NaN-free path takes sr12_e4m3_value instead (same codes, fewer instructions).
template <int kQuads, bool kScaled = false>
TK_DEV void sr_encode_e4m3_quads(const uint32_t (&u)[4 * kQuads], const uint32_t (&r0)[kQuads],
                                 uint32_t (&out)[kQuads]) {
  // pairwise, so that the branch waits for log2(4·kQuads) dependent adds, not 4·kQuads − 1
  float probe[4 * kQuads];
#pragma unroll
  for (int i = 0; i < 4 * kQuads; ++i) probe[i] = fabsf(u2f(u[i]));
#pragma unroll
  for (int n = 2 * kQuads; n >= 1; n /= 2)
#pragma unroll
    for (int i = 0; i < n; ++i) probe[i] = add_rn(probe[i], probe[i + n]);
  if (probe[0] == probe[0]) {
#pragma unroll
    for (int q = 0; q < kQuads; ++q) {
      float y[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t R = __byte_perm(r0[q], 0u, 0x4440u + i);
        y[i] = kScaled ? sr12_e4m3_value(u2f(u[4 * q + i]), R) : sr_e4m3_value(u[4 * q + i], R);
      }
      out[q] = encode_e4m3x4(y[0], y[1], y[2], y[3]);
    }
  } else {
#pragma unroll
    for (int q = 0; q < kQuads; ++q) {
      out[q] = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) out[q] |= sr_encode_8bit<SrTarget::kE4m3>(u[4 * q + i], (r0[q] >> (8 * i)) & 0xffu) << (8 * i);
    }
  }
}

// sr_encode_e4m3_quads on the scaled-domain path (the encoder hook of per_token_cast_sr12.cu and cast_sr12.cu)
template <int kQuads>
TK_DEV void sr12_encode_e4m3_quads(const uint32_t (&u)[4 * kQuads], const uint32_t (&r0)[kQuads],
                                   uint32_t (&out)[kQuads]) {
  sr_encode_e4m3_quads<kQuads, true>(u, r0, out);
}
#endif

}  // namespace tk

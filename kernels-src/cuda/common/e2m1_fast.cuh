// e2m1 encoders for the hot loops (spec/quant.md §1.3), equal to encode_e2m1 for every input, two values per
// 32-bit operation. sm_90 has no e2m1 conversion; the scalar encode_e2m1 costs ~17 integer operations and a
// divergent branch per value, which bounded bf16 → e2m1 casts at 38–42% of HBM bandwidth on an H200 (the integer
// pipe runs at half the FP32 rate). Here packed fmas of pairs of 16-bit floats do the rounding:
//
//   for |x| clamped to [0, 6], code = min(rn(2|x|), rn(|x|) + 2, rn(|x|/2) + 4)   (e2m1_mag_x2 says why)
//
// because the e2m1 grid spacing is 0.5 in [0, 2] (the subnormal 0.5 step included), 1 in [2, 4] and 2 in [4, 6],
// and rn's ties-to-even on the integer candidate is the ties-to-even of the e2m1 mantissa (an even integer is an
// even code). fma(|x|_c, 2^j, M + 2i) with M the float whose ulp is 1 (f16: 1024, bf16: 128) rounds once, to
// nearest even, to the integer M + candidate, whose low byte is the candidate. Clamping at 6 saturates (6 itself
// is code 7; ±Inf too); a NaN lane is not handled and the callers fall back to encode_e2m1.
//
// Inputs: a pair of bf16 that are exactly the values to encode (bf16 · 2^k, products exact), or a pair of f16
// produced from binary32 by round-to-odd (rz of a binary32 whose bit 13 carries the sticky bit of bits 0–12),
// which keeps 9 bits beyond e2m1's 2 so the second rounding is the correct one; |x| < 2^-14 (f16 subnormal, where
// the 13-bit sticky position is wrong) encodes to ±0 either way, and |x| ≥ 65504 saturates either way.
// Checked against encode_e2m1 for all 2^32 binary32 inputs and all bf16 × 2^k products by tools/e2m1_fast_check.cpp
// (a host model of the same operations).
#pragma once
#include <stdint.h>
#include "codec.cuh"

namespace tk {

#if defined(__CUDACC__)
// The three packed fmas and two mins of e2m1_mag_x2 on magnitudes `a` already within the codes' range (shared by
// e2m1_mag_x2, which clamps first, and e2m1_mag_x2_nc, whose callers guarantee the bound).
template <bool kBf16>
TK_DEV uint32_t e2m1_round_mags_x2(uint32_t a) {
  constexpr uint32_t kTwo = 0x40004000u;                         // 2.0 (same pattern in bf16 and f16)
  constexpr uint32_t kOne = kBf16 ? 0x3f803f80u : 0x3c003c00u;   // 1.0
  constexpr uint32_t kHalf = kBf16 ? 0x3f003f00u : 0x38003800u;  // 0.5
  constexpr uint32_t kM = kBf16 ? 0x43004300u : 0x64006400u;     // M = 128 (bf16) / 1024 (f16): ulp 1
  uint32_t r0, r1, r2, m;
  if constexpr (kBf16) {
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r0) : "r"(a), "r"(kTwo), "r"(kM));
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r1) : "r"(a), "r"(kOne), "r"(kM + 0x20002u));
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r2) : "r"(a), "r"(kHalf), "r"(kM + 0x40004u));
  } else {
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r0) : "r"(a), "r"(kTwo), "r"(kM));
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r1) : "r"(a), "r"(kOne), "r"(kM + 0x20002u));
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r2) : "r"(a), "r"(kHalf), "r"(kM + 0x40004u));
  }
  asm("min.u16x2 %0, %1, %2;" : "=r"(m) : "r"(r0), "r"(r1));
  asm("min.u16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(r2));
  return m;
}

// Per 16-bit lane of a packed pair (kBf16: bf16, else f16), a non-NaN value → the lane's e2m1 magnitude code in
// bits 0–2 of its low byte (bits 3–7 zero; the high byte is the magic's exponent, ignored).
//
// With a = min(|x|, 6) and the magic M (ulp 1), code = min(rn(2a), rn(a) + 2, rn(a/2) + 4): inside [0, 2] the
// first is the code (grid 0.5) and the smallest of the three (2a ≤ a + 2, 2a ≤ a/2 + 4, rn monotonic), inside
// [2, 4] the second (grid 1, codes 4–6), inside [4, 6] the third (grid 2, codes 6–7); adding the even integers 2
// and 4 keeps rn's ties-to-even parity. Three packed fmas (FMA pipe) round the candidates onto M + k, and two
// integer min.u16x2 pick the smallest (all three share M's exponent). Per pair: 4 integer/logic instructions and 3
// fmas (the exponent-select form before it, e2m1_mag_x2_v1 in tools/e2m1_fast_check.cpp: 7 and 1). Checked equal
// to that form for every 16-bit input (bf16 and f16) by tools/e2m1_fast_check.cpp.
template <bool kBf16>
TK_DEV uint32_t e2m1_mag_x2(uint32_t h) {
  constexpr uint32_t kSix = kBf16 ? 0x40c040c0u : 0x46004600u;   // 6.0
  const uint32_t a = h & 0x7fff7fffu;
  uint32_t ac;
  // integer min on non-negative non-NaN float patterns is the float min
  asm("min.u16x2 %0, %1, %2;" : "=r"(ac) : "r"(a), "r"(kSix));
  return e2m1_round_mags_x2<kBf16>(ac);
}

// Nonzero when some lane of the pairs is NaN or ±Inf (fma(x, 0, acc) stays ±0 for finite x). Only NaN needs the
// fallback; an infinite value takes it too, being as rare.
template <bool kBf16, int kPairs>
TK_DEV bool any_nonfinite_x2(const uint32_t* h) {
  uint32_t acc = 0;
#pragma unroll
  for (int p = 0; p < kPairs; ++p) {
    if constexpr (kBf16) {
      asm("fma.rn.bf16x2 %0, %1, %2, %0;" : "+r"(acc) : "r"(h[p]), "r"(0u));
    } else {
      asm("fma.rn.f16x2 %0, %1, %2, %0;" : "+r"(acc) : "r"(h[p]), "r"(0u));
    }
  }
  return (acc & 0x7fff7fffu) != 0;
}

TK_DEV uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// kPairs (2 or 4) packed 16-bit pairs h (element 2p in the low lane of h[p]), none NaN → e2m1 nibbles, element 2i
// in the low nibble of byte i: 16 bits (kPairs 2) or one word (kPairs 4).
template <bool kBf16, int kPairs>
TK_DEV uint32_t pack_e2m1_x2(const uint32_t* h) {
  static_assert(kPairs == 2 || kPairs == 4, "pack_e2m1_x2: 4 or 8 values");
  uint32_t half[kPairs / 2];
#pragma unroll
  for (int q = 0; q < kPairs / 2; ++q) {
    const uint32_t m0 = e2m1_mag_x2<kBf16>(h[2 * q]), m1 = e2m1_mag_x2<kBf16>(h[2 * q + 1]);
    uint32_t x = prmt(m0, m1, 0x6420u);                    // byte j: code of element 4q + j
    const uint32_t sg = prmt(h[2 * q], h[2 * q + 1], 0x7531u);  // byte j: bit 7 = sign of element 4q + j
    x |= (sg >> 4) & 0x08080808u;
    half[q] = x | (x >> 4);  // bytes 0 and 2: two nibbles each
  }
  if constexpr (kPairs == 2) {
    return prmt(half[0], 0u, 0x4420u);
  } else {
    return prmt(half[0], half[1], 0x6420u);
  }
}

// Round-to-odd preparation of a binary32 for cvt.rz to f16 (see the header comment): bit 13 |= (bits 0–12 ≠ 0).
// Bit 13 of u + 0x1FFF is bit 13 of u flipped exactly when bits 0–12 are nonzero; ±Inf and NaN keep their class.
TK_DEV uint32_t ro_f16_prep(uint32_t u) { return u | ((u + 0x1fffu) & 0x2000u); }

TK_DEV uint32_t cvt_rz_f16x2(uint32_t lo, uint32_t hi) {
  uint32_t d;
  asm("cvt.rz.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(u2f(hi)), "f"(u2f(lo)));  // first source → upper half
  return d;
}

// kVec (4 or 8) binary32 values → e2m1 nibbles (encode_chunk<e2m1>'s layout), == encode_e2m1 of each.
template <int kVec>
TK_DEV void encode_e2m1_fast(const float* v, uint32_t* out) {
  static_assert(kVec == 4 || kVec == 8, "encode_e2m1_fast: 4 or 8 values");
  constexpr int kPairs = kVec / 2;
  uint32_t h[kPairs];
#pragma unroll
  for (int p = 0; p < kPairs; ++p) h[p] = cvt_rz_f16x2(ro_f16_prep(f2u(v[2 * p])), ro_f16_prep(f2u(v[2 * p + 1])));
  if (any_nonfinite_x2<false, kPairs>(h)) {
    uint32_t o = 0;
#pragma unroll
    for (int i = 0; i < kVec; ++i) o |= encode_e2m1(v[i]) << (4 * i);
    out[0] = o;
    return;
  }
  out[0] = pack_e2m1_x2<false, kPairs>(h);
}

// Four packed bf16 pairs x (a bf16 chunk) times inv, a binary32 whose mantissa field is zero (±2^k, ±0, ±Inf),
// → 8 e2m1 nibbles == encode_e2m1(fl(x_i · inv)) each: the bf16 product is exact wherever fl(x·inv) is a normal
// binary32 (8 significant bits times a power of two); below that both are tiny (code ±0) and above both are ±Inf.
// Returns false, writing nothing, when a product is NaN or infinite: the caller encodes that chunk in binary32.
TK_DEV bool encode_e2m1_bf16_pow2(const uint32_t* x, float inv, uint32_t* out) {
  const uint32_t i2 = prmt(f2u(inv), 0u, 0x3232u);  // inv's upper half in both lanes (its lower half is zero)
  uint32_t p[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(p[k]) : "r"(x[k]), "r"(i2));
  if (any_nonfinite_x2<true, 4>(p)) return false;
  out[0] = pack_e2m1_x2<true, 4>(p);
  return true;
}

// One binary32 value (not NaN) → M + code, M = 2^23 (ulp 1): its low byte is the e2m1 magnitude code (bits 3–7
// zero). The min-of-three construction of e2m1_mag_x2 in binary32: min(|v|, 6) (one FMNMX, |v| a source
// modifier), three fmas on the FMA pipe, two integer mins. No intermediate rounding, so no round-to-odd step.
TK_DEV uint32_t e2m1_mag_f32(float v) {
  float a;
  asm("{\n\t.reg .f32 t;\n\tabs.f32 t, %1;\n\tmin.f32 %0, t, 0f40C00000;\n\t}" : "=f"(a) : "f"(v));
  const uint32_t r0 = f2u(__fmaf_rn(a, 2.0f, 8388608.0f));
  const uint32_t r1 = f2u(__fmaf_rn(a, 1.0f, 8388610.0f));
  const uint32_t r2 = f2u(__fmaf_rn(a, 0.5f, 8388612.0f));
  return min(min(r0, r1), r2);
}

// Four packed bf16 pairs x (a bf16 chunk) times inv, a positive finite nonzero binary32 (any mantissa: NVFP4's
// 1 / e4m3 scale, fp32 scales), → 8 e2m1 nibbles == encode_e2m1(fl(x_i · inv)) each. The products are the
// reference's binary32 products; each is rounded once by e2m1_mag_f32 (per value ~3 integer/logic instructions and
// 4 FMA-pipe ones, against ~6 and 2 through round-to-odd f16 pairs). The signs come from x (inv > 0: the
// product's sign is x's, zeros and underflows included). Returns false, writing nothing, when a lane of x is NaN or
// ±Inf: the caller encodes that chunk with encode_e2m1.
TK_DEV bool encode_e2m1_bf16_f32(const uint32_t* x, float inv, uint32_t* out) {
  if (any_nonfinite_x2<true, 4>(x)) return false;
  uint32_t n[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t lo = e2m1_mag_f32(mul_rn(u2f(x[j] << 16), inv));
    const uint32_t hi = e2m1_mag_f32(mul_rn(u2f(x[j] & 0xffff0000u), inv));
    n[j] = lo | hi << 4;  // byte 0: the codes of elements 2j and 2j + 1
  }
  const uint32_t codes = prmt(prmt(n[0], n[1], 0x0040u), prmt(n[2], n[3], 0x0040u), 0x5410u);
  // the bf16 high bytes of elements 0–3 and 4–7, then the odd elements' (sign at bit 7 of byte j: element 2j + 1)
  // and the even elements' (moved to bit 3)
  const uint32_t s1 = prmt(x[0], x[1], 0x7531u), s2 = prmt(x[2], x[3], 0x7531u);
  const uint32_t odd = prmt(s1, s2, 0x7531u), even = prmt(s1, s2, 0x6420u);
  out[0] = codes | (odd & 0x80808080u) | ((even >> 4) & 0x08080808u);
  return true;
}

// ---- round-7 variants (the _u4sca kernels of quant/per_token_cast.cu; docs/perf-notes/perf7-fp4.md) -------------

// The nibble packing of pack_e2m1_x2 for magnitudes already rounded: m[p] holds the codes of elements 2p (byte 0)
// and 2p + 1 (byte 2), bits 3–7 of those bytes zero, the other bytes ignored; h[p] the bf16 / f16 pair whose
// sign bits are the elements' signs. Same instructions as pack_e2m1_x2 after its e2m1_mag_x2 calls.
template <int kPairs>
TK_DEV uint32_t pack_e2m1_mags(const uint32_t* m, const uint32_t* h) {
  static_assert(kPairs == 2 || kPairs == 4, "pack_e2m1_mags: 4 or 8 values");
  uint32_t half[kPairs / 2];
#pragma unroll
  for (int q = 0; q < kPairs / 2; ++q) {
    uint32_t x = prmt(m[2 * q], m[2 * q + 1], 0x6420u);
    const uint32_t sg = prmt(h[2 * q], h[2 * q + 1], 0x7531u);
    x |= (sg >> 4) & 0x08080808u;
    half[q] = x | (x >> 4);
  }
  if constexpr (kPairs == 2) {
    return prmt(half[0], 0u, 0x4420u);
  } else {
    return prmt(half[0], half[1], 0x6420u);
  }
}

// e2m1_mag_x2 without the clamp at 6: equal to it for every lane whose |value| ≤ 6 (the clamp is then the
// identity), one min.u16x2 fewer per pair. Callers guarantee the bound (encode_e2m1_bf16_pow2_nc).
template <bool kBf16>
TK_DEV uint32_t e2m1_mag_x2_nc(uint32_t h) {
  return e2m1_round_mags_x2<kBf16>(h & 0x7fff7fffu);
}

// encode_e2m1_bf16_pow2 for chunks whose products are known to satisfy |x_i · inv| ≤ 6 or to be non-finite: the
// group's own roundSf scale (sf = 2^⌈log2 fl(max(amax, clamp) / 6)⌉ ≥ that quotient, so amax · inv, an exact bf16
// product, is ≤ 6; tools/e2m1_fast_check.cpp part 7 checks it for every binary32 max(amax, clamp)). Same result
// as encode_e2m1_bf16_pow2 (the clamp it leaves out is the identity there), same fallback.
TK_DEV bool encode_e2m1_bf16_pow2_nc(const uint32_t* x, float inv, uint32_t* out) {
  const uint32_t i2 = prmt(f2u(inv), 0u, 0x3232u);
  uint32_t p[4], m[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(p[k]) : "r"(x[k]), "r"(i2));
  if (any_nonfinite_x2<true, 4>(p)) return false;
#pragma unroll
  for (int k = 0; k < 4; ++k) m[k] = e2m1_mag_x2_nc<true>(p[k]);
  out[0] = pack_e2m1_mags<4>(m, p);
  return true;
}

TK_DEV float fma_asm(float a, float b, float c) {
  float d;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c));
  return d;
}

// The e2m1 magnitude codes of a bf16 pair x times inv = 8 · inv8, with the two lanes' candidates merged into one
// binary32 by the FMA pipe so that the integer minimum runs on packed 16-bit lanes (min.u16x2), and the clamp done
// by the multiply's saturation. For each lane a8 = sat(fl(|x| · inv8)) = min(fl(|x| · inv), 8) / 8 (exact: inv8 =
// inv / 8 is a normal binary32, and a product fl(|x| · inv) below 2^-123, whose eighth may round differently,
// encodes to 0 either way), and a = 8 · a8. Candidate j (f = 16, 8, 4 for rn(2a), rn(a), rn(a / 2); o = 0, 2, 4):
//   t = fma(a8_hi, f · 2^16, 2^39 + 2^16 · o)      = 2^39 + 2^16 · (o + rn(f · a8_hi))    (ulp 2^16 there)
//   c = fma(K1, K2, t), K1 · K2 = −(2^39 − 2^23 − 256 − o) exactly (constants found by factoring), exact:
//                                                  = 2^23 + 256 + o + 2^16 · (o + rn(f · a8_hi))
//   r = fma(a8_lo, f, c)                           = c + rn(f · a8_lo)                     (ulp 1, c even + o)
// so r's pattern is 0x4B00 + o + k_hi in the high half and 0x100 + o + k_lo in the low half: min.u16x2 of the
// three candidates and of 7 in both lanes (a ∈ [6, 8] gives rn(a / 2) + 4 = 8 for a ≥ 7) is e2m1_mag_f32's min of
// three in each lane. Result: the codes in bytes 0 and 2 (bits 3–7 zero), as e2m1_mag_x2. Per pair 2 FMA-pipe
// multiplies and 9 fmas, 3 integer mins, against 2 multiplies, 6 fmas, 2 float and 4 integer mins.
TK_DEV uint32_t e2m1_mag_bf16x2_sat(uint32_t x, float inv8) {
  float lo, hi;
  asm("{\n\t.reg .f32 t;\n\tabs.f32 t, %1;\n\tmul.rn.sat.f32 %0, t, %2;\n\t}" : "=f"(lo) : "f"(u2f(x << 16)), "f"(inv8));
  asm("{\n\t.reg .f32 t;\n\tabs.f32 t, %1;\n\tmul.rn.sat.f32 %0, t, %2;\n\t}" : "=f"(hi) : "f"(u2f(x & 0xffff0000u)), "f"(inv8));
  const uint32_t r0 = f2u(fma_asm(lo, 16.0f, fma_asm(-151.0f, 3640711424.0f, fma_asm(hi, 1048576.0f, 0x1p39f))));
  const uint32_t r1 = f2u(fma_asm(lo, 8.0f, fma_asm(-21037.0f, 26132406.0f, fma_asm(hi, 524288.0f, 0x1.000004p39f))));
  const uint32_t r2 = f2u(fma_asm(lo, 4.0f, fma_asm(-18215.0f, 30181028.0f, fma_asm(hi, 262144.0f, 0x1.000008p39f))));
  uint32_t m, n;
  asm("min.u16x2 %0, %1, %2;" : "=r"(m) : "r"(r0), "r"(r1));
  asm("min.u16x2 %0, %1, %2;" : "=r"(n) : "r"(r2), "r"(0x4b070107u));
  asm("min.u16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(n));
  return m;
}

// encode_e2m1_bf16_f32 by e2m1_mag_bf16x2_sat, for inv = 8 · inv8 positive, finite and ≥ 2^-123 (so inv8 is
// exact and normal): same result (tools/e2m1_fast_check.cpp part 8: the per-value rounding for every binary32
// product, the chunk for every bf16 in every position times every e4m3 inverse), same NaN / ±Inf refusal.
TK_DEV bool encode_e2m1_bf16_f32_sat(const uint32_t* x, float inv8, uint32_t* out) {
  if (any_nonfinite_x2<true, 4>(x)) return false;
  uint32_t m[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) m[j] = e2m1_mag_bf16x2_sat(x[j], inv8);
  out[0] = pack_e2m1_mags<4>(m, x);
  return true;
}

// maximumNumber of |x| over the kWords packed bf16 pairs of a chunk, per lane (not folded): low half the max of
// the even elements, high half of the odd ones, signs cleared; never NaN. max.xorsign.abs.bf16x2 gives
// max(|a|, |b|) with the xor of the signs (cleared at the end), ignoring a NaN operand like max.bf16x2; the running
// value starts at +0, so two NaN lanes never meet (a NaN lane only meets the finite running max). Equal to the
// unfolded max_bf16x2(m, w & 0x7fff7fff) chain of reduce.cuh's abs_max_bf16, without its masks. Round 7 (_u4sca).
template <int kWords>
TK_DEV uint32_t abs_max_bf16x2_lanes(const uint32_t* w) {
  uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < kWords; ++i) asm("max.xorsign.abs.bf16x2 %0, %0, %1;" : "+r"(m) : "r"(w[i]));
  return m & 0x7fff7fffu;
}

// Two items' lane maxima (abs_max_bf16x2_lanes) folded into one word: low half item a's max, high half item b's,
// by one unsigned 16-bit max of the low halves against the high halves (non-negative non-NaN bf16 patterns: bit
// order is value order). Three instructions instead of two folds and a merge.
TK_DEV uint32_t fold_max_u16x2_pair(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.u16x2 %0, %1, %2;" : "=r"(d) : "r"(prmt(a, b, 0x5410u)), "r"(prmt(a, b, 0x7632u)));
  return d;
}

// ---- decode -------------------------------------------------------------------------------------------------
// castBack e2m1 → bf16 with a block scale s: out = encode_bf16(fl(decode(q) · s)). When s is ±2^k (finite) or ±0
// the product of a 2-significant-bit code value and s is exact in binary32 and in bf16 wherever it is normal,
// overflows to ±Inf in both, and below 2^-126 both round the exact product once onto a grid (binary32's 2^-149
// then bf16's 2^-133 in the reference: the first rounding is exact unless the product is below 2^-148, where
// both give ±0); no NaN arises. So a bf16 multiply of the decoded pair by s gives the reference's bits.
TK_DEV bool e2m1_bf16_scale_exact(float s) {
  const uint32_t b = f2u(s);
  return (b & 0x7fffffu) == 0 && (b & 0x7f800000u) != 0x7f800000u;
}

// 8 e2m1 codes (element i in nibble i) → their 8 values as 4 packed bf16 pairs (element 2j in the low half of
// out[j]), exact. The magnitudes come from two byte tables through prmt (4 lookups per instruction): bf16 of 0,
// 0.5, 1, 1.5, 2, 3, 4, 6 is 0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0.
TK_DEV void e2m1x8_to_bf16(uint32_t c, uint32_t (&out)[4]) {
  constexpr uint32_t kLo0 = 0xc0800000u, kLo1 = 0xc0804000u;  // low bytes of codes 0–3, 4–7
  constexpr uint32_t kHi0 = 0x3f3f3f00u, kHi1 = 0x40404040u;  // high bytes
  const uint32_t idx = c & 0x77777777u;                        // magnitude indices (prmt reads 4 nibbles)
  const uint32_t c4 = c << 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t sel = h == 0 ? idx : idx >> 16;
    const uint32_t lo = prmt(kLo0, kLo1, sel), hi = prmt(kHi0, kHi1, sel);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const uint32_t j = 2 * h + k;  // pair j: elements 2j (low lane) and 2j + 1
      const uint32_t mag = prmt(lo, hi, k == 0 ? 0x5140u : 0x7362u);
      // sign of element 2j (code bit 8j + 3) → bit 15, of element 2j + 1 (bit 8j + 7) → bit 31
      out[j] = mag | (prmt(c, c4, j | (4 + j) << 4 | j << 8 | j << 12) & 0x80008000u);
    }
  }
}

// 8 e2m1 codes → 4 packed bf16 pairs of fl(decode(q_i) · s), s as e2m1_bf16_scale_exact.
TK_DEV void decode_e2m1x8_bf16_pow2(uint32_t c, float s, uint32_t (&out)[4]) {
  const uint32_t s2 = prmt(f2u(s), 0u, 0x3232u);  // s's upper half in both lanes (its lower half is 0)
  e2m1x8_to_bf16(c, out);
#pragma unroll
  for (int j = 0; j < 4; ++j) asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(out[j]) : "r"(out[j]), "r"(s2));
}

// perBlockCastLossless (spec/quant.md §10): 8 e2m1 codes times 2^d → 8 e4m3 codes (element i in byte i of
// out[i / 4]) == encode_e4m3(fl(decode_e2m1(q) · 2^d)) for d ∈ [−5, 6], where every product is an exact e4m3
// normal or a signed zero. The e4m3 magnitudes of 0, 0.5, 1, 1.5, 2, 3, 4, 6 are 0x00, 0x30, 0x38, 0x3C, 0x40,
// 0x44, 0x48, 0x4C; times 2^d every nonzero one gains d in its exponent field (8·d on the byte), which for
// d ∈ [−5, 6] keeps each byte inside [0x08, 0x7C], so one 32-bit add adjusts four bytes without carries. Outside
// that range (a violated lossless contract, §10: the data is then unspecified) the bytes are wrong but defined.
TK_DEV void e2m1x8_to_e4m3_pow2(uint32_t c, int d, uint32_t (&out)[2]) {
  const uint32_t step = static_cast<uint32_t>(8 * d);
  const uint32_t t0 = 0x3c383000u + step * 0x01010100u;  // codes 0–3 (code 0 stays 0x00)
  const uint32_t t1 = 0x4c484440u + step * 0x01010101u;  // codes 4–7
  const uint32_t idx = c & 0x77777777u, c4 = c << 4;
  // sign of element j (code bit 4j + 3) → bit 7 of byte j: bytes of c << 4 carry the even elements' signs there,
  // bytes of c the odd ones'
  out[0] = prmt(t0, t1, idx) | (prmt(c, c4, 0x1504u) & 0x80808080u);
  out[1] = prmt(t0, t1, idx >> 16) | (prmt(c, c4, 0x3726u) & 0x80808080u);
}
#endif

}  // namespace tk

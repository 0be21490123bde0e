// Codecs of spec/quant.md §1: e4m3 (OCP E4M3FN), e2m1 (OCP FP4), ue8m0 and bf16, as integer operations on the
// binary32 bit pattern. Scalar versions are __host__ __device__ and are the definition the vector forms are
// checked against; the GPU never relies on a hardware conversion whose NaN or saturation rule differs from the
// spec (see encode_e4m3x4).
#pragma once
#include "fp.cuh"

namespace tk {

constexpr float kE4m3Max = 448.0f;  // Qmax of e4m3
constexpr float kE2m1Max = 6.0f;    // Qmax of e2m1

// ---- e4m3 ---------------------------------------------------------------------------------------------------
// §1.2: RN, ties to even, saturate to ±448 (±Inf too), NaN → 0x7F with the sign dropped, zero keeps its sign.
TK_HD uint32_t encode_e4m3(float v) {
  const uint32_t u = f2u(v);
  const uint32_t a = u & 0x7fffffffu;
  // Normal e4m3 (|v| ≥ 2^-6): round the 23-bit mantissa to 3 bits, ties to even; a carry out of the mantissa
  // bumps the exponent, which is exactly the "n == 16" case of the spec. The exponent is then rebiased 127 → 7.
  uint32_t code = ((a + 0x7ffffu + ((a >> 20) & 1u)) >> 20) - (120u << 3);
  if (a < 0x3c800000u) {
    // Subnormal e4m3 (|v| < 2^-6), grid 2^-9: |v|·2^9 is exact and < 8, and adding 2^23 rounds it to an
    // integer with ties to even (the ulp of 2^23 is 1), which lands in the low mantissa bits.
    code = f2u(add_rn(mul_rn(u2f(a), 512.0f), 8388608.0f)) - 0x4b000000u;
  }
  if (a > 0x43e00000u) code = 0x7eu;  // |v| > 448, ±Inf: saturate (also covers (448, 464), which rounds to 448)
  code |= (u >> 24) & 0x80u;
  if (a > 0x7f800000u) code = 0x7fu;  // NaN, sign not kept
  return code;
}

// decode: exact. Placing the 7 magnitude bits at f32 bit 20 makes a binary32 whose value is the e4m3 value
// times 2^-120 (e4m3 subnormals become f32 subnormals), so one exact multiply by 2^120 rebiases it.
TK_HD float decode_e4m3(uint32_t c) {
  const uint32_t em = c & 0x7fu;
  if (em == 0x7fu) return u2f(0x7fc00000u);
  const float mag = mul_rn(u2f(em << 20), 0x1p120f);
  return u2f(f2u(mag) | ((c & 0x80u) << 24));
}

// ---- e2m1 ---------------------------------------------------------------------------------------------------
// §1.3: RN onto the e2m1 grid, ties to even, saturation at 6, NaN → 0x7 with the sign dropped, zero keeps its
// sign. Same construction as encode_e4m3 with one mantissa bit (the spec's table is its result; the exhaustive
// check compares against the table).
TK_HD uint32_t encode_e2m1(float v) {
  const uint32_t u = f2u(v);
  const uint32_t a = u & 0x7fffffffu;
  // |v| ≥ 1: round the mantissa to 1 bit (ties to even, a carry bumps the exponent), rebias 127 → 1
  uint32_t code = ((a + 0x1fffffu + ((a >> 22) & 1u)) >> 22) - (126u << 1);
  // |v| < 1: grid 0.5; |v|·2 is exact and < 2, and adding 2^23 rounds it to an integer with ties to even
  if (a < 0x3f800000u) code = f2u(add_rn(mul_rn(u2f(a), 2.0f), 8388608.0f)) - 0x4b000000u;
  if (a > 0x40c00000u) code = 7u;  // |v| > 6, ±Inf, NaN
  const uint32_t sign = (a > 0x7f800000u) ? 0u : ((u >> 28) & 8u);  // NaN → 0x7, sign dropped
  return sign | code;
}

// decode: exact. The 3 magnitude bits at f32 bit 22 give the e2m1 value times 2^-126 (code 1 = 0.5 becomes a
// subnormal), and 2^126 rebiases it.
TK_HD float decode_e2m1(uint32_t n) {
  const float mag = mul_rn(u2f((n & 7u) << 22), 0x1p126f);
  return u2f(f2u(mag) | ((n & 8u) << 28));
}

// ---- ue8m0 --------------------------------------------------------------------------------------------------
// §1.4: the byte is the binary32 exponent field; 0 decodes to +0.0 (so zero padding never scales anything up)
// and 255 to +Inf.
TK_HD float decode_ue8m0(uint32_t b) { return u2f((b & 0xffu) << 23); }

// ---- bf16 ---------------------------------------------------------------------------------------------------
// §1.5: RNE on the bit pattern; NaN → 0x7FC0 (the hardware's cvt.rn.bf16 gives 0x7FFF, hence software here;
// encode_bf16x2 below is the hardware conversion with the NaN fixed up, for the kernels' hot loops).
// For non-NaN u ≤ 0xFF800000, so u + 0x8000 cannot wrap.
TK_HD uint32_t encode_bf16(float v) {
  const uint32_t u = f2u(v);
  if (is_nan_bits(u)) return 0x7fc0u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

TK_HD float decode_bf16(uint32_t h) { return u2f(h << 16); }

// Low and high bf16 of a packed word, widened exactly.
TK_HD float bf16_lo(uint32_t w) { return u2f(w << 16); }
TK_HD float bf16_hi(uint32_t w) { return u2f(w & 0xffff0000u); }

// fp32 results leave the kernels with one NaN pattern, 0x7FC00000, the quiet NaN a CPU reference produces; the
// GPU's arithmetic would give 0x7FFFFFFF, and the spec drops NaN signs everywhere else (§1.2, §1.5).
TK_HD float canonical_nan(float v) { return is_nan_bits(f2u(v)) ? u2f(0x7fc00000u) : v; }

#if defined(__CUDACC__)
// Four e4m3 codes (a in the low byte) with the hardware's RN satfinite conversion: two values per instruction
// instead of ~10 integer operations per value, which is what keeps the bf16 → e4m3 cast at HBM speed. PTX defines
// cvt.rn.satfinite.e4m3x2.f32 as round-to-nearest-even with finite inputs beyond ±448 and ±Inf clamped to ±448,
// i.e. §1.2, except that a NaN input gives a NaN whose sign PTX does not specify. The only e4m3 NaN bytes are 0x7F
// and 0xFF, and satfinite never produces 0xFF for a non-NaN input, so clearing bit 7 of every 0xFF byte gives the
// spec's result for every input. On sm_90 the hardware already gives 0x7F for every NaN and the fix-up is left
// out. (Both forms checked against encode_e4m3 for all 2^32 binary32 inputs on an H200.)
TK_DEV uint32_t encode_e4m3x4(float a, float b, float c, float d) {
  uint32_t w;
  asm("{\n\t.reg .b16 lo, hi;\n\t"
      "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n\t"  // first source goes to the upper byte
      "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n\t"
      "mov.b32 %0, {lo, hi};\n\t}"
      : "=r"(w)
      : "f"(a), "f"(b), "f"(c), "f"(d));
#if __CUDA_ARCH__ == 900
  // sm_90: the raw conversion itself was checked equal to encode_e4m3 for all 2^32 inputs (every NaN gives 0x7F)
  return w;
#else
  // bit 7 of each byte whose low 7 bits are all ones (no carry crosses a byte: 0x7F + 1 = 0x80) and whose sign is set
  const uint32_t neg_nan = ((w & 0x7f7f7f7fu) + 0x01010101u) & w & 0x80808080u;
  return w ^ neg_nan;
#endif
}

// Two bf16 (lo in bits 0–15), encode_bf16(lo) | encode_bf16(hi) << 16 up to NaNs, with one hardware RNE conversion per pair
// instead of ~8 integer operations per value (the norm kernels encode every output element, and their issue slots,
// not HBM, bounded them). cvt.rn.bf16x2.f32 is round-to-nearest-even on the binary32 value, subnormals kept and
// overflow to ±Inf, i.e. encode_bf16 for every non-NaN input; a NaN gives some NaN half (0x7FFF on sm_90), which
// bf16x2_fix_nan replaces by 0x7FC0 whatever its pattern. Callers that encode many pairs convert them all with
// encode_bf16x2_nan_unfixed and fix the words only when one of the inputs was a NaN (RowChunk::set_all).
TK_DEV uint32_t encode_bf16x2_nan_unfixed(float lo, float hi) {
  uint32_t w;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));  // first source goes to the upper half
  return w;
}
// Every NaN half → 0x7FC0, branch-free; other halves unchanged. A half h is NaN iff (h & 0x7FFF) + 0x7F reaches
// bit 15 (no carry crosses halves: 0x7FFF + 0x7F < 0x10000).
TK_DEV uint32_t bf16x2_fix_nan(uint32_t w) {
  const uint32_t nan = ((w & 0x7fff7fffu) + 0x007f007fu) & 0x80008000u;
  const uint32_t m = nan | (nan - (nan >> 15));  // 0xFFFF on every NaN half
  return (w & ~m) | (0x7fc07fc0u & m);
}
// Two binary32 values to a packed bf16 pair, lo in bits 0–15: encode_bf16(lo) | encode_bf16(hi) << 16 exactly
// (NaN halves 0x7FC0). One hardware conversion per pair and a branch-free NaN fix.
TK_DEV uint32_t encode_bf16x2(float lo, float hi) { return bf16x2_fix_nan(encode_bf16x2_nan_unfixed(lo, hi)); }
// kWords packed pairs, w[k] = encode_bf16x2(v[2k], v[2k + 1]) exactly: the conversions first, then the NaN fix only
// when some half came out NaN (3 integer operations per word to detect, against 9 to fix every word).
template <int kWords>
TK_DEV void encode_bf16x2_words(const float* v, uint32_t* w) {
  uint32_t nan = 0;
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    w[k] = encode_bf16x2_nan_unfixed(v[2 * k], v[2 * k + 1]);
    nan |= (w[k] & 0x7fff7fffu) + 0x007f007fu;
  }
  if (nan & 0x80008000u) {
#pragma unroll
    for (int k = 0; k < kWords; ++k) w[k] = bf16x2_fix_nan(w[k]);
  }
}

// Two e4m3 codes (bits 0–15: first code in the low byte) widened to binary32 through the hardware's exact
// e4m3 → f16 conversion (every e4m3 value is an f16 value; e4m3 subnormals are f16 normals) and f16 → f32.
// A NaN code gives some NaN; callers only ever test or propagate it. (Checked against decode_e4m3 for all
// 65536 code pairs on an H200.)
TK_DEV void decode_e4m3x2(uint32_t codes, float& lo, float& hi) {
  asm("{\n\t.reg .b16 c, l, h;\n\t.reg .b32 f;\n\t"
      "cvt.u16.u32 c, %2;\n\t"
      "cvt.rn.f16x2.e4m3x2 f, c;\n\t"
      "mov.b32 {l, h}, f;\n\t"
      "cvt.f32.f16 %0, l;\n\t"
      "cvt.f32.f16 %1, h;\n\t}"
      : "=f"(lo), "=f"(hi)
      : "r"(codes));
}
#endif

}  // namespace tk

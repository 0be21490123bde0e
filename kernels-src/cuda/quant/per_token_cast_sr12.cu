// perTokenCast bf16 → e4m3 with stochasticCast, groups of 128, x and data 16-byte aligned: `_g128_sr_wu` (warp
// units, per_token_cast.cu run_warp_units) with the e4m3 rounding of §7.3 done in a domain scaled by 2^-120
// (docs/perf-notes/perf12-sr.md). Same hash (sr_mix of bits(fl(x·inv)), §7.4), same NaN probe and fallback, same
// bytes; only the per-value steps between the hash byte R and the hardware RN conversion differ.
//
// sr_e4m3_value (common/stochastic.cuh) forms t = max(|v|, rz(|v|/2 + 2^-7)) + R·2^12 − K + sign with K = 2^-7's
// pattern: the max() and the rz FMA make the quantum 2^-9 of the e4m3 subnormals out of a binary32 normal. Here
// s = rz(v · 2^-120) (signed) does the same with the binary32 subnormals: for |v| ≥ 2^-6 the product is exact and
// its pattern is bits(|v|) − K (= p − K above); for |v| < 2^-6 it is a binary32 subnormal whose pattern is
// ⌊|v|·2^29⌋, which is p − K above as well (p = 2^-7 + |v|/2 truncated on the 2^-30 grid). So t = bits(s) + R·2^12
// is the same integer (the sign rides in bit 31, as sr_e4m3_value adds it: no carry reaches it), for every
// non-NaN v but ±Inf (t differs there, and both give a y that the conversion saturates to ±448).
// tools/sr12_check.cpp compares the two forms' codes over binary32 patterns and every R on the host.
// Per value: FMUL.RZ, byte of r0, IMAD, LOP3, FMUL (and half an F2FP) instead of LOP3 (sign), byte of r0, IMAD,
// FFMA.RZ, FMNMX, IADD3, LOP3, FMUL.
#include <stdint.h>
#include "../common/sr_chunk.cuh"

namespace tk {

// §7.3 e4m3 of a non-NaN v with random byte R, as the signed binary32 value the RN conversion encodes exactly
// (or saturates); equal to sr_e4m3_value(f2u(v), R) except at ±Inf, which both saturate (see above)
TK_DEV float sr12_e4m3_value(float v, uint32_t R) {
  const uint32_t t = f2u(__fmul_rz(v, 0x1p-120f)) + R * 4096u;
  return mul_rn(u2f(t & 0xfff00000u), 0x1p120f);
}

// encode_chunk_sr (common/sr_chunk.cuh) for e4m3 with sr12_e4m3_value on the NaN-free path
template <Fmt kOut, int kVec>
TK_DEV void encode_chunk_sr12(const float* v, uint32_t* out, uint32_t col0) {
  if constexpr (kOut != Fmt::kE4m3) {
    encode_chunk_sr<kOut, kVec>(v, out, col0);
  } else {
    static_assert(kVec % 4 == 0, "encode_chunk_sr12: whole quads");
    constexpr int kQuads = kVec / 4;
    uint32_t u[kVec], r0[kQuads];
#pragma unroll
    for (int e = 0; e < kVec; ++e) u[e] = f2u(v[e]);
#pragma unroll
    for (int q = 0; q < kQuads; ++q) r0[q] = sr_mix(u[4 * q], u[4 * q + 1], u[4 * q + 2], u[4 * q + 3], col0 / 4 + q).r0;
    // the probe of sr_encode_e4m3_quads: a pairwise sum of |v|, NaN exactly when some v is
    float probe[kVec];
#pragma unroll
    for (int i = 0; i < kVec; ++i) probe[i] = fabsf(v[i]);
#pragma unroll
    for (int n = kVec / 2; n >= 1; n /= 2)
#pragma unroll
      for (int i = 0; i < n; ++i) probe[i] = add_rn(probe[i], probe[i + n]);
    if (probe[0] == probe[0]) {
#pragma unroll
      for (int q = 0; q < kQuads; ++q) {
        float y[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) y[i] = sr12_e4m3_value(v[4 * q + i], __byte_perm(r0[q], 0u, 0x4440u + i));
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
}

}  // namespace tk

#define TK_PTC_SR_ENCODE encode_chunk_sr12
#define TK_PTC_NO_KERNELS
#include "per_token_cast.cu"

// _g128_sr_wu's kernel (same template arguments, PDL prologue) with encode_chunk_sr12
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_per_token_cast__bf16_e4m3_g128_sr_wu12(const __grid_constant__ PerTokenCastParams p) {
  tk::GroupCast<tk::Fmt::kBf16, tk::Fmt::kE4m3, 128, true, 4, tk::kFormSrWarpUnits, true, true>(p).run();
}

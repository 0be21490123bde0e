// perTokenCast bf16 → e4m3 with stochasticCast, groups of 128, x and data 16-byte aligned: `_g128_sr_wu` (warp
// units, per_token_cast.cu run_warp_units) with the e4m3 rounding of §7.3 done in a domain scaled by 2^-120
// (docs/perf-notes/perf12-sr.md). Same hash (sr_mix of bits(fl(x·inv)), §7.4), same NaN probe and fallback, same
// bytes; only the per-value steps between the hash byte R and the hardware RN conversion differ.
//
// The rounding (sr12_e4m3_value, sr12_encode_e4m3_quads) lives in common/stochastic.cuh, shared with cast_sr12.cu;
// tools/sr12_check.cpp compares its codes with §7.3's over binary32 patterns and every R on the host.
#include <stdint.h>
#include "../common/sr_chunk.cuh"

namespace tk {

// encode_chunk_sr (common/sr_chunk.cuh) for e4m3 with sr12_encode_e4m3_quads
template <Fmt kOut, int kVec>
TK_DEV void encode_chunk_sr12(const float* v, uint32_t* out, uint32_t col0) {
  if constexpr (kOut != Fmt::kE4m3) {
    encode_chunk_sr<kOut, kVec>(v, out, col0);
  } else {
    static_assert(kVec % 4 == 0, "encode_chunk_sr12: whole quads");
    constexpr int kQuads = kVec / 4;
    uint32_t u[kVec], r0[kQuads], o[kQuads];
#pragma unroll
    for (int e = 0; e < kVec; ++e) u[e] = f2u(v[e]);
#pragma unroll
    for (int q = 0; q < kQuads; ++q) r0[q] = sr_mix(u[4 * q], u[4 * q + 1], u[4 * q + 2], u[4 * q + 3], col0 / 4 + q).r0;
    sr12_encode_e4m3_quads<kQuads>(u, r0, o);
#pragma unroll
    for (int q = 0; q < kQuads; ++q) out[q] = o[q];
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

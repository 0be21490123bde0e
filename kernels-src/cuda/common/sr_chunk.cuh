// The stochastic form of encode_chunk (chunk.cuh) for the per-token cast with stochasticCast (spec/quant.md §2.5,
// §7.4): quads are columns 4Q … 4Q+3 counted from the row start (the row is not hashed), idx = Q, and element
// 4Q+i takes byte i of r0.
#pragma once
#include <stdint.h>
#include "chunk.cuh"
#include "stochastic.cuh"

namespace tk {

// Encode kVec scaled values v (the fl(x·inv) being rounded) whose first column is col0 (a multiple of 4).
template <Fmt kOut, int kVec>
TK_DEV void encode_chunk_sr(const float* v, uint32_t* out, uint32_t col0) {
  static_assert(kVec % 4 == 0, "encode_chunk_sr: whole quads");
  constexpr SrTarget kT = kOut == Fmt::kE4m3 ? SrTarget::kE4m3 : SrTarget::kE2m1;
  constexpr int kWords = kOut == Fmt::kE4m3 ? kVec / 4 : (kVec + 7) / 8;
#pragma unroll
  for (int i = 0; i < kWords; ++i) out[i] = 0;
#pragma unroll
  for (int q = 0; q < kVec / 4; ++q) {
    const uint32_t b0 = f2u(v[4 * q]), b1 = f2u(v[4 * q + 1]), b2 = f2u(v[4 * q + 2]), b3 = f2u(v[4 * q + 3]);
    const uint32_t r0 = sr_mix(b0, b1, b2, b3, col0 / 4 + q).r0;
    const uint32_t b[4] = {b0, b1, b2, b3};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = 4 * q + i;
      const uint32_t code = sr_encode<kT>(b[i], (r0 >> (8 * i)) & 0xffu);
      if constexpr (kOut == Fmt::kE4m3) {
        out[e / 4] |= code << (8 * (e % 4));
      } else {
        out[e / 8] |= code << (4 * (e % 8));
      }
    }
  }
}

}  // namespace tk

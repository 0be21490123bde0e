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
  constexpr int kQuads = kVec / 4;
  uint32_t u[kVec], r0[kQuads];
#pragma unroll
  for (int e = 0; e < kVec; ++e) u[e] = f2u(v[e]);
#pragma unroll
  for (int q = 0; q < kQuads; ++q) r0[q] = sr_mix(u[4 * q], u[4 * q + 1], u[4 * q + 2], u[4 * q + 3], col0 / 4 + q).r0;
  if constexpr (kOut == Fmt::kE4m3) {
    uint32_t o[kQuads];
    sr_encode_e4m3_quads<kQuads>(u, r0, o);
#pragma unroll
    for (int q = 0; q < kQuads; ++q) out[q] = o[q];
  } else {
#pragma unroll
    for (int i = 0; i < (kVec + 7) / 8; ++i) out[i] = 0;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      out[e / 8] |= sr_encode<SrTarget::kE2m1>(u[e], (r0[e / 4] >> (8 * (e % 4))) & 0xffu) << (4 * (e % 8));
    }
  }
}

}  // namespace tk

// The steps of the bf16 rows kernels that hold a row's x in registers and the slot's partials in shared memory,
// norm_backward_sw.cu's _b4swc (norm_backward_rows_sw) and, until trim24 removed it, norm_backward.cu's _b4swx
// (norm_backward_rows_wreg): the partials' start and store, and the barrier between the passes. Shared so that the
// two files could not drift apart; moving them here left every kernel's .text identical (tools/textcmp.py). The passes' arithmetic (the
// same operations in the same order in both) stays in each kernel: as helpers here it changed the register
// allocation (_b4swc on sm_90a, _b4swx on sm_100a).
#pragma once
#include "../common/chunk.cuh"
#include "../common/fp.cuh"
#include "../common/ldst.cuh"
#include "../common/rms_tree.cuh"

namespace tk {
namespace {

// The slot's partials [chunk][quad][thread] (float4), +0 before the first row.
template <int kL, class AccAt>
TK_DEV void bwd_rows_zero_partials(AccAt&& acc_at) {
#pragma unroll
  for (int i = 0; i < kL; ++i)
#pragma unroll
    for (int q = 0; q < kRmsChunk / 4; ++q) acc_at(i, q) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

// Hide x's words from the optimizer between the passes, so that pass 2 recomputes xh and gw instead of keeping
// pass 1's values alive across the reduction.
template <int kL, class Chunk>
TK_DEV void bwd_rows_hide(Chunk (&xc)[kL]) {
#pragma unroll
  for (int i = 0; i < kL; ++i)
#pragma unroll
    for (int k = 0; k < Chunk::kWords; ++k) asm volatile("" : "+r"(xc[i].w[k]));
}

// The slot's partials into its fp32 workspace row ws (live chunks only).
template <int kL, class AccAt>
TK_DEV void bwd_rows_store_partials(uint8_t* ws, const uint32_t (&c)[kL], const bool (&live)[kL], AccAt&& acc_at) {
#pragma unroll
  for (int i = 0; i < kL; ++i) {
    if (live[i]) {
#pragma unroll
      for (int q = 0; q < kRmsChunk / 4; ++q) {
        const float4 v = acc_at(i, q);
        st_v4(ws + static_cast<uint64_t>(c[i]) * kRmsChunk * 4 + kVecBytes * q, f2u(v.x), f2u(v.y), f2u(v.z), f2u(v.w));
      }
    }
  }
}

}  // namespace
}  // namespace tk

// The row helpers of the SwiGLU kernels (swiglu.cu and the 16-lane team form swiglu_bwd_t16.cuh): the flag and
// fault bits of SwigluParams, the expert layout's row test (§8.1), the psum contract check (§11.2) and the row
// weight (§8.2). Shared so that the two files cannot drift apart; moving them here left every kernel's .text
// identical (tools/textcmp.py, docs/perf-notes/perf11-sbc.md).
#pragma once
#include "../common/error_word.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../generated/swiglu_params.h"

namespace tk {
namespace {

// SWIGLU_FLAG of ops/quant/swiglu.params.ts
enum SwigluFlag : uint32_t { kHasWeights = 1, kHasScale = 2, kHasClamp = 4, kHasCounts = 8, kRecompute = 16 };
// Condition bits of the error word (registered with their texts in ops/quant/swiglu_launch.ts)
enum SwigluFault : uint32_t { kPsumBelowStart = 1, kPsumBeyondRows = 2 };

// align(v, a) for v ≥ 0 in 32-bit division (a 64-bit `/` or `%` is a called subroutine, and the first H200 run
// met atomics executed whatever their guard in a loop that held one); a negative v (only in a psum that breaks
// §11.2) gives 0, which is never used to index.
TK_DEV int64_t align_up(int32_t v, uint32_t a) {
  if (v < 0) return 0;
  const uint32_t q = static_cast<uint32_t>(v) / a;
  const uint32_t r = static_cast<uint32_t>(v) - q * a;
  return static_cast<int64_t>(q) * a + (r ? a : 0u);
}

TK_DEV int32_t psum_at(const SwigluParams& p, uint32_t e) {
  return static_cast<int32_t>(ld_u32(reinterpret_cast<const uint8_t*>(p.psum) + 4ull * e));
}

// Whether row t (< T) is real: binary search of the first e with psum[e] > t (reads only [0, E)).
TK_DEV bool row_is_real(const SwigluParams& p, int64_t t) {
  if (p.num_experts == 0) return true;
  uint32_t lo = 0, hi = p.num_experts;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (psum_at(p, mid) > t) hi = mid;
    else lo = mid + 1;
  }
  if (lo == p.num_experts) return false;  // at or beyond psum[E−1]
  const int64_t start = lo == 0 ? 0 : align_up(psum_at(p, lo - 1), p.token_alignment);
  return t >= start;
}

// §11.2 contract of psum, checked by block 0: psum[e] ≥ align(psum[e−1], A) and psum[e] ≤ T. One report per
// broken condition, each with its constant bit.
TK_DEV void check_psum(const SwigluParams& p) {
  if (blockIdx.x != 0 || p.num_experts == 0) return;
  for (uint32_t e = threadIdx.x; e < p.num_experts; e += blockDim.x) {
    const int64_t end = psum_at(p, e);
    const int64_t start = e == 0 ? 0 : align_up(psum_at(p, e - 1), p.token_alignment);
    if (end < start) report_fault(p.error_word, p.op_id, kPsumBelowStart);
    if (end > static_cast<int64_t>(p.num_tokens)) report_fault(p.error_word, p.op_id, kPsumBeyondRows);
  }
}

// Row weight w (§8.2): topkWeights[t], times fl32(routedScalingFactor) if given; 1 without weights.
TK_DEV float row_weight(const SwigluParams& p, uint64_t t) {
  if (!(p.flags & kHasWeights)) return 1.0f;
  const float w = u2f(ld_u32(reinterpret_cast<const uint8_t*>(p.weights) + 4 * t));
  return (p.flags & kHasScale) ? mul_rn(w, p.scale) : w;
}

}  // namespace
}  // namespace tk

// fl(1/b) (binary32, round to nearest even: the result of div_rn(1.0f, b)) without the division's per-operation
// slow-path branch, for a batch of b that mostly lie in [1, 2^124] (the SwiGLU backward's 1 + e^(−g)).
//
// On the device div_rn (div.rn.f32) is a seed, a few FMAs and a range check that calls a slow-path subroutine
// (__cuda_sm3x_div_rn_noftz_f32_slowpath in the cubin): each division ends a basic block, so 8 divisions of a chunk
// run one after another. recip_rn_n computes all of a batch branch-free from the hardware's approximate
// reciprocal (rcp.approx.ftz.f32, MUFU.RCP) by one Newton step and one correction step, and sends only the inputs
// outside [1, 2^124] (and NaN, and the significands of all ones) through div_rn, in one inlined copy (the pattern of expf_cr_n).
//
// Why the result is div_rn's: recip_from_seed(b, r0) returns fl(1/b) for every b in [1, 2) and every seed r0
// within 16 binary32 ulps of 1/b, except b = 2 − 2^−23 (see recip_fast_ok): tools/recip_check.cpp checks all
// 2^23 × 33 pairs: bad = 0; the PTX ISA bounds rcp.approx.f32's error by about 1 ulp. Each step is one fma, whose exact result is rounded once; for
// b = m · 2^k (m in [1, 2)) and r0 = s · 2^−k every exact intermediate scales by 1 or 2^−k, and with 1/b ≥ 2^−124
// the seed, r1 and the result are normal binary32 values, so the roundings scale too: the result for b is the
// result for m times 2^−k, which is fl(1/m) · 2^−k = fl(1/b). The check tool also runs the whole range
// [1, 2^124] (every binary32 b, seeds within 4 ulps) to confirm this empirically.
#pragma once
#include <stdint.h>
#include "fp.cuh"

namespace tk {

TK_HD float fmaf_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// One Newton step (r1 = r0 + r0 · (1 − b · r0)) and the correction q = r1 + r1 · (1 − b · r1).
TK_HD float recip_from_seed(float b, float r0) {
  const float e = fmaf_rn(-b, r0, 1.0f);
  const float r1 = fmaf_rn(r0, e, r0);
  const float rem = fmaf_rn(-b, r1, 1.0f);
  return fmaf_rn(rem, r1, r1);
}

// b in [1, 2^124] (false for NaN and for negative b) and b's significand not all ones. For b = (2 − 2^−23) · 2^k,
// 1/b lies just above the power of two 2^−(k+1), where the result's ulp halves: a seed at or near that power of
// two leaves the correction step on an exact tie that rounds the wrong way (tools/recip_check.cpp found those
// pairs, and only those). Such b take div_rn.
TK_HD bool recip_fast_ok(float b) {
  const uint32_t u = f2u(b);
  return u - 0x3f800000u <= 0x7d800000u - 0x3f800000u && ((u + 1u) & 0x7fffffu) != 0u;
}

#if defined(__CUDACC__)
TK_DEV float rcp_seed(float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return r;
}

// y[i] = div_rn(1.0f, b[i]) for N values: the fast form for all (one basic block), then div_rn for the inputs
// recip_fast_ok rejects, one at a time through one inlined division.
template <int N>
TK_DEV void recip_rn_n(const float (&b)[N], float (&y)[N]) {
  uint32_t slow = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    y[i] = recip_from_seed(b[i], rcp_seed(b[i]));
    slow |= static_cast<uint32_t>(!recip_fast_ok(b[i])) << i;
  }
  while (slow != 0) {
    const int j = __ffs(slow) - 1;
    slow &= slow - 1;
    float bj = b[0];
#pragma unroll
    for (int i = 1; i < N; ++i) bj = select_f32(i == j, b[i], bj);
    const float yj = div_rn(1.0f, bj);
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = select_f32(i == j, yj, y[i]);
  }
}
#endif

}  // namespace tk

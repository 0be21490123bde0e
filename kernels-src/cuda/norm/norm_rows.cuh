// Helpers of the RMSNorm forward rows kernels shared by norm_forward.cu and the fused cast of norm_cast_tp16.cu
// (round 11): the row offset, programmatic dependent launch, the weight's L2-kept load and the four-word bf16 pack.
// Shared so that the files cannot drift apart; moving them here left every kernel's .text identical
// (tools/textcmp.py). The two-pass kernels' pair-exchange squares and rstd fold stay in each file: as a helper here
// they changed `_tp16hr`'s register allocation on sm_100a.
#pragma once
#include "../common/codec.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/rms_tree.cuh"
#include "../generated/norm_params.h"

namespace tk {
namespace {

// Element offset of row (b, t) of a row tensor.
TK_DEV uint64_t row_offset(uint64_t b, uint64_t t, uint64_t batch_stride, uint64_t row_stride) {
  return b * batch_stride + t * row_stride;
}

// Programmatic dependent launch (round 10, docs/perf-notes/perf10-pdl.md; as perTokenCast's `_pdl` forms, perf9-pdl.md):
// griddepcontrol.launch_dependents lets the next grid of the stream, when it was launched with the PDL attribute
// (TK_LAUNCH_PDL, config.pdl), be scheduled once every block of this grid has issued it or exited;
// griddepcontrol.wait returns once the previous grid (when this one was launched with the attribute) has completed
// and its memory operations are visible. Launched without the attribute, neither has an effect (no designated
// dependent, no prerequisite grid in flight). Every global access of a kernel that uses them comes after its wait.
TK_DEV void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
TK_DEV void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// The weight: through L1, kept in L2 (pol: an evict_last policy).
TK_DEV void ld_keep_pol(const void* ptr, uint64_t pol, uint32_t (&w)[4]) {
  asm volatile("ld.global.nc.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(ptr), "l"(pol));
}

// Four packed bf16 pairs, w[k] = encode_bf16x2(v[2k], v[2k + 1]) exactly (encode_bf16x2_words<4>'s conversions and
// fix): a half is NaN in some word iff it is NaN in max.NaN of the four words (max.NaN gives NaN when either input
// is NaN), so the fix is taken in exactly the same cases.
TK_DEV void encode_bf16x2_words4_mx(const float* v, uint32_t (&w)[4]) {
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] = encode_bf16x2_nan_unfixed(v[2 * k], v[2 * k + 1]);
  uint32_t m;
  asm("{\n\t.reg .b32 t0, t1;\n\t"
      "max.NaN.bf16x2 t0, %1, %2;\n\t"
      "max.NaN.bf16x2 t1, %3, %4;\n\t"
      "max.NaN.bf16x2 %0, t0, t1;\n\t}"
      : "=r"(m)
      : "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]));
  if (((m & 0x7fff7fffu) + 0x007f007fu) & 0x80008000u) {
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = bf16x2_fix_nan(w[k]);
  }
}

}  // namespace
}  // namespace tk

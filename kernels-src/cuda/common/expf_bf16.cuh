// e^(−g) for a gate g that is a bf16 value, equal to expf_cr(−g) (expf.cuh, spec/quant.md §1.1-4), by a table
// lookup: the SwiGLU of bf16 inputs needs nothing else. Of the 65536 bf16 patterns only the magnitudes with exponent
// field in [kExpNegBf16Lo, kExpNegBf16Hi] matter: below the window e^(−g) rounds to 1 (|e^(−g) − 1| < 2^-25, inside
// half an ulp of 1 on either side), above it e^(−g) is +0 (g ≥ 128) or +Inf (g ≤ −128), and the table's first and
// last exponent rows already hold exactly 1 and exactly +0 / +Inf. So the lookup clamps the magnitude pattern into
// the window and needs no other case: 2 signs × 34 exponents × 128 mantissas = 8704 binary32 entries (34 KiB of
// shared memory), each entry expf_cr itself (exp_neg_bf16_entry), so the reference value by construction: computed
// once on the host into common/bf16_gate_tables.h, which each CTA copies into shared memory (copy_bf16_gate_table).
// A NaN gate reads some finite entry: its e^(−g) is unspecified, which is harmless where the caller's result is NaN
// anyway (SwiGLU: g / (1 + e) is NaN for a NaN g whatever e is). tools/expf_bf16_check.cpp checks every non-NaN
// pattern against expf_cr on the host, that every pattern's index is inside the table, and the generated header's
// entries against exp_neg_bf16_entry.
//
// Why: expf_cr costs about 17 binary64 operations per element, about as much time on an H200 as the memory traffic
// of a SwiGLU row; the lookup costs one shared-memory load and four integer operations.
#pragma once
#include <stdint.h>
#include "expf.cuh"
#include "fp.cuh"
#if defined(__CUDACC__)
#include "ldst.cuh"
#endif

namespace tk {

constexpr uint32_t kExpNegBf16Lo = 101;  // exponent field of 2^-26: e^(−g) rounds to 1 here and below
constexpr uint32_t kExpNegBf16Hi = 134;  // exponent field of 128: e^(−g) is +0 or +Inf here and above
constexpr uint32_t kExpNegBf16MagLo = kExpNegBf16Lo << 7;                // smallest tabled magnitude pattern
constexpr uint32_t kExpNegBf16MagHi = (kExpNegBf16Hi << 7) | 127u;       // largest tabled magnitude pattern
constexpr int kExpNegBf16TableSize = 2 * (kExpNegBf16MagHi - kExpNegBf16MagLo + 1);  // 8704 entries

// Table index of the gate pattern b (low 16 bits): the clamped magnitude, times 2, plus the sign bit.
TK_HD uint32_t exp_neg_bf16_index(uint32_t b) {
  uint32_t mag = b & 0x7fffu;
  mag = mag < kExpNegBf16MagLo ? kExpNegBf16MagLo : mag;
  mag = mag > kExpNegBf16MagHi ? kExpNegBf16MagHi : mag;
  return ((mag - kExpNegBf16MagLo) << 1) | ((b >> 15) & 1u);
}

// The table offsets of both gates of a 32-bit word of bf16 values (element 0 in the low half), by whole-word
// operations: what exp_neg_bf16_index costs per gate (~10 integer operations) serves two. The magnitudes are
// clamped into the window by one 16x2 max and one 16x2 min (one instruction each on sm_90 / sm_100); (mag − lo) · 8
// of both halves in one subtract-and-shift (each half stays below 2^16: no carry crosses); the sign bits 15 and 31
// moved to bit 2 of their half. `lo` / `hi`: 4 · exp_neg_bf16_index of the low / high half (a byte offset into the
// float table). `outside`: nonzero iff a half lies outside the window (silu_bf16_outside of it), since then the
// clamp changed that half. tools/expf_bf16_check.cpp compares all 2^32 words with the per-gate forms.
struct Bf16x2Offsets {
  uint32_t lo, hi, outside;
};
static_assert((kExpNegBf16MagHi - kExpNegBf16MagLo) * 8 + 4 < 0x10000u, "a half's offset fits its 16 bits");

TK_HD Bf16x2Offsets exp_neg_bf16x2_offsets(uint32_t w) {
  constexpr uint32_t kLo2 = kExpNegBf16MagLo * 0x10001u, kHi2 = kExpNegBf16MagHi * 0x10001u;
  const uint32_t m = w & 0x7fff7fffu;
  uint32_t c;
#if defined(__CUDA_ARCH__)
  asm("max.u16x2 %0, %1, %2;" : "=r"(c) : "r"(m), "r"(kLo2));
  asm("min.u16x2 %0, %0, %1;" : "+r"(c) : "r"(kHi2));
#else
  const uint32_t l = m & 0xffffu, h = m >> 16;
  const auto clamp = [](uint32_t v) { return v < kExpNegBf16MagLo ? kExpNegBf16MagLo : v > kExpNegBf16MagHi ? kExpNegBf16MagHi : v; };
  c = clamp(l) | (clamp(h) << 16);
#endif
  const uint32_t a = ((c - kLo2) << 3) | ((w >> 13) & 0x00040004u);
  return {a & 0xffffu, a >> 16, c ^ m};
}

// The table entry at byte offset `off` (exp_neg_bf16x2_offsets).
TK_HD float bf16_table_at(const float* table, uint32_t off) {
  return *reinterpret_cast<const float*>(reinterpret_cast<const char*>(table) + off);
}

// Table entry i: expf_cr(−g) for the gate pattern the index maps back to.
TK_HD float exp_neg_bf16_entry(uint32_t i) {
  const uint32_t g = ((i & 1u) << 15) | ((i >> 1) + kExpNegBf16MagLo);
  return expf_cr(-u2f(g << 16));
}

// e^(−g) for the gate pattern b = expf_cr(−g) for every non-NaN g (unspecified for NaN, see above).
TK_HD float exp_neg_bf16(uint32_t b, const float* table) { return table[exp_neg_bf16_index(b)]; }

#if defined(__CUDACC__)
// Copies a table of common/bf16_gate_tables.h (global memory, the entries computed on the host by
// exp_neg_bf16_entry / silu_bf16_entry of this header and silu_bf16.cuh; L2-resident after the first CTAs) into a
// block's 16-byte-aligned shared table: every thread of the block calls it, and the caller synchronizes before the
// first lookup. About 8.5 sixteen-byte loads per thread of a 256-thread block, where filling the table with
// entry(i) cost ~34 expf_cr and divisions per thread (~8 k clocks of an SM for 2 CTAs, with no load in flight).
TK_DEV void copy_bf16_gate_table(float* table, const uint32_t* src) {
  static_assert(kExpNegBf16TableSize % 4 == 0, "whole 16-byte pieces");
  for (uint32_t i = threadIdx.x; i < static_cast<uint32_t>(kExpNegBf16TableSize / 4); i += blockDim.x) {
    uint32_t w[4];
    ld_cached(src + 4 * i, w);
    st_shared(smem_addr(table + 4 * i), w);
  }
}
#endif

}  // namespace tk

// expf_cr (expf.cuh, spec/quant.md §1.1-4) of arguments that are bf16 values, by a table lookup. A bf16 has 65536
// patterns, and only those with exponent field in [kExpBf16Lo, kExpBf16Hi] (2^-25 ≤ |x| < 128) need a computed
// value: below the window e^x rounds to 1 (|e^x − 1| < 2^-25, inside half an ulp of 1 on either side), above it
// e^x is +Inf (x ≥ 128) or +0 (x ≤ −128), and NaN stays NaN. The table holds expf_cr of each pattern of the window
// (2 signs × 32 exponents × 128 mantissas = 8192 binary32 values, 32 KiB of shared memory), filled by the kernel
// itself with expf_cr, so an entry is the reference function's value by construction. tools/expf_bf16_check.cpp
// checks expf_bf16 against expf_cr for all 65536 patterns on the host (the classification outside the window
// included).
//
// Why: expf_cr costs about 17 binary64 operations per element, about as much time on an H200 as the memory traffic of
// a SwiGLU row; a shared-memory load costs one instruction.
#pragma once
#include <stdint.h>
#include "expf.cuh"
#include "fp.cuh"

namespace tk {

constexpr uint32_t kExpBf16Lo = 102;  // exponent field of 2^-25
constexpr uint32_t kExpBf16Hi = 133;  // exponent field of 64 (|x| < 128)
constexpr int kExpBf16Exps = kExpBf16Hi - kExpBf16Lo + 1;
constexpr int kExpBf16TableSize = 2 * kExpBf16Exps * 128;  // 8192 entries
static_assert(kExpBf16Exps == 32, "the index packs the exponent into 5 bits");

// The bf16 pattern whose value table entry i holds e^x of: sign bit 12, exponent offset bits 7..11, mantissa 0..6.
TK_HD uint32_t expf_bf16_arg(uint32_t i) {
  return ((i >> 12) << 15) | (((i >> 7) & 31u) + kExpBf16Lo) << 7 | (i & 127u);
}

// Table entry i = expf_cr of its argument.
TK_HD float expf_bf16_entry(uint32_t i) { return expf_cr(u2f(expf_bf16_arg(i) << 16)); }

// e^x for the bf16 pattern b of x (low 16 bits), equal to expf_cr(x). The index is always inside the table; the
// cases outside the window replace the loaded value by selects, so a warp never diverges.
TK_HD float expf_bf16(uint32_t b, const float* table) {
  const uint32_t e8 = (b >> 7) & 0xffu;
  const uint32_t i = ((b >> 3) & 0x1000u) | (((e8 - kExpBf16Lo) & 31u) << 7) | (b & 127u);
  const float t = table[i];
  const bool neg = (b & 0x8000u) != 0, nan = (b & 0x7fffu) > 0x7f80u;
  const float big = nan ? u2f(0x7fc00000u) : neg ? 0.0f : u2f(0x7f800000u);
  return e8 < kExpBf16Lo ? 1.0f : e8 > kExpBf16Hi ? big : t;
}

}  // namespace tk

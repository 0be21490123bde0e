// Exhaustive host check of tk::exp_neg_bf16 (kernels-src/cuda/common/expf_bf16.cuh, the table-driven e^(−g) of the
// SwiGLU backward of bf16 inputs) against tk::expf_cr (proven correctly rounded by tools/expf_proof.cpp): for all
// 65536 bf16 gate patterns the index must lie inside the table, and for every non-NaN gate the two must give the
// same binary32 bits. Then tk::silu_bf16 (common/silu_bf16.cuh, the table-driven g / (1 + e^(−g)) of the bf16
// SwiGLU forward and the fused per-channel cast) against tk::silu_cr, the reference's division: the same bits for
// every non-NaN result, a NaN for a NaN one. The tables are filled exactly as the kernels fill them. A pass here is
// a proof for the kernels: the headers compile for the host with the same explicit RN operations as on the device.
// Then the generated header the kernels copy their tables from (common/bf16_gate_tables.h) against these entries.
// Last, exp_neg_bf16x2_offsets (the lookup offsets of two gates from one word, used by the kernels) against the
// per-gate index and window test for all 2^32 words (its two 16x2 clamps mirrored per half on the host).
//
//   g++ -O2 -ffp-contract=off -std=c++17 -Ikernels-src/cuda -o /tmp/expf_bf16_check tools/expf_bf16_check.cpp
//   /tmp/expf_bf16_check               # prints bad=0
#include <cmath>
#include <cstdint>
#include <cstdio>
#include "common/bf16_gate_tables.h"
#include "common/expf_bf16.cuh"
#include "common/silu_bf16.cuh"

int main() {
  static float table[tk::kExpNegBf16TableSize];
  for (uint32_t i = 0; i < static_cast<uint32_t>(tk::kExpNegBf16TableSize); ++i) table[i] = tk::exp_neg_bf16_entry(i);
  long bad = 0;
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float g = tk::u2f(b << 16);
    if (tk::exp_neg_bf16_index(b) >= static_cast<uint32_t>(tk::kExpNegBf16TableSize)) {
      if (bad++ < 10) std::printf("b=0x%04x: index %u outside the table\n", b, tk::exp_neg_bf16_index(b));
      continue;
    }
    if (std::isnan(g)) continue;
    const float want = tk::expf_cr(-g), got = tk::exp_neg_bf16(b, table);
    if (tk::f2u(want) != tk::f2u(got) && bad++ < 10) std::printf("b=0x%04x g=%a expf_cr(-g)=%a table=%a\n", b, g, want, got);
  }
  static float silu[tk::kExpNegBf16TableSize];
  for (uint32_t i = 0; i < static_cast<uint32_t>(tk::kExpNegBf16TableSize); ++i) silu[i] = tk::silu_bf16_entry(i);
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float g = tk::u2f(b << 16);
    const float want = tk::silu_cr(g), got = tk::silu_bf16(b, silu);
    const bool same = std::isnan(want) ? std::isnan(got) : tk::f2u(want) == tk::f2u(got);
    if (!same && bad++ < 10) std::printf("b=0x%04x g=%a silu_cr=%a table=%a\n", b, g, want, got);
  }
  // the generated tables the kernels copy (common/bf16_gate_tables.h, tools/gen_bf16_gate_tables.cpp) against the
  // entries computed here
  long bad_tables = 0;
  for (uint32_t i = 0; i < static_cast<uint32_t>(tk::kExpNegBf16TableSize); ++i) {
    if (tk::kExpNegBf16Table[i] != tk::f2u(table[i]) || tk::kSiluBf16Table[i] != tk::f2u(silu[i])) {
      if (bad_tables++ < 10) std::printf("generated entry %u differs\n", i);
    }
  }
  std::printf("generated tables: bad=%ld\n", bad_tables);
  bad += bad_tables;
  // exp_neg_bf16x2_offsets (both gates of a word at once) against the per-gate index and window test, all 2^32
  // words (the halves' expected values tabulated first).
  static uint32_t off[0x10000];
  static bool out[0x10000];
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    off[b] = 4 * tk::exp_neg_bf16_index(b);
    out[b] = tk::silu_bf16_outside(b);
  }
  long bad_pairs = 0;
  for (uint64_t w = 0; w < 0x100000000ull; ++w) {
    const uint32_t lo = static_cast<uint32_t>(w) & 0xffffu, hi = static_cast<uint32_t>(w >> 16);
    const tk::Bf16x2Offsets o = tk::exp_neg_bf16x2_offsets(static_cast<uint32_t>(w));
    if (o.lo != off[lo] || o.hi != off[hi] || (o.outside != 0) != (out[lo] || out[hi])) {
      if (bad_pairs++ < 10) std::printf("w=0x%08llx: offsets %u %u outside %u\n", static_cast<unsigned long long>(w), o.lo, o.hi, o.outside);
    }
  }
  std::printf("pairs: bad=%ld\n", bad_pairs);
  bad += bad_pairs;
  std::printf("bad=%ld\n", bad);
  return bad == 0 ? 0 : 1;
}

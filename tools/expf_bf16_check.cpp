// Exhaustive host check of tk::exp_neg_bf16 (kernels-src/cuda/common/expf_bf16.cuh, the table-driven e^(−g) of the
// fused SwiGLU + per-channel cast) against tk::expf_cr (proven correctly rounded by tools/expf_proof.cpp): for all
// 65536 bf16 gate patterns the index must lie inside the table, and for every non-NaN gate the two must give the
// same binary32 bits. The table is filled exactly as the kernel fills it. A pass here is a proof for the kernel:
// both headers compile for the host with the same explicit RN operations as on the device.
//
//   g++ -O2 -ffp-contract=off -std=c++17 -Ikernels-src/cuda -o /tmp/expf_bf16_check tools/expf_bf16_check.cpp
//   /tmp/expf_bf16_check               # prints bad=0
#include <cmath>
#include <cstdint>
#include <cstdio>
#include "common/expf_bf16.cuh"

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
  std::printf("bad=%ld\n", bad);
  return bad == 0 ? 0 : 1;
}

// Exhaustive host check of tk::expf_bf16 (kernels-src/cuda/common/expf_bf16.cuh, the table-driven expf of the
// fused SwiGLU + per-channel cast) against tk::expf_cr (proven correctly rounded by tools/expf_proof.cpp): for all
// 65536 bf16 patterns the two must give the same binary32 bits (NaN: both NaN). The table is filled exactly as the
// kernel fills it. A pass here is a proof for the kernel: both headers compile for the host with the same explicit
// RN operations as on the device.
//
//   g++ -O2 -ffp-contract=off -std=c++17 -Ikernels-src/cuda -o /tmp/expf_bf16_check tools/expf_bf16_check.cpp
//   /tmp/expf_bf16_check               # prints bad=0
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include "common/expf_bf16.cuh"

int main() {
  static float table[tk::kExpBf16TableSize];
  for (uint32_t i = 0; i < static_cast<uint32_t>(tk::kExpBf16TableSize); ++i) table[i] = tk::expf_bf16_entry(i);
  long bad = 0;
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float x = tk::u2f(b << 16);
    const float want = tk::expf_cr(x), got = tk::expf_bf16(b, table);
    const bool same = std::isnan(want) ? std::isnan(got) : tk::f2u(want) == tk::f2u(got);
    if (!same && bad++ < 10) std::printf("b=0x%04x x=%a expf_cr=%a expf_bf16=%a\n", b, x, want, got);
  }
  std::printf("bad=%ld\n", bad);
  return bad == 0 ? 0 : 1;
}

// The scaled-domain e4m3 stochastic encode of kernels-src/cuda/quant/per_token_cast_sr12.cu against §7.3's
// pattern form (sr_encode_8bit, itself checked against the general form by tools/sr_encode_check.cpp): for every
// non-NaN binary32 pattern u (all 2^32 with --all, else a stride plus every pattern near the e4m3 grid) and every
// R, encode_e4m3(sr12 value) == sr_encode_8bit<kE4m3>(u, R) (every pair: tools/sr12_all_check.cpp; --all here
// takes hours: 2^40 pairs with two mode switches each). The device's __fmul_rz(v, 2^-120) is a multiply under
// FE_TOWARDZERO here (x86 SSE keeps subnormals: no FTZ/DAZ).
//   g++ -O2 -ffp-contract=off -frounding-math -std=c++17 -Ikernels-src/cuda -o /tmp/sr12_check tools/sr12_check.cpp
#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include "common/stochastic.cuh"

using namespace tk;

// the product is stored to a volatile before the mode is restored: otherwise g++ -O2 moves the multiply past the
// second fesetround (seen: 0x3c609fff · 2^-120 came out rounded to nearest)
__attribute__((noinline)) static float mul_rz(float a, float b) {
  std::fesetround(FE_TOWARDZERO);
  volatile float x = a, y = b;
  volatile float r = x * y;
  std::fesetround(FE_TONEAREST);
  return r;
}

static uint32_t sr12_code(uint32_t u, uint32_t R) {
  const uint32_t s = f2u(mul_rz(u2f(u), 0x1p-120f));
  const uint32_t t = s + R * 4096u;
  return encode_e4m3(mul_rn(u2f(t & 0xfff00000u), 0x1p120f));
}

int main(int argc, char** argv) {
  const bool all = argc > 1 && std::strcmp(argv[1], "--all") == 0;
  uint64_t n = 0, bad = 0;
  auto one = [&](uint32_t u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return;  // NaN: the probe's fallback, not this path
    for (uint32_t R = 0; R < 256; ++R) {
      ++n;
      const uint32_t a = sr12_code(u, R), b = sr_encode_8bit<SrTarget::kE4m3>(u, R);
      if (a != b && bad++ < 10) std::printf("u=%08x R=%u sr12=%02x spec=%02x\n", u, R, a, b);
    }
  };
  if (all) {
    for (uint64_t u = 0; u < (1ull << 32); u += 1) one(static_cast<uint32_t>(u));
  } else {
    for (uint64_t u = 0; u < (1ull << 32); u += 4099) one(static_cast<uint32_t>(u));
    // every pattern around every e4m3 grid point and binade edge, both signs, down into binary32 subnormals
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t m = 0; m < 8; ++m)
        for (int d = -300; d <= 300; ++d) {
          const uint32_t base = (e << 23) | (m << 20);
          const uint32_t u = static_cast<uint32_t>(static_cast<int64_t>(base) + d) & 0x7fffffffu;
          one(u);
          one(u | 0x80000000u);
        }
    for (uint32_t u = 0; u < (1u << 21); ++u) one(u), one(u | 0x3c000000u), one(u | 0x3b800000u);  // tiny / 2^-7 / 2^-8
  }
  std::printf("checked=%llu bad=%llu\n", static_cast<unsigned long long>(n), static_cast<unsigned long long>(bad));
  return bad != 0;
}

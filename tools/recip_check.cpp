// Exhaustive host check of tk::recip_from_seed (kernels-src/cuda/common/recip.cuh: the branch-free 1/b of the
// e4m3-x SwiGLU backward with the cast to groups of 128) against IEEE binary32 division 1.0f / b (the host's
// divss, correctly rounded: div_rn). The device seed rcp.approx.ftz.f32 cannot be reproduced on the host, so every
// seed within K ulps of the correctly rounded 1/b is tried (the PTX ISA bounds the seed's error by about 1 ulp):
//   part 1: every b in [1, 2) (2^23 values), K = 16 (33 seeds each);
//   part 2: every b in [1, 2^124] (the fast range of recip_fast_ok, 1.03 · 10^9 values), K = 4 (9 seeds each).
// Only b that recip_fast_ok accepts are checked (the others take div_rn). A pass is bad = 0 in both parts.
// `broken` runs part 1 with a deliberately wrong variant (no correction step, and the all-ones significands kept),
// which must report bad > 0. Also checked: recip_fast_ok is true exactly on [1, 2^124] less the significands of
// all ones, over all 2^32 patterns.
//
//   g++ -O2 -ffp-contract=off -std=c++17 -pthread -Ikernels-src/cuda -o /tmp/recip_check tools/recip_check.cpp
//   nice /tmp/recip_check [threads] [broken]
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include "common/recip.cuh"

namespace {
bool g_broken = false;

float candidate(float b, float r0) {
  if (!g_broken) return tk::recip_from_seed(b, r0);
  const float e = tk::fmaf_rn(-b, r0, 1.0f);
  return tk::fmaf_rn(r0, e, r0);  // Newton step only: not always correctly rounded
}

// Pairs (b, seed) with a result other than 1.0f / b, for b's bits in [lo, hi) and seeds within k ulps.
uint64_t run(uint32_t lo, uint32_t hi, int k, int threads) {
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> ts;
  const uint64_t n = hi - lo;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      uint64_t local = 0;
      const uint32_t a = lo + static_cast<uint32_t>(n * t / threads), z = lo + static_cast<uint32_t>(n * (t + 1) / threads);
      for (uint32_t u = a; u < z; ++u) {
        const float b = tk::u2f(u);
        if (!g_broken && !tk::recip_fast_ok(b)) continue;  // div_rn's input (significand of all ones)
        const float want = 1.0f / b;
        const uint32_t wb = tk::f2u(want);
        for (int j = -k; j <= k; ++j) {
          const float r0 = tk::u2f(wb + static_cast<uint32_t>(j));
          const float got = candidate(b, r0);
          if (tk::f2u(got) != wb) {
            if (local < 5 && t == 0) std::printf("  bad b=%08x seed=%08x got=%08x want=%08x\n", u, tk::f2u(r0), tk::f2u(got), wb);
            ++local;
          }
        }
      }
      bad += local;
    });
  }
  for (auto& th : ts) th.join();
  return bad.load();
}
}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  g_broken = argc > 2 && std::strcmp(argv[2], "broken") == 0;
  if (g_broken) std::printf("deliberately broken variant (no correction step)\n");
  // recip_fast_ok over all 2^32 patterns
  uint64_t range_bad = 0;
  for (uint64_t v = 0; v < (1ull << 32); ++v) {
    const uint32_t u = static_cast<uint32_t>(v);
    const float b = tk::u2f(u);
    const bool want = b >= 1.0f && b <= 0x1p124f && (u & 0x7fffffu) != 0x7fffffu;  // false for NaN
    range_bad += tk::recip_fast_ok(b) != want;
  }
  std::printf("recip_fast_ok == (1 <= b <= 2^124, significand not all ones) over 2^32 patterns: bad=%llu\n",
              static_cast<unsigned long long>(range_bad));
  const uint64_t b1 = run(0x3f800000u, 0x40000000u, 16, threads);
  std::printf("part 1: b in [1, 2), seeds within 16 ulps: bad=%llu\n", static_cast<unsigned long long>(b1));
  std::fflush(stdout);
  if (g_broken) return b1 == 0 ? 1 : 0;  // the broken variant must fail
  const uint64_t b2 = run(0x3f800000u, 0x7d800001u, 4, threads);
  std::printf("part 2: b in [1, 2^124], seeds within 4 ulps: bad=%llu\n", static_cast<unsigned long long>(b2));
  return range_bad + b1 + b2 == 0 ? 0 : 1;
}

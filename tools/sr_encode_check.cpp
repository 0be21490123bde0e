// Exhaustive host check of tk::sr_encode_8bit (kernels-src/cuda/common/stochastic.cuh, the pattern form of §7.3 the
// kernels use for e4m3 and e2m1) against tk::sr_encode_general (the 64-bit transcription of spec/quant.md §7.3 the
// kernels used before), and of the device's e4m3 value path (part 3):
//   1. the device's low term: for every |v| < 2^m, rz(|v|·0.5 + 2^(m−1)) (an FMA under FE_TOWARDZERO, as
//      __fmaf_rz on the device, subnormals kept) equals the host's integer form, and for every |v| ≥ 2^m it is
//      ≤ |v| (so max() keeps |v|);
//   2. for every binary32 pattern u, both targets: sr_encode_8bit(u, R) == sr_encode_general(u, R) for R at the
//      carry boundary of u's dropped bits D (256 − D and one below it), 0, 0xFF and a pseudo-random R (negative
//      patterns: the boundary pair only). R enters only through whether D + R ≥ 256, so the boundary pair checks
//      both outcomes of every u at the R where a wrong D or quantum would first show.
//
//   g++ -O2 -ffp-contract=off -frounding-math -std=c++17 -Ikernels-src/cuda -o /tmp/sr_encode_check tools/sr_encode_check.cpp
//   /tmp/sr_encode_check               # prints bad=0 (a few minutes per target)
//   /tmp/sr_encode_check --value-only  # part 3 alone
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include "common/stochastic.cuh"

template <tk::SrTarget kT>
long check_low() {
  using Rule = tk::SrRule<kT>;
  const uint32_t half_min = static_cast<uint32_t>(126 + Rule::kMinExp) << 23;
  const uint32_t min_normal = static_cast<uint32_t>(127 + Rule::kMinExp) << 23;
  long bad = 0;
  std::fesetround(FE_TOWARDZERO);
  for (uint32_t mag = 0; mag <= 0x7f800000u; ++mag) {
    volatile float a = tk::u2f(mag);
    const uint32_t dev = tk::f2u(std::fmaf(a, 0.5f, tk::u2f(half_min)));
    if (mag < min_normal) {
      // the integer form of the header (host branch), restated
      const uint32_t biased = mag >> 23;
      const uint32_t M = biased != 0u ? ((mag & 0x7fffffu) | 0x800000u) : mag;
      const uint32_t e = biased != 0u ? biased : 1u;
      const uint32_t sh = 127u + Rule::kMinExp - e;
      const uint32_t host = half_min + (sh > 31u ? 0u : M >> sh);
      if (dev != host && bad++ < 10) std::printf("low: mag=0x%08x fma_rz=0x%08x int=0x%08x\n", mag, dev, host);
    } else if (dev > mag && bad++ < 10) {
      std::printf("low: mag=0x%08x fma_rz=0x%08x above |v|\n", mag, dev);
    }
  }
  std::fesetround(FE_TONEAREST);
  return bad;
}

template <tk::SrTarget kT>
long check_encode(const char* name) {
  using Rule = tk::SrRule<kT>;
  constexpr int kShift = 23 - Rule::kMant;
  const uint32_t min_normal = static_cast<uint32_t>(127 + Rule::kMinExp) << 23;
  long bad = 0;
  for (uint64_t w = 0; w < (1ull << 32); ++w) {
    const uint32_t u = static_cast<uint32_t>(w);
    const uint32_t mag = u & 0x7fffffffu;
    // D: the 8 bits below the quantum (of |v|, or of the low term below 2^m); R = 256 − D is the carry boundary
    uint32_t low = mag;
    if (mag < min_normal) {
      const uint32_t biased = mag >> 23;
      const uint32_t M = biased != 0u ? ((mag & 0x7fffffu) | 0x800000u) : mag;
      const uint32_t e = biased != 0u ? biased : 1u;
      const uint32_t sh = 127u + Rule::kMinExp - e;
      low = (static_cast<uint32_t>(126 + Rule::kMinExp) << 23) + (sh > 31u ? 0u : M >> sh);
    }
    const uint32_t D = (low >> (kShift - 8)) & 0xffu;
    const uint32_t edge = (256u - D) & 0xffu;
    const uint32_t rs[] = {edge, (edge - 1u) & 0xffu, 0u, 0xffu, (u * 0x9e3779b9u) >> 24};
    const int n = (u >> 31) ? 2 : 5;  // negative patterns: the sign is the only difference, two R suffice
    for (int i = 0; i < n; ++i) {
      const uint32_t want = tk::sr_encode_general<kT>(u, rs[i]), got = tk::sr_encode_8bit<kT>(u, rs[i]);
      if (want != got && bad++ < 10) {
        std::printf("%s: u=0x%08x R=%u general=0x%02x pattern=0x%02x\n", name, u, rs[i], want, got);
      }
    }
    if ((u & 0x0fffffffu) == 0x0fffffffu) {
      std::printf("%s: through 0x%08x, bad=%ld\n", name, u, bad);
      std::fflush(stdout);
    }
  }
  return bad;
}

// 3. the device's e4m3 fast path (tk::sr_e4m3_value, then the RN satfinite conversion, which equals encode_e4m3 for
//    every non-NaN input): encode_e4m3(sr_e4m3_value(u, R)) == sr_encode_8bit<e4m3>(u, R) for every non-NaN
//    pattern u (NaN never takes that path) at the same R as part 2. The host form of sr_e4m3_value differs from
//    the device's only in the low term, which part 1 proves equal.
long check_e4m3_value() {
  constexpr int kShift = 20;
  const uint32_t min_normal = 121u << 23;
  long bad = 0;
  for (uint64_t w = 0; w < (1ull << 32); ++w) {
    const uint32_t u = static_cast<uint32_t>(w);
    const uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) continue;
    const uint32_t low = mag < min_normal ? tk::sr_low_term_host<tk::SrTarget::kE4m3>(mag) : mag;
    const uint32_t D = (low >> (kShift - 8)) & 0xffu;
    const uint32_t edge = (256u - D) & 0xffu;
    const uint32_t rs[] = {edge, (edge - 1u) & 0xffu, 0u, 0xffu, (u * 0x9e3779b9u) >> 24};
    for (const uint32_t R : rs) {
      const uint32_t want = tk::sr_encode_8bit<tk::SrTarget::kE4m3>(u, R);
      const uint32_t got = tk::encode_e4m3(tk::sr_e4m3_value(u, R));
      if (want != got && bad++ < 10) std::printf("e4m3 value: u=0x%08x R=%u pattern=0x%02x value=0x%02x\n", u, R, want, got);
    }
    if ((u & 0x0fffffffu) == 0x0fffffffu) {
      std::printf("e4m3 value: through 0x%08x, bad=%ld\n", u, bad);
      std::fflush(stdout);
    }
  }
  return bad;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--value-only") {
    const long bad = check_e4m3_value();
    std::printf("bad=%ld\n", bad);
    return bad == 0 ? 0 : 1;
  }
  long bad = check_low<tk::SrTarget::kE4m3>() + check_low<tk::SrTarget::kE2m1>();
  std::printf("low term: bad=%ld\n", bad);
  std::fflush(stdout);
  bad += check_encode<tk::SrTarget::kE4m3>("e4m3");
  bad += check_encode<tk::SrTarget::kE2m1>("e2m1");
  bad += check_e4m3_value();
  std::printf("bad=%ld\n", bad);
  return bad == 0 ? 0 : 1;
}

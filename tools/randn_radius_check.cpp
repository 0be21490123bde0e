// Exhaustive host check of tk::normal_split (kernels-src/cuda/common/philox.cuh, the integer exponent split the
// randn kernels use) and of the integer form of t = −2.0 ⊗ lnu, against §C.2.2 of spec/norm-rope-rand.md
// transcribed step by step in binary64, for all 2³² values of w1:
//   1. the pattern of m and the exponent e from normal_split equal those of the spec's steps
//      u = (w1 + 1) ⊗ 2⁻³², (f, e) = frexp-style split, f > SQRT2 → m = f ⊗ 0.5, e + 1;
//   2. lnu (the spec's binary64 steps from that m and e, host division correctly rounded) is +0 exactly when
//      w1 = 0xFFFFFFFF and otherwise a negative normal number, and the pattern the kernel builds for t (high word
//      + 0x80000000 for u = 1, + 0x80100000 otherwise, low word kept) equals the bits of −2.0 ⊗ lnu.
// Prints the number of mismatches (bad=0) and the range of |lnu|.
//
//   g++ -O2 -ffp-contract=off -std=c++17 -pthread -Ikernels-src/cuda \
//       -o /tmp/randn_radius_check tools/randn_radius_check.cpp
//   /tmp/randn_radius_check   # ~2 minutes on 2 cores
// Last run: |lnu| in [0x1.000000008p-32, 0x1.62e42fefa39efp+4], bad=0.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include "common/philox.cuh"

namespace {

constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;
constexpr double kLn2Hi = 0x1.62e42fee00000p-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
constexpr double kL[10] = {0x1.0000000000000p+1, 0x1.5555555555555p-1, 0x1.999999999999ap-2, 0x1.2492492492492p-2,
                           0x1.c71c71c71c71cp-3, 0x1.745d1745d1746p-3, 0x1.3b13b13b13b14p-3, 0x1.1111111111111p-3,
                           0x1.e1e1e1e1e1e1ep-4, 0x1.af286bca1af28p-4};

uint64_t bits_of(double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  return b;
}
double of_bits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, 8);
  return x;
}

struct Result {
  uint64_t bad = 0;
  double min_abs = 1e300, max_abs = 0;
};

// volatile stores between steps keep the compiler from fusing or reordering anything (with -ffp-contract=off it
// would not anyway; x86-64 SSE2 binary64 arithmetic is IEEE round-to-nearest-even).
void run(uint64_t lo, uint64_t hi, Result& res) {
  for (uint64_t w = lo; w < hi; ++w) {
    const uint32_t w1 = static_cast<uint32_t>(w);
    // The spec's steps.
    const double u = static_cast<double>(w + 1) * 0x1p-32;
    const uint64_t ub = bits_of(u);
    int e = static_cast<int>((ub >> 52) & 0x7ff) - 1023;
    double m = of_bits((ub & 0x800fffffffffffffull) | (1023ull << 52));
    if (m > kSqrt2) {
      m = m * 0.5;
      e += 1;
    }
    // The kernel's split.
    const tk::NormalSplit sp = tk::normal_split(w1);
    const uint64_t mk = (static_cast<uint64_t>(sp.hi) << 32) | sp.lo;
    bool bad = mk != bits_of(m) || sp.e != e || sp.one != (w1 == 0xFFFFFFFFu);
    // The rest of R up to t.
    const double a = m - 1.0;
    const double b = m + 1.0;
    const double s = a / b;
    const double z2 = s * s;
    double poly = kL[9];
    for (int k = 8; k >= 0; --k) {
      const double p = poly * z2;
      poly = p + kL[k];
    }
    const double lnm = s * poly;
    const double E = static_cast<double>(e);
    const double h = E * kLn2Hi;
    const double l = E * kLn2Lo;
    const double inner = l + lnm;
    const double lnu = h + inner;
    const double t = -2.0 * lnu;
    const uint64_t lb = bits_of(lnu);
    const uint32_t lnu_hi = static_cast<uint32_t>(lb >> 32);
    const uint32_t t_hi = lnu_hi + (sp.one ? 0x80000000u : 0x80100000u);
    const uint64_t tk = (static_cast<uint64_t>(t_hi) << 32) | (lb & 0xffffffffull);
    if (sp.one) {
      bad |= lb != 0;  // +0
    } else {
      const unsigned ex = static_cast<unsigned>((lb >> 52) & 0x7ff);
      bad |= !(lnu < 0) || ex == 0 || ex >= 0x7fe;
      const double aa = -lnu;
      if (aa < res.min_abs) res.min_abs = aa;
      if (aa > res.max_abs) res.max_abs = aa;
    }
    bad |= tk != bits_of(t);
    if (bad) {
      if (res.bad < 10) std::printf("mismatch w1=%08x\n", w1);
      ++res.bad;
    }
  }
}

}  // namespace

int main() {
  const unsigned nt = std::thread::hardware_concurrency() > 1 ? 2 : 1;
  std::vector<Result> res(nt);
  std::vector<std::thread> th;
  const uint64_t total = 1ull << 32;
  for (unsigned i = 0; i < nt; ++i) th.emplace_back(run, total / nt * i, total / nt * (i + 1), std::ref(res[i]));
  for (auto& t : th) t.join();
  uint64_t bad = 0;
  double mn = 1e300, mx = 0;
  for (auto& r : res) {
    bad += r.bad;
    if (r.min_abs < mn) mn = r.min_abs;
    if (r.max_abs > mx) mx = r.max_abs;
  }
  std::printf("w1 checked: %llu  |lnu| in [%a, %a] (w1 != 0xFFFFFFFF)  bad=%llu\n",
              static_cast<unsigned long long>(total), mn, mx, static_cast<unsigned long long>(bad));
  return bad != 0;
}

// Exhaustive host check of tk::expf_cr (kernels-src/cuda/common/expf.cuh, the SwiGLU kernels' expf): for every
// binary32 input in [lo, hi) the result must equal the correctly rounded e^x of spec/quant.md §1.1-4. The oracle is
// x87 expl (64-bit significand, error well below 2^-60 relative) rounded once to binary32; an input whose expl value
// lies within 2^-60 relative of a binary32 rounding midpoint is reported as ambiguous (none exist). The header
// compiles for the host with the same explicit RN operations as on the device (std::fma for __fma_rn), so a pass
// here is a proof for the kernels too.
//
//   g++ -O2 -ffp-contract=off -std=c++17 -Ikernels-src/cuda -o /tmp/expf_proof tools/expf_proof.cpp
//   /tmp/expf_proof 0 0x100000000      # all 2^32 inputs, ~15 minutes on one core; prints bad=0 ambiguous=0
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "common/expf.cuh"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: expf_proof LO HI (binary32 bit patterns, HI exclusive, up to 0x100000000)\n");
    return 2;
  }
  const uint64_t lo = std::strtoull(argv[1], nullptr, 0), hi = std::strtoull(argv[2], nullptr, 0);
  long bad = 0, ambiguous = 0;
  for (uint64_t b = lo; b < hi; ++b) {
    const uint32_t u = static_cast<uint32_t>(b);
    float x;
    std::memcpy(&x, &u, 4);
    if (std::isnan(x)) continue;  // NaN in, NaN out (any pattern: the kernels canonicalise their outputs)
    const float got = tk::expf_cr(x);
    const long double e = expl(static_cast<long double>(x));
    const float want = static_cast<float>(e);
    const float other = static_cast<long double>(want) < e ? nextafterf(want, INFINITY) : nextafterf(want, -INFINITY);
    if (std::isfinite(want) && std::isfinite(other) && want != 0 && e != 0) {
      const long double mid = (static_cast<long double>(want) + other) / 2;
      if (fabsl(e - mid) < fabsl(e) * ldexpl(1, -60) && ambiguous++ < 20) std::printf("ambiguous %08x\n", u);
    }
    uint32_t gb, wb;
    std::memcpy(&gb, &got, 4);
    std::memcpy(&wb, &want, 4);
    if (gb != wb && bad++ < 20) std::printf("bad %08x got %08x want %08x\n", u, gb, wb);
  }
  std::printf("range %llx-%llx bad=%ld ambiguous=%ld\n", static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi), bad, ambiguous);
  return bad != 0 || ambiguous != 0;
}

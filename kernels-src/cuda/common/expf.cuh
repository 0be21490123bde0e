// The correctly rounded binary32 exponential of spec/quant.md §1.1-4, bit-identical to ops/quant/expf.ref.ts.
// The reference is Math.fround(Math.exp(x)), proven correctly rounded over every binary32 input by
// tests/expf.test.ts. In Deno (V8) Math.exp is V8's port of fdlibm's __ieee754_exp; exp_fdlibm below evaluates
// the same binary64 operations in the same order (argument reduction by k·ln2 split into hi and lo parts, the
// degree-5 rational correction, the scaling by 2^k, V8's special case exp(1) = E), each one spelled with an
// explicit round-to-nearest intrinsic so that no contraction or reassociation can change a bit. Its binary64
// result therefore equals V8's Math.exp for every input, and expf_cr rounds it to binary32 once, like fround.
// Host builds use the same code with plain double operations (compile with -ffp-contract=off), which is how the
// port is checked without a GPU. expf_cr adds a division-free fast path in front of it (see there).
#pragma once
#include <stdint.h>
#include "fp.cuh"

namespace tk {

TK_HD double dadd_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TK_HD double dsub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
TK_HD double dmul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TK_HD double ddiv_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
TK_HD double dfma_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
TK_HD uint64_t d2u(double v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(v));
#else
  uint64_t u;
  std::memcpy(&u, &v, 8);
  return u;
#endif
}
TK_HD double u2d(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double v;
  std::memcpy(&v, &u, 8);
  return v;
#endif
}

// e^x in binary64, the operation sequence of V8's ieee754::exp (fdlibm e_exp.c with FreeBSD's 2^k scaling).
TK_HD double exp_fdlibm(double x) {
  constexpr double kLn2Hi = 6.93147180369123816490e-01;   // 0x3FE62E42FEE00000
  constexpr double kLn2Lo = 1.90821492927058770002e-10;   // 0x3DEA39EF35793C76
  constexpr double kInvLn2 = 1.44269504088896338700e+00;  // 0x3FF71547652B82FE
  constexpr double kP1 = 1.66666666666666019037e-01;
  constexpr double kP2 = -2.77777777770155933842e-03;
  constexpr double kP3 = 6.61375632143793436117e-05;
  constexpr double kP4 = -1.65339022054652515390e-06;
  constexpr double kP5 = 4.13813679705723846039e-08;
  constexpr double kOverflow = 7.09782712893383973096e+02;
  constexpr double kUnderflow = -7.45133219101941108420e+02;
  constexpr double kHuge = 1.0e+300;
  constexpr double kTwoM1000 = 9.33263618503218878990e-302;
  constexpr double kTwo1023 = 8.988465674311579539e307;
  constexpr double kE = 2.718281828459045;

  const uint64_t bits = d2u(x);
  const uint32_t sign = static_cast<uint32_t>(bits >> 63);
  const uint32_t ahi = static_cast<uint32_t>(bits >> 32) & 0x7fffffffu;  // high word of |x|

  if (ahi >= 0x40862E42u) {  // |x| ≥ 709.78…
    if (ahi >= 0x7ff00000u) {
      if (((ahi & 0xfffffu) | static_cast<uint32_t>(bits)) != 0) return dadd_rn(x, x);  // NaN
      return sign == 0 ? x : 0.0;                                                         // ±Inf
    }
    if (x > kOverflow) return dmul_rn(kHuge, kHuge);
    if (x < kUnderflow) return dmul_rn(kTwoM1000, kTwoM1000);
  }

  double hi = 0.0, lo = 0.0;
  int32_t k = 0;
  if (ahi > 0x3FD62E42u) {    // |x| > ln2 / 2
    if (ahi < 0x3FF0A2B2u) {  // and |x| < 1.5 ln2: k = ±1
      if (x == 1.0) return kE;
      hi = dsub_rn(x, sign ? -kLn2Hi : kLn2Hi);
      lo = sign ? -kLn2Lo : kLn2Lo;
      k = 1 - 2 * static_cast<int32_t>(sign);
    } else {
      const double r = dadd_rn(dmul_rn(kInvLn2, x), sign ? -0.5 : 0.5);
#if defined(__CUDA_ARCH__)
      k = __double2int_rz(r);
#else
      k = static_cast<int32_t>(r);
#endif
      const double t = static_cast<double>(k);
      hi = dsub_rn(x, dmul_rn(t, kLn2Hi));  // exact
      lo = dmul_rn(t, kLn2Lo);
    }
    x = dsub_rn(hi, lo);
  } else if (ahi < 0x3E300000u) {  // |x| < 2^-28
    if (dadd_rn(kHuge, x) > 1.0) return dadd_rn(1.0, x);
  }

  const double t = dmul_rn(x, x);
  const uint32_t twopk_hi = k >= -1021 ? 0x3ff00000u + (static_cast<uint32_t>(k) << 20)
                                       : 0x3ff00000u + (static_cast<uint32_t>(k + 1000) << 20);
  const double twopk = u2d(static_cast<uint64_t>(twopk_hi) << 32);
  double p = dadd_rn(kP4, dmul_rn(t, kP5));
  p = dadd_rn(kP3, dmul_rn(t, p));
  p = dadd_rn(kP2, dmul_rn(t, p));
  p = dadd_rn(kP1, dmul_rn(t, p));
  const double c = dsub_rn(x, dmul_rn(t, p));
  const double xc = dmul_rn(x, c);
  if (k == 0) return dsub_rn(1.0, dsub_rn(ddiv_rn(xc, dsub_rn(c, 2.0)), x));
  const double y = dsub_rn(1.0, dsub_rn(dsub_rn(lo, ddiv_rn(xc, dsub_rn(2.0, c))), hi));
  if (k >= -1021) {
    if (k == 1024) return dmul_rn(dmul_rn(y, 2.0), kTwo1023);
    return dmul_rn(y, twopk);
  }
  return dmul_rn(dmul_rn(y, twopk), kTwoM1000);
}

// §1.1-4: the binary32 e^x. Fast path: e^x in binary64 without a division (k = rint(x / ln2) by the 1.5·2^52
// shifter, r = x − k·ln2 in two fused steps, a degree-12 Taylor polynomial in fused Horner form, 2^k added to the
// exponent), with a relative error below 2^-50 for x ∈ [−87, 88], where e^x is a normal binary32. Its
// rounding to binary32 is certain unless the binary64 value lies within 2^10 binary64 ulps of a binary32 rounding
// midpoint (the low 29 mantissa bits near 0x10000000); those inputs (about 4 in 10^6), and every x outside the
// fast range or NaN, take exp_fdlibm. tools/expf_proof.cpp checks the composite function against a correctly
// rounded oracle for all 2^32 inputs (the same source compiles for the host; every step is an explicit RN
// operation, so host and device compute the same bits).
//
// expf_fast is the fast path alone, evaluated whatever x is (no early exit, so a caller can run several
// independent ones in one basic block): it returns whether `y` is expf_cr(xf); if not, expf_slow(xf) is.
TK_HD bool expf_fast(float xf, float& y) {
  const double x = static_cast<double>(xf);
  const bool in_range = x >= -87.0 && x <= 88.0;
  constexpr double kLog2e = 1.4426950408889634;            // 0x3FF71547652B82FE
  constexpr double kShifter = 6755399441055744.0;           // 1.5 · 2^52: adding it rounds to an integer
  constexpr double kLn2Hi = 6.93147180369123816490e-01;     // 0x3FE62E42FEE00000 (k · kLn2Hi exact, |k| ≤ 128)
  constexpr double kLn2Lo = 1.90821492927058770002e-10;     // 0x3DEA39EF35793C76
  const double kd = dfma_rn(x, kLog2e, kShifter);
  const int32_t k = static_cast<int32_t>(static_cast<uint32_t>(d2u(kd)));  // low word: the integer, two's complement
  const double kf = dsub_rn(kd, kShifter);
  const double r = dfma_rn(-kf, kLn2Lo, dfma_rn(-kf, kLn2Hi, x));
  // 1/n!, n = 12 … 2
  double p = 2.08767569878681e-09;
  p = dfma_rn(p, r, 2.505210838544172e-08);
  p = dfma_rn(p, r, 2.755731922398589e-07);
  p = dfma_rn(p, r, 2.755731922398589e-06);
  p = dfma_rn(p, r, 2.48015873015873e-05);
  p = dfma_rn(p, r, 1.984126984126984e-04);
  p = dfma_rn(p, r, 1.388888888888889e-03);
  p = dfma_rn(p, r, 8.333333333333333e-03);
  p = dfma_rn(p, r, 4.1666666666666664e-02);
  p = dfma_rn(p, r, 1.6666666666666666e-01);
  p = dfma_rn(p, r, 0.5);
  p = dfma_rn(p, r, 1.0);
  p = dfma_rn(p, r, 1.0);
  const uint64_t yd = d2u(p) + (static_cast<uint64_t>(static_cast<int64_t>(k)) << 52);  // p · 2^k, exact
  const uint32_t low = static_cast<uint32_t>(yd) & 0x1fffffffu;
  const uint32_t dist = low > 0x10000000u ? low - 0x10000000u : 0x10000000u - low;
#if defined(__CUDA_ARCH__)
  y = __double2float_rn(u2d(yd));
#else
  y = static_cast<float>(u2d(yd));
#endif
  return in_range && dist > 1024u;
}

// The rest of expf_cr: V8's exponential rounded once (every x, NaN included).
TK_HD float expf_slow(float xf) {
#if defined(__CUDA_ARCH__)
  return __double2float_rn(exp_fdlibm(static_cast<double>(xf)));
#else
  return static_cast<float>(exp_fdlibm(static_cast<double>(xf)));
#endif
}

TK_HD float expf_cr(float xf) {
  float y;
  return expf_fast(xf, y) ? y : expf_slow(xf);
}


// ---- expf_cr with a table (the SwiGLU kernels whose gates have no finite table: fp32 and e4m3 x) ----------------
// Same results as expf_cr for every binary32 input (tools/expf_tab_proof.cpp compares the two over all 2^32
// patterns, NaN included: 0 differences), with about half the binary64 work of expf_fast: k = rint(32x/ln2),
// r = x − k·ln2/32, j = k mod 32, |r| ≲ ln2/64, e^x = 2^(k div 32) · 2^(j/32) · e^r, with 2^(j/32) from a
// 32-entry table of binary64 values (256 bytes of shared memory, one per CTA) and e^r by a degree-5 Taylor
// polynomial (r^6/720 < 2^-48.7 relative). The reduction is one fused step with ln2/32 rounded to binary64
// (|k| ≤ 4017 for |x| ≤ 87: error ≤ 4017 · 7.3·10^-19 < 2^-48.3 in r); all told the binary64 value is within
// ~2^-47 relative of e^x, ~2^6 binary64 ulps, far inside the same rounding-midpoint test as expf_fast (2^10 ulps).
// Inputs outside |x| ≤ 87 (e^x a normal binary32 there), NaN, and the ~4·10^-6 of inputs near a midpoint take
// expf_slow. Per gate: 9 binary64 operations (DFMA for k, DADD, DFMA for r, 4 DFMA + 1 DMUL for the polynomial,
// DFMA for t + t·p) instead of 16, the range test one compare of |x|, and one 8-byte shared-memory load.
constexpr int kExp2TableSize = 32;

// The bits of 2^(j/32) rounded to nearest binary64, j = 0 … 31.
TK_HD constexpr uint64_t exp2_32nd_bits(int j) {
  switch (j) {
    case 0: return 0x3ff0000000000000ull;
    case 1: return 0x3ff059b0d3158574ull;
    case 2: return 0x3ff0b5586cf9890full;
    case 3: return 0x3ff11301d0125b51ull;
    case 4: return 0x3ff172b83c7d517bull;
    case 5: return 0x3ff1d4873168b9aaull;
    case 6: return 0x3ff2387a6e756238ull;
    case 7: return 0x3ff29e9df51fdee1ull;
    case 8: return 0x3ff306fe0a31b715ull;
    case 9: return 0x3ff371a7373aa9cbull;
    case 10: return 0x3ff3dea64c123422ull;
    case 11: return 0x3ff44e086061892dull;
    case 12: return 0x3ff4bfdad5362a27ull;
    case 13: return 0x3ff5342b569d4f82ull;
    case 14: return 0x3ff5ab07dd485429ull;
    case 15: return 0x3ff6247eb03a5585ull;
    case 16: return 0x3ff6a09e667f3bcdull;
    case 17: return 0x3ff71f75e8ec5f74ull;
    case 18: return 0x3ff7a11473eb0187ull;
    case 19: return 0x3ff82589994cce13ull;
    case 20: return 0x3ff8ace5422aa0dbull;
    case 21: return 0x3ff93737b0cdc5e5ull;
    case 22: return 0x3ff9c49182a3f090ull;
    case 23: return 0x3ffa5503b23e255dull;
    case 24: return 0x3ffae89f995ad3adull;
    case 25: return 0x3ffb7f76f2fb5e47ull;
    case 26: return 0x3ffc199bdd85529cull;
    case 27: return 0x3ffcb720dcef9069ull;
    case 28: return 0x3ffd5818dcfba487ull;
    case 29: return 0x3ffdfc97337b9b5full;
    case 30: return 0x3ffea4afa2a490daull;
    case 31: return 0x3fff50765b6e4540ull;
    default: return 0;
  }
}

// The fast path with the table (any x; no early exit): returns whether `y` is expf_cr(xf); if not, expf_slow(xf) is.
TK_HD bool expf_fast_tab(float xf, const double* tab, float& y) {
#if defined(__CUDA_ARCH__)
  const bool in_range = fabsf(xf) <= 87.0f;  // false for NaN
#else
  const bool in_range = std::fabs(xf) <= 87.0f;
#endif
  const double x = static_cast<double>(xf);
  constexpr double k32Log2e = 46.16624130844683;       // 0x1.71547652b82fep+5 = 32/ln2
  constexpr double kShifter = 6755399441055744.0;      // 1.5 · 2^52: adding it rounds to an integer
  constexpr double kLn2On32 = 0.02166084939249829;     // 0x1.62e42fefa39efp-6 = ln2/32
  const double kd = dfma_rn(x, k32Log2e, kShifter);
  const uint32_t k = static_cast<uint32_t>(d2u(kd));  // low word: the integer, two's complement
  const double kf = dsub_rn(kd, kShifter);
  const double r = dfma_rn(-kf, kLn2On32, x);
  double q = dfma_rn(r, 8.333333333333333e-03, 4.1666666666666664e-02);  // 1/120, 1/24
  q = dfma_rn(q, r, 1.6666666666666666e-01);
  q = dfma_rn(q, r, 0.5);
  q = dfma_rn(q, r, 1.0);
  const double t = tab[k & (kExp2TableSize - 1)];
  const double m = dfma_rn(t, dmul_rn(q, r), t);  // 2^(j/32) · e^r
  // · 2^(k div 32): (k div 32) << 20 added to the high word ((k << 15) & 0xfff00000 is that shift, k being two's
  // complement), exact: the result is a normal binary64. The low word keeps m's, so does the midpoint test.
  // (On the device by the halves of the register pair: a 64-bit spelling became 64-bit shift, mask and add.)
#if defined(__CUDA_ARCH__)
  const uint32_t lo = static_cast<uint32_t>(__double2loint(m));
  const uint32_t hi = static_cast<uint32_t>(__double2hiint(m)) + ((k << 15) & 0xfff00000u);
  y = __double2float_rn(__hiloint2double(static_cast<int>(hi), static_cast<int>(lo)));
#else
  const uint64_t mb = d2u(m);
  const uint32_t lo = static_cast<uint32_t>(mb), hi = static_cast<uint32_t>(mb >> 32) + ((k << 15) & 0xfff00000u);
  y = static_cast<float>(u2d(static_cast<uint64_t>(hi) << 32 | lo));
#endif
  const uint32_t low = lo & 0x1fffffffu;
  return in_range && low - (0x10000000u - 1024u) > 2048u;  // more than 2^10 ulps from a binary32 midpoint
}

TK_HD float expf_cr_tab(float xf, const double* tab) {
  float y;
  return expf_fast_tab(xf, tab, y) ? y : expf_slow(xf);
}

#if defined(__CUDACC__)
// y[i] = expf_cr(x[i]) for N independent inputs: the N fast paths first, in one branch-free block (N binary64
// chains interleaved: one chain alone is ~18 dependent FP64 operations, latency a warp otherwise waits out per
// element), then the rare inputs the fast path leaves (|x| out of range, NaN, near a midpoint) one at a time
// through a single inlined expf_slow. Inlining exp_fdlibm (two binary64 divisions) per element, as expf_cr at
// each unrolled call site does, put ~16 copies of it between the hot instructions of the e4m3-x SwiGLU backward
// (121 KB of code); an out-of-line call instead made ptxas save registers around it (spills at 128 registers).
// expf_slow_n: the inputs of `slow` (a bit per element) through expf_slow, one at a time, one inlined copy.
template <int N>
TK_DEV void expf_slow_n(const float (&x)[N], float (&y)[N], uint32_t slow) {
  while (slow != 0) {
    const int j = __ffs(slow) - 1;
    slow &= slow - 1;
    float xj = x[0];
#pragma unroll
    for (int i = 1; i < N; ++i) xj = select_f32(i == j, x[i], xj);
    const float yj = expf_slow(xj);
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = select_f32(i == j, yj, y[i]);
  }
}

template <int N>
TK_DEV void expf_cr_n(const float (&x)[N], float (&y)[N]) {
  uint32_t slow = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) slow |= static_cast<uint32_t>(!expf_fast(x[i], y[i])) << i;
  expf_slow_n(x, y, slow);
}

// The same with the table fast path (expf_fast_tab): `tab` is a block's shared copy of exp2_32nd_bits. The fast
// paths run G at a time, each group's rare slow inputs right after it (N / G inlined copies of expf_slow): all 8
// of a chunk at once hold 2 more registers per element (the table entry) than expf_fast and made ptxas spill in
// the e4m3-x SwiGLU backward unless the up values are read after the exponentials (bf16 dy, groups of 128);
// otherwise groups of 4 do not spill (2 with fp32 dy and groups of 128).
template <int G, int N>
TK_DEV void expf_cr_n(const float (&x)[N], float (&y)[N], const double* tab) {
  static_assert(N % G == 0, "whole groups");
#pragma unroll
  for (int g = 0; g < N; g += G) {
    uint32_t slow = 0;
#pragma unroll
    for (int i = g; i < g + G; ++i) slow |= static_cast<uint32_t>(!expf_fast_tab(x[i], tab, y[i])) << i;
    expf_slow_n(x, y, slow);
  }
}

// Writes the table into a block's shared array (one thread stores the 32 constants); the caller synchronizes.
TK_DEV void fill_exp2_table(double* tab) {
  if (threadIdx.x == 0) {
#pragma unroll
    for (int j = 0; j < kExp2TableSize; ++j) tab[j] = u2d(exp2_32nd_bits(j));
  }
}
#endif

}  // namespace tk

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

#if defined(__CUDACC__)
// y[i] = expf_cr(x[i]) for N independent inputs: the N fast paths first, in one branch-free block (N binary64
// chains interleaved: one chain alone is ~18 dependent FP64 operations, latency a warp otherwise waits out per
// element), then the rare inputs the fast path leaves (|x| out of range, NaN, near a midpoint) one at a time
// through a single inlined expf_slow. Inlining exp_fdlibm (two binary64 divisions) per element, as expf_cr at
// each unrolled call site does, put ~16 copies of it between the hot instructions of the e4m3-x SwiGLU backward
// (121 KB of code); an out-of-line call instead made ptxas save registers around it (spills at 128 registers).
template <int N>
TK_DEV void expf_cr_n(const float (&x)[N], float (&y)[N]) {
  uint32_t slow = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) slow |= static_cast<uint32_t>(!expf_fast(x[i], y[i])) << i;
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
#endif

}  // namespace tk

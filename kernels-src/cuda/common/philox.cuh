// The library's counter-based generator (spec/norm-rope-rand.md §C.2): Philox4x32-10 words (§C.2.1) and the
// binary64 Box–Muller transform with fixed polynomials (§C.2.2). Every binary64 step is one correctly rounded
// intrinsic in the spec's order, never contracted and never a library log/sin/cos, so the bits equal the CPU
// reference's (ops/rand/randn.ref.ts) for every (seed, offset, index), whatever thread computes them. Ops that
// need raw uniform bits (stochastic rounding) take word l of philox4x32_10 directly.
#pragma once
#include <stdint.h>
#include "fp.cuh"

namespace tk {

// The exponent split of u = (w1 + 1)·2⁻³² in integers (§C.2.2's first four lines, and its t = −2.0 ⊗ lnu), bit
// for bit the binary64 steps they replace over all 2³² values of w1 (tools/randn_radius_check.cpp includes this
// function on the host and prints bad=0). v = w1 + 1 wraps to 0 for w1 = 0xFFFFFFFF (u = 1: f = 1, e = 0).
// Otherwise v·2⁻³² = 1.F·2^(31−lz−32) with nv = v << lz (bit 31 set), so e = −1 − lz and f's pattern is nv's
// bits 30…0 placed at mantissa bits 51…21: nv >> 11 puts nv's bit 31 on the exponent's lowest bit, so adding
// 0x3FE00000 (0x3FD00000 for m = f ⊗ 0.5, exact) to the high word gives biased exponent 0x3FF (0x3FE).
// f > SQRT2 ⇔ nv > ⌊SQRT2·2³¹⌋ = 0xB504F333, since f = nv·2⁻³¹ and SQRT2·2³¹ is not an integer. Takes off the
// FP64 pipe, per pair, the int→binary64 conversion of w1 + 1, the ⊗ 2⁻³², the compare with SQRT2 and the ⊗ 0.5
// (and t's ⊗ −2.0 below): 4 FP64 instructions and a quarter-rate conversion, for ~10 integer instructions.
struct NormalSplit {
  uint32_t hi, lo;  // the pattern of m
  int e;
  bool one;  // u = 1
};
TK_DEV NormalSplit normal_split(uint32_t w1) {
  NormalSplit r;
  const uint32_t v = w1 + 1u;
  r.one = v == 0u;
#if defined(__CUDA_ARCH__)
  const uint32_t lz = static_cast<uint32_t>(__clz(static_cast<int>(v)));  // 32 for v = 0
#else
  const uint32_t lz = v == 0u ? 32u : static_cast<uint32_t>(__builtin_clz(v));
#endif
  const uint32_t nv = v << (lz & 31u);                                   // 0 for v = 0
  const bool half = nv > 0xB504F333u;
  r.hi = r.one ? 0x3FF00000u : (nv >> 11) + (half ? 0x3FD00000u : 0x3FE00000u);
  r.lo = nv << 21;
  r.e = r.one ? 0 : -1 - static_cast<int>(lz) + (half ? 1 : 0);
  return r;
}

#if defined(__CUDACC__)
// philox(c; k) of §C.2.1: ten rounds, the key bumped between rounds.
TK_DEV void philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                          uint32_t (&x)[4]) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const uint32_t hi0 = __umulhi(0xD2511F53u, c0);
    const uint32_t lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, c2);
    const uint32_t lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  x[0] = c0;
  x[1] = c1;
  x[2] = c2;
  x[3] = c3;
}

// §C.2.2 constants (binary64, exact as written in the spec's hex column). The polynomial coefficients and the
// full-precision scalars live in the constant bank, not in constexpr values: a binary64 instruction reads a
// constant-bank operand directly, whereas a 64-bit immediate does not fit its encoding and costs two UMOVs per use
// (116 of the 495 instructions of a Philox block were those; the transform is issue-bound, not FP64-bound, with them).
namespace normal {
__constant__ double kLn2Hi = 0x1.62e42fee00000p-1;
__constant__ double kLn2Lo = 0x1.a39ef35793c76p-33;
__constant__ double kPi2p31 = 0x1.921fb54442d18p-30;
__constant__ double kL[10] = {0x1.0000000000000p+1, 0x1.5555555555555p-1, 0x1.999999999999ap-2, 0x1.2492492492492p-2,
                           0x1.c71c71c71c71cp-3, 0x1.745d1745d1746p-3, 0x1.3b13b13b13b14p-3, 0x1.1111111111111p-3,
                                      0x1.e1e1e1e1e1e1ep-4, 0x1.af286bca1af28p-4};
__constant__ double kS[9] = {0.0, -0x1.5555555555555p-3, 0x1.1111111111111p-7, -0x1.a01a01a01a01ap-13,
                          0x1.71de3a556c734p-19, -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33,
                          -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49};
__constant__ double kC[10] = {0.0, 0.0, 0x1.5555555555555p-5, -0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-16,
                           -0x1.27e4fb7789f5cp-22, 0x1.1eed8eff8d898p-29, -0x1.93974a8c07c9dp-37,
                           0x1.ae7f3e733b81fp-45, -0x1.6827863b97d97p-53};
}  // namespace normal

// The 33 pairs (E ⊗ LN2_HI, E ⊗ LN2_LO) for E = −k, k = 0…32 (e ∈ [−32, 0]), in shared memory: a block fills
// them once with the very products §C.2.2 writes (same operands, same rounding: same bits), and each pair of
// the loop reads its entry with one 16-byte shared load instead of an int→binary64 conversion and two DMULs.
constexpr int kLn2Entries = 33;
TK_DEV void normal_fill_ln2(double2* tab) {
  for (int k = static_cast<int>(threadIdx.x); k < kLn2Entries; k += static_cast<int>(blockDim.x)) {
    const double E = static_cast<double>(-k);
    tab[k] = make_double2(__dmul_rn(E, normal::kLn2Hi), __dmul_rn(E, normal::kLn2Lo));
  }
}

// R(w1) = √(−2 ln u), u = (w1 + 1)·2⁻³², through ln u = e·ln 2 + 2·atanh((m − 1)/(m + 1)). ln2 = the table above.
TK_DEV double normal_radius(uint32_t w1, const double2* ln2) {
  using namespace normal;
  const NormalSplit sp = normal_split(w1);
  const double m = __hiloint2double(static_cast<int>(sp.hi), static_cast<int>(sp.lo));
  const double a = __dsub_rn(m, 1.0);
  const double b = __dadd_rn(m, 1.0);
  const double s = __ddiv_rn(a, b);
  const double z2 = __dmul_rn(s, s);
  double poly = kL[9];
#pragma unroll
  for (int k = 8; k >= 0; --k) poly = __dadd_rn(__dmul_rn(poly, z2), kL[k]);
  const double lnm = __dmul_rn(s, poly);
  const double2 el = ln2[-sp.e];  // (E ⊗ LN2_HI, E ⊗ LN2_LO), E = e as binary64
  const double lnu = __dadd_rn(el.x, __dadd_rn(el.y, lnm));
  // t = −2.0 ⊗ lnu, exact: lnu is +0 for u = 1 (t = −0: sign bit only) and otherwise a negative normal number
  // with |lnu| ∈ [2⁻³², 22.2] (checked for every w1 by the same tool), so t is lnu with the sign cleared and the
  // exponent raised by one: + 0x80100000 on the high word, the sign's carry falling off the top.
  const uint32_t lnu_hi = static_cast<uint32_t>(__double2hiint(lnu));
  const uint32_t t_hi = lnu_hi + (sp.one ? 0x80000000u : 0x80100000u);
  const double t = __hiloint2double(static_cast<int>(t_hi), __double2loint(lnu));
  return __dsqrt_rn(t);  // −0 when u = 1, as the spec defines
}

// (sin θ, cos θ) of θ = 2π·w2/2³²: quadrant q = A >> 30 and a reduced angle φ ∈ [−π/4, π/4) from integer steps,
// then the Taylor polynomials of §C.2.2.
TK_DEV void normal_sin_cos(uint32_t w2, double& sin_t, double& cos_t) {
  using namespace normal;
  const uint32_t A = w2 + 0x20000000u;
  const int32_t d = static_cast<int32_t>(A & 0x3fffffffu) - 0x20000000;
  const double phi = __dmul_rn(static_cast<double>(d), kPi2p31);
  const double z2 = __dmul_rn(phi, phi);
  double ps = kS[8];
#pragma unroll
  for (int k = 7; k >= 1; --k) ps = __dadd_rn(__dmul_rn(ps, z2), kS[k]);
  const double sn = __dadd_rn(phi, __dmul_rn(__dmul_rn(phi, z2), ps));
  double pc = kC[9];
#pragma unroll
  for (int k = 8; k >= 2; --k) pc = __dadd_rn(__dmul_rn(pc, z2), kC[k]);
  const double cs = __dadd_rn(__dsub_rn(1.0, __dmul_rn(0.5, z2)), __dmul_rn(__dmul_rn(z2, z2), pc));
  // q = 0: (sn, cs), 1: (cs, −sn), 2: (−sn, −cs), 3: (−cs, sn). An odd quadrant swaps the two; the negations are
  // IEEE sign flips, applied to the high words: bit 31 of A is q's bit 1 (sin negated for q = 2, 3), bit 31 of
  // A ^ (A << 1) is q's bit 1 xor bit 0 (cos negated for q = 1, 2). Two selects per word and three integer ops
  // instead of select chains over four candidates and binary64 negations.
  const bool odd = (A & 0x40000000u) != 0;
  const double s_abs = odd ? cs : sn;
  const double c_abs = odd ? sn : cs;
  const int s_hi = __double2hiint(s_abs) ^ static_cast<int>(A & 0x80000000u);
  const int c_hi = __double2hiint(c_abs) ^ static_cast<int>((A ^ (A << 1)) & 0x80000000u);
  sin_t = __hiloint2double(s_hi, __double2loint(s_abs));
  cos_t = __hiloint2double(c_hi, __double2loint(c_abs));
}

// The four binary64 normals of Philox block j of stream (seed, offset): elements 4j … 4j+3 (§C.2.1–§C.2.2).
// ln2: the table of normal_fill_ln2, filled and synchronized by the caller's block.
TK_DEV void normal_block(uint64_t seed, uint64_t offset, uint64_t j, const double2* ln2, double (&z)[4]) {
  uint32_t x[4];
  philox4x32_10(static_cast<uint32_t>(j), static_cast<uint32_t>(j >> 32), static_cast<uint32_t>(offset),
                static_cast<uint32_t>(offset >> 32), static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), x);
#pragma unroll
  for (int pair = 0; pair < 2; ++pair) {
    const double r = normal_radius(x[2 * pair], ln2);
    double sin_t, cos_t;
    normal_sin_cos(x[2 * pair + 1], sin_t, cos_t);
    z[2 * pair] = __dmul_rn(r, cos_t);
    z[2 * pair + 1] = __dmul_rn(r, sin_t);
  }
}
#endif

}  // namespace tk

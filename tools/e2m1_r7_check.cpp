// Exhaustive host check of the round-7 e2m1 encoder variants of kernels-src/cuda/common/e2m1_fast.cuh (the
// _g32_u4sca kernel of quant/per_token_cast.cu; the _u4s / _u4c / _u4sc forms measured slower and were dropped),
// against tk::encode_e2m1 and the kernels' scale computation. The PTX instructions are modelled by their IEEE definitions (fma.rn.f32 = std::fma on
// binary32, mul.rn.sat.f32 = the rounded product clamped to [0, 1], min.u16x2 per lane, prmt byte selection,
// fma.rn.bf16x2 / mul.rn.bf16x2 rounded once onto bf16), the integer steps copied verbatim.
//
//   7. encode_e2m1_bf16_pow2_nc (no clamp at 6): for EVERY binary32 m = max(amax, amaxClamp) ≥ 0 (+Inf too), the
//      group's roundSf inverse (div6 → ⌈log2⌉ → 2^(127 − biased), as GroupCast::group_inv) times the largest
//      finite bf16 ≤ m, rounded to bf16, is ≤ 6 or the inverse is non-finite (every product then non-finite:
//      the encoder falls back). Every |x| ≤ amax then has |x · inv| ≤ 6, where the clamp is the identity; the
//      clamp-free rounding itself is e2m1_mag_x2's (tools/e2m1_fast_check.cpp part 0) on [0, 6], re-checked
//      here on every bf16 in [0, 6] in both lanes.
//   8a. e2m1_mag_bf16x2_sat's rounding from a8 = sat(v / 8): for EVERY non-negative non-NaN binary32 v ≥ 2^-123
//      (where fl(|x| · inv8) = fl(|x| · inv) / 8 exactly) in both lanes, the code equals encode_e2m1(v)'s
//      magnitude; every a8 ≤ 2^-126 (all products below 2^-123) gives code 0, as encode_e2m1 of them does.
//   8b. encode_e2m1_bf16_f32_sat on whole chunks: every bf16 value in every chunk position times every positive
//      finite e4m3 inverse fl(1/decode_e4m3(c)) (NVFP4: the only inverses that reached it in the dropped _u4s
//      kernels' cast mode), 300 random binary32 inverses in [2^-123, FLT_MAX] and the range ends, against
//      encode_e2m1(fl(x_i · inv)) per element; NaN / ±Inf lanes refused and nothing else.
//
//   g++ -O2 -fopenmp -ffp-contract=off -std=c++17 -Ikernels-src/cuda -o /tmp/e2m1_r7_check tools/e2m1_r7_check.cpp
//   /tmp/e2m1_r7_check                 # prints bad=0 (about a minute on 2 cores)
//   -DTK_CHECK_BREAK=7 / 8 / 9: the 7-clamp constant one too high / a wrong factor pair / the clamp-free form on
//   NVFP4-like inverses (must print bad ≠ 0)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>
#include "common/codec.cuh"
#include "sim_prmt.h"

namespace {

uint32_t umin16x2(uint32_t a, uint32_t b) {
  const uint32_t lo = std::min(a & 0xffffu, b & 0xffffu), hi = std::min(a >> 16, b >> 16);
  return lo | hi << 16;
}
// bf16 rounding (nearest even) of a double holding the exact value; subnormals kept, overflow to Inf
uint32_t bf16_rn(double v) {
  const float f = static_cast<float>(v);  // exact for every product formed here (≤ 8 × 24 bits... see callers)
  uint32_t u = tk::f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
double bf16_val(uint32_t b) { return static_cast<double>(tk::u2f(b << 16)); }
bool nonfinite_bf16(uint32_t b) { return (b & 0x7fffu) >= 0x7f80u; }
uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r = 0;
  for (int l = 0; l < 2; ++l) {
    const double x = bf16_val((a >> 16 * l) & 0xffffu) * bf16_val((b >> 16 * l) & 0xffffu) + bf16_val((c >> 16 * l) & 0xffffu);
    r |= bf16_rn(x) << 16 * l;  // exact in double for the operands used (≤ 8-bit significands, bounded range)
  }
  return r;
}

// e2m1_mag_x2_nc<true>, verbatim but for the modelled instructions
uint32_t e2m1_mag_x2_nc(uint32_t h) {
  const uint32_t kM = 0x43004300u;
  const uint32_t a = h & 0x7fff7fffu;
  const uint32_t r0 = fma_bf16x2(a, 0x40004000u, kM), r1 = fma_bf16x2(a, 0x3f803f80u, kM + 0x20002u);
  const uint32_t r2 = fma_bf16x2(a, 0x3f003f00u, kM + 0x40004u);
  return umin16x2(umin16x2(r0, r1), r2);
}

float fma_f(float a, float b, float c) { return std::fma(a, b, c); }
float mul_sat(float a, float b) {
  const float p = a * b;  // binary32 product, one rounding (-ffp-contract=off)
  if (std::isnan(p)) return 0.0f;
  return p < 0.0f ? 0.0f : (p > 1.0f ? 1.0f : p);
}

#if TK_CHECK_BREAK == 8
constexpr float kK2a = 26132408.0f;
#else
constexpr float kK2a = 26132406.0f;
#endif
#if TK_CHECK_BREAK == 7
constexpr uint32_t kSeven = 0x4b070108u;
#else
constexpr uint32_t kSeven = 0x4b070107u;
#endif

// e2m1_mag_bf16x2_sat after its two saturating multiplies (lo, hi = a8 of each lane), verbatim
uint32_t mag_from_a8(float lo, float hi) {
  const uint32_t r0 = tk::f2u(fma_f(lo, 16.0f, fma_f(-151.0f, 3640711424.0f, fma_f(hi, 1048576.0f, 0x1p39f))));
  const uint32_t r1 = tk::f2u(fma_f(lo, 8.0f, fma_f(-21037.0f, kK2a, fma_f(hi, 524288.0f, 0x1.000004p39f))));
  const uint32_t r2 = tk::f2u(fma_f(lo, 4.0f, fma_f(-18215.0f, 30181028.0f, fma_f(hi, 262144.0f, 0x1.000008p39f))));
  return umin16x2(umin16x2(r0, r1), umin16x2(r2, kSeven));
}
uint32_t e2m1_mag_bf16x2_sat(uint32_t x, float inv8) {
  const float lo = mul_sat(std::fabs(tk::u2f(x << 16)), inv8), hi = mul_sat(std::fabs(tk::u2f(x & 0xffff0000u)), inv8);
  return mag_from_a8(lo, hi);
}

uint32_t pack_e2m1_mags4(const uint32_t* m, const uint32_t* h) {
  uint32_t half[2];
  for (int q = 0; q < 2; ++q) {
    uint32_t x = prmt(m[2 * q], m[2 * q + 1], 0x6420u);
    const uint32_t sg = prmt(h[2 * q], h[2 * q + 1], 0x7531u);
    x |= (sg >> 4) & 0x08080808u;
    half[q] = x | (x >> 4);
  }
  return prmt(half[0], half[1], 0x6420u);
}

bool encode_e2m1_bf16_f32_sat(const uint32_t* x, float inv8, uint32_t* out) {
  for (int p = 0; p < 4; ++p)
    if (nonfinite_bf16(x[p] & 0xffffu) || nonfinite_bf16(x[p] >> 16)) return false;
  uint32_t m[4];
  for (int j = 0; j < 4; ++j) m[j] = e2m1_mag_bf16x2_sat(x[j], inv8);
  out[0] = pack_e2m1_mags4(m, x);
  return true;
}

// GroupCast::group_inv's roundSf inverse from m = max_num(amax, clamp): div6_rn is div_rn(m, 6) for every m
// (tools/e2m1_fast_check.cpp part 6 and its fallback)
float roundsf_inv(float m) {
  const float sf_raw = tk::div_rn(m, 6.0f);
  const uint32_t biased = ((tk::f2u(sf_raw) - 1u) >> 23) + 1u;
  return tk::u2f((254u - biased) << 23);
}

}  // namespace

int main() {
  // 7. the clamp-free pow2 encoder's bound, every m
  long bad7 = 0;
#pragma omp parallel for reduction(+ : bad7) schedule(static, 1 << 20)
  for (int64_t i = 0; i <= 0x7f800000; ++i) {
    const float m = tk::u2f(static_cast<uint32_t>(i));
    const float inv = roundsf_inv(m);
#if TK_CHECK_BREAK == 9
    const float inv_used = tk::div_rn(1.0f, tk::decode_e4m3(tk::encode_e4m3(tk::div_rn(m, 6.0f))));
#else
    const float inv_used = inv;
#endif
    if ((tk::f2u(inv_used) & 0x7f800000u) == 0x7f800000u) continue;  // ±Inf inverse: every product non-finite
    uint32_t a = static_cast<uint32_t>(i) >> 16;  // the largest bf16 ≤ m (truncation), finite
    if (a > 0x7f7fu) a = 0x7f7fu;
    const uint32_t p = bf16_rn(bf16_val(a) * static_cast<double>(inv_used));
    if (!(bf16_val(p) <= 6.0)) {
      if (bad7 < 10) std::printf("nc bound: m=%a inv=%a amax=0x%04x product 0x%04x\n", m, inv_used, a, p);
      ++bad7;
    }
  }
  // and the clamp-free rounding on every bf16 in [0, 6] (and its negative), both lanes
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if (!(std::fabs(bf16_val(h)) <= 6.0)) continue;
    for (int lane = 0; lane < 2; ++lane) {
      const uint32_t w = lane ? (h << 16 | 0x3fc0u) : (0x4040u << 16 | h);
      const uint32_t got = (e2m1_mag_x2_nc(w) >> 16 * lane) & 0xffu;
      const uint32_t want = tk::encode_e2m1(static_cast<float>(bf16_val(h))) & 7u;
      if (got != want && bad7++ < 10) std::printf("nc mag: h=0x%04x lane %d got 0x%x want 0x%x\n", h, lane, got, want);
    }
  }
  std::printf("7 pow2 without clamp (every m, every bf16 in [-6, 6]): bad=%ld\n", bad7);

  // 8a. the saturating rounding, every v ≥ 2^-123 in both lanes, and every a8 ≤ 2^-126
  long bad8a = 0;
#pragma omp parallel for reduction(+ : bad8a) schedule(static, 1 << 20)
  for (int64_t i = 0x02000000; i <= 0x7f800000; ++i) {
    const float v = tk::u2f(static_cast<uint32_t>(i));
    const float a8 = mul_sat(v, 0.125f);  // = v / 8 exactly (v ≥ 2^-123), saturated
    const float other = mul_sat(tk::u2f(static_cast<uint32_t>((i * 2654435761ll) & 0x7fffffff) % 0x7f800001u), 0.125f);
    const uint32_t want = tk::encode_e2m1(v) & 7u;
    const uint32_t g0 = mag_from_a8(a8, other) & 0xffu, g1 = (mag_from_a8(other, a8) >> 16) & 0xffu;
    if (g0 != want || g1 != want) {
      if (bad8a < 10) std::printf("sat mag: v=%a got %x/%x want %x\n", v, g0, g1, want);
      ++bad8a;
    }
  }
  for (uint32_t u = 0; u <= 0x00800000u; ++u) {
    const float a8 = tk::u2f(u);
    const uint32_t m = mag_from_a8(a8, a8);
    if (((m & 0xffu) != 0 || ((m >> 16) & 0xffu) != 0) && bad8a++ < 10) std::printf("sat mag tiny: a8=%a got 0x%08x\n", a8, m);
  }
  std::printf("8a saturating rounding (every binary32 product): bad=%ld\n", bad8a);

  // 8b. whole chunks: every bf16 in every position × every e4m3 inverse, random and extreme inverses
  std::vector<float> invs;
  for (uint32_t c = 1; c < 0x7fu; ++c) invs.push_back(tk::div_rn(1.0f, tk::decode_e4m3(c)));
  const size_t n_e4m3 = invs.size();
  std::mt19937 rng(77);
  for (int t = 0; t < 300; ++t) {
    uint32_t b = 0x02000000u + rng() % (0x7f7fffffu - 0x02000000u);
    invs.push_back(tk::u2f(b));
  }
  for (float inv : {0x1p-123f, 0x1.000002p-123f, 0x1.fffffep127f, 0.1f, 1.0f / 6.0f, 1.0f / 448.0f}) invs.push_back(inv);
  long bad8b = 0;
#pragma omp parallel for reduction(+ : bad8b) schedule(dynamic, 1)
  for (int64_t k = 0; k < static_cast<int64_t>(invs.size()); ++k) {
    const float inv = invs[k];
    const float inv8 = inv * 0.125f;
    for (uint32_t xb = 0; xb < 0x10000u; ++xb) {
      // every position for the e4m3 inverses, one (rotating) position for the random ones
      for (int pos = 0; pos < 8; ++pos) {
        if (static_cast<size_t>(k) >= n_e4m3 && pos != static_cast<int>(xb % 8)) continue;
        uint32_t x[4];
        for (int p = 0; p < 4; ++p) x[p] = (0x3f80u + 37u * p + (xb & 7u)) | (0xbe00u + 11u * p + (xb >> 13)) << 16;
        x[pos / 2] = (x[pos / 2] & (0xffffu << 16 * (1 - pos % 2))) | xb << 16 * (pos % 2);
        const bool nonfinite = nonfinite_bf16(xb);
        uint32_t got;
        if (!encode_e2m1_bf16_f32_sat(x, inv8, &got)) {
          if (!nonfinite) {
            if (bad8b < 10) std::printf("sat chunk: x=0x%04x inv=%a refused\n", xb, inv);
            ++bad8b;
          }
          continue;
        }
        if (nonfinite) {
          if (bad8b < 10) std::printf("sat chunk: x=0x%04x inv=%a taken\n", xb, inv);
          ++bad8b;
        }
        uint32_t want = 0;
        for (int i = 0; i < 8; ++i)
          want |= tk::encode_e2m1(tk::mul_rn(tk::u2f((x[i / 2] >> 16 * (i % 2) & 0xffffu) << 16), inv)) << 4 * i;
        if (got != want) {
          if (bad8b < 10) std::printf("sat chunk: x=0x%04x pos %d inv=%a got 0x%08x want 0x%08x\n", xb, pos, inv, got, want);
          ++bad8b;
        }
      }
    }
  }
  std::printf("8b saturating chunks (every bf16 × every e4m3 inverse, every position; %zu random / extreme inverses): bad=%ld\n",
              invs.size() - n_e4m3, bad8b);
  const long all = bad7 + bad8a + bad8b;
  std::printf("bad=%ld\n", all);
  return all != 0;
}

// Every (binary32 pattern, R) pair of the scaled-domain e4m3 rounding (sr12_e4m3_value, common/stochastic.cuh)
// against sr_encode_8bit<kE4m3> (§7.3's pattern form, checked against the general form by tools/sr_encode_check.cpp),
// in three exhaustive parts instead of 2^40 direct comparisons (tools/sr12_check.cpp samples those directly):
//   A. every finite u (2^32 patterns less NaN and ±Inf): bits(rz(v · 2^-120)) == sign(u) | (p − K), with p the
//      max(|v|, low) of sr_encode_8bit (its host form) and K = 2^-7's pattern. The multiply runs on the FPU under
//      FE_TOWARDZERO (x86 SSE keeps subnormals).
//   B. both functions of x = p − K + R·2^12 (< 2^31 for every finite u and R < 256, so t = sign | x in sr12): for
//      every x >> 20 (the only bits either uses) and both signs, encode_e4m3((sign | x) & 0xfff00000 · 2^120) equals
//      sr_encode_8bit's min(x >> 20, 0x7E) | sign.
//   C. ±Inf directly, every R.
// With A, sr12's t is sign | x for the x sr_encode_8bit rounds, and by B both give the same code for every R.
//   g++ -O2 -ffp-contract=off -frounding-math -std=c++17 -Ikernels-src/cuda -o /tmp/sr12_all_check tools/sr12_all_check.cpp
#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <vector>
#include "common/stochastic.cuh"

using namespace tk;

static uint32_t sr12_code_from_t(uint32_t t) { return encode_e4m3(mul_rn(u2f(t & 0xfff00000u), 0x1p120f)); }

int main() {
  constexpr uint32_t K = 120u << 23;
  uint64_t bad = 0, checked = 0;
  // A: batches of 2^20 patterns, the products taken under FE_TOWARDZERO into a volatile buffer, compared under RN
  std::vector<float> prod(1u << 20);
  for (uint64_t base = 0; base < (1ull << 32); base += (1u << 20)) {
    std::fesetround(FE_TOWARDZERO);
    for (uint32_t i = 0; i < (1u << 20); ++i) {
      volatile float v = u2f(static_cast<uint32_t>(base + i));
      volatile float r = v * 0x1p-120f;
      prod[i] = r;
    }
    std::fesetround(FE_TONEAREST);
    for (uint32_t i = 0; i < (1u << 20); ++i) {
      const uint32_t u = static_cast<uint32_t>(base + i);
      const uint32_t mag = u & 0x7fffffffu;
      if (mag >= 0x7f800000u) continue;  // NaN: the probe's fallback; ±Inf: part C
      const uint32_t low = sr_low_term_host<SrTarget::kE4m3>(mag);
      const uint32_t p = mag > low ? mag : low;
      const uint32_t want = (u & 0x80000000u) | (p - K);
      const uint32_t got = f2u(prod[i]);
      ++checked;
      if (got != want && bad++ < 10) std::printf("A: u=%08x rz(v*2^-120)=%08x sign|(p-K)=%08x\n", u, got, want);
      // the bound B relies on: x = p − K + 255·2^12 < 2^31
      if (p - K + 255u * 4096u >= 0x80000000u && bad++ < 10) std::printf("A: u=%08x x reaches bit 31\n", u);
    }
  }
  std::printf("A: %llu finite patterns\n", static_cast<unsigned long long>(checked));
  // B: the code of x (bits 20–30) and the sign, for every x a finite u and an R reach (x ≤ the largest finite
  // pattern − K + 255·2^12; above it the masked pattern would be a NaN, which no input produces);
  // sr_encode_8bit's own formula read off with p − K = x, R = 0
  constexpr uint32_t kMaxX = 0x7f7fffffu - K + 255u * 4096u;
  uint64_t bcount = 0;
  for (uint32_t hi = 0; hi <= (kMaxX >> 20); ++hi)
    for (uint32_t s = 0; s < 2; ++s) {
      const uint32_t x = hi << 20;
      for (uint32_t lowbits : {0u, 0xfffffu}) {
        const uint32_t xs = (x | lowbits) < kMaxX ? (x | lowbits) : kMaxX;
        ++bcount;
        const uint32_t got = sr12_code_from_t((s << 31) | xs);
        const uint32_t code = (xs >> 20) < 0x7eu ? (xs >> 20) : 0x7eu;
        const uint32_t want = code | (s << 7);
        if (got != want && bad++ < 10) std::printf("B: x=%08x sign %u sr12=%02x spec=%02x\n", xs, s, got, want);
      }
    }
  std::printf("B: %llu (x, sign) pairs, x ≤ %08x\n", static_cast<unsigned long long>(bcount), kMaxX);
  // C: ±Inf, every R, against sr_encode_8bit itself
  for (uint32_t u : {0x7f800000u, 0xff800000u})
    for (uint32_t R = 0; R < 256; ++R) {
      std::fesetround(FE_TOWARDZERO);
      volatile float v = u2f(u);
      volatile float r = v * 0x1p-120f;
      const float sp = r;
      std::fesetround(FE_TONEAREST);
      const uint32_t got = sr12_code_from_t(f2u(sp) + R * 4096u);
      const uint32_t want = sr_encode_8bit<SrTarget::kE4m3>(u, R);
      if (got != want && bad++ < 10) std::printf("C: u=%08x R=%u sr12=%02x spec=%02x\n", u, R, got, want);
    }
  std::printf("sr12_all_check: bad=%llu\n", static_cast<unsigned long long>(bad));
  return bad != 0;
}

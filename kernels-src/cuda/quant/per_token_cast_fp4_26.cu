// perTokenCast bf16 → e2m1 with groups of 32 and roundSf (MXFP4), round 26 (docs/perf-notes/perf26-fp4.md): the
// lane-wide walk of per_token_cast_fp4_17.cuh (a warp's cp.async ring, a lane owns one whole group of 32 values,
// one 16-byte code store a lane) with an encoder of fewer instructions per value.
//
// Symbol
//   tk_per_token_cast__bf16_e2m1_g32_mxw   perTokenCast (mode 0 only), groups of 32, roundSf, no stochasticCast,
//                                          any sf layout (rounded fp32 or packed UE8M0, row- or column-major)
// The host (ops/quant/per_token_cast.ts, perTokenLaunchTuning.mxfp4Wide, default off) launches it only for those
// calls with x's base and row stride and data's base multiples of 16 bytes; the kernel traps without roundSf.
//
// Why: main's `_g32_u4sca` reaches ~76% of copy at 16384 × 7168 and is bound by the integer (ALU) pipe and issue
// (Nsight, sixteenth run: ALU 67%, SM 73%, DRAM 49%); `_g32_lw`, the same walk as here with `_u4sca`'s encoder,
// removed only the cross-lane work and tied (73.2 against 73.9%). What is left is the encoder: ~50 SASS per 8 values
// of encode_e2m1_bf16_pow2_nc plus the per-chunk dispatch. Here, per lane and group:
//   - amax with NaN propagation (max.NaN.xorsign.abs.bf16x2, 4 independent chains): a pattern below 0x7F80 proves
//     the group finite, and then it equals the NaN-ignoring maximum main computes (no NaN met). So the per-chunk
//     NaN / ±Inf test of the encoder (4 bf16x2 fmas, a test and a branch a chunk) goes away.
//   - the product x · inv is folded into the three candidate fmas: inv = 2^k (roundSf), so fma(|x|, 2^j · inv, M + o)
//     rounds the same exact product |x| · 2^(j+k) that fma(|p|, 2^j, M + o) rounds with p = x · inv, wherever p is
//     exact; p is a bf16 product of 8 significant bits and a power of two, inexact only below 2^-126, where both
//     candidates sets round to M + o (code 0). No bf16 multiply a pair, and the signs come from x (inv > 0).
//   - the nibble packing by prmt's sign-replicate selectors (bit 3 of a selector nibble): 10 instructions a chunk
//     instead of 13.
// A group that is not finite, or whose inverse is outside [2^-125, 2^126] (so that inv / 2 and 2 · inv are normal
// bf16), takes a scalar path: main's NaN-ignoring amax, the same scale, encode_e2m1(fl(x · inv)) a value (the
// reference; every encoder of main equals it).
#include "per_token_cast_fp4_17.cuh"

namespace tk {
namespace {

struct Mxfp4Wide {
  using LW = LaneWideE2m1<32>;
  using GC = LW::GC;
  static constexpr int kU = LW::kU;                      // 4 chunks a lane: the group
  static constexpr uint32_t kUnitChunks = LW::kUnitChunks;  // 1024 columns a warp unit
  static constexpr int kWarps = LW::kWarps;

  // roundSf's (sf, inv) of sf_of / sf_and_inv: sf = 2^⌈log2 fl(max(amax, clamp) / 6)⌉, the stored word, inv = 1 / sf
  static TK_DEV float round_sf(const PerTokenCastParams& p, float amax, uint32_t& stored) {
    const float sf_raw = div6_rn(max_num(amax, p.amax_clamp));
    const uint32_t biased = ((f2u(sf_raw) - 1u) >> 23) + 1u;
    stored = (p.flags & kSfPackedUe8m0) ? (biased & 0xffu) : biased << 23;
    return u2f((254u - biased) << 23);
  }

  // One chunk (4 bf16 pairs) → 8 nibbles, for a finite chunk with |x_i| · inv ≤ 6 (the group's own roundSf inverse)
  // and bf16 pairs c2 = 2 · inv, c1 = inv, ch = inv / 2 all normal. e2m1_round_mags_x2's candidates on |x| · inv.
  static TK_DEV uint32_t encode(const uint32_t (&x)[4], uint32_t c2, uint32_t c1, uint32_t ch) {
    constexpr uint32_t kM = 0x43004300u;  // bf16 128 (ulp 1) in both lanes
    uint32_t m[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t a = x[j] & 0x7fff7fffu;
      uint32_t r0, r1, r2;
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r0) : "r"(a), "r"(c2), "r"(kM));
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r1) : "r"(a), "r"(c1), "r"(kM + 0x20002u));
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r2) : "r"(a), "r"(ch), "r"(kM + 0x40004u));
      asm("min.u16x2 %0, %1, %2;" : "=r"(m[j]) : "r"(r0), "r"(r1));
      asm("min.u16x2 %0, %1, %2;" : "=r"(m[j]) : "r"(m[j]), "r"(r2));
    }
    // q: byte e = code of element e of the half (m[j]'s bytes 0 and 2) | its sign at bit 3 (selector nibbles 9, B,
    // D, F replicate bit 7 of bytes 1, 3, 5, 7: the pairs' high bytes)
    const uint32_t q01 = prmt(m[0], m[1], 0x6420u) | (prmt(x[0], x[1], 0xfdb9u) & 0x08080808u);
    const uint32_t q23 = prmt(m[2], m[3], 0x6420u) | (prmt(x[2], x[3], 0xfdb9u) & 0x08080808u);
    // byte i: element 2i's nibble low, 2i + 1's high
    return prmt(q01, q23, 0x6420u) | (prmt(q01, q23, 0x7531u) << 4);
  }

  // The lane's group (chunks c0 … c0 + 3 of `row`): amax, sf, codes.
  static TK_DEV void lane_unit(const GC& gc, const PerTokenCastParams& p, uint64_t row, uint32_t c0,
                               const uint32_t (&w)[kU][4]) {
    uint32_t a[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      a[u] = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) asm("max.NaN.xorsign.abs.bf16x2 %0, %0, %1;" : "+r"(a[u]) : "r"(w[u][i]));
    }
    uint32_t v;
    asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(v) : "r"(a[0]), "r"(a[1]));
    asm("max.NaN.xorsign.abs.bf16x2 %0, %0, %1;" : "+r"(v) : "r"(a[2]));
    asm("max.NaN.xorsign.abs.bf16x2 %0, %0, %1;" : "+r"(v) : "r"(a[3]));
    v &= 0x7fff7fffu;
    uint32_t pat = max(v & 0xffffu, v >> 16);  // NaN (0x7FFF) and ±Inf (0x7F80) are the largest patterns
    const bool finite = pat < 0x7f80u;
    if (!finite) {  // main's NaN-ignoring maximum (abs_max_bf16x2_lanes: NaN operands ignored)
      v = abs_max_bf16x2_lanes<16>(&w[0][0]);
      pat = max(v & 0xffffu, v >> 16);
    }
    uint32_t stored;
    const float inv = round_sf(p, decode_bf16(pat), stored);
    if (gc.write_sf) gc.sf_out.store(row, c0 / kU, stored);
    const uint32_t ib = f2u(inv);
    uint32_t o[kU];
    if (finite && (ib >> 23) - 2u < 252u) {  // 2 · inv and inv / 2 normal (sign bit clear, mantissa zero)
      const uint32_t c1 = prmt(ib, 0u, 0x3232u);
      const uint32_t c2 = c1 + 0x00800080u, ch = c1 - 0x00800080u;
#pragma unroll
      for (int u = 0; u < kU; ++u) o[u] = encode(w[u], c2, c1, ch);
    } else {
      // one word a step, the 16 words rotated through f[0] (a rolled loop, no indexing into registers)
      uint32_t f[4 * kU];
#pragma unroll
      for (int k = 0; k < 4 * kU; ++k) f[k] = w[k / 4][k % 4];
#pragma unroll
      for (int u = 0; u < kU; ++u) o[u] = 0;
#pragma unroll 1
      for (int k = 0; k < 4 * kU; ++k) {
        const uint32_t n = encode_e2m1(mul_rn(u2f(f[0] << 16), inv)) | encode_e2m1(mul_rn(u2f(f[0] & 0xffff0000u), inv)) << 4;
#pragma unroll
        for (int u = 0; u < kU; ++u) o[u] = u + 1 < kU ? (o[u] >> 8 | o[u + 1] << 24) : (o[u] >> 8 | n << 24);
#pragma unroll
        for (int j = 0; j + 1 < 4 * kU; ++j) f[j] = f[j + 1];
      }
    }
    uint8_t* d = reinterpret_cast<uint8_t*>(p.data) + out_offset<Fmt::kE2m1>(row, p.hidden, 0) + static_cast<uint64_t>(c0) * 4;
    st_v4(d, o[0], o[1], o[2], o[3]);
  }

  // LaneWideE2m1's walk and ring (no inverse table: roundSf inverses are computed)
  static TK_DEV void run(const PerTokenCastParams& p) {
    if (!(p.flags & kSfRound)) __trap();  // the host launches it with roundSf only
    const GC gc(p);
    __shared__ __align__(16) uint8_t stage_buf[kStages][kWarps][kUnitChunks][16];
    LW::walk(p, gc, stage_buf, [&](uint64_t row, uint32_t c0, uint32_t(&w)[kU][4]) { lane_unit(gc, p, row, c0, w); });
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_per_token_cast__bf16_e2m1_g32_mxw(const __grid_constant__ PerTokenCastParams p) {
  tk::Mxfp4Wide::run(p);
}

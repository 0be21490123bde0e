// perTokenCast bf16 → e2m1 with groups of 16 and e4m3 sf (NVFP4), round 29 (docs/perf-notes/perf29-nvfp4.md): the
// lane-wide walk of per_token_cast_fp4_17.cuh (a warp's cp.async ring, a lane owns two whole groups of 16 values,
// one 16-byte code store a lane) with round 26's NaN-propagating amax and an encoder without per-chunk special cases.
//
// Symbol
//   tk_per_token_cast__bf16_e2m1_g16_nvw   perTokenCast (mode 0 only), groups of 16, e4m3 sf without roundSf, no
//                                          stochasticCast, row- or column-major sf
// The host (ops/quant/per_token_cast.ts, perTokenLaunchTuning.nvfp4Wide, default off) launches it only for those
// calls with x's base and row stride and data's base multiples of 16 bytes; the kernel traps on other sf flags.
//
// Why: round 17's `_g16_lw` (the default until this form; removed in trim32) reached ~61% of copy at 16384 × 7168,
// bound by the integer (ALU) pipe and issue (Nsight: ALU 66%, SM 75%, DRAM 37%), ~84 SASS per 8 values in
// encode_e2m1_bf16_f32 plus the per-chunk dispatch.
// The rounding itself stays binary32 (fl(|x| · inv), inv = fl(1 / e4m3 sf) not a power of two, then three candidate
// fmas: spec §1.3 on the reference's own product, nothing new to prove there). What goes, per lane and group:
//   - the per-chunk NaN / ±Inf test (4 bf16x2 fmas, a test and a branch a chunk) and the encoder dispatch (inverse
//     class tests a chunk): the amax with NaN propagation (max.NaN.xorsign.abs.bf16x2) proves the group finite; a
//     folded pattern below 0x7F80 is then main's NaN-ignoring maximum (no NaN met)
//   - the clamp at 6 (an FMNMX a value): with the stored e4m3 byte in [0x08, 0x7D] (sf normal, not saturated) every
//     product fl(|x| · inv) of the group is ≤ 6.375 < 7 (perf12-fp4.md's claim, checked there for every binary32
//     max(amax, clamp)), where min(rn(2a), rn(a) + 2, rn(a/2) + 4) is already 7 for a in [6, 7); the abs rides on
//     the multiply (an operand modifier)
//   - the nibble packing by integer multiply-adds (FMA pipe) on codes whose magics cancel, instead of shifts, ors and
//     byte permutes (ALU pipe); the even elements' signs by prmt's sign-replicate selectors (no shift)
// A group that is not finite, or whose byte is outside [0x08, 0x7D] (e4m3 subnormal or saturated sf, all-zero
// groups with a zero clamp), takes a scalar path for the lane's four chunks: main's NaN-ignoring amax for the scale
// of a non-finite group, the same scale, encode_e2m1(fl(x · inv)) a value (the reference; every encoder of main
// equals it).
#include "per_token_cast_fp4_17.cuh"

namespace tk {
namespace {

struct Nvfp4Wide {
  using LW = LaneWideE2m1<16>;
  using GC = LW::GC;
  static constexpr int kU = LW::kU;                         // 4 chunks a lane: 2 groups
  static constexpr uint32_t kUnitChunks = LW::kUnitChunks;  // 1024 columns a warp unit
  static constexpr int kWarps = LW::kWarps;

  // e2m1_mag_f32 without its clamp, for a finite v with fl(|v| · inv) < 7: M + code (code ≤ 7 in the low byte),
  // the same three candidates on the same binary32 product. M is a binary32 in [2^23, 2^24) (ulp 1, so each fma
  // rounds to an integer, ties to even, as with 2^23: an integer offset changes no rounding), its pattern kM.
  template <uint32_t kM>
  static TK_DEV uint32_t mag(float v, float inv) {
    const float a = mul_rn(fabsf(v), inv);
    const uint32_t r0 = f2u(__fmaf_rn(a, 2.0f, u2f(kM)));
    const uint32_t r1 = f2u(__fmaf_rn(a, 1.0f, u2f(kM + 2)));
    const uint32_t r2 = f2u(__fmaf_rn(a, 0.5f, u2f(kM + 4)));
    return min(min(r0, r1), r2);
  }

  // One chunk (4 bf16 pairs) → 8 nibbles, for a finite chunk whose group inverse keeps every product below 7.
  // Packing by integer multiply-adds (FMA pipe) instead of byte permutes and ors (ALU pipe): the odd elements' magic
  // 0x4B500000 (2^23 + 5 · 2^20) and the even ones' 0x4B000000 satisfy 16 · 0x4B500000 + 0x4B000000 ≡ 0 (mod 2^32),
  // so hi · 16 + lo is exactly code(2j + 1) · 16 + code(2j): byte 0 the pair's two nibbles, every other byte zero;
  // three more multiply-adds by 256 put pair j in byte j with no carries.
  static TK_DEV uint32_t encode(const uint32_t (&x)[4], float inv) {
    uint32_t n[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t lo = mag<0x4b000000u>(u2f(x[j] << 16), inv), hi = mag<0x4b500000u>(u2f(x[j] & 0xffff0000u), inv);
      n[j] = hi * 16u + lo;
    }
    const uint32_t codes = ((n[3] * 256u + n[2]) * 256u + n[1]) * 256u + n[0];
    // the pairs' high bytes (bit 7: the sign), then the odd elements' (bit 7 of byte j: element 2j + 1) and the even
    // elements' replicated over their byte (selector bit 3), kept at bit 3
    const uint32_t s1 = prmt(x[0], x[1], 0x7531u), s2 = prmt(x[2], x[3], 0x7531u);
    const uint32_t odd = prmt(s1, s2, 0x7531u), even = prmt(s1, s2, 0xeca8u);
    return codes | (odd & 0x80808080u) | (even & 0x08080808u);
  }

  // The lane's two groups (chunks c0 … c0 + 3 of `row`): amax, sf, codes. kPairOut: the two e4m3 bytes go to
  // *pair (group c0 / 2 in the low byte) instead of the sf (per_token_cast_fp4_30.cu stores them across lanes).
  template <bool kPairOut = false>
  static TK_DEV void lane_unit(const GC& gc, const PerTokenCastParams& p, uint64_t row, uint32_t c0,
                               const uint32_t (&w)[kU][4], const float* inv_tab, uint32_t* pair = nullptr) {
    float inv[2];
    uint32_t stored[2];
    bool fast = true;
#pragma unroll
    for (int gi = 0; gi < 2; ++gi) {
      uint32_t a[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const uint32_t(&c)[4] = w[2 * gi + u];
        asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(a[u]) : "r"(c[0]), "r"(c[1]));
        asm("max.NaN.xorsign.abs.bf16x2 %0, %0, %1;" : "+r"(a[u]) : "r"(c[2]));
        asm("max.NaN.xorsign.abs.bf16x2 %0, %0, %1;" : "+r"(a[u]) : "r"(c[3]));
      }
      uint32_t v;
      asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(v) : "r"(a[0]), "r"(a[1]));
      v &= 0x7fff7fffu;
      uint32_t pat = max(v & 0xffffu, v >> 16);  // NaN (0x7FFF) and ±Inf (0x7F80) are the largest patterns
      if (pat >= 0x7f80u) {  // main's NaN-ignoring maximum (`_g16_lw`'s, as _u4's)
        pat = max(abs_max_bf16<4>(w[2 * gi]), abs_max_bf16<4>(w[2 * gi + 1]));
        fast = false;
      }
      // group_inv's e4m3 branch
      stored[gi] = encode_e4m3_hw(div6_rn(max_num(decode_bf16(pat), p.amax_clamp)));
      inv[gi] = inv_tab[stored[gi]];
      fast = fast && stored[gi] - 0x08u <= 0x7du - 0x08u;
    }
    if constexpr (kPairOut) {
      *pair = stored[0] | stored[1] << 8;
    } else if (gc.write_sf) {
      const uint32_t k0 = c0 / 2;
      uint8_t* s = gc.sf_out.base + row * gc.sf_out.s0 + k0 * gc.sf_out.s1;
      if (gc.sf_out.s1 == 1 && (reinterpret_cast<uintptr_t>(s) & 1) == 0) {
        st_u16(s, stored[0] | (stored[1] << 8));
      } else {
        gc.sf_out.store(row, k0, stored[0]);
        gc.sf_out.store(row, k0 + 1, stored[1]);
      }
    }
    uint32_t o[kU];
    if (fast) {
#pragma unroll
      for (int u = 0; u < kU; ++u) o[u] = encode(w[u], inv[u / 2]);
    } else {
      // the reference a value, encode_e2m1(fl(x · inv)), which every encoder of main equals; one word a step, the
      // 16 words rotated through f[0] (a rolled loop, no indexing into registers), as _g32_mxw's fallback
      uint32_t f[4 * kU];
#pragma unroll
      for (int k = 0; k < 4 * kU; ++k) f[k] = w[k / 4][k % 4];
#pragma unroll
      for (int u = 0; u < kU; ++u) o[u] = 0;
#pragma unroll 1
      for (int k = 0; k < 4 * kU; ++k) {
        const float s = k < 2 * kU ? inv[0] : inv[1];  // words 0–7: group 0
        const uint32_t n = encode_e2m1(mul_rn(u2f(f[0] << 16), s)) | encode_e2m1(mul_rn(u2f(f[0] & 0xffff0000u), s)) << 4;
#pragma unroll
        for (int u = 0; u < kU; ++u) o[u] = u + 1 < kU ? (o[u] >> 8 | o[u + 1] << 24) : (o[u] >> 8 | n << 24);
#pragma unroll
        for (int j = 0; j + 1 < 4 * kU; ++j) f[j] = f[j + 1];
      }
    }
    uint8_t* d = reinterpret_cast<uint8_t*>(p.data) + out_offset<Fmt::kE2m1>(row, p.hidden, 0) + static_cast<uint64_t>(c0) * 4;
    st_v4(d, o[0], o[1], o[2], o[3]);
  }

  // LaneWideE2m1's walk and ring
  static TK_DEV void run(const PerTokenCastParams& p) {
    if ((p.flags & (kSfRound | kSfPackedUe8m0 | kSfE4m3Out)) != kSfE4m3Out) __trap();  // the host launches it so only
    const GC gc(p);
    __shared__ __align__(16) uint8_t stage_buf[kStages][kWarps][kUnitChunks][16];
    __shared__ float inv_tab[256];
    gc.fill_inv_tab(inv_tab);
    LW::walk(p, gc, stage_buf, [&](uint64_t row, uint32_t c0, uint32_t(&w)[kU][4]) { lane_unit(gc, p, row, c0, w, inv_tab); });
  }
};

}  // namespace
}  // namespace tk

// per_token_cast_fp4_30.cu includes this file for Nvfp4Wide with TK_PTC_FP4_29_NO_ENTRIES defined
#ifndef TK_PTC_FP4_29_NO_ENTRIES
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_per_token_cast__bf16_e2m1_g16_nvw(const __grid_constant__ PerTokenCastParams p) {
  tk::Nvfp4Wide::run(p);
}
#endif  // TK_PTC_FP4_29_NO_ENTRIES

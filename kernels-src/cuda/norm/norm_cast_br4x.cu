// RMSNorm + per-token e4m3 cast, bulk rows on aligned views, `_br4w` with a leaner bench copy of step 4 + the cast
// (round 15, docs/perf-notes/perf15-ncast.md; normLaunchTuning.castLeanLoop, ops/norm/launch.ts).
//
// Symbols
//   tk_norm_forward__bf16_e4m3_g<N>_br4x   N ∈ {32, 128}: `_e4m3_g<N>_br4w` (norm_cast_br4w.cu: NormForwardBulkRowsA
//                                           with the warp-bounded loop) whose bench copy of the loop (a weight,
//                                           outScale = 1, rounded scales stored as packed UE8M0) is cast_chunks_lean
//
// `_br4w` is issue-bound (docs/perf-notes/perf14-ncast.md, the lead's SASS census). The lean copy keeps step 4
// (NormForwardBulkRowsA::step4<true, true>, the same products) and the amax (abs_max_bf16 + the group's xor shuffles)
// and changes only how the scale, the sf byte and the codes are formed — each step below is the same function of the
// same inputs as cast_chunk_sf<true, true> with sf = kSfRound | kSfPackedUe8m0:
// 1. The UE8M0 exponent without the division. sf_and_inv computes biased = ((f2u(RN(a / 448)) − 1) >> 23) + 1 with
//    a = maximumNumber(amax, clamp) (div.rn.f32: MUFU.RCP, a Newton chain, FCHK and a slow-path branch per chunk).
//    For f2u(a) ∈ [0x0C000000, 0x7F800000) (a ∈ [2^-103, +Inf)) that equals ((f2u(a) − 0x04600001) >> 23) + 1:
//    RN(a / 448) is a power of two only for a = 448·2^q exactly (the next float either side is 2^-23.8 away in
//    relative terms, more than the half ulp 2^-24), so the exponent field of RN(a/448) minus "exactly a power" is
//    the field of a less 9, plus 1 when a's mantissa exceeds that of 1.75 (0x600000). Checked for every binary32 in
//    the range against the division on the host (tools/ue8m0_fast_check.cpp: 0 differ). Outside it (a below 2^-103,
//    a = +Inf) the division runs as before (a warp-divergent branch, never taken with the default clamp 1e-4).
//    inv = f32((254 − biased) << 23) and the byte biased & 0xFF as in sf_and_inv.
// 2. The codes from y · inv by bf16x2 products: inv = 2^(127 − biased) is a power of two, so y ⊗ inv is exact in f32
//    and in bf16 alike wherever it is a normal number, and the bf16 product (mul.rn.bf16x2, one per pair instead of
//    two fp32 products) widened exactly is the same binary32 value. In the fast range inv ≤ 2^109; a y whose product
//    is not a normal bf16 is below 2^-126 in magnitude with a product below 2^-17 either way, which e4m3 rounds to a
//    signed zero of y's sign in both forms; |y·inv| ≤ 448 (amax / 2^ceil(log2 RN(a/448))), no overflow; a NaN y gives
//    a NaN in both forms and encode_e4m3x4 turns every NaN into 0x7F. Outside the fast range (the division path)
//    the fp32 products run as before.
// 3. The scale bytes of a warp's groups go out as whole packed words: 4 consecutive groups of one row share a
//    little-endian word (channel-packed UE8M0, SfOut::store), and they are the 4·N/16 adjacent lanes kw·k.. of one
//    warp (k = p + 128 j, 32 a multiple of 4·N/16); each lane puts its byte at 8·((lane / (N/16)) % 4), dead groups
//    put 0, two xor shuffles OR them together and the word's first lane stores it when live. SfOut::store writes the
//    live groups' bytes and zeroes the bytes of groups ≥ H/N in the last word: the same word. Words with no live
//    group are not written in either form. The row's sf base (batch and token offsets) and data row are computed
//    once per row, not per chunk.
// Everything else (the general copy of the loop, steps 1–3, the launch geometry: 128 threads, 2H bytes of dynamic
// shared memory, PDL prologue, the warp bound) is `_br4w`'s.

#define TK_NORM_FORWARD_NO_ENTRIES
#include "norm_forward.cu"

namespace tk {
namespace {

// Two bf16 products, RNE (exact here: one factor a power of two, see the header).
TK_DEV uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

template <int kCastN>
TK_DEV void NormForwardBulkRowsA<kCastN>::cast_chunks_lean(uint32_t buf, float rstd, uint64_t row, uint32_t b, uint32_t t,
                                                           uint32_t J) const {
  constexpr uint32_t kGroupChunks = kCastN / kRmsChunk;  // a group: kGroupChunks adjacent lanes
  constexpr uint32_t kWordLanes = 4 * kGroupChunks;      // a packed sf word: 4 groups
  const uint32_t H = p.hidden, K = H / kRmsChunk;
  const bool with_bf16 = p.flags & kFwdOutBf16;
  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint32_t shift = 8 * ((lane / kGroupChunks) % 4);  // this group's byte in its word
  uint8_t* const drow = reinterpret_cast<uint8_t*>(p.data) + row * H;
  uint8_t* const sfrow = reinterpret_cast<uint8_t*>(p.sf) + 4 * (static_cast<uint64_t>(b) * p.sf_batch_stride + static_cast<uint64_t>(t) * p.sf_stride0);
  const float clamp = p.amax_clamp;
#pragma unroll 1
  for (uint32_t j = 0; j < J; ++j) {
    const uint32_t k = threadIdx.x + kP * j;
    const bool live = k < K;
    const Chunk y = step4<true, true>(buf, k, live, rstd);
    if (with_bf16 && live) {
      // outBf16 = y with NaN halves as 0x7FC0 (cast_chunk_sf<true, …>)
      Chunk o = y;
      uint32_t nan = 0;
#pragma unroll
      for (int i = 0; i < Chunk::kWords; ++i) nan |= (o.w[i] & 0x7fff7fffu) + 0x007f007fu;
      if (nan & 0x80008000u) {
#pragma unroll
        for (int i = 0; i < Chunk::kWords; ++i) o.w[i] = bf16x2_fix_nan(o.w[i]);
      }
      o.store(reinterpret_cast<uint8_t*>(p.out_bf16) + row * H * 2 + static_cast<uint64_t>(k) * Chunk::kBytes, true);
    }
    uint32_t a16 = abs_max_bf16<Chunk::kWords>(y.w);
#pragma unroll
    for (uint32_t m = kGroupChunks / 2; m >= 1; m /= 2) a16 = max(a16, __shfl_xor_sync(kFullWarpMask, a16, m));
    // 1. the UE8M0 exponent (sf_and_inv with kSfRound | kSfPackedUe8m0)
    const float a = max_num(u2f(a16 << 16), clamp);
    const uint32_t ab = f2u(a);
    const bool fast = ab - 0x0C000000u < 0x7F800000u - 0x0C000000u;
    const uint32_t sfb = fast ? ab - 0x04600000u : f2u(div_rn(a, kE4m3Max));  // ((sfb − 1) >> 23) + 1: the exponent
    const uint32_t biased = ((sfb - 1u) >> 23) + 1u;
    // 3. the group bytes of a word into its first lane (dead groups 0: the padding bytes of the last word)
    uint32_t word = live ? (biased & 0xffu) << shift : 0u;
#pragma unroll
    for (uint32_t m = kGroupChunks; m < kWordLanes; m *= 2) word |= __shfl_xor_sync(kFullWarpMask, word, m);
    if (live) {
      if (lane % kWordLanes == 0) st_u32(sfrow + 4 * static_cast<uint64_t>(k / kWordLanes) * p.sf_stride1, word);
      const uint32_t inv_bits = (254u - biased) << 23;
      uint32_t o[kRmsChunk / 4];
      if (fast) {
        // 2. y ⊗ inv by bf16x2 products (exact: inv a power of two, see the header)
        const uint32_t inv2 = (inv_bits >> 16) * 0x10001u;
#pragma unroll
        for (int i = 0; i < kRmsChunk / 4; ++i) {
          const uint32_t z0 = mul_bf16x2(y.w[2 * i], inv2), z1 = mul_bf16x2(y.w[2 * i + 1], inv2);
          o[i] = encode_e4m3x4(bf16_lo(z0), bf16_hi(z0), bf16_lo(z1), bf16_hi(z1));
        }
      } else {
        const float inv = u2f(inv_bits);
        float v[kRmsChunk];
#pragma unroll
        for (int e = 0; e < kRmsChunk; ++e) v[e] = mul_rn(y.at(e), inv);
        encode_chunk<Fmt::kE4m3, kRmsChunk>(v, o);
      }
      store_chunk<kRmsChunk>(drow + static_cast<uint64_t>(k) * kRmsChunk, o, true);
    }
    if (!__any_sync(kFullWarpMask, k + kP < K)) break;  // the warp bound of `_br4w`
  }
}

}  // namespace
}  // namespace tk

#define TK_NORM_FORWARD_BRX(n, name)                                                                      \
  extern "C" __global__ void __launch_bounds__(128, tk::kBrMinBlocks<n>)                                  \
      name(const __grid_constant__ NormForwardParams p) {                                                 \
    tk::NormForwardBulkRowsA<n>(p).template run<true, true>();                                            \
  }
TK_NORM_FORWARD_BRX(32, tk_norm_forward__bf16_e4m3_g32_br4x)
TK_NORM_FORWARD_BRX(128, tk_norm_forward__bf16_e4m3_g128_br4x)

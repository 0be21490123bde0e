// RMSNorm + per-token e4m3 cast, bulk rows on aligned views: `_br4x` with a trimmed bench loop (round 18,
// docs/perf-notes/perf18-ncast.md; normLaunchTuning.castTrim, ops/norm/launch.ts).
//
// Symbols
//   tk_norm_forward__bf16_e4m3_g<N>_br4y   N ∈ {32, 128}: `_e4m3_g<N>_br4x` (norm_cast_br4x.cu) whose bench copy of
//                                           step 4 + the cast (a weight, outScale = 1, rounded scales stored as
//                                           packed UE8M0) is the one below; the general copy, steps 1–3, the warp
//                                           bound, the launch geometry and the PDL prologue are `_br4w`'s
//
// `_br4x` is issue-bound (bench/runs/2026-12-02-h200-ncu-round16.txt: SM 85% of peak, 87% of cycles with an eligible
// warp, ALU pipe 61%, DRAM 53%). This copy of its loop issues fewer instructions per chunk; every value it stores is
// the same function of the same inputs as `_br4x`'s (and so `_br4w`'s, cast_chunk_sf<true, true>):
// 1. The chunk's |y| maximum by max.xorsign.abs.bf16x2 (HMNMX2 with |·| operands) instead of a 0x7FFF7FFF mask
//    (LOP3) before every max.bf16x2: the magnitude of max.xorsign.abs(a, b) is maximumNumber(|a|, |b|) (a NaN
//    operand is ignored, as by max.bf16x2), its sign bit is garbage that the next step's |·| discards; the chain
//    starts from +0 as before (a half whose 8 values are all NaN stays +0), and one last max.xorsign.abs(m, m) gives
//    |m| with a clear sign (x xor x = 0), the same word abs_max_bf16 forms before its fold. PTX ISA: .xorsign.abs for
//    bf16x2 needs sm_86+. (sm_90a, 8 words: 9 instructions against 12 — ptxas fuses the masked form's maxima into
//    4 three-input HMNMX2, not its masks.)
// 2. The loop by running addresses: the shared row, the weight, the data and the packed sf word advance by a fixed
//    step per iteration (k += 128: 4 KiB of the row, 4 KiB of the weight, 2 KiB of data, 128 / (4·N/16) sf words)
//    instead of being rebuilt from k (row · H, mul.wide, the 64-bit sf_stride1 product) every chunk, and the loop's
//    only exit is `_br4w`'s warp vote (no lane's next chunk live): that vote implies j + 1 < J (k + 128 < K ≤ N =
//    128·J), so the j < J test is dropped. A dead chunk still reads chunk 0 (buffer and weight bases).
// The UE8M0 exponent without the division, the bf16x2 products by the power-of-two inverse, the packed sf words,
// the outBf16 copy and the division fallback are `_br4x`'s, unchanged (proofs in norm_cast_br4x.cu's header).

#define TK_NORM_FORWARD_NO_ENTRIES
#include "norm_forward.cu"

namespace tk {
namespace {

// Two bf16 products, RNE (exact here: one factor a power of two, norm_cast_br4x.cu's header).
TK_DEV uint32_t mul_bf16x2_y(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// maximumNumber(|a|, |b|) per bf16 half, the sign bit of each half a's xor b's (discarded by the next |·|).
TK_DEV uint32_t max_xorsign_abs_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

template <int kCastN>
TK_DEV void NormForwardBulkRowsA<kCastN>::cast_chunks_lean(uint32_t buf, float rstd, uint64_t row, uint32_t b, uint32_t t,
                                                           uint32_t /*J: implied by the warp vote*/) const {
  constexpr uint32_t kGroupChunks = kCastN / kRmsChunk;  // a group: kGroupChunks adjacent lanes
  constexpr uint32_t kWordLanes = 4 * kGroupChunks;      // a packed sf word: 4 groups
  const uint32_t H = p.hidden, K = H / kRmsChunk;
  const bool with_bf16 = p.flags & kFwdOutBf16;
  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint32_t shift = 8 * ((lane / kGroupChunks) % 4);  // this group's byte in its word
  const bool word_lane = lane % kWordLanes == 0;
  const uint8_t* const wbase = reinterpret_cast<const uint8_t*>(p.weight);
  const float clamp = p.amax_clamp;
  // the row's bases, once per row; per chunk only k's offsets (one IMAD.WIDE / LEA each) and the sf word's running address
  uint32_t k = threadIdx.x;
  uint8_t* const drow = reinterpret_cast<uint8_t*>(p.data) + row * H;
  uint8_t* const brow = reinterpret_cast<uint8_t*>(p.out_bf16) + row * H * 2;  // (unused without outBf16)
  const uint64_t s1 = p.sf_stride1;
  uint8_t* sq = reinterpret_cast<uint8_t*>(p.sf) +
                4 * (static_cast<uint64_t>(b) * p.sf_batch_stride + static_cast<uint64_t>(t) * p.sf_stride0 + (k / kWordLanes) * s1);
  const uint64_t sf_step = 4 * (kP / kWordLanes) * s1;
#pragma unroll 1
  for (;;) {
    const bool live = k < K;
    // step 4 (NormForwardBulkRowsA::step4<true, true>: the same products; a dead chunk reads chunk 0)
    Chunk y;
    {
      const uint32_t kk = live ? k : 0u;
      const uint32_t xa = buf + kk * Chunk::kBytes;
      const uint8_t* const wa = wbase + kk * Chunk::kBytes;  // (kk · 32 < 2^32: H < 2^27)
#pragma unroll
      for (int s = 0; s < Chunk::kPieces; ++s) {
        uint32_t v[4], w[4];
        ld_shared(xa + kVecBytes * s, v);
        ld_cached(wa + kVecBytes * s, w);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float f0 = mul_rn(mul_rn(bf16_lo(v[q]), rstd), bf16_lo(w[q]));
          const float f1 = mul_rn(mul_rn(bf16_hi(v[q]), rstd), bf16_hi(w[q]));
          y.w[4 * s + q] = encode_bf16x2_nan_unfixed(f0, f1);
        }
      }
    }
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
      o.store(brow + static_cast<uint64_t>(k) * Chunk::kBytes, true);
    }
    // 1. the |y| maximum (abs_max_bf16's word, see the header), the group's maximum as `_br4x`
    uint32_t m = 0;
#pragma unroll
    for (int i = 0; i < Chunk::kWords; ++i) m = max_xorsign_abs_bf16x2(m, y.w[i]);
    m = max_xorsign_abs_bf16x2(m, m);
    uint32_t a16 = max(m & 0xffffu, m >> 16);
#pragma unroll
    for (uint32_t mm = kGroupChunks / 2; mm >= 1; mm /= 2) a16 = max(a16, __shfl_xor_sync(kFullWarpMask, a16, mm));
    // the UE8M0 exponent (`_br4x`'s step 1)
    const float a = max_num(u2f(a16 << 16), clamp);
    const uint32_t ab = f2u(a);
    const bool fast = ab - 0x0C000000u < 0x7F800000u - 0x0C000000u;
    const uint32_t sfb = fast ? ab - 0x04600000u : f2u(div_rn(a, kE4m3Max));
    const uint32_t biased = ((sfb - 1u) >> 23) + 1u;
    // the group bytes of a word into its first lane (`_br4x`'s step 3)
    uint32_t word = live ? (biased & 0xffu) << shift : 0u;
#pragma unroll
    for (uint32_t mm = kGroupChunks; mm < kWordLanes; mm *= 2) word |= __shfl_xor_sync(kFullWarpMask, word, mm);
    if (live) {
      if (word_lane) st_u32(sq, word);
      const uint32_t inv_bits = (254u - biased) << 23;
      uint32_t o[kRmsChunk / 4];
      if (fast) {
        const uint32_t inv2 = (inv_bits >> 16) * 0x10001u;
#pragma unroll
        for (int i = 0; i < kRmsChunk / 4; ++i) {
          const uint32_t z0 = mul_bf16x2_y(y.w[2 * i], inv2), z1 = mul_bf16x2_y(y.w[2 * i + 1], inv2);
          o[i] = encode_e4m3x4(bf16_lo(z0), bf16_hi(z0), bf16_lo(z1), bf16_hi(z1));
        }
      } else {
        const float inv = u2f(inv_bits);
        float v[kRmsChunk];
#pragma unroll
        for (int e = 0; e < kRmsChunk; ++e) v[e] = mul_rn(y.at(e), inv);
        encode_chunk<Fmt::kE4m3, kRmsChunk>(v, o);
      }
      store_chunk<kRmsChunk>(drow + k * kRmsChunk, o, true);  // (k · 16 < 2^32)
    }
    k += kP;
    if (!__any_sync(kFullWarpMask, k < K)) break;  // `_br4w`'s warp bound (implies j + 1 < J)
    sq += sf_step;
  }
}

}  // namespace
}  // namespace tk

#define TK_NORM_FORWARD_BRY(n, name)                                                                      \
  extern "C" __global__ void __launch_bounds__(128, tk::kBrMinBlocks<n>)                                  \
      name(const __grid_constant__ NormForwardParams p) {                                                 \
    tk::NormForwardBulkRowsA<n>(p).template run<true, true>();                                            \
  }
TK_NORM_FORWARD_BRY(32, tk_norm_forward__bf16_e4m3_g32_br4y)
TK_NORM_FORWARD_BRY(128, tk_norm_forward__bf16_e4m3_g128_br4y)

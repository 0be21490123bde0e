// RMSNorm + per-token e4m3 cast with a residual (spec/norm-rope-rand.md §A.4, D.2, D.4, D.5) in normForward's
// two-pass geometry (`tk_norm_forward__bf16_tp16hr`, norm_forward.cu): one row per block of 512 threads, s = x ⊕
// residual held in registers from its one load to the cast. Round 11 (docs/perf-notes/perf11-ncast.md): the default
// of the residual casts on views that allow 16-byte accesses (normLaunchTuning.castRowForm 1, ops/norm/launch.ts;
// 0 selects main's `_e4m3_g<N>_wr_resa`). Measured 85.6–92.7% of copy against `_wr_resa`'s 68.9–75.9% (H200,
// 4096–16384 × 7168); the same geometry without a residual (and a cast by whole chunks) lost to `_br4a` and was removed.
//
// Symbols
//   tk_norm_forward__bf16_e4m3_g<N>_tp16c_res   N ∈ {32, 128}: addRmsnormForwardAndPerTokenCast and
//                                                normForwardAndPerTokenCast with a residual, where `_e4m3_g<N>_wr_resa`
//                                                would run (every view 16-byte aligned): s = RNbf16(x ⊕ residual)
//                                                written to residualOut in pass 1 and kept in registers (not read back
//                                                from L2 as the warp rows do); the cast by pieces; 32 registers on
//                                                sm_90a (4 blocks = 64 warps per SM)
//
// Launch: block.x 512 (one block = one row), 2 × 512 floats of static shared memory, no dynamic shared memory,
// grid.x = B·T (any grid is correct: rows walked grid-stride by block). PDL as `_tp16hr`: griddepcontrol.
// launch_dependents first, griddepcontrol.wait before the first global access.
//
// Per row: the row is 2K ≤ 1024 pieces of 8 elements (K = H/16 chunks); thread u holds pieces u and u + 512 (a, c).
// Pass 1 is `_tp16hr`'s, instruction for instruction: the pair exchange gives thread u chunk u/2 (even) or 256 + u/2
// (odd), summed by the 8/4/2/1 tree into node k of a 512-float array; warp 0 folds the nodes (halving over i: the
// tree's steps 256 … 32, +0 beyond N, then xor shuffles 16 … 1): D.2's TREE, the same one normForwardRef and the
// cast's reference (normForward, then perTokenCast of its bf16 output) use. rstd = 1 ⊘ √(S ⊘ H ⊕ eps) as every norm
// kernel. Step 4: y = RNbf16((s ⊗ rstd) ⊗ w) (outScale = 1) or RNbf16((s ⊗ rstd) ⊗ (w ⊗ outScale)) (w = 1 without
// a weight: exact), then the cast exactly as main's casts (NormForwardWarpRows::cast_chunk_sf): the group's amax is
// the integer max of the lanes' abs_max_bf16 (a non-negative, non-NaN bf16 pattern: integer order is value order) over
// xor shuffles, sf_and_inv, the scale stored by the group's first lane, the products by inv encoded to e4m3; outBf16
// (when asked) = y with its NaN halves as 0x7FC0. H % N = 0 (host): groups are wholly live or dead; a warp with
// nothing live skips the step (uniform), dead lanes of a live warp take part in the shuffles only. Each thread casts
// its pieces u and u + 512 one after the other (a group = N/8 adjacent threads: lane xor 1, 2, …; a warp's live
// pieces are a prefix): 8 elements per scale computation and shuffle chain.
#include "../common/chunk.cuh"
#include "../common/codec.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/reduce.cuh"
#include "../common/rms_tree.cuh"
#include "../common/scale.cuh"
#include "../generated/norm_params.h"
#include "norm_rows.cuh"

namespace tk {
namespace {

// NORM_FWD_FLAG of ops/norm/norm_forward.params.ts (the sf bits are SfFlag's)
enum NormFwdFlag : uint32_t { kFwdWeight = 8, kFwdOutBf16 = 32 };

constexpr uint32_t kTcThreads = 512;
// Resident blocks the register budget is sized for: 512 threads × 32 registers = 4 blocks = 64 warps per SM on
// sm_90a (as `_tp16hr`; no spills); sm_100a's code spills 24–44 bytes at 32, so it gets 40 (3 blocks).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr int kTcMinBlocks = 3;
#else
constexpr int kTcMinBlocks = 4;
#endif

TK_DEV uint64_t l2_policy_last() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}
template <int kCastN>
struct NormCastTwoPassRes {
  static constexpr int kEb = 2;
  static constexpr uint32_t kStep = kVecBytes * kTcThreads;  // bytes from piece u to piece u + 512
  const NormForwardParams& p;
  TK_DEV explicit NormCastTwoPassRes(const NormForwardParams& params) : p(params) {}

  TK_DEV SfOut sf_out(uint32_t flags) const {
    return SfOut{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, flags, p.hidden / kCastN};
  }

  // s = RNbf16(x ⊕ r) for one piece, in place in xv (bf16 RNE, NaN as 0x7FC0: Chunk::set_all's bits).
  static TK_DEV void add_piece(uint32_t (&xv)[4], const uint32_t (&rv)[4]) {
    float s[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float xe = (e & 1) ? bf16_hi(xv[e / 2]) : bf16_lo(xv[e / 2]);
      const float re = (e & 1) ? bf16_hi(rv[e / 2]) : bf16_lo(rv[e / 2]);
      s[e] = add_rn(xe, re);
    }
    encode_bf16x2_words4_mx(s, xv);
  }

  // Step 4 and the cast of piece `piece` (held in xv) of row (b, t) = global row `row`. kBench: a weight and
  // outScale = 1 (the products without the outScale one); otherwise w = 1 without a weight (1 ⊗ outScale =
  // outScale and s ⊗ 1 = s exactly) and the outScale product. `sf`: the scale flags (SfFlag bits).
  template <bool kBench>
  TK_DEV void cast_piece(const uint32_t (&xv)[4], const uint8_t* wq, uint64_t pol, float rstd, uint64_t row, uint32_t t,
                         uint32_t b, uint32_t piece, bool live, bool has_w, bool with_bf16, uint32_t sf) const {
    constexpr uint32_t kGroupPieces = kCastN / 8;  // pieces of a group
    const uint64_t H = p.hidden;
    uint32_t wv[4] = {0x3F803F80u, 0x3F803F80u, 0x3F803F80u, 0x3F803F80u};
    if (live && (kBench || has_w)) ld_keep_pol(wq, pol, wv);
    uint32_t y[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float f[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float sr = mul_rn(h ? bf16_hi(xv[k]) : bf16_lo(xv[k]), rstd);
        const float w = h ? bf16_hi(wv[k]) : bf16_lo(wv[k]);
        f[h] = kBench ? mul_rn(sr, w) : mul_rn(sr, mul_rn(w, p.out_scale));
      }
      y[k] = encode_bf16x2_nan_unfixed(f[0], f[1]);
    }
    if (with_bf16 && live) {
      uint32_t o[4];
      uint32_t nan = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) nan |= (y[k] & 0x7fff7fffu) + 0x007f007fu;  // bit 15 / 31: a NaN half
#pragma unroll
      for (int k = 0; k < 4; ++k) o[k] = (nan & 0x80008000u) ? bf16x2_fix_nan(y[k]) : y[k];
      st_v4(reinterpret_cast<uint8_t*>(p.out_bf16) + (row * H + 8ull * piece) * 2, o[0], o[1], o[2], o[3]);
    }
    uint32_t a = abs_max_bf16<4>(y);
#pragma unroll
    for (uint32_t m = kGroupPieces / 2; m >= 1; m /= 2) a = max(a, __shfl_xor_sync(kFullWarpMask, a, m));
    if (!live) return;
    const ScaleAndInv si = sf_and_inv(u2f(a << 16), p.amax_clamp, kE4m3Max, sf);
    if (piece % kGroupPieces == 0) {
      SfOut so = sf_out(sf);
      so.base += 4 * static_cast<uint64_t>(b) * p.sf_batch_stride;
      so.store(t, piece / kGroupPieces, si.stored);
    }
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = mul_rn((e & 1) ? bf16_hi(y[e / 2]) : bf16_lo(y[e / 2]), si.inv);
    uint32_t o[2];
    encode_chunk<Fmt::kE4m3, 8>(v, o);
    st_v2(reinterpret_cast<uint8_t*>(p.data) + row * H + 8ull * piece, o[0], o[1]);
  }

  template <bool kBench>
  TK_DEV void rows_loop(float (&red)[2][kTcThreads]) const {
    const uint32_t H = p.hidden, pieces = H / 8;
    const uint32_t u = threadIdx.x, lane = u % kWarpSize, odd = u & 1;
    const bool live0 = u < pieces, live1 = u + kTcThreads < pieces;
    // a warp has a live piece j iff its lane 0's is (uniform)
    const bool wlive0 = u - lane < pieces, wlive1 = u - lane + kTcThreads < pieces;
    const uint64_t pol_keep = l2_policy_last();  // the weight's (made once)
    const uint8_t* wp = reinterpret_cast<const uint8_t*>(p.weight) + kVecBytes * u;
    const uint64_t T = p.num_tokens, rows = static_cast<uint64_t>(p.num_batches) * T;
    const bool has_w = p.flags & kFwdWeight, with_bf16 = p.flags & kFwdOutBf16;
    const uint32_t sf = kBench ? (kSfRound | kSfPackedUe8m0) : p.flags;
    float* const my_node = &red[0][odd ? kTcThreads / 2 + u / 2 : u / 2];
    const float Hf = static_cast<float>(H);
    // (nothing above touched global memory)
    pdl_wait();
    for (uint64_t row = blockIdx.x; row < rows; row += gridDim.x) {
      const uint32_t b = p.num_batches == 1 ? 0u : static_cast<uint32_t>(row / T);
      const uint32_t t = p.num_batches == 1 ? static_cast<uint32_t>(row) : static_cast<uint32_t>(row % T);
      const uint8_t* xp =
          reinterpret_cast<const uint8_t*>(p.x) + row_offset(b, t, p.x_batch_stride, p.x_row_stride) * kEb + kVecBytes * u;

      // pass 1 (`_tp16hr`'s): pieces u and u + 512 (zeros when dead), s = RNbf16(x ⊕ r) stored to residualOut (each thread reads its pieces of x and residual before it writes the same pieces: residualOut
      // may be x or residual itself), the pair exchange, the chunk's squares and tree
      uint32_t a[4] = {0u, 0u, 0u, 0u}, c[4] = {0u, 0u, 0u, 0u};
      if (live0) ld_stream(xp, a);
      if (live1) ld_stream(xp + kStep, c);
      {
        const uint8_t* rp = reinterpret_cast<const uint8_t*>(p.residual) +
                            row_offset(b, t, p.residual_batch_stride, p.residual_row_stride) * kEb + kVecBytes * u;
        uint8_t* sp = reinterpret_cast<uint8_t*>(p.residual_out) +
                      row_offset(b, t, p.residual_out_batch_stride, p.residual_out_row_stride) * kEb + kVecBytes * u;
        uint32_t ra[4] = {0u, 0u, 0u, 0u}, rc[4] = {0u, 0u, 0u, 0u};
        if (live0) ld_stream(rp, ra);
        if (live1) ld_stream(rp + kStep, rc);
        // (dead pieces: +0 ⊕ +0 = +0, the pad of D.2)
        add_piece(a, ra);
        add_piece(c, rc);
        if (live0) st_v4(sp, a[0], a[1], a[2], a[3]);
        if (live1) st_v4(sp + kStep, c[0], c[1], c[2], c[3]);
      }
      float q[kRmsChunk];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // the even lane sends its second piece (the odd lane's chunk), the odd lane its first (the even lane's)
        const uint32_t got = __shfl_xor_sync(kFullWarpMask, odd ? a[i] : c[i], 1);
        const uint32_t own = odd ? c[i] : a[i];
        q[2 * i] = mul_rn(bf16_lo(own), bf16_lo(own));
        q[2 * i + 1] = mul_rn(bf16_hi(own), bf16_hi(own));
        q[8 + 2 * i] = mul_rn(bf16_lo(got), bf16_lo(got));
        q[9 + 2 * i] = mul_rn(bf16_hi(got), bf16_hi(got));
      }
      *my_node = chunk_tree(q);
      asm volatile("bar.sync 0;" ::: "memory");
      // the fold by warp 0, rstd in red[1][0] behind the second barrier (written again only after the next row's
      // first barrier, which every reader has passed)
      if (u < kWarpSize) {
        float v[kRmsChunk];
#pragma unroll
        for (int i = 0; i < kRmsChunk; ++i) v[i] = red[0][lane + kWarpSize * i];
        float S = chunk_tree(v);
#pragma unroll
        for (int h = kWarpSize / 2; h >= 1; h /= 2) S = add_rn(S, __shfl_xor_sync(kFullWarpMask, S, h));
        const float r = div_rn(1.0f, __fsqrt_rn(add_rn(div_rn(S, Hf), p.eps)));
        if (u == 0) st_u32(reinterpret_cast<float*>(p.rstd) + row, f2u(canonical_nan(r)));
        if (u == 0) red[1][0] = r;
      }
      asm volatile("bar.sync 0;" ::: "memory");
      const float rstd = red[1][0];

      // step 4 and the cast of the thread's two pieces (a warp with none live skips: uniform)
      if (wlive0) cast_piece<kBench>(a, wp, pol_keep, rstd, row, t, b, u, live0, has_w, with_bf16, sf);
      if (wlive1) cast_piece<kBench>(c, wp + kStep, pol_keep, rstd, row, t, b, u + kTcThreads, live1, has_w, with_bf16, sf);
    }
  }

  TK_DEV void run() const {
    __shared__ float red[2][kTcThreads];  // the chunk sums by node (red[0]), rstd (red[1][0])
    pdl_launch_dependents();
    // (uniform over the launch: the bench's case — a weight, outScale = 1, rounded scales as packed UE8M0 — with
    // those compile-time; anything else by the general copy)
    constexpr uint32_t kSfBits = kSfRound | kSfPackedUe8m0 | kSfE4m3Out;
    if ((p.flags & kFwdWeight) && p.out_scale == 1.0f && (p.flags & kSfBits) == (kSfRound | kSfPackedUe8m0)) {
      rows_loop<true>(red);
    } else {
      rows_loop<false>(red);
    }
    // the scale padding rows (TMA-aligned layouts), for every batch
    for (uint32_t b = 0; b < p.num_batches; ++b) {
      SfOut ob = sf_out(p.flags);
      ob.base += 4 * static_cast<uint64_t>(b) * p.sf_batch_stride;
      ob.zero_padding_rows(p.num_tokens, p.sf_rows);
    }
  }
};

}  // namespace
}  // namespace tk

// 32 registers on sm_90a = 4 blocks = 64 warps per SM (sm_100a 40: 3 blocks).
#define TK_NORM_CAST_TP16C_RES(n)                                                                         \
  extern "C" __global__ void __launch_bounds__(tk::kTcThreads, tk::kTcMinBlocks)                          \
      tk_norm_forward__bf16_e4m3_g##n##_tp16c_res(const __grid_constant__ NormForwardParams p) {         \
    tk::NormCastTwoPassRes<n>(p).run();                                                                   \
  }
TK_NORM_CAST_TP16C_RES(32)
TK_NORM_CAST_TP16C_RES(128)

// RMSNorm forward (spec/norm-rope-rand.md §A.3, D.2, D.4) and its fused per-token e4m3 cast (§A.4, D.5):
// normForward, normForwardAndPerTokenCast, addRmsnormForwardAndPerTokenCast.
//
// Symbols
//   tk_norm_forward__<in>              in ∈ {fp32, bf16}: out (x's dtype), rstd, residualOut
//   tk_norm_forward__<in>_e4m3_g<N>    N ∈ {32, 128}: data + sf (+ outBf16), rstd, residualOut; no x-dtype out
//   tk_norm_forward__bf16[_e4m3_g<N>]_wr_res   bf16, H > 256, with a residual, plain or fused cast: one warp per
//                                          row, two passes (below, "warp rows"; s written to residualOut in pass 1,
//                                          read back in pass 2); the host's default from 16 rows per SM
//                                          (normLaunchTuning.forwardWarpRowsMinRowsPerSm, residualWarpRows); the
//                                          casts on views that do not allow 16-byte accesses (_wr_resa: the others)
//   tk_norm_forward__bf16_rr4_l2           bf16, any H, no residual: one block of 4 warps per row, the row held in
//                                          registers (below, "register rows"), its aligned loads with the L2::256B
//                                          prefetch-size hint; the host's default for normForward from the same
//                                          row count per SM (normLaunchTuning.forwardRegRows) on views that do not
//                                          allow 16-byte accesses (x, out or the weight; _tp16hr takes the others)
//   tk_norm_forward__bf16_tp16hr           bf16, any H, no residual, views that allow 16-byte accesses (x, out, the
//                                          weight): one block of 16 warps per row, two passes with x held in
//                                          registers from its one load (past L1) to step 4, the chunk sums folded
//                                          by warp 0 (below, "two passes"); the host's default for normForward where
//                                          _rr4_l2 would run on such views (measured 91.3 / 94.2% of copy against
//                                          round 8's _tp16f, 87.6 / 91.3%, 8192 / 16384 rows, H200); PDL (round 10,
//                                          docs/perf-notes/perf10-pdl.md): griddepcontrol.launch_dependents first,
//                                          griddepcontrol.wait before its first global access; launched with the PDL
//                                          attribute while config.pdl is set
//   tk_norm_forward__bf16_e4m3_g<N>_br4    bf16, any H, no residual, fused cast: the register rows' team with the
//                                          row landed in shared memory by one bulk copy (below, "bulk rows"); the
//                                          host's choice for the cast from the same row count (castBulkRows) on views
//                                          that do not allow 16-byte accesses (_br4y takes the others)
//   tk_norm_forward__bf16_e4m3_g<N>_wr_resa  the residual casts' warp rows compiled for aligned views only; the host's
//                                          default where _e4m3_g<N>_wr_res would run and every view allows 16-byte
//                                          accesses (measured 70.4 / 76.1% of copy against 65.1 / 68.3%, 8192 / 16384
//                                          rows, H200); PDL in place (round 10: griddepcontrol, as _tp16hr)
//   (the bulk rows compiled for aligned views only, "aligned bulk rows" below, run as norm_cast_br4y.cu's
//   _e4m3_g<N>_br4y: the host's default where _e4m3_g<N>_br4 would run and every view allows 16-byte accesses; round
//   9's plain form _e4m3_g<N>_br4a, 70.5 / 76.9% of copy against _br4's 67.1 / 73.2%, left the package in trim24)
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, rows are walked grid-stride):
//
//   block.x  dynamic smem           team P (threads per row)            grid.x
//   256      0                      max(1, N/2), N = nextPow2(H / 16)    min(ceilDiv(B·T, 256 / P), 8 · SMs)
//   (two full waves of blocks at 4 resident per SM, four at 2; the host's normLaunchTuning.forwardBlocksPerSm
//   replaces the 8 for A/B runs.)
//
//   _wr_res: block.x 256, no shared memory, grid.x = ceilDiv(B·T, 8) (8 warps = 8 rows per block, walked grid-stride
//   by warp for any grid); 126–128 registers → 2 blocks = 16 rows per SM. _e4m3_g<N>_wr_resa: the same geometry,
//   96 registers on sm_90a, 123–128 on sm_100a (2 blocks per SM either way, the launch bound's). (A copy at 3
//   blocks = 24 rows per SM, `_wr_resa3`, 80 registers, measured a tie with it, 69.5 / 77.5% of copy, and was
//   removed.)
//
//   _rr4_l2: block.x 128 (one block = one row team, P = 128), 2 × P floats of static shared memory (the tree's
//   cross-warp step, two alternating buffers, barrier 0), grid.x = B·T (one block per row; any grid is correct, rows
//   walked grid-stride by block). Registers (no spills, sm_90a and sm_100a): rr4_l2 64 → 8 blocks = 8 rows = 32
//   warps per SM.
//
//   _tp16hr: block.x 512 (one block = one row), 2 × 512 floats of static shared memory (the chunk sums in the first
//   row, rstd at the head of the second; barrier 0 twice a row), grid.x = B·T (one block per row; any grid is
//   correct, rows walked grid-stride by block). Registers (no spills): 32 / 31 (sm_90a / sm_100a) → 4 blocks = 64
//   warps per SM.
//
//   _e4m3_g<N>_br4: block.x 128 (one block = one row team), dynamic shared memory 2H bytes (the row) + 1040 bytes
//   static (the tree's nodes, two buffers; the mbarrier), barrier 0; grid.x = B·T (one block per row; any grid is
//   correct, rows walked grid-stride by block, each later row behind a barrier). Registers (no spills, sm_90a and
//   sm_100a): 40 → 12 blocks per SM; the host asks for an 85% shared-memory carveout (normLaunchTuning.
//   bulkRowsCarveout; measured 72.9% of copy against 68.1% with the largest), which leaves L1 room for the weight.
//   _e4m3_g<N>_br4y (norm_cast_br4y.cu): as _e4m3_g<N>_br4 (40 registers, 12 blocks per SM, the same carveout), aligned
//   views only.
//
//   Step 4 loads the weight through L1, one chunk after the other. (A form staging it in shared memory once per
//   block measured slower on the H200, 2026-11-30: 56.3 against 62.0% of copy, and was removed.)
//
//   A thread owns the 16-element chunks p and p + P of its row and keeps them in registers from the load to the
//   store: the row is read from HBM once, every output is written once. P ≤ 256 because H ≤ 8192 (N ≤ 512).
//   Static shared memory: 1 KiB (the cross-warp step of the reduction tree, common/rms_tree.cuh), and for bf16 rows
//   32 KiB of staging slots: the team's next row (x, residual) is copied there by cp.async while the current row is
//   reduced and written, so each block keeps one row in flight through its whole iteration (fp32 slots would need
//   64 KiB, beyond the static 48 KiB: fp32 rows load at the top of each iteration).
//   Registers (no spills, sm_90a and sm_100a): bf16 and bf16 cast 64 (4 blocks/SM: 32 warps, 132 KiB of smem),
//   fp32 and fp32 cast ≤ 128 (2 blocks/SM).
//   Any other power of two P in [max(1, N/2), 256] gives the same bits (the tests launch two).
//   Rows move in whole 32-byte sectors (kFwdFullSectors: all but the fp32 casts): for P ≥ 2 lanes 2m, 2m + 1 copy,
//   load and store the pieces of their two chunks together (common/rms_tree.cuh RowChunk "whole sectors"), where
//   each thread moving its own 32-byte chunk by 16-byte accesses requested every sector twice. The reduction is
//   untouched: each thread still owns and sums the same chunks.
//
// Per row (one team): s = x (+ residual, rounded to x's dtype and stored to residualOut), S = TREE(s ⊗ s),
// rstd = 1 ⊘ √(S ⊘ H ⊕ eps), y = (s ⊗ rstd) ⊗ (w ⊗ outScale) rounded to x's dtype. The cast variants then cast
// that x-dtype value exactly as tk_per_token_cast does (common/scale.cuh sf_and_inv, encode_e4m3x4): a group of
// N columns is N / 16 chunks of adjacent team threads (or, for a row narrower than two teams' chunks, the whole
// row), so its amax is an xor-shuffle max over those lanes.
//
// Unaligned views (a base or stride not a multiple of 16 bytes) take element-wide loads and byte-wide stores in the
// same kernel; the alignment test is uniform over the launch.
#include "../common/bulk.cuh"
#include "../common/chunk.cuh"
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
enum NormFwdFlag : uint32_t { kFwdWeight = 8, kFwdResidual = 16, kFwdOutBf16 = 32 };

// Whether rows are read and written in whole 32-byte sectors by lane pairs (RowChunk::stage_pair, load_split,
// store_split) rather than by each thread for its own chunks (half a sector per 16-byte access, every sector
// requested twice). Per kernel, so that each can be measured and reverted alone. Not the fp32 casts: the pair
// exchange takes them past 128 registers (1 block/SM instead of 2).
template <Fmt kIn, int kCastN>
constexpr bool kFwdFullSectors = kIn == Fmt::kBf16 || kCastN == 0;

// Resident blocks per SM the register budget is sized for (the largest count that compiles without spills for
// both targets): fp32 rows hold twice the words of bf16 rows, and the fp32 cast keeps the row while it scales it.
// The bf16 casts fit 64 registers (4 blocks/SM, as the plain kernel) since their amax works on the packed words,
// the chunk loop is unrolled and the grid step is 32-bit; at 3 blocks/SM (80 registers) they were 41–44% of copy.
template <Fmt kIn, int kCastN>
constexpr int kFwdMinBlocks = kIn == Fmt::kFp32 ? (kCastN ? 1 : 2) : 4;

// A compile-time flag passed as a value (a generic lambda instantiates its body once per flag).
template <bool kValue>
struct BoolConst {
  static constexpr bool value = kValue;
};

// The fused casts' scale padding rows (TMA-aligned layouts), zeroed for every batch of the scale tensor `o`.
TK_DEV void zero_sf_padding(const NormForwardParams& p, const SfOut& o) {
  for (uint32_t b = 0; b < p.num_batches; ++b) {
    SfOut ob = o;
    ob.base += 4 * static_cast<uint64_t>(b) * p.sf_batch_stride;
    ob.zero_padding_rows(p.num_tokens, p.sf_rows);
  }
}

template <Fmt kIn, int kCastN>
struct NormForward {
  using Chunk = RowChunk<kIn>;
  static constexpr int kL = kRmsChunksPerThread;
  static constexpr int kEb = FmtTraits<kIn>::kBits / 8;
  static constexpr bool kCast = kCastN != 0;
  // bf16 rows are staged through shared memory (cp.async): the next row's copies fly while this row is reduced and
  // written. fp32 slots for H = 8192 (x and residual, 64 KiB) would not fit the static 48 KiB.
  static constexpr bool kStage = kIn == Fmt::kBf16;
  static constexpr bool kFullSectors = kFwdFullSectors<kIn, kCastN>;

  const NormForwardParams& p;
  TK_DEV explicit NormForward(const NormForwardParams& params) : p(params) {}

  TK_DEV void run() const {
    __shared__ float smem[kRmsBlockThreads];
    const uint32_t H = p.hidden, K = H / kRmsChunk;
    const RmsTeam team(p.team_threads, K);
    const uint32_t P = team.threads;
    const uint64_t T = p.num_tokens, rows = static_cast<uint64_t>(p.num_batches) * T;
    const bool has_w = p.flags & kFwdWeight, has_r = p.flags & kFwdResidual, with_bf16 = p.flags & kFwdOutBf16;
    const bool x_al = view_aligned(p.x, p.x_batch_stride * kEb, p.x_row_stride * kEb);
    const bool r_al = view_aligned(p.residual, p.residual_batch_stride * kEb, p.residual_row_stride * kEb);
    const bool ro_al = view_aligned(p.residual_out, p.residual_out_batch_stride * kEb, p.residual_out_row_stride * kEb);
    const bool o_al = view_aligned(p.out, p.out_batch_stride * kEb, p.out_row_stride * kEb);
    const bool w_al = (p.weight % kVecBytes) == 0;
    const bool d_al = (p.data % kVecBytes) == 0, b_al = (p.out_bf16 % kVecBytes) == 0;

    uint32_t c[kL];
    bool live[kL];
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      c[i] = team.p + i * P;
      live[i] = c[i] < K;
    }
    // Teams of P ≥ 2 move their rows by lane pairs in whole sectors (RowChunk::stage_pair / load_split /
    // store_split): the pair of chunk i is (c[i] & ~1, c[i] | 1); P = 1 (H ≤ 32) moves each thread's own chunks.
    const bool paired = kFullSectors && P >= 2;
    // (recomputed where used rather than held: the bf16 kernel has no registers to spare at 4 blocks/SM)
    auto c0 = [&](int i) { return c[i] & ~1u; };
    auto live0 = [&](int i) { return c0(i) < K; };
    auto live1 = [&](int i) { return c0(i) + 1 < K; };
    // The grid-stride step in rows, 32-bit: a 64-bit copy held across the loop kept the bf16 casts from fitting 64
    // registers (4 blocks/SM). A grid of more than 2^31 rows' worth of teams uses only its first 2^31 / teams blocks
    // (teams is a power of two, so each block is wholly inside or outside): the rows are still each walked once.
    const uint64_t span = static_cast<uint64_t>(gridDim.x) * team.teams;
    const uint32_t step = span < (1ull << 31) ? static_cast<uint32_t>(span) : (1u << 31);
    // (batch, token) of an active row: b < num_batches and t < num_tokens fit 32 bits; 2-D views (one batch) skip
    // the division (twice per row and thread otherwise: this row's indices and the staged next row's).
    struct RowIndex {
      uint32_t b, t;
    };
    auto split = [&](uint64_t row) -> RowIndex {
      if (p.num_batches == 1) return {0u, static_cast<uint32_t>(row)};
      return {static_cast<uint32_t>(row / T), static_cast<uint32_t>(row % T)};
    };
    const uint32_t team_off = team.team - team.warp_first_team();

    constexpr int kPieces = Chunk::kPieces;
    // Staged kernels: the shared slot of piece s of thread u's chunk i of input `in` (0 x, 1 residual),
    // [input][chunk][piece][thread], odd pieces at thread column u ^ 1: the pair copies (a lane writes piece h of
    // both pair threads' chunks) and the owners' reads (piece s of 32 consecutive threads) are both free of bank
    // conflicts.
    __shared__ __align__(16) uint8_t stage_buf[kStage ? 2 * kL * kPieces * kRmsBlockThreads * kVecBytes : kVecBytes];
    auto slot = [&](int in, int i, int s, uint32_t u) {
      return smem_addr(stage_buf) + (((in * kL + i) * kPieces + s) * kRmsBlockThreads + (u ^ (s & 1))) * kVecBytes;
    };
    // Issue the copies of row `row` into the slots (nothing for an inactive row or a dead chunk).
    auto stage_row = [&](uint64_t row) {
      if constexpr (kStage) {
        if (row < rows) {
          const RowIndex bt = split(row);
          const uint32_t b = bt.b, t = bt.t;
          const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + row_offset(b, t, p.x_batch_stride, p.x_row_stride) * kEb;
          const uint8_t* rr = reinterpret_cast<const uint8_t*>(p.residual) +
                              row_offset(b, t, p.residual_batch_stride, p.residual_row_stride) * kEb;
          auto stage_input = [&](int in, const uint8_t* src, bool al) {
#pragma unroll
            for (int i = 0; i < kL; ++i) {
              if (paired) {
                const auto pair_slot = [&](int s, uint32_t k) { return slot(in, i, s, (threadIdx.x & ~1u) | k); };
                Chunk::stage_pair(pair_slot, src + static_cast<uint64_t>(c0(i)) * Chunk::kBytes, live0(i), live1(i), al);
              } else if (live[i]) {
                Chunk::stage([&](int s) { return slot(in, i, s, threadIdx.x); }, src + static_cast<uint64_t>(c[i]) * Chunk::kBytes, al);
              }
            }
          };
          stage_input(0, xr, x_al);
          if (has_r) stage_input(1, rr, r_al);
        }
        cp_async_commit();
      }
    };
    // Chunk i of a row at row_p (element size of v's format): by lane pairs in whole sectors, or by its owner (P = 1).
    // Warp-uniform control flow only (pairs shuffle).
    auto access = [&](uint32_t bytes, const uint8_t* row_p, int i, bool active) {
      return paired ? ChunkAccess::pair(row_p + static_cast<uint64_t>(c0(i)) * bytes, bytes, active && live0(i), active && live1(i))
                    : ChunkAccess::own(row_p + static_cast<uint64_t>(c[i]) * bytes, active && live[i]);
    };
    auto get = [&](auto& v, const uint8_t* row_p, int i, bool active, bool al) { v.load_split(access(v.kBytes, row_p, i, active), al); };
    auto put = [&](auto v, uint8_t* row_p, int i, bool active, bool al) {  // a copy: store_split destroys it
      v.store_split(access(v.kBytes, row_p, i, active), al);
    };

    // The loop bound is that of the warp's first team, so every lane of a shared warp takes part in the shuffles.
    uint64_t first = static_cast<uint64_t>(blockIdx.x) * team.teams + team.warp_first_team();
    if (first >= step) first = rows;  // a block beyond a clamped grid: no rows
    stage_row(first + team_off);
    for (; first < rows; first += step) {
      const uint64_t row = first + team_off;
      const bool active = row < rows;
      const RowIndex bt = active ? split(row) : RowIndex{0u, 0u};
      const uint32_t b = bt.b, t = bt.t;

      // s = x (+ residual, rounded to x's dtype → residualOut), kept in x's storage format. Staged kernels take the
      // row from the slots, then (after step 1) start the copies of the team's next row into them, which fly during
      // this row's reduction, arithmetic and stores (each slot is read into registers first, by the thread that
      // refills it: program order, no barrier).
      Chunk sv[kL];
      {
        Chunk rc[kL];
        if constexpr (kStage) {
          cp_async_wait<0>();
          __syncwarp();  // the pair lane's copies into this thread's slots have landed too
        }
        const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + row_offset(b, t, p.x_batch_stride, p.x_row_stride) * kEb;
        const uint8_t* rr = reinterpret_cast<const uint8_t*>(p.residual) +
                            row_offset(b, t, p.residual_batch_stride, p.residual_row_stride) * kEb;
#pragma unroll
        for (int i = 0; i < kL; ++i) {
          if constexpr (kStage) {
            sv[i].zero();
            rc[i].zero();
            if (active && live[i]) {
              sv[i].load_shared([&](int s) { return slot(0, i, s, threadIdx.x); });
              if (has_r) rc[i].load_shared([&](int s) { return slot(1, i, s, threadIdx.x); });
            }
          } else {
            get(sv[i], xr, i, active, x_al);
            rc[i].zero();
            if (has_r) get(rc[i], rr, i, active, r_al);
          }
        }
        if (has_r) {
          uint8_t* ror = reinterpret_cast<uint8_t*>(p.residual_out) +
                         row_offset(b, t, p.residual_out_batch_stride, p.residual_out_row_stride) * kEb;
#pragma unroll
          for (int i = 0; i < kL; ++i) {
            float v[kRmsChunk];
#pragma unroll
            for (int j = 0; j < kRmsChunk; ++j) v[j] = add_rn(sv[i].at(j), rc[i].at(j));  // step 1
            sv[i].set_all(v);
            put(sv[i], ror, i, active, ro_al);
          }
        }
      }
      if constexpr (kStage) __syncwarp();  // every lane has read its slots before the pair lanes refill them
      stage_row(row + step);

      // steps 2–3: S = TREE(s ⊗ s); rstd = 1 ⊘ √((S ⊘ H) ⊕ eps)
      float cs[kL];
#pragma unroll
      for (int i = 0; i < kL; ++i) {
        float q[kRmsChunk];
#pragma unroll
        for (int j = 0; j < kRmsChunk; ++j) q[j] = mul_rn(sv[i].at(j), sv[i].at(j));
        cs[i] = chunk_tree(q);  // a dead chunk holds +0s: the +0 pad of D.2
      }
      const float S = team.reduce(cs[0], cs[1], smem);
      const float rstd = div_rn(1.0f, __fsqrt_rn(add_rn(div_rn(S, static_cast<float>(H)), p.eps)));
      if (active && team.p == 0) st_u32(reinterpret_cast<float*>(p.rstd) + row, f2u(canonical_nan(rstd)));

      // step 4: y = RNx((s ⊗ rstd) ⊗ (w ⊗ outScale)), or RNx((s ⊗ rstd) ⊗ outScale); overwrites s. With outScale = 1
      // (the default) its multiplications are left out: v ⊗ 1 = v for every non-NaN v (no flush to zero), and a NaN
      // stays a NaN, whose payload RNx drops (bf16 0x7FC0, fp32 0x7FC00000), so the bits are the same.
      // The plain kernel stores each chunk as soon as it is computed (its words die there: registers for the pair
      // exchange); the cast needs the whole row first.
      uint8_t* orow = kCast ? nullptr : reinterpret_cast<uint8_t*>(p.out) + row_offset(b, t, p.out_batch_stride, p.out_row_stride) * kEb;
      auto step4 = [&](auto unit_scale) {
        constexpr bool kOne = decltype(unit_scale)::value;
#pragma unroll
        for (int i = 0; i < kL; ++i) {
          Chunk wc;  // the weight stays in L1 (cached loads) across rows; registers for it would cost a block/SM
          wc.zero();
          if (has_w && live[i]) {
            wc.template load<false>(reinterpret_cast<const uint8_t*>(p.weight) + static_cast<uint64_t>(c[i]) * Chunk::kBytes, w_al);
          }
          float y[kRmsChunk];
#pragma unroll
          for (int j = 0; j < kRmsChunk; ++j) {
            const float sr = mul_rn(sv[i].at(j), rstd);
            if constexpr (kOne) {
              y[j] = has_w ? mul_rn(sr, wc.at(j)) : sr;
            } else {
              y[j] = mul_rn(sr, has_w ? mul_rn(wc.at(j), p.out_scale) : p.out_scale);
            }
          }
          sv[i].set_all(y);
          if constexpr (!kCast) put(sv[i], orow, i, active, o_al);
        }
      };
      if (p.out_scale == 1.0f) {
        step4(BoolConst<true>{});
      } else {
        step4(BoolConst<false>{});
      }
      if constexpr (kCast) cast_row(team, row, t, b, active, c, live, sv, with_bf16, d_al, b_al, put);
    }
    if constexpr (kCast) zero_sf_padding(p, sf_out());
  }

  // The scale tensor, built from the parameters where it is used (kernel parameters are constant-bank operands;
  // held across the row loop it would take ~8 registers).
  TK_DEV SfOut sf_out() const {
    return SfOut{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, p.hidden / (kCast ? kCastN : 1)};
  }

  // The per-token cast of the x-dtype row y (spec §A.4 = spec/quant.md §2 on y), and outBf16 = RNbf16(y).
  template <class Put>
  TK_DEV void cast_row(const RmsTeam& team, uint64_t row, uint32_t t, uint32_t b, bool active, const uint32_t (&c)[kL],
                       const bool (&live)[kL], const Chunk (&y)[kL], bool with_bf16, bool d_al, bool b_al,
                       const Put& put) const {
    constexpr int kGroupChunks = kCastN / kRmsChunk;  // chunks per quantization group
    const uint32_t H = p.hidden;
    if (with_bf16) {
      uint8_t* br = reinterpret_cast<uint8_t*>(p.out_bf16) + row * H * 2;
#pragma unroll
      for (int i = 0; i < kL; ++i) {
        RowChunk<Fmt::kBf16> o;
        if constexpr (kIn == Fmt::kBf16) {
          o = y[i];  // RNbf16 of a bf16 value (NaN already 0x7FC0) is the value
        } else {
          float v[kRmsChunk];
#pragma unroll
          for (int j = 0; j < kRmsChunk; ++j) v[j] = y[i].at(j);
          o.set_all(v);
        }
        put(o, br, i, active, b_al);
      }
    }
    // group amax: over the chunk, then over the group's lanes (a row of one group narrower than the team's two
    // chunks per thread also folds the thread's two chunks; dead chunks contribute 0, neutral after the clamp)
    const uint32_t P = team.threads;
    const uint32_t lanes = P < static_cast<uint32_t>(kGroupChunks) ? P : kGroupChunks;
    float amax[kL];
    if constexpr (kIn == Fmt::kBf16) {
      // On the packed pairs (common/reduce.cuh): |y| maxima as non-negative, non-NaN bf16 bit patterns, both chunks
      // in one word, so an unsigned 16-bit max is the same maximumNumber and one shuffle per step serves both.
      uint32_t a2 = abs_max_bf16<Chunk::kWords>(y[0].w) | (abs_max_bf16<Chunk::kWords>(y[1].w) << 16);
      if (P < static_cast<uint32_t>(kGroupChunks)) a2 = max(a2 & 0xffffu, a2 >> 16) * 0x10001u;
#pragma unroll
      for (uint32_t m = kGroupChunks / 2; m >= 1; m /= 2) {
        if (m < lanes) {
          const uint32_t o = __shfl_xor_sync(kFullWarpMask, a2, m);
          asm("max.u16x2 %0, %0, %1;" : "+r"(a2) : "r"(o));
        }
      }
      amax[0] = u2f(a2 << 16);
      amax[1] = u2f(a2 & 0xffff0000u);
    } else {
#pragma unroll
      for (int i = 0; i < kL; ++i) {
        float m = 0.0f;
#pragma unroll
        for (int j = 0; j < kRmsChunk; ++j) m = max_num(m, abs_f(y[i].at(j)));
        amax[i] = m;
      }
      if (P < static_cast<uint32_t>(kGroupChunks)) amax[0] = amax[1] = max_num(amax[0], amax[1]);
#pragma unroll
      for (uint32_t m = kGroupChunks / 2; m >= 1; m /= 2)
        if (m < lanes)
#pragma unroll
          for (int i = 0; i < kL; ++i) amax[i] = max_num(amax[i], __shfl_xor_sync(kFullWarpMask, amax[i], m));
    }

    uint8_t* dr = reinterpret_cast<uint8_t*>(p.data) + row * H;
    // one chunk after the other, unrolled: picking a chunk's words by select (one copy of the scale arithmetic) held
    // a third chunk of registers
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      if (!(active && live[i])) continue;
      const uint32_t ci = c[i];
      const ScaleAndInv si = sf_and_inv(amax[i], p.amax_clamp, kE4m3Max, p.flags);
      if (ci % kGroupChunks == 0) {
        SfOut so = sf_out();  // built here, from the parameters: nothing of it is held through the chunk loop
        so.base += 4 * static_cast<uint64_t>(b) * p.sf_batch_stride;
        so.store(t, ci / kGroupChunks, si.stored);
      }
      float v[kRmsChunk];
#pragma unroll
      for (int j = 0; j < kRmsChunk; ++j) v[j] = mul_rn(y[i].at(j), si.inv);
      uint32_t o[kRmsChunk / 4];
      encode_chunk<Fmt::kE4m3, kRmsChunk>(v, o);
      store_chunk<kRmsChunk>(dr + static_cast<uint64_t>(ci) * kRmsChunk, o, d_al);
    }
  }
};

// ---- warp rows: tk_norm_forward__bf16[_e4m3_g<N>]_wr_res ---------------------------------------------------------
// (Instantiated with a residual only: the forms without one, `_wr` and `_e4m3_g<N>_wr`, lost on the H200 to the
// register rows and the bulk rows and were removed; the bulk rows use cast_chunk. The text below describes both.)
// One warp per row, two passes, no shared memory and no barrier: pass 1 reads the row (L2::evict_last) and reduces
// it, pass 2 reads it again (from L2, L2::evict_first) with the weight (L1) and writes the output (the residual form:
// kRes below). The team is the
// warp (P = 32, legal for N ≥ 32, spec D.2): lane l owns the chunks l + 32·j, j < J = N/32 (1 … 16), sums each by
// the 8/4/2/1 tree, folds its J sums by halving (distance J/2 first: the tree's steps N/2 … 32) and the lanes
// combine by xor shuffles 16 … 1 (the steps 16 … 1), so S has the bits of TREE. The casts (kCastN) cast each chunk
// after step 4 with its group's kCastN / 16 adjacent lanes (cast_chunk). Rows are not held in registers:
// 16 rows per SM in flight (2 blocks of 8 warps) instead of 4 (+ 4 staged), at the cost of a second read of x from
// L2; the per-row fixed work (tree tail, rstd, addressing) is paid by one warp instead of eight. bf16 x, H > 256
// (N ≥ 32), any weight / outScale / strides / alignment. Without a residual x is never written by the kernel (out
// overlaps no input) and is read through the non-coherent path in both passes; with one (kRes) pass 2 reads
// residualOut, which this kernel wrote, by coherent .cg loads.

// L2 eviction-priority policies (createpolicy, sm_80+): pass 1 keeps the row for pass 2, pass 2 lets it go.
TK_DEV uint64_t l2_policy_evict_last() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}
TK_DEV uint64_t l2_policy_evict_first() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}
// 16 bytes, non-coherent, not allocated in L1, with an L2 cache policy.
TK_DEV void ld_stream_hint(const void* ptr, uint32_t (&w)[4], uint64_t pol) {
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(ptr), "l"(pol));
}

// Coherent 16-byte load from L2 (.cg: never served by an L1 line; data this kernel wrote: the residual form's
// residualOut, possibly x itself, whose unaligned element loads went through L1), with an L2 cache policy; and the
// element-wise form of a bf16 pair for unaligned views.
TK_DEV void ld_coherent_hint(const void* ptr, uint32_t (&w)[4], uint64_t pol) {
  asm volatile("ld.global.cg.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(ptr), "l"(pol)
               : "memory");
}
TK_DEV uint32_t ld_coherent_bf16x2(const uint8_t* ptr) {
  uint16_t lo, hi;
  asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(lo) : "l"(ptr) : "memory");
  asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(hi) : "l"(ptr + 2) : "memory");
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}
// 16-byte store with an L2 cache policy.
TK_DEV void st_hint(void* ptr, const uint32_t* w, uint64_t pol) {
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(ptr), "r"(w[0]), "r"(w[1]), "r"(w[2]),
               "r"(w[3]), "l"(pol)
               : "memory");
}

// Chunks per pass-1 step: four pairs (j, j + J/2) in flight per lane (64 registers): H = 7168 reads its row in two
// steps (the residual form: two pairs, x and residual). Pass 2 moves kWrPass2Chunks chunks of x (residual form:
// residualOut) and of the weight per step.
constexpr int kWrPairsPerStep = 4;
constexpr int kWrPass2Chunks = 4;
// Register budget: 2 blocks per SM (128 registers, no spills on sm_90a / sm_100a) = 16 rows per SM. Every resident
// row waits in L2 between its two passes: 16 × 132 × 14 KB = 30 MB at H = 7168, within the 50 MB L2 (32 rows per SM,
// 60 MB, would not be).
constexpr int kWrMinBlocks = 2;

// kRes (the `_wr_res` symbols): s = RNbf16(x ⊕ residual) is formed in pass 1, stored to residualOut (L2::evict_last)
// and summed; pass 2 reads s back from residualOut by coherent loads (the same lane wrote those bytes: program order;
// residualOut may be x or residual itself, each element read by its lane before that lane overwrites it, as in the
// team kernels). x and residual are read once (L2::evict_first).
// kAligned (the `_wr_resa` symbols, round 9): every view aligned to 16 bytes, compile-time (the host checks): no
// element-wise fallbacks, which ptxas if-converts into predicated narrow loads issued with every chunk (pass 2's
// weight: 16 `@P LDG.U16` + 8 `@P PRMT` a chunk in `_e4m3_g<N>_wr_res`). Otherwise the same kernel, the same bits.
// kPdl (the `_wr_resa` symbols, round 10): run() issues griddepcontrol.launch_dependents first and
// griddepcontrol.wait before the row walk (pdl_wait: nothing before it touches global memory), for launches with the
// PDL attribute (config.pdl); `_wr_res` is compiled without them.
template <int kCastN, bool kRes = false, bool kAligned = false, bool kPdl = false>
struct NormForwardWarpRows {
  using Chunk = RowChunk<Fmt::kBf16>;
  static constexpr bool kCast = kCastN != 0;
  const NormForwardParams& p;
  TK_DEV explicit NormForwardWarpRows(const NormForwardParams& params) : p(params) {}

  // A chunk's 16 elements at q (2 × 16 bytes; element-wise when not aligned), zeros when !live. kBack: the chunk
  // this lane stored at q in pass 1, read back by coherent loads; otherwise streamed in.
  template <bool kBack>
  static TK_DEV void load_chunk(Chunk& v, const uint8_t* q, bool live, bool aligned, uint64_t pol) {
    v.zero();
    if (!live) return;
    if (aligned) {
#pragma unroll
      for (int s = 0; s < Chunk::kPieces; ++s) {
        uint32_t w[4];
        if constexpr (kBack) {
          ld_coherent_hint(q + kVecBytes * s, w, pol);
        } else {
          ld_stream_hint(q + kVecBytes * s, w, pol);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) v.w[4 * s + i] = w[i];
      }
    } else if constexpr (kBack) {
#pragma unroll
      for (int i = 0; i < Chunk::kWords; ++i) v.w[i] = ld_coherent_bf16x2(q + 4 * i);
    } else {
      v.load(q, false);
    }
  }
  static TK_DEV void load(Chunk& v, const uint8_t* q, bool live, bool aligned, uint64_t pol) {
    load_chunk<false>(v, q, live, aligned, pol);
  }

  // Step 1 on a chunk: v ← RNbf16(v ⊕ r), stored at q (residualOut) when live, with the policy `pol`.
  static TK_DEV void add_residual(Chunk& v, const Chunk& r, uint8_t* q, bool live, bool aligned, uint64_t pol) {
    float s[kRmsChunk];
#pragma unroll
    for (int j = 0; j < kRmsChunk; ++j) s[j] = add_rn(v.at(j), r.at(j));
    v.set_all(s);
    if (!live) return;
    if (aligned) {
#pragma unroll
      for (int p = 0; p < Chunk::kPieces; ++p) st_hint(q + kVecBytes * p, v.w + 4 * p, pol);
    } else {
      v.store(q, false);
    }
  }
  static TK_DEV void load_back(Chunk& v, const uint8_t* q, bool live, bool aligned, uint64_t pol) {
    load_chunk<true>(v, q, live, aligned, pol);
  }

  // The kernels (the residual forms; the bulk rows instantiate the template for cast_chunk and sf_out only).
  TK_DEV void run() const {
    if constexpr (kPdl) pdl_launch_dependents();
    constexpr int kEb = 2;
    constexpr int kPairs = kRes ? (kCast ? 1 : 2) : kWrPairsPerStep;  // pairs per pass-1 step (registers)
    // pass-2 chunks per step: the casts keep fewer in flight (their scaling needs registers too)
    constexpr int kPass2 = kCast ? 2 : kWrPass2Chunks;
    const uint32_t H = p.hidden, K = H / kRmsChunk;
    uint32_t N = 1;
    while (N < K) N *= 2;
    const uint32_t J = N / kWarpSize;  // chunks per lane (N ≥ 32)
    const uint32_t Jh = J / 2;          // the top local fold's distance; 0 when J = 1
    const uint32_t lane = threadIdx.x % kWarpSize;
    const uint64_t T = p.num_tokens, rows = static_cast<uint64_t>(p.num_batches) * T;
    const bool has_w = p.flags & kFwdWeight;
    const bool x_al = kAligned || view_aligned(p.x, p.x_batch_stride * kEb, p.x_row_stride * kEb);
    const bool o_al = kAligned || view_aligned(p.out, p.out_batch_stride * kEb, p.out_row_stride * kEb);
    const bool with_bf16 = p.flags & kFwdOutBf16;
    const bool d_al = kAligned || (p.data % kVecBytes) == 0, b_al = kAligned || (p.out_bf16 % kVecBytes) == 0;
    const bool r_al = kAligned || view_aligned(p.residual, p.residual_batch_stride * kEb, p.residual_row_stride * kEb);
    const bool ro_al = kAligned || view_aligned(p.residual_out, p.residual_out_batch_stride * kEb, p.residual_out_row_stride * kEb);
    const bool w_al = kAligned || (p.weight % kVecBytes) == 0;
    const uint32_t warps_per_block = kRmsBlockThreads / kWarpSize;
    const uint64_t step = static_cast<uint64_t>(gridDim.x) * warps_per_block;
    // (every global access below: x, residual, residualOut, the weight, rstd, data, sf, outBf16, the sf padding rows)
    if constexpr (kPdl) pdl_wait();

    for (uint64_t row = static_cast<uint64_t>(blockIdx.x) * warps_per_block + threadIdx.x / kWarpSize; row < rows; row += step) {
      const uint64_t b = p.num_batches == 1 ? 0 : row / T, t = p.num_batches == 1 ? row : row % T;
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + row_offset(b, t, p.x_batch_stride, p.x_row_stride) * kEb;
      const uint8_t* rr = kRes ? reinterpret_cast<const uint8_t*>(p.residual) + row_offset(b, t, p.residual_batch_stride, p.residual_row_stride) * kEb : nullptr;
      uint8_t* ror = kRes ? reinterpret_cast<uint8_t*>(p.residual_out) + row_offset(b, t, p.residual_out_batch_stride, p.residual_out_row_stride) * kEb : nullptr;

      // pass 1: steps 2–3. c[jj] = sum(chunk l + 32·jj) ⊕ sum(chunk l + 32·(jj + Jh)) (the tree's step N/2), then the
      // halving over jj (steps N/4 … 32), then the lanes (16 … 1). J = 1: the lane's one chunk.
      float S;
      {
        // plain: x stays in L2 for pass 2; residual form: x and residual are read once, residualOut is kept
        const uint64_t keep = kRes ? l2_policy_evict_first() : l2_policy_evict_last();
        const uint64_t hold = kRes ? l2_policy_evict_last() : 0;
        auto chunk_sum = [&](const Chunk& v) {
          float q[kRmsChunk];
#pragma unroll
          for (int j = 0; j < kRmsChunk; ++j) q[j] = mul_rn(v.at(j), v.at(j));
          return chunk_tree(q);  // a dead chunk holds +0s: the +0 pad of D.2
        };
        float c[8];
#pragma unroll
        for (int jj = 0; jj < 8; jj += kPairs) {
          if (static_cast<uint32_t>(jj) >= (Jh ? Jh : 1u)) {  // no pair left (uniform): +0, never folded in
#pragma unroll
            for (int u = 0; u < kPairs; ++u) c[jj + u] = 0.0f;
            continue;
          }
          Chunk a[kPairs], z[kPairs];
          uint32_t ka[kPairs], kz[kPairs];
          bool la[kPairs], lz[kPairs];
#pragma unroll
          for (int u = 0; u < kPairs; ++u) {
            const uint32_t j = jj + u;
            const bool pair = j < Jh;  // J ≥ 2: chunks j and j + Jh; J = 1: chunk 0 alone (as a, j = 0)
            ka[u] = lane + kWarpSize * j;
            kz[u] = lane + kWarpSize * (j + Jh);
            la[u] = (pair || (Jh == 0 && j == 0)) && ka[u] < K;
            lz[u] = pair && kz[u] < K;
            load(a[u], xr + static_cast<uint64_t>(ka[u]) * Chunk::kBytes, la[u], x_al, keep);
            load(z[u], xr + static_cast<uint64_t>(kz[u]) * Chunk::kBytes, lz[u], x_al, keep);
          }
          if constexpr (kRes) {
            // step 1: s = RNbf16(x ⊕ residual) → residualOut, kept in L2 for pass 2
            Chunk ra[kPairs], rz[kPairs];
#pragma unroll
            for (int u = 0; u < kPairs; ++u) {
              load(ra[u], rr + static_cast<uint64_t>(ka[u]) * Chunk::kBytes, la[u], r_al, keep);
              load(rz[u], rr + static_cast<uint64_t>(kz[u]) * Chunk::kBytes, lz[u], r_al, keep);
            }
#pragma unroll
            for (int u = 0; u < kPairs; ++u) {
              add_residual(a[u], ra[u], ror + static_cast<uint64_t>(ka[u]) * Chunk::kBytes, la[u], ro_al, hold);
              add_residual(z[u], rz[u], ror + static_cast<uint64_t>(kz[u]) * Chunk::kBytes, lz[u], ro_al, hold);
            }
          }
#pragma unroll
          for (int u = 0; u < kPairs; ++u) {
            const float sa = chunk_sum(a[u]);
            c[jj + u] = Jh == 0 ? sa : add_rn(sa, chunk_sum(z[u]));
          }
        }
#pragma unroll
        for (uint32_t h = 4; h >= 1; h /= 2)
          if (h < Jh)
#pragma unroll
            for (uint32_t j = 0; j < h; ++j) c[j] = add_rn(c[j], c[j + h]);
        float v = c[0];
#pragma unroll
        for (uint32_t h = kWarpSize / 2; h >= 1; h /= 2) v = add_rn(v, __shfl_xor_sync(kFullWarpMask, v, h));
        S = v;
      }
      const float rstd = div_rn(1.0f, __fsqrt_rn(add_rn(div_rn(S, static_cast<float>(H)), p.eps)));
      if (lane == 0) st_u32(reinterpret_cast<float*>(p.rstd) + row, f2u(canonical_nan(rstd)));

      // pass 2: step 4 for the lane's chunks, two at a time (the row read again, the weight from L1)
      const uint64_t last = l2_policy_evict_first();
      uint8_t* orow = kCast ? nullptr : reinterpret_cast<uint8_t*>(p.out) + row_offset(b, t, p.out_batch_stride, p.out_row_stride) * kEb;
      const uint8_t* wr = reinterpret_cast<const uint8_t*>(p.weight);
      auto step4 = [&](auto unit_scale, auto with_weight) {
        constexpr bool kOne = decltype(unit_scale)::value, kW = decltype(with_weight)::value;
        for (uint32_t j = 0; j < J; j += kPass2) {
          Chunk sv[kPass2], wc[kPass2];
#pragma unroll
          for (int u = 0; u < kPass2; ++u) {
            const uint32_t k = lane + kWarpSize * (j + u);
            const bool live = j + u < J && k < K;
            if constexpr (kRes) {
              load_back(sv[u], ror + static_cast<uint64_t>(k) * Chunk::kBytes, live, ro_al, last);
            } else {
              load(sv[u], xr + static_cast<uint64_t>(k) * Chunk::kBytes, live, x_al, last);
            }
            wc[u].zero();
            if (kW && live) wc[u].template load<false>(wr + static_cast<uint64_t>(k) * Chunk::kBytes, w_al);
          }
#pragma unroll
          for (int u = 0; u < kPass2; ++u) {
            const uint32_t k = lane + kWarpSize * (j + u);
            if (j + u >= J) continue;  // uniform over the warp
            const bool live = k < K;
            if (!kCast && !live) continue;  // (the casts' dead chunks still take part in the group shuffles)
            float y[kRmsChunk];
#pragma unroll
            for (int e = 0; e < kRmsChunk; ++e) {
              const float sr = mul_rn(sv[u].at(e), rstd);
              if constexpr (kOne) {
                y[e] = kW ? mul_rn(sr, wc[u].at(e)) : sr;
              } else {
                y[e] = mul_rn(sr, kW ? mul_rn(wc[u].at(e), p.out_scale) : p.out_scale);
              }
            }
            sv[u].set_all(y);
            if constexpr (kCast) {
              cast_chunk(sv[u], row, t, b, k, live, with_bf16, d_al, b_al);
            } else {
              sv[u].store(orow + static_cast<uint64_t>(k) * Chunk::kBytes, o_al);
            }
          }
        }
      };
      // (the branches uniform over the launch, outside the element loops)
      if (p.out_scale == 1.0f) {
        if (has_w) step4(BoolConst<true>{}, BoolConst<true>{});
        else step4(BoolConst<true>{}, BoolConst<false>{});
      } else {
        if (has_w) step4(BoolConst<false>{}, BoolConst<true>{});
        else step4(BoolConst<false>{}, BoolConst<false>{});
      }
    }
    if constexpr (kCast) zero_sf_padding(p, sf_out());
  }

  TK_DEV SfOut sf_out() const {
    return SfOut{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, p.hidden / (kCast ? kCastN : 1)};
  }

  // The per-token cast of the bf16 chunk y (chunk k of row (b, t)), as NormForward::cast_row does for a team: the
  // group of kCastN columns is kGroupChunks adjacent lanes (k = lane + 32·j, 32 a multiple of kGroupChunks), its
  // amax an xor-shuffle max of the lanes' packed |y| maxima (every lane calls: uniform control flow; a dead chunk,
  // all +0, lies in a dead group since H % kCastN == 0). outBf16 = y.
  // kFixBf16: y's NaN halves may be any NaN (norm_step4_chunk<…, false>): the outBf16 copy gets them as 0x7FC0 here;
  // the cast itself gives every NaN the same code (the amax ignores NaN operands, a NaN product encodes to 0x7F).
  template <bool kFixBf16 = false>
  TK_DEV void cast_chunk(const Chunk& y, uint64_t row, uint64_t t, uint64_t b, uint32_t k, bool live, bool with_bf16,
                         bool d_al, bool b_al) const {
    cast_chunk_sf<kFixBf16, false>(y, row, t, b, k, live, with_bf16, d_al, b_al, 0);
  }
  // kSfArg: the scale flags are `sf` (SfFlag bits; compile-time in `_br4a`'s bench copy of its loop), else the launch's.
  template <bool kFixBf16, bool kSfArg>
  TK_DEV void cast_chunk_sf(const Chunk& y, uint64_t row, uint64_t t, uint64_t b, uint32_t k, bool live, bool with_bf16,
                            bool d_al, bool b_al, uint32_t sf) const {
    constexpr uint32_t kGroupChunks = kCastN / kRmsChunk;  // a group: kGroupChunks adjacent lanes
    const uint64_t H = p.hidden;
    if (with_bf16 && live) {
      uint8_t* q = reinterpret_cast<uint8_t*>(p.out_bf16) + row * H * 2 + static_cast<uint64_t>(k) * Chunk::kBytes;
      if constexpr (kFixBf16) {
        Chunk o = y;
        uint32_t nan = 0;
#pragma unroll
        for (int i = 0; i < Chunk::kWords; ++i) nan |= (o.w[i] & 0x7fff7fffu) + 0x007f007fu;  // bit 15 / 31: a NaN half
        if (nan & 0x80008000u) {
#pragma unroll
          for (int i = 0; i < Chunk::kWords; ++i) o.w[i] = bf16x2_fix_nan(o.w[i]);
        }
        o.store(q, b_al);
      } else {
        y.store(q, b_al);
      }
    }
    uint32_t a = abs_max_bf16<Chunk::kWords>(y.w);
#pragma unroll
    for (uint32_t m = kGroupChunks / 2; m >= 1; m /= 2) a = max(a, __shfl_xor_sync(kFullWarpMask, a, m));
    if (!live) return;
    const ScaleAndInv si = sf_and_inv(u2f(a << 16), p.amax_clamp, kE4m3Max, kSfArg ? sf : p.flags);
    if (k % kGroupChunks == 0) {
      SfOut so = sf_out();
      if constexpr (kSfArg) so.flags = sf;
      so.base += 4 * b * p.sf_batch_stride;
      so.store(t, k / kGroupChunks, si.stored);
    }
    float v[kRmsChunk];
#pragma unroll
    for (int e = 0; e < kRmsChunk; ++e) v[e] = mul_rn(y.at(e), si.inv);
    uint32_t o[kRmsChunk / 4];
    encode_chunk<Fmt::kE4m3, kRmsChunk>(v, o);
    store_chunk<kRmsChunk>(reinterpret_cast<uint8_t*>(p.data) + row * H + static_cast<uint64_t>(k) * kRmsChunk, o, d_al);
  }
};


// ---- register rows: tk_norm_forward__bf16_rr4_l2 ------------------------------------------------------------------
// One block of W warps (P = 32·W threads) per row, the row in registers from its load to its store: read from HBM
// once, written once (the warp-rows form reads it twice, the second time from L2; the 256-thread team kernels hold
// 2 chunks a thread, 4 rows per SM). Thread p owns the chunks p + P·j, j < J = max(1, N/P) (P = 128: J ≤ 4, 32
// registers of row), sums each by the 8/4/2/1 tree, folds its J sums by halving
// (distance J/2 first: the tree's steps N/2 … 2P) and hands nodes p and p + P to RmsTeam::reduce (steps P … 1:
// P/2 … 32 through shared memory, 16 … 1 by shuffles) with the team = the block, synced on barrier 0 (an immediate:
// one barrier per block, no cap on resident blocks) and two alternating buffers (one barrier per row). For N < P
// (H ≤ 16·P) J = 1 and the threads p ≥ N hold +0 chunks that no step folds in (RmsTeam's rule), so S has the bits of
// TREE for any H. Step 4 and the casts per chunk as the warp-rows form (norm_step4_chunk, cast_chunk), the weight
// through L1 kRrWeightChunks chunks at a time; unaligned views take element-wide accesses, as the other forms. Any
// grid (rows walked grid-stride by block); the host launches one block per row. Measured on the H200 (2026-11-30,
// docs/perf-notes/perf4-norm.md): 2 warps a row, a residual form and whole-sector moves by lane pairs were slower
// or no faster, and were removed. The row's aligned loads ask L2 for 256-byte fetches (ld_stream_l2_256: a hint
// only, same data): 84.2–84.5% of copy at 8192 rows against 81.7–82.7% without it, 88.6–89.3% at 16384 against
// 88.1–89.3% (H200, 2026-12-01, docs/perf-notes/perf6-norm.md; the unhinted _rr4 was removed, as were the round's
// forms at more rows per SM, two row teams or two rows per block, and 8 warps per row, all no faster or slower).

// The row teams' (register and bulk rows: the block is the team) end of D.2 and D.4: the thread's J chunk sums folded
// by halving over j (the tree's steps N/2 … 2P), RmsTeam::reduce over the block (steps P … 1, barrier 0), rstd with
// its two roundings, stored by thread 0 as fp32 rstd[row]; returns rstd.
template <int kJ>
TK_DEV float row_rstd(const NormForwardParams& p, const RmsTeam& team, float (&cs)[kJ], uint32_t J, float* red, uint32_t H, uint64_t row) {
#pragma unroll
  for (int h = kJ / 2; h >= 2; h /= 2)
    if (static_cast<uint32_t>(h) < J)
#pragma unroll
      for (int j = 0; j < h; ++j) cs[j] = add_rn(cs[j], cs[j + h]);
  const float S = team.template reduce<false, true>(cs[0], J >= 2 ? cs[1] : 0.0f, red);
  const float rstd = div_rn(1.0f, __fsqrt_rn(add_rn(div_rn(S, static_cast<float>(H)), p.eps)));
  if (threadIdx.x == 0) st_u32(reinterpret_cast<float*>(p.rstd) + row, f2u(canonical_nan(rstd)));
  return rstd;
}

// step 4 on one chunk: y = RNbf16((s ⊗ rstd) ⊗ (w ⊗ outScale)), or without the outScale product (kOne: outScale = 1,
// exact), or without the weight (kW false); overwrites v.
// kFixNan false (bf16 chunks only): NaN halves are left as the hardware conversion makes them (some NaN, 0x7FFF on
// sm_90) instead of 0x7FC0, for a consumer that gives every NaN the same result (the casts' cast_chunk<true>).
template <bool kOne, bool kW, class Chunk, bool kFixNan = true>
TK_DEV void norm_step4_chunk(Chunk& v, const Chunk& w, float rstd, float out_scale) {
  float y[kRmsChunk];
#pragma unroll
  for (int e = 0; e < kRmsChunk; ++e) {
    const float sr = mul_rn(v.at(e), rstd);
    if constexpr (kOne) {
      y[e] = kW ? mul_rn(sr, w.at(e)) : sr;
    } else {
      y[e] = mul_rn(sr, kW ? mul_rn(w.at(e), out_scale) : out_scale);
    }
  }
  if constexpr (kFixNan) {
    v.set_all(y);
  } else {
#pragma unroll
    for (int k = 0; k < Chunk::kWords; ++k) v.w[k] = encode_bf16x2_nan_unfixed(y[2 * k], y[2 * k + 1]);
  }
}

// A streamed 16-byte load (ldst.cuh ld_stream) that asks L2 to fetch the 256 bytes around it from HBM (the L2::256B
// prefetch-size hint: a hint only, same data).
TK_DEV void ld_stream_l2_256(const void* ptr, uint32_t (&w)[4]) {
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(ptr));
}

// Weight chunks loaded together in step 4 (8 registers each; one L1 round trip per group on the row's chain).
template <int kCastN>
constexpr int kRrWeightChunks = kCastN ? 1 : 2;  // the casts spilled 24 bytes with 2
// Resident blocks per SM the register budget is sized for (no spills, sm_90a and sm_100a): rr4 (P = 128, 32 registers
// of row) 64 registers → 8 blocks = 8 rows = 32 warps per SM; rr4 casts 72 → 7 rows (at 64 they spilled 68 bytes).
template <int kCastN = 0>
constexpr int kRrMinBlocks = kCastN ? 7 : 8;

template <int kWarps, int kCastN>
struct NormForwardRegRows {
  using Chunk = RowChunk<Fmt::kBf16>;
  static constexpr int kEb = 2;
  static constexpr bool kCast = kCastN != 0;
  static constexpr uint32_t kP = kWarps * kWarpSize;                  // team = block
  static constexpr int kJ = 512 / kP;                                 // chunks a thread holds at most (N ≤ 512)
  static constexpr int kWc = kRrWeightChunks<kCastN>;
  static_assert(kJ >= 2 && kJ % kWc == 0, "team width");
  const NormForwardParams& p;
  TK_DEV explicit NormForwardRegRows(const NormForwardParams& params) : p(params) {}

  TK_DEV void run() const {
    __shared__ float red[2][kP];  // RmsTeam::reduce's cross-warp nodes, alternating buffers (kClose = false)
    const uint32_t H = p.hidden, K = H / kRmsChunk;
    const RmsTeam team(kP, K);  // team 0, p = threadIdx.x
    const uint32_t N = team.nodes;
    const uint32_t J = N > kP ? N / kP : 1u;
    const uint32_t tp = threadIdx.x;
    const uint64_t T = p.num_tokens, rows = static_cast<uint64_t>(p.num_batches) * T;
    const bool has_w = p.flags & kFwdWeight, with_bf16 = p.flags & kFwdOutBf16;
    const bool x_al = view_aligned(p.x, p.x_batch_stride * kEb, p.x_row_stride * kEb);
    const bool o_al = view_aligned(p.out, p.out_batch_stride * kEb, p.out_row_stride * kEb);
    const bool w_al = (p.weight % kVecBytes) == 0;
    const bool d_al = (p.data % kVecBytes) == 0, b_al = (p.out_bf16 % kVecBytes) == 0;
    auto chunk_of = [&](int j) { return tp + kP * j; };
    auto live_of = [&](int j) { return static_cast<uint32_t>(j) < J && chunk_of(j) < K; };

    uint32_t parity = 0;
    for (uint64_t row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
      const uint32_t b = p.num_batches == 1 ? 0u : static_cast<uint32_t>(row / T);
      const uint32_t t = p.num_batches == 1 ? static_cast<uint32_t>(row) : static_cast<uint32_t>(row % T);
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + row_offset(b, t, p.x_batch_stride, p.x_row_stride) * kEb;

      // the whole row at once: J chunks a thread (dead chunks +0: the +0 pad of D.2)
      Chunk sv[kJ];
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        sv[j].zero();
        if (live_of(j)) {
          const uint8_t* q = xr + static_cast<uint64_t>(chunk_of(j)) * Chunk::kBytes;
          if (x_al) {
#pragma unroll
            for (int s = 0; s < Chunk::kPieces; ++s) {
              uint32_t w4[4];
              ld_stream_l2_256(q + kVecBytes * s, w4);
#pragma unroll
              for (int i = 0; i < 4; ++i) sv[j].w[4 * s + i] = w4[i];
            }
          } else {
            sv[j].load(q, false);
          }
        }
      }

      // steps 2–3: chunk sums, the local halving over j (steps N/2 … 2P), RmsTeam::reduce (steps P … 1)
      float cs[kJ];
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        float q[kRmsChunk];
#pragma unroll
        for (int e = 0; e < kRmsChunk; ++e) q[e] = mul_rn(sv[j].at(e), sv[j].at(e));
        cs[j] = chunk_tree(q);
      }
      // The packed words pass through an empty asm: step 4 unpacks them again instead of the compiler keeping the
      // squares' fp32 copies of the row alive across the reduction (twice the row's registers: spills at 64).
#pragma unroll
      for (int j = 0; j < kJ; ++j)
#pragma unroll
        for (int i = 0; i < Chunk::kWords; ++i) asm volatile("" : "+r"(sv[j].w[i]));
      const float rstd = row_rstd(p, team, cs, J, red[parity], H, row);

      // step 4, kWc chunks at a time (their weight loads together), each chunk stored or cast at once
      uint8_t* orow = kCast ? nullptr : reinterpret_cast<uint8_t*>(p.out) + row_offset(b, t, p.out_batch_stride, p.out_row_stride) * kEb;
      const uint8_t* wr = reinterpret_cast<const uint8_t*>(p.weight);
      // Without a weight, w = 1 (bf16 0x3F80): (s ⊗ rstd) ⊗ 1 = s ⊗ rstd and 1 ⊗ outScale = outScale exactly (no
      // flush to zero), a NaN stays a NaN whose payload RNbf16 drops: the bits of step 4 without the product, from
      // one copy of the code instead of two (each copy of the unrolled row costs cubin bytes for two targets).
      auto step4 = [&](auto unit_scale) {
        constexpr bool kOne = decltype(unit_scale)::value;
#pragma unroll
        for (int j0 = 0; j0 < kJ; j0 += kWc) {
          if (static_cast<uint32_t>(j0) >= J) break;  // uniform over the block
          Chunk wc[kWc];
#pragma unroll
          for (int u = 0; u < kWc; ++u) {
#pragma unroll
            for (int i = 0; i < Chunk::kWords; ++i) wc[u].w[i] = 0x3F803F80u;
            if (has_w && live_of(j0 + u)) wc[u].template load<false>(wr + static_cast<uint64_t>(chunk_of(j0 + u)) * Chunk::kBytes, w_al);
          }
#pragma unroll
          for (int u = 0; u < kWc; ++u) {
            const int j = j0 + u;
            if (static_cast<uint32_t>(j) >= J) continue;  // uniform
            const bool live = chunk_of(j) < K;
            // (the casts' dead chunks still take part in the group shuffles)
            if (!kCast && !live) continue;
            norm_step4_chunk<kOne, true>(sv[j], wc[u], rstd, p.out_scale);
            if constexpr (kCast) {
              NormForwardWarpRows<kCastN>(p).cast_chunk(sv[j], row, t, b, chunk_of(j), live, with_bf16, d_al, b_al);
            } else {
              sv[j].store(orow + static_cast<uint64_t>(chunk_of(j)) * Chunk::kBytes, o_al);
            }
          }
        }
      };
      // (the branches uniform over the launch, outside the element loops)
      if (p.out_scale == 1.0f) {
        step4(BoolConst<true>{});
      } else {
        step4(BoolConst<false>{});
      }
    }
    if constexpr (kCast) zero_sf_padding(p, NormForwardWarpRows<kCastN>(p).sf_out());
  }
};

// ---- two passes, 16 warps a row: tk_norm_forward__bf16_tp16hr -----------------------------------------------------
// torch.compile's RMSNorm geometry (its Triton kernel, probed on the H200 2026-12-01: one row per CTA of 512 threads,
// 29 registers, 4 CTAs = 64 warps per SM, x read by whole-sector 16-byte loads), with D.2's tree. The row is 2K ≤ 1024
// 16-byte pieces of 8 elements (K = H/16 ≤ 512 chunks); thread u loads pieces u and u + 512, so each warp instruction
// reads 512 contiguous bytes (whole sectors; _rr4_l2's thread-owned 32-byte chunks use half of every sector per
// instruction). Pass 1: threads u = 2m and 2m + 1 (lanes of one warp) hold the two pieces of chunk m in their first
// registers and of chunk 256 + m in their second; one shuffle per word gives the even thread chunk m whole (pieces 2m,
// 2m + 1) and the odd thread chunk 256 + m (pieces 512 + 2m, 513 + 2m): thread u owns chunk k(u) = u/2 (u even) or
// 256 + u/2 (u odd), dead chunks (k ≥ K) +0. Each thread sums its chunk by the 8/4/2/1 tree and stores it at node k of
// a 512-float shared array; after barrier 0 warp 0 folds the 512 nodes: lane l reads nodes l + 32i, i < 16, folds them
// by halving over i (the tree's steps 256, 128, 64, 32; nodes ≥ N are +0, and c ⊕ +0 = c for the non-negative or NaN
// sums, so the fixed width 512 gives TREE's bits for every N), then xor shuffles 16 … 1, and hands rstd to the block
// through shared memory behind a second barrier (as torch's kernel: two barriers a row). Step 4: thread u takes pieces
// u and u + 512 of x from its registers (pass 1's a, c: 8 a thread, live across the two barriers; x is read once, by
// L1::no_allocate loads: nothing of x is reused through L1, which then holds only the weight) and the weight's (through
// L1, L2 evict_last), and writes 16 bytes of each.
// What round 8's `_tp16f` (x read again in pass 2, from L1 / L2) issued beyond torch.compile's kernel is gone
// (docs/perf-notes/perf9-nf.md, a census of both): (1) the weight's L2 policy made once per thread, not before every
// load; (2) one 64-bit pointer per tensor and row (x, out; the weight's once per kernel) with the second piece at the
// immediate offset +8192 B; (3) the weight / no-weight and outScale = 1 / other branches taken once per kernel (four
// instantiations of the row loop) instead of per piece; (4) the pieces' liveness tests hoisted out of the row loop;
// (5) the NaN test of the 8 encoded halves a piece by 3 max.NaN.bf16x2 and one integer test on the result instead of
// one test per word (the fix itself, taken only when a half is NaN, is encode_bf16x2_words's).
// (Measured on the H200, 2026-12-01, docs/perf-notes/perf9-nf.md: 91.3 / 94.2% of copy at 8192 / 16384 × 7168 against
// `_tp16f`'s 87.6 / 91.3; `_tp16f` (87.2 / 90.9 against _rr4_l2's 84.2 / 89.0 in round 8), the same hoisted form reading
// x twice with torch's cache hints (`_tp16h`, 90.2 / 94.0) and without hints (`_tp16hn`, 89.1 / 91.4), and before them
// the two-pass form with every warp folding and _rr4_l2 without its element-wise fallbacks, were slower or no faster,
// and were removed.)
// Views that allow 16-byte accesses only (x, out and the weight 16-byte aligned, strides multiples of 8 elements: the
// host runs _rr4_l2 otherwise); bf16, no residual, no cast; any H ≤ 8192; any grid (rows walked grid-stride by block).
// (The L2 policy and its load here rather than in ldst.cuh, as ld_stream_l2_256 above: only this file uses them, and
// a change to ldst.cuh touches every kernel's manifest entry.)
constexpr uint32_t kTpThreads = 512;
// 512 threads × 32 registers: 4 blocks = 64 warps per SM (register file 64 K).
constexpr int kTpMinBlocks = 4;

TK_DEV uint64_t l2_policy_last() {
  uint64_t pol;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}

struct NormForwardTwoPass {
  const NormForwardParams& p;
  TK_DEV explicit NormForwardTwoPass(const NormForwardParams& params) : p(params) {}

  // step 4 on one piece of 8 elements: y = RNbf16((s ⊗ rstd) ⊗ (w ⊗ outScale)), or without the outScale product
  // (kOne: outScale = 1, exact); kW false: no weight, w = 1 (as the register rows' step 4). Overwrites xv.
  template <bool kW, bool kOne>
  static TK_DEV void step4(uint32_t (&xv)[4], const uint32_t (&wv)[4], float rstd, float out_scale) {
    float y[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float s = (e & 1) ? bf16_hi(xv[e / 2]) : bf16_lo(xv[e / 2]);
      const float sr = mul_rn(s, rstd);
      if constexpr (kW) {
        const float w = (e & 1) ? bf16_hi(wv[e / 2]) : bf16_lo(wv[e / 2]);
        y[e] = kOne ? mul_rn(sr, w) : mul_rn(sr, mul_rn(w, out_scale));
      } else {
        // w = 1: sr ⊗ 1 = sr and 1 ⊗ outScale = outScale exactly (a NaN stays a NaN, and the encoding maps every NaN
        // to 0x7FC0)
        y[e] = kOne ? sr : mul_rn(sr, out_scale);
      }
    }
    encode_bf16x2_words4_mx(y, xv);
  }

  template <bool kW, bool kOne>
  TK_DEV void rows_loop(float (&red)[2][kTpThreads]) const {
    constexpr int kEb = 2;
    constexpr uint32_t kStep = kVecBytes * kTpThreads;  // bytes from piece u to piece u + 512
    const uint32_t H = p.hidden, pieces = H / 8;
    const uint32_t u = threadIdx.x, lane = u % kWarpSize, odd = u & 1;
    const bool live0 = u < pieces, live1 = u + kTpThreads < pieces;
    const uint64_t T = p.num_tokens, rows = static_cast<uint64_t>(p.num_batches) * T;
    const uint64_t pol_keep = l2_policy_last();  // the weight's
    const uint8_t* wp = reinterpret_cast<const uint8_t*>(p.weight) + kVecBytes * u;
    float* const my_node = &red[0][odd ? kTpThreads / 2 + u / 2 : u / 2];
    const float Hf = static_cast<float>(H);
    // PDL (round 10): the previous grid of the stream, when this one was launched as its programmatic dependent, has
    // completed and its memory is visible after this; nothing above touched global memory (launch parameters,
    // thread geometry, the L2 policy). A plain launch has no prerequisite grid in flight: it returns at once.
    pdl_wait();
    for (uint64_t row = blockIdx.x; row < rows; row += gridDim.x) {
      const uint32_t b = p.num_batches == 1 ? 0u : static_cast<uint32_t>(row / T);
      const uint32_t t = p.num_batches == 1 ? static_cast<uint32_t>(row) : static_cast<uint32_t>(row % T);
      const uint8_t* xp =
          reinterpret_cast<const uint8_t*>(p.x) + row_offset(b, t, p.x_batch_stride, p.x_row_stride) * kEb + kVecBytes * u;

      // pass 1: pieces u and u + 512 (zeros when dead), the pair exchange, the chunk's squares and tree.
      // The chunk's two pieces are the thread's own (even: piece 2m, its elements 0–7; odd: piece 513 + 2m, its
      // elements 8–15) and the one received; q[e] holds the own piece's squares and q[8 + e] the received one's for
      // both parities: the tree's first step adds q[e] ⊕ q[e + 8], and ⊕ is commutative (bit for bit, NaN included:
      // every NaN sum is the canonical NaN), so this is the ordered pair's sum (lo, hi) with two selects a word fewer.
      uint32_t a[4] = {0u, 0u, 0u, 0u}, c[4] = {0u, 0u, 0u, 0u};
      if (live0) ld_stream(xp, a);
      if (live1) ld_stream(xp + kStep, c);
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
      // the fold by warp 0 (halving over i, then the lanes), rstd in red[1][0] behind the second barrier, read by
      // all after it, written again only after the next row's first barrier, which every reader has passed
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

      // step 4: the same pieces from the registers, the weight's, 16-byte stores (pointers + immediate offsets)
      uint8_t* op = reinterpret_cast<uint8_t*>(p.out) + row_offset(b, t, p.out_batch_stride, p.out_row_stride) * kEb + kVecBytes * u;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        if (j == 0 ? live0 : live1) {
          uint32_t xv[4], wv[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) xv[i] = j == 0 ? a[i] : c[i];
          if constexpr (kW) ld_keep_pol(wp + kStep * j, pol_keep, wv);
          step4<kW, kOne>(xv, wv, rstd, p.out_scale);
          st_v4(op + kStep * j, xv[0], xv[1], xv[2], xv[3]);
        }
      }
    }
  }

  TK_DEV void run() const {
    __shared__ float red[2][kTpThreads];  // the chunk sums by node (red[0]), rstd (red[1][0]); one array for all four
    // PDL (round 10): the next grid of the stream, if launched as a programmatic dependent, may be scheduled from now
    // on (it waits for this grid's completion before its own first global access); no effect on a plain launch.
    pdl_launch_dependents();
    // (uniform over the launch: one branch per kernel, not per piece)
    const bool has_w = p.flags & kFwdWeight;
    if (p.out_scale == 1.0f) {
      if (has_w) {
        rows_loop<true, true>(red);
      } else {
        rows_loop<false, true>(red);
      }
    } else if (has_w) {
      rows_loop<true, false>(red);
    } else {
      rows_loop<false, false>(red);
    }
  }
};

// ---- bulk rows: tk_norm_forward__bf16[_e4m3_g<N>]_br4[s] -----------------------------------------------------------
// The register rows' team, chunks and tree (one block of 4 warps per row, thread p owns the chunks p + 128·j), with
// the row landed in shared memory by one bulk copy (TMA: cp.async.bulk, one instruction of thread 0, completing on
// an mbarrier) instead of in registers. The bytes in flight are then bounded by shared memory, not registers: a row
// costs no registers while it waits (rr4: 32 a thread), so 14 rows per SM fit at H = 7168 instead of 8 (the casts 12
// instead of 7), and the row arrives in whole 128-byte lines (rr4's 16-byte accesses of a warp use half of each
// 32-byte sector: two requests per sector). Each thread reads its own chunks from the buffer twice (the sums, then
// step 4), so nothing of the row is held across the reduction. Unaligned views of x (base or strides not multiples
// of 16 bytes) fill each thread's own chunks of the buffer by element loads instead (read back by the same thread:
// no barrier). The casts walk step 4 by a rolled loop (one chunk's code, not four: ncu saw their issue stalled on
// instruction fetch, no_instruction 1.5 cycles per issue) and leave y's NaN halves as the conversion makes them
// except in the outBf16 copy (cast_chunk<true>: the cast gives every NaN the same code; 8 paired NaN compares, their
// predicate chain and a branch a chunk fewer). A block's later rows (a capped grid) reuse the buffer behind a barrier.
// Shared memory: 2H bytes of dynamic row buffer, 1 KiB of tree nodes, the mbarrier. Only the casts are instantiated
// (the host's default for normForwardAndPerTokenCast): on the H200 the plain bulk-rows kernel measured 86.0% of copy
// against the register rows' 89.0%, and a form storing the output row by a bulk copy 82.9% (2026-11-30, seventh run
// of bench/RESULTS.md); both were removed.

// Resident blocks per SM the register budget is sized for (no spills, sm_90a and sm_100a): plain 32 registers → 16,
// casts 40 → 12. Shared memory bounds it too: 2H + 1040 bytes, + 1 KiB the system reserves per block, of 228 KiB:
// H = 7168 → 14 blocks, H = 8192 → 12 (the host asks for the largest shared-memory carveout).
template <int kCastN>
constexpr int kBrMinBlocks = kCastN ? 12 : 16;

template <int kCastN>
struct NormForwardBulkRows {
  using Chunk = RowChunk<Fmt::kBf16>;
  static constexpr int kEb = 2;
  static constexpr bool kCast = kCastN != 0;
  static constexpr uint32_t kP = 4 * kWarpSize;  // team = block
  static constexpr int kJ = 512 / kP;            // chunks a thread holds at most (N ≤ 512)
  const NormForwardParams& p;
  TK_DEV explicit NormForwardBulkRows(const NormForwardParams& params) : p(params) {}

  TK_DEV void run() const {
    extern __shared__ __align__(16) uint8_t row_buf[];  // the row: 2H bytes
    __shared__ float red[2][kP];                        // RmsTeam::reduce's cross-warp nodes, alternating buffers
    __shared__ __align__(8) uint64_t landed;            // the bulk load's mbarrier
    const uint32_t H = p.hidden, K = H / kRmsChunk, row_bytes = H * kEb;
    const RmsTeam team(kP, K);  // team 0, p = threadIdx.x
    const uint32_t N = team.nodes;
    const uint32_t J = N > kP ? N / kP : 1u;
    const uint32_t tp = threadIdx.x;
    const uint64_t T = p.num_tokens, rows = static_cast<uint64_t>(p.num_batches) * T;
    const bool has_w = p.flags & kFwdWeight, with_bf16 = p.flags & kFwdOutBf16;
    const bool x_al = view_aligned(p.x, p.x_batch_stride * kEb, p.x_row_stride * kEb);
    const bool o_al = view_aligned(p.out, p.out_batch_stride * kEb, p.out_row_stride * kEb);
    const bool w_al = (p.weight % kVecBytes) == 0;
    const bool d_al = (p.data % kVecBytes) == 0, b_al = (p.out_bf16 % kVecBytes) == 0;
    const uint32_t buf = smem_addr(row_buf), bar = smem_addr(&landed);
    auto chunk_of = [&](uint32_t j) { return tp + kP * j; };
    auto live_of = [&](uint32_t j) { return j < J && chunk_of(j) < K; };
    auto piece = [&](uint32_t j) { return [&, j](int s) { return buf + chunk_of(j) * Chunk::kBytes + kVecBytes * s; }; };
    auto put_shared = [&](const Chunk& v, uint32_t j) {
#pragma unroll
      for (int s = 0; s < Chunk::kPieces; ++s) {
        const uint32_t q[4] = {v.w[4 * s], v.w[4 * s + 1], v.w[4 * s + 2], v.w[4 * s + 3]};
        st_shared(piece(j)(s), q);
      }
    };

    if (tp == 0) mbar_init(bar, 1);
    uint32_t phase = 0, parity = 0;
    const uint64_t first = blockIdx.x;
    for (uint64_t row = first; row < rows; row += gridDim.x, parity ^= 1) {
      const uint32_t b = p.num_batches == 1 ? 0u : static_cast<uint32_t>(row / T);
      const uint32_t t = p.num_batches == 1 ? static_cast<uint32_t>(row) : static_cast<uint32_t>(row % T);
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + row_offset(b, t, p.x_batch_stride, p.x_row_stride) * kEb;

      // the row into the buffer: a later row of the block waits until every thread has read the last one out of it;
      // the first publishes the mbarrier's initialisation instead
      if (row != first) team.template sync<true>();
      if (x_al) {
        if (tp == 0) {
          fence_proxy_async_shared();  // the block's reads of the last row (ordered by the barrier) before the copy
          mbar_arrive_expect_tx(bar, row_bytes);
          bulk_load(buf, xr, row_bytes, bar);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kJ; ++j) {
          if (!live_of(j)) continue;
          Chunk v;
          v.load(xr + static_cast<uint64_t>(chunk_of(j)) * Chunk::kBytes, false);
          put_shared(v, j);
        }
      }
      if (row == first) team.template sync<true>();
      if (x_al) {
        mbar_wait(bar, phase);
        phase ^= 1;
      }

      // steps 2–3 as the register rows (dead chunks +0: the +0 pad of D.2), the chunks read from the buffer
      float cs[kJ];
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        cs[j] = 0.0f;
        if (!live_of(j)) continue;
        Chunk v;
        v.load_shared(piece(j));
        float q[kRmsChunk];
#pragma unroll
        for (int e = 0; e < kRmsChunk; ++e) q[e] = mul_rn(v.at(e), v.at(e));
        cs[j] = chunk_tree(q);
      }
      const float rstd = row_rstd(p, team, cs, J, red[parity], H, row);

      // step 4 chunk by chunk (the weight through L1; w = 1 without one, as the register rows), stored or cast
      uint8_t* orow = kCast ? nullptr : reinterpret_cast<uint8_t*>(p.out) + row_offset(b, t, p.out_batch_stride, p.out_row_stride) * kEb;
      const uint8_t* wr = reinterpret_cast<const uint8_t*>(p.weight);
      auto chunk4 = [&](auto unit_scale, uint32_t j) {
        constexpr bool kOne = decltype(unit_scale)::value;
        const uint32_t k = chunk_of(j);
        const bool live = k < K;
        Chunk v, w;
        v.zero();
        if (live) v.load_shared(piece(j));
#pragma unroll
        for (int i = 0; i < Chunk::kWords; ++i) w.w[i] = 0x3F803F80u;
        if (has_w && live) w.template load<false>(wr + static_cast<uint64_t>(k) * Chunk::kBytes, w_al);
        norm_step4_chunk<kOne, true, Chunk, !kCast>(v, w, rstd, p.out_scale);
        if constexpr (kCast) {
          NormForwardWarpRows<kCastN>(p).template cast_chunk<true>(v, row, t, b, k, live, with_bf16, d_al, b_al);
        } else {
          v.store(orow + static_cast<uint64_t>(k) * Chunk::kBytes, o_al);
        }
      };
      auto step4 = [&](auto unit_scale) {
        if constexpr (kCast) {
          // every lane walks every j < J (the group shuffles; a dead chunk lies in a dead group)
#pragma unroll 1
          for (uint32_t j = 0; j < J; ++j) chunk4(unit_scale, j);
        } else {
#pragma unroll
          for (int j = 0; j < kJ; ++j)
            if (live_of(j)) chunk4(unit_scale, j);
        }
      };
      // (the branches uniform over the launch, outside the element loops)
      if (p.out_scale == 1.0f) {
        step4(BoolConst<true>{});
      } else {
        step4(BoolConst<false>{});
      }
    }
    if constexpr (kCast) zero_sf_padding(p, NormForwardWarpRows<kCastN>(p).sf_out());
  }
};

// ---- aligned bulk rows: tk_norm_forward__bf16_e4m3_g<N>_br4y -------------------------------------------------------
// The bulk rows' cast (above: one block of 4 warps per row, the row landed in shared memory by one bulk copy, thread
// p owning chunks p + 128 j for the sums and the tree, step 4 + the cast as a rolled loop over j) compiled for aligned
// views only. The host launches it only when x's base and strides, the weight, data and outBf16 are multiples of 16
// bytes (its default wherever `_br4` would run on such views): the row is always landed by the bulk copy (no element loads), the
// weight is read by two 16-byte loads and data / outBf16 written by 16-byte stores, with no narrow fallback compiled
// in. ptxas if-converts such a fallback into predicated narrow accesses that issue on every call: in `_br4`'s step-4
// loop the weight's 16 `@P LDG.U16` + 8 `@P PRMT` issue with every chunk (24 of ~265 warp-instructions a chunk;
// docs/perf-notes/perf9-ncast.md). The bench's case (a weight, outScale = 1, rounded scales stored as packed UE8M0)
// has its own copy of the loop without the weight and scale flag tests, the unit-weight moves, the outScale products
// and the other scale paths; every other case runs the general copy (w = 1 without a weight, as `_br4`). A dead
// chunk reads chunk 0 (no predicates, no presets). Same bits as `_br4`: the same products in the same order
// (norm_step4_chunk<kOne, true, Chunk, false>, element for element, by 16-byte pieces) and the same cast
// (NormForwardWarpRows::cast_chunk_sf<true, true>: aligned, the scale flags an argument).
// Registers: 40 → 12 blocks per SM (kBrMinBlocks), no spills, sm_90a and sm_100a; shared memory as `_br4`.
// (Not instantiated: a form with two chunks per lane, 8m + i and 8m + i + 4 for the 4 lanes i of unit m, one scale
// per two chunks; it needs ~48 registers and spilled 24–200 bytes at 40 in every arrangement tried, even with one
// chunk parked in the row buffer: docs/perf-notes/perf9-ncast.md.)
template <int kCastN>
struct NormForwardBulkRowsA {
  using Chunk = RowChunk<Fmt::kBf16>;
  static constexpr int kEb = 2;
  static constexpr uint32_t kP = 4 * kWarpSize;  // team = block
  static constexpr int kJ = 512 / kP;            // chunks a thread holds at most (N ≤ 512)
  const NormForwardParams& p;
  TK_DEV explicit NormForwardBulkRowsA(const NormForwardParams& params) : p(params) {}

  TK_DEV SfOut sf_out() const {
    return SfOut{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, p.hidden / kCastN};
  }

  // Chunk k of the row in the buffer at `buf` through step 4: y = RNbf16((s ⊗ rstd) ⊗ w) (kOne:
  // outScale = 1) or RNbf16((s ⊗ rstd) ⊗ (w ⊗ outScale)), NaN halves left as the conversion makes them (the cast
  // treats every NaN alike; cast_chunk<true> fixes them in the outBf16 copy). By 16-byte pieces (x from the buffer,
  // the weight through L1), element for element the products of norm_step4_chunk<kOne, true, Chunk, false>. kW: the
  // weight compiled in (present); otherwise read when the launch has one, w = 1 (bf16 0x3F80) without:
  // (s ⊗ rstd) ⊗ 1 = s ⊗ rstd and 1 ⊗ outScale = outScale exactly, a NaN stays a NaN (as `_br4`).
  template <bool kOne, bool kW>
  TK_DEV Chunk step4(uint32_t buf, uint32_t k, bool live, float rstd) const {
    Chunk y;
    // A dead chunk (k ≥ K: in a dead group, nothing of it is stored, its |y| maximum meets only its group's dead
    // lanes) reads chunk 0 instead: the loads need no predicate and their registers no preset (a warp of dead
    // lanes reads one shared address and one weight line).
    const uint32_t kk = live ? k : 0u;
    const uint8_t* wq = reinterpret_cast<const uint8_t*>(p.weight) + static_cast<uint64_t>(kk) * Chunk::kBytes;
#pragma unroll
    for (int s = 0; s < Chunk::kPieces; ++s) {
      uint32_t v[4], w[4];
      ld_shared(buf + kk * Chunk::kBytes + kVecBytes * s, v);
      if constexpr (kW) {
        ld_cached(wq + kVecBytes * s, w);
      } else {
        for (int i = 0; i < 4; ++i) w[i] = 0x3F803F80u;
        if (p.flags & kFwdWeight) ld_cached(wq + kVecBytes * s, w);
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float f[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float sr = mul_rn(h ? bf16_hi(v[q]) : bf16_lo(v[q]), rstd);
          const float wv = h ? bf16_hi(w[q]) : bf16_lo(w[q]);
          f[h] = kOne ? mul_rn(sr, wv) : mul_rn(sr, mul_rn(wv, p.out_scale));
        }
        y.w[4 * s + q] = encode_bf16x2_nan_unfixed(f[0], f[1]);
      }
    }
    return y;
  }

  // `_br4x`'s bench copy of the loop (defined in norm_cast_br4x.cu, the only file that instantiates it).
  TK_DEV void cast_chunks_lean(uint32_t buf, float rstd, uint64_t row, uint32_t b, uint32_t t, uint32_t J) const;

  // The cast of chunk k: NormForwardWarpRows::cast_chunk_sf<true>, aligned, with the scale flags `sf` (SfFlag bits:
  // compile-time in the bench's copy of the loop, the launch's otherwise).
  TK_DEV void cast(const Chunk& y, uint64_t row, uint32_t t, uint32_t b, uint32_t k, bool live, bool with_bf16, uint32_t sf) const {
    NormForwardWarpRows<kCastN>(p).template cast_chunk_sf<true, true>(y, row, t, b, k, live, with_bf16, true, true, sf);
  }

  // Step 4 and the cast of the row chunk by chunk, as `_br4` (thread p: chunks p + 128 j, every lane walks every
  // j < J for the group shuffles), aligned only. kBench: a weight, outScale = 1 and rounded scales stored as packed
  // UE8M0 (the roofline's case), all compile-time; otherwise everything from the launch.
  template <bool kBench, bool kWarpBound = false, bool kLean = false>  // kWarpBound: warp w stops at J_w (`_br4w`,
  // norm_cast_br4w.cu); kLean: the bench's copy by cast_chunks_lean (`_br4x`, norm_cast_br4x.cu)
  TK_DEV void cast_chunks(uint32_t buf, float rstd, uint64_t row, uint32_t b, uint32_t t, uint32_t J) const {
    if constexpr (kBench && kLean) {
      cast_chunks_lean(buf, rstd, row, b, t, J);
      return;
    }
    const uint32_t K = p.hidden / kRmsChunk;
    const bool with_bf16 = p.flags & kFwdOutBf16;
    const uint32_t sf = kBench ? kSfRound | kSfPackedUe8m0 : p.flags;
    if constexpr (kWarpBound) {
      // as below, but the warp leaves once its next iteration is wholly dead (no lane's k + 128 < K: a warp vote,
      // uniform): warp w runs j < max(1, J_w), J_w = ⌈(K − 32 w) / 128⌉ (norm_cast_br4w.cu). (A bound computed up
      // front or a test on k & ~31 spilled 20–48 bytes at 40 registers; the vote none.)
#pragma unroll 1
      for (uint32_t j = 0; j < J; ++j) {
        const uint32_t k = threadIdx.x + kP * j;
        const bool live = k < K;
        const Chunk y = step4<kBench, kBench>(buf, k, live, rstd);
        cast(y, row, t, b, k, live, with_bf16, sf);
        if (!__any_sync(kFullWarpMask, k + kP < K)) break;
      }
    } else {
#pragma unroll 1
      for (uint32_t j = 0; j < J; ++j) {
        const uint32_t k = threadIdx.x + kP * j;
        const bool live = k < K;
        const Chunk y = step4<kBench, kBench>(buf, k, live, rstd);
        cast(y, row, t, b, k, live, with_bf16, sf);
      }
    }
  }

  template <bool kWarpBound = false, bool kLean = false>  // cast_chunks' warp bound (`_br4w`) and lean bench copy (`_br4x`)
  TK_DEV void run() const {
    extern __shared__ __align__(16) uint8_t row_buf[];  // the row: 2H bytes
    __shared__ float red[2][kP];                        // RmsTeam::reduce's cross-warp nodes, alternating buffers
    __shared__ __align__(8) uint64_t landed;            // the bulk load's mbarrier
    // PDL (round 10): the stream's next grid, if a programmatic dependent, may be scheduled from now on
    pdl_launch_dependents();
    const uint32_t H = p.hidden, K = H / kRmsChunk, row_bytes = H * kEb;
    const RmsTeam team(kP, K);  // team 0, p = threadIdx.x
    const uint32_t N = team.nodes;
    const uint32_t J = N > kP ? N / kP : 1u;
    const uint32_t tp = threadIdx.x;
    const uint64_t T = p.num_tokens, rows = static_cast<uint64_t>(p.num_batches) * T;
    const uint32_t buf = smem_addr(row_buf), bar = smem_addr(&landed);
    auto chunk_of = [&](uint32_t j) { return tp + kP * j; };
    auto live_of = [&](uint32_t j) { return j < J && chunk_of(j) < K; };

    if (tp == 0) mbar_init(bar, 1);
    // PDL (round 10): every global access (the bulk copies of x, the weight, data, sf, outBf16, rstd, the sf padding
    // rows) comes after the wait; the mbarrier above is shared memory.
    pdl_wait();
    uint32_t phase = 0, parity = 0;
    const uint64_t first = blockIdx.x;
    for (uint64_t row = first; row < rows; row += gridDim.x, parity ^= 1) {
      const uint32_t b = p.num_batches == 1 ? 0u : static_cast<uint32_t>(row / T);
      const uint32_t t = p.num_batches == 1 ? static_cast<uint32_t>(row) : static_cast<uint32_t>(row % T);
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + row_offset(b, t, p.x_batch_stride, p.x_row_stride) * kEb;

      // the row into the buffer (as `_br4`'s aligned path): a later row of the block waits until every thread has
      // read the last one out of it; the first publishes the mbarrier's initialisation instead
      if (row != first) team.template sync<true>();
      if (tp == 0) {
        fence_proxy_async_shared();  // the block's reads of the last row (ordered by the barrier) before the copy
        mbar_arrive_expect_tx(bar, row_bytes);
        bulk_load(buf, xr, row_bytes, bar);
      }
      if (row == first) team.template sync<true>();
      mbar_wait(bar, phase);
      phase ^= 1;

      // steps 2–3 as `_br4` (dead chunks +0: the +0 pad of D.2)
      float cs[kJ];
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        cs[j] = 0.0f;
        if (!live_of(j)) continue;
        Chunk v;
        v.load_shared([&](int s) { return buf + chunk_of(j) * Chunk::kBytes + kVecBytes * s; });
        float q[kRmsChunk];
#pragma unroll
        for (int e = 0; e < kRmsChunk; ++e) q[e] = mul_rn(v.at(e), v.at(e));
        cs[j] = chunk_tree(q);
      }
      const float rstd = row_rstd(p, team, cs, J, red[parity], H, row);

      // (uniform over the launch: the bench's case — a weight, outScale = 1, rounded scales as packed UE8M0 — without
      // the weight and scale flag tests and the 16 products by outScale; anything else by the general copy. Four
      // copies, outScale and weight each compile-time, spilled 28 bytes at 40 registers.)
      constexpr uint32_t kSfBits = kSfRound | kSfPackedUe8m0 | kSfE4m3Out;
      if ((p.flags & kFwdWeight) && p.out_scale == 1.0f && (p.flags & kSfBits) == (kSfRound | kSfPackedUe8m0)) {
        cast_chunks<true, kWarpBound, kLean>(buf, rstd, row, b, t, J);
      } else {
        cast_chunks<false, kWarpBound>(buf, rstd, row, b, t, J);
      }
    }
    zero_sf_padding(p, sf_out());
  }
};

}  // namespace
}  // namespace tk
#ifndef TK_NORM_FORWARD_NO_ENTRIES  // (norm_cast_br4w.cu includes this file for its structs, not these entries)
#define TK_NORM_FORWARD(in, IN)                                                                          \
  extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, tk::kFwdMinBlocks<tk::Fmt::IN, 0>)   \
      tk_norm_forward__##in(const __grid_constant__ NormForwardParams p) {                              \
    tk::NormForward<tk::Fmt::IN, 0>(p).run();                                                            \
  }
#define TK_NORM_FORWARD_CAST(in, IN, n)                                                                  \
  extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, tk::kFwdMinBlocks<tk::Fmt::IN, n>)   \
      tk_norm_forward__##in##_e4m3_g##n(const __grid_constant__ NormForwardParams p) {                  \
    tk::NormForward<tk::Fmt::IN, n>(p).run();                                                            \
  }

TK_NORM_FORWARD(fp32, kFp32)
TK_NORM_FORWARD(bf16, kBf16)
TK_NORM_FORWARD_CAST(fp32, kFp32, 32)
TK_NORM_FORWARD_CAST(fp32, kFp32, 128)
TK_NORM_FORWARD_CAST(bf16, kBf16, 32)
TK_NORM_FORWARD_CAST(bf16, kBf16, 128)

// Warp rows with a residual (bf16, H > 256; normLaunchTuning.residualWarpRows): 256 threads, no shared memory of its
// own, 128 registers: 2 blocks = 16 warps = 16 rows per SM. (The forms without a residual, `_wr` and
// `_e4m3_g<N>_wr`, lost to the register rows and the bulk rows and are not instantiated.)
extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, tk::kWrMinBlocks)
    tk_norm_forward__bf16_wr_res(const __grid_constant__ NormForwardParams p) {
  tk::NormForwardWarpRows<0, true>(p).run();
}
#define TK_NORM_FORWARD_CAST_WR_RES(n)                                                                    \
  extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, tk::kWrMinBlocks)                    \
      tk_norm_forward__bf16_e4m3_g##n##_wr_res(const __grid_constant__ NormForwardParams p) {             \
    tk::NormForwardWarpRows<n, true>(p).run();                                                            \
  }
TK_NORM_FORWARD_CAST_WR_RES(32)
TK_NORM_FORWARD_CAST_WR_RES(128)
// (The same compiled for aligned views only, `_e4m3_g<N>_wr_resa` (kAligned, kPdl; rounds 9–10), was the default on
// aligned views until round 11's `_e4m3_g<N>_tp16c_res` (norm_cast_tp16.cu) replaced it there, 75.9 → 92.7% of copy;
// it was then removed from the package (−0.5 MB): normLaunchTuning.castRowForm 0 runs `_wr_res`.)
// Register rows (bf16, any H; normLaunchTuning.forwardRegRows): one block of W warps per row, the row held in
// registers (NormForwardRegRows). Its cast forms (_e4m3_g<N>_rr4, 60.6% of copy) gave way to the bulk rows' (72.9%)
// and are not instantiated.
#define TK_NORM_FORWARD_RR(w, n, name)                                                                    \
  extern "C" __global__ void __launch_bounds__(32 * w, tk::kRrMinBlocks<n>)                               \
      name(const __grid_constant__ NormForwardParams p) {                                                 \
    tk::NormForwardRegRows<w, n>(p).run();                                                                \
  }
TK_NORM_FORWARD_RR(4, 0, tk_norm_forward__bf16_rr4_l2)
// Two passes, 16 warps a row, x held in registers between them (NormForwardTwoPass): views that allow 16-byte
// accesses (x, out, the weight).
extern "C" __global__ void __launch_bounds__(tk::kTpThreads, tk::kTpMinBlocks)
    tk_norm_forward__bf16_tp16hr(const __grid_constant__ NormForwardParams p) {
  tk::NormForwardTwoPass(p).run();
}
// Bulk rows (bf16, any H; normLaunchTuning.castBulkRows): the fused cast by the register rows' team with the row
// landed in shared memory by a bulk copy (NormForwardBulkRows); dynamic shared memory 2H bytes.
#define TK_NORM_FORWARD_BR(n, name)                                                                       \
  extern "C" __global__ void __launch_bounds__(128, tk::kBrMinBlocks<n>)                                  \
      name(const __grid_constant__ NormForwardParams p) {                                                 \
    tk::NormForwardBulkRows<n>(p).run();                                                                  \
  }
TK_NORM_FORWARD_BR(32, tk_norm_forward__bf16_e4m3_g32_br4)
TK_NORM_FORWARD_BR(128, tk_norm_forward__bf16_e4m3_g128_br4)
// (Aligned bulk rows, NormForwardBulkRowsA, are instantiated by norm_cast_br4y.cu only, as `_e4m3_g<N>_br4y`; round
// 9's `_e4m3_g<N>_br4a`, their plain form, left the package in trim24, docs/branches/trim24-removed.patch.)
#endif  // TK_NORM_FORWARD_NO_ENTRIES

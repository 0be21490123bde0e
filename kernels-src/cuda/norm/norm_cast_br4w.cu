// RMSNorm + per-token e4m3 cast, bulk rows on aligned views, the cast loop bounded per warp (round 14,
// docs/perf-notes/perf14-ncast.md; normLaunchTuning.castWarpBound, ops/norm/launch.ts).
//
// Symbols
//   tk_norm_forward__bf16_e4m3_g<N>_br4w   N ∈ {32, 128}: `_e4m3_g<N>_br4a` (norm_forward.cu, NormForwardBulkRowsA)
//                                           with only the bound of step 4 + the cast's rolled loop changed
//
// `_br4a`'s thread p (warp w = p / 32) owns the chunks p + 128 j, and every lane walks j < J = max(1, N/128) (N: the
// tree's node count, nextPow2(K), K = H/16 chunks). Here (NormForwardBulkRowsA::cast_chunks<…, true>) warp w leaves
// the loop after iteration j when no lane's next chunk k + 128 is < K (__any_sync: a warp vote, uniform), i.e. it
// runs j < max(1, J_w), J_w = ⌈(K − 32 w) / 128⌉ (≤ J: K ≤ N = 128 J for N > 128, else J = 1; the max(1, ·) matters
// only where J = 1 already, K ≤ 96, so no case runs more iterations than `_br4a`). Exact: a wholly dead iteration
// stores nothing (cast_chunk_sf returns before its stores for a dead chunk; outBf16 only when live), the group
// shuffles (xor 1 … kGroupChunks/2, kGroupChunks = N/16 ∈ {2, 8} adjacent lanes of k = p + 128 j; 32 a multiple of
// kGroupChunks, k ≡ lane mod 32) never leave the warp, and the loop has no block barrier. A partly live iteration runs
// as before (its dead lanes take part in the shuffles). Steps 2–3 (the sums, `if (!live_of(j)) continue;` per lane)
// and everything else are `_br4a`'s: same launch geometry (128 threads, 2H bytes of dynamic shared memory), 40
// registers and no spills (sm_90a, sm_100a) / 12 blocks per SM, PDL prologue, same bits. (A bound computed up front,
// or a test on k & ~31, spilled 20–48 bytes at 40 registers: docs/perf-notes/perf14-ncast.md.)
// H = 7168: K = 448, J = 4, J_w = 4, 4, 3, 3 (warps 2 and 3 skip j = 3: 2 of 16 warp iterations a row).

#define TK_NORM_FORWARD_NO_ENTRIES
#include "norm_forward.cu"

#define TK_NORM_FORWARD_BRW(n, name)                                                                      \
  extern "C" __global__ void __launch_bounds__(128, tk::kBrMinBlocks<n>)                                  \
      name(const __grid_constant__ NormForwardParams p) {                                                 \
    tk::NormForwardBulkRowsA<n>(p).template run<true>();                                                  \
  }
TK_NORM_FORWARD_BRW(32, tk_norm_forward__bf16_e4m3_g32_br4w)
TK_NORM_FORWARD_BRW(128, tk_norm_forward__bf16_e4m3_g128_br4w)

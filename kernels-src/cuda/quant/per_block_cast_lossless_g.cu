// perBlockCastLossless (spec/quant.md §10) in one launch: `__tile_cp`'s ring, filled by 16-byte L2-only copies
// (round 20, docs/perf-notes/perf20-lsl.md; knob `losslessLaunchTuning.tiledForm` 3, ops/quant/per_block_cast_lossless.ts;
// the default stays 2 = `__tile_cp`).
//
// Symbol
//   tk_per_block_cast_lossless__tile_cg   a ring of 3 tiles a CTA in shared memory, filled by lane pairs
//
// Accepted: what `__tile_cp` accepts (per_block_cast_lossless_p.cu) with the codes' base 16-byte aligned (the host
// runs `__tile_cp` for a codes base that is only 8-byte aligned). Same tiles, same thread ↔ chunk map (thread t owns
// chunk column jc = t % 16 in rows t / 16 + 16 s, s < 8, of a 128 × 256 tile), same arithmetic after the copies.
//
// Why: `__tile_cp` keeps two tiles of loads in flight through a tile's encode and reached 71% of copy at 16384 × 7168
// (70% at 8192; measured, H200, 2026-12-03). Bytes in flight are no longer short at that rate, so what is left is
// how the copies are issued and how DRAM sees them:
// - `__tile_cp` issues 16 cp.async a thread per tile, all through L1 (.ca): 8 of 8 code bytes, 8 of one exponent
//   word, two lanes copying the same word for each input block;
// - its reads reach DRAM in the tile's 128-byte row pieces and 32-byte exponent pieces, while the output (twice the
//   codes' bytes) streams out; the write-heavy dequantizing casts gained 2–6 points from the 256-byte L2
//   prefetch (bench/RESULTS.md, L2 load hints).
// Here the two lanes t, t ^ 1 of an input block (chunk columns jc, jc ^ 1, the same rows, the same exponent word)
// split the block's copies: in pair step i < 4 lane t copies pass s = 2 i + (t & 1) — both chunks, 16 contiguous
// bytes, by cp.async.cg (L2 only) — and that pass's exponent word. 8 cp.async a thread per tile instead of 16, half
// of them bypassing L1, each with the L2::256B prefetch hint: the 256 bytes around a tile's 128-byte row piece hold
// the next tile's piece (tile o + 1, the neighbouring CTA's in the same round), and the 256 bytes around an exponent
// word the next 7 tiles' (row-major) or the next 63 rows' (column-major).
//
// Shared memory: a stage's codes keep `__tile_cp`'s [s][t] 8-byte layout (the pair's 16 bytes are slots t & ~1 and
// t | 1: contiguous and 16-byte aligned), its exponent words become [s][t / 2]. A thread now reads slots its partner
// lane wrote, and its refills overwrite slots its partner read: two __syncwarp a tile order both (after the copy
// wait, before the reads; before the refill, after the previous tile's reads). No CTA barrier is added. 60 KiB of
// dynamic shared memory a CTA (3 × (16 KiB + 4 KiB)), 3 CTAs per SM as `__tile_cp`.
//
// Same bytes as `__tile_cp` by construction: every slot a thread reads holds what `__tile_cp`'s thread put in its
// own slot (the same 8 code bytes of its chunk, the word holding its exponent byte, zeros where the chunk is dead:
// a pair's chunks are live together since H % 32 == 0 and both lanes share the rows), and from there the code is
// `__tile_cp`'s (tile_eout, tile_finish: the same exactness check over the same lanes, scales, padding, encode).
#define TK_PER_BLOCK_CAST_LOSSLESS_P_NO_ENTRIES
#include "per_block_cast_lossless_p.cu"

namespace tk {
namespace {

constexpr uint32_t kPairExpBytes = kTilePasses * (kTileThreads / 2) * 4;  // a stage's exponent words: [s][t / 2]
// The dynamic shared memory (the host passes the same: PLP[3].ringBytes).
constexpr uint32_t kPairRingBytes = kRingTiles * (kRingCodeBytes + kPairExpBytes);
static_assert(kRingMinBlocks * (kPairRingBytes + 2 * 2 * kTileWarps * 4 + 1024) <= 228 * 1024, "3 CTAs per SM");

// cp.async with the L2::256B prefetch hint; a dead source (live false) reads nothing and the slot becomes zeros.
TK_DEV void cp_async_cg16_l2_256(uint32_t dst, const void* src, bool live) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(live ? 16u : 0u)
               : "memory");
}
TK_DEV void cp_async_ca4_l2_256(uint32_t dst, const void* src, bool live) {
  asm volatile("cp.async.ca.shared.global.L2::256B [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(live ? 4u : 0u)
               : "memory");
}

// The thread's half of its lane pair's copies of tile o into ring stage `stage`: passes s = 2 i + (t & 1).
TK_DEV void stage_tile_pair(const PerBlockCastLosslessParams& p, const TileWalk& t, uint32_t o, uint32_t ring,
                            int stage) {
  if (o >= t.tiles) return;
  const TileAt a = t.at(o);
  const uint8_t* sf = reinterpret_cast<const uint8_t*>(p.x_sf);
  const uint32_t codes = ring + stage * (kRingCodeBytes + kPairExpBytes);
  const uint32_t exps = codes + kRingCodeBytes;
  const uint32_t odd = t.tid & 1;
#pragma unroll
  for (int i = 0; i < kTilePasses / 2; ++i) {
    const int s = 2 * i + static_cast<int>(odd);
    const bool live = a.live(s, t.T);
    // the pair's 16 bytes start at the even lane's chunk, 8 bytes before the odd lane's
    cp_async_cg16_l2_256(codes + 8 * (s * kTileThreads + (t.tid & ~1u)), live ? t.codes(a, s) - 8 * odd : t.x, live);
    const uint64_t word = t.in_packed ? a.row(s) * p.x_sf_stride0 + (a.k_in / kUe8m0PerWord) * p.x_sf_stride1
                                      : a.row(s) * p.x_sf_stride0 + a.k_in * p.x_sf_stride1;
    cp_async_ca4_l2_256(exps + 4 * (s * (kTileThreads / 2) + t.tid / 2), live ? sf + 4 * word : sf, live);
  }
}

TK_DEV void lossless_tiles_pair_ring(const PerBlockCastLosslessParams& p) {
  __shared__ uint32_t block_max[2][2][kTileWarps];  // [tile parity][output block of the tile][warp]
  extern __shared__ __align__(16) uint8_t ring_smem[];
  const TileWalk t(p);
  const uint32_t ring = smem_addr(ring_smem);
  const uint32_t shift = t.in_packed ? 8 * (t.jc / 2 % kUe8m0PerWord) : 23;  // k_in % 4 = (jc / 2) % 4 in a tile
#pragma unroll
  for (int i = 0; i < kRingTiles - 1; ++i) {
    stage_tile_pair(p, t, blockIdx.x + i * gridDim.x, ring, i);
    cp_async_commit();
  }
  uint32_t parity = 0;
  int stage = 0;
  for (uint32_t o = blockIdx.x; o < t.tiles; o += gridDim.x, parity ^= 1u) {
    // the stage refilled here held the previous tile: the partner lane's reads of it come before this point
    __syncwarp();
    stage_tile_pair(p, t, o + (kRingTiles - 1) * gridDim.x, ring, stage == 0 ? kRingTiles - 1 : stage - 1);
    cp_async_commit();
    cp_async_wait<kRingTiles - 1>();
    __syncwarp();  // this tile's copies, the partner lane's half included, are visible from here
    const TileAt a = t.at(o);
    const uint32_t codes = ring + stage * (kRingCodeBytes + kPairExpBytes);
    const uint32_t exps = codes + kRingCodeBytes;
    uint32_t w[kTilePasses][2], ein[kTilePasses];
    uint32_t emax = 0;
#pragma unroll
    for (int s = 0; s < kTilePasses; ++s) {
      uint32_t e[1];
      ld_shared(exps + 4 * (s * (kTileThreads / 2) + t.tid / 2), e);
      ein[s] = (e[0] >> shift) & 0xffu;
      emax = max(emax, ein[s]);
    }
    const uint32_t eout = tile_eout(t, emax, block_max[parity]);
#pragma unroll
    for (int s = 0; s < kTilePasses; ++s) ld_shared(codes + 8 * (s * kTileThreads + t.tid), w[s]);
    tile_finish(p, t, a, eout, w, ein);
    stage = stage == kRingTiles - 1 ? 0 : stage + 1;
  }
  t.sf_out.zero_padding_rows(t.nbm, p.sf_rows);
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kTileThreads, tk::kRingMinBlocks)
    tk_per_block_cast_lossless__tile_cg(const __grid_constant__ PerBlockCastLosslessParams p) {
  tk::lossless_tiles_pair_ring(p);
}

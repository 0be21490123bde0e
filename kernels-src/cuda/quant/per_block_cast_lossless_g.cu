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
// `__tile_cp`'s (lossless_tiles_ring, tile_eout, tile_finish: the same exactness check over the same lanes, scales,
// padding, encode).
#define TK_PER_BLOCK_CAST_LOSSLESS_P_NO_ENTRIES
#include "per_block_cast_lossless_p.cu"
#include "../common/load_hint.cuh"

namespace tk {
namespace {

constexpr uint32_t kPairExpBytes = kTilePasses * (kTileThreads / 2) * 4;  // a stage's exponent words: [s][t / 2]
// The dynamic shared memory (the host passes the same: PLP[3].ringBytes).
constexpr uint32_t kPairRingBytes = kRingTiles * (kRingCodeBytes + kPairExpBytes);
static_assert(ring_fits(kPairRingBytes), "3 CTAs per SM");

// The exponent words' 4-byte cp.async with the L2::256B prefetch hint (the 16-byte code copies take it through
// load_hint.cuh's cp_async16_hinted); a dead source (live false) reads nothing and the slot becomes zeros.
TK_DEV void cp_async_ca4_l2_256(uint32_t dst, const void* src, bool live) {
  asm volatile("cp.async.ca.shared.global.L2::256B [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(live ? 4u : 0u)
               : "memory");
}

// Lane pairs' slots: thread t reads its chunks' code slots [s][t] and its pair's exponent words [s][t / 2].
struct PairSlots {
  static constexpr uint32_t kExpBytes = kPairExpBytes;
  static constexpr bool kPaired = true;
  TK_DEV static uint32_t exp_slot(int s, uint32_t tid) { return s * (kTileThreads / 2) + tid / 2; }
  // The thread's half of its lane pair's copies of tile a into a ring stage's codes and exponent words: passes
  // s = 2 i + (t & 1).
  TK_DEV static void fill(const PerBlockCastLosslessParams& p, const TileWalk& t, const TileAt& a, uint32_t codes,
                          uint32_t exps) {
    const uint8_t* sf = reinterpret_cast<const uint8_t*>(p.x_sf);
    const uint32_t odd = t.tid & 1;
#pragma unroll
    for (int i = 0; i < kTilePasses / 2; ++i) {
      const int s = 2 * i + static_cast<int>(odd);
      const bool live = a.live(s, t.T);
      // the pair's 16 bytes start at the even lane's chunk, 8 bytes before the odd lane's
      cp_async16_hinted(codes + 8 * (s * kTileThreads + (t.tid & ~1u)), live ? t.codes(a, s) - 8 * odd : t.x, live,
                        kHintL2Line256);
      const uint64_t word = sf_word(p, t, a, s);
      cp_async_ca4_l2_256(exps + 4 * exp_slot(s, t.tid), live ? sf + 4 * word : sf, live);
    }
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kTileThreads, tk::kRingMinBlocks)
    tk_per_block_cast_lossless__tile_cg(const __grid_constant__ PerBlockCastLosslessParams p) {
  tk::lossless_tiles_ring<tk::PairSlots>(p);
}

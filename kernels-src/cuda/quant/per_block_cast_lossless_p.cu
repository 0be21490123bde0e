// perBlockCastLossless (spec/quant.md §10) in one launch, `__tile`'s tiles with the next tiles' loads in flight
// while a tile is encoded (round 19, docs/perf-notes/perf19-lsl.md; knob `losslessLaunchTuning.tiledForm`,
// ops/quant/per_block_cast_lossless.ts: 2 runs this form, the default of round 19; 3, the default since round 20, runs
// `__tile_cg`, which falls back to this form on a codes base only 8-byte aligned).
//
// Symbol
//   tk_per_block_cast_lossless__tile_cp   a ring of 3 tiles a CTA in shared memory, filled by cp.async
//
// Accepted: exactly what `__tile` accepted (per_block_cast_lossless_t.cuh), plus a 4-byte aligned input sf base
// (the form copies whole 32-bit words of it; an int32 or fp32 tensor always is). Same tiles, same thread ↔ chunk
// map, same arithmetic: thread t owns chunk column jc = t % 16 in rows t / 16 + 16 s, s < 8, of a 128 × 256 tile.
//
// Why: `__tile` (measured, Nsight Compute, 16384 × 7168) issues a tile's loads, then waits at its one barrier for
// the slowest of them and encodes; no load of the CTA is in flight during the encode and the stores. Issue is active
// 37% of cycles, long_scoreboard 13 of 20.7 cycles per issue, DRAM 52% of peak. Here each thread copies its own
// chunks and exponent words by cp.async (8 and 4 bytes) into its own slots of a ring of kRingTiles tiles; slot
// [stage][s][t] is written and read by thread t only, so cp.async.wait_group orders it (no barrier; a warp's 8-byte
// slots are 256 contiguous bytes: conflict-free). Two tiles ahead are in flight during a tile's encode, without
// registers: 3 CTAs × 256 × 128 B = 96 KiB of codes a SM. 72 KiB of dynamic shared memory a CTA,
// __launch_bounds__(256, 3). Measured on the H200 (2026-12-03): 70.1% of copy at 8192 × 7168 and 71.1% at
// 16384 × 7168, against `__tile`'s 60.3% and 67.4%. Round 19's other form, the next tile's loads into a second
// register set (`__tile_pf`), measured 62.9% and 69.4% and was removed.
//
// Same bytes as `__tile` by construction: the exponent bytes are the same (fp32: the exponent field of the same
// word; packed: the same byte of the same word), invalid chunks (rows past T, columns past H) count as exponent 0
// and are neither checked nor written, as in `__tile`; Eout, the exactness check (op id, condition bit, count of
// lanes), the scale writes (threads 0 and 8, SfOut), the padding rows and the e4m3 table are `__tile`'s code paths.
#include "per_block_cast_lossless_t.cuh"

namespace tk {
namespace {

constexpr int kRingMinBlocks = 3;  // 3 rings of 72 KiB per SM
constexpr int kRingTiles = 3;      // the tile being encoded and two ahead
constexpr uint32_t kRingCodeBytes = kTilePasses * kTileThreads * 8;  // a stage's codes: [s][t] 8 bytes
constexpr uint32_t kRingExpBytes = kTilePasses * kTileThreads * 4;   // a stage's exponent words: [s][t]
// The dynamic shared memory (the host passes the same: PLP.ringBytes).
constexpr uint32_t kRingBytes = kRingTiles * (kRingCodeBytes + kRingExpBytes);
// Whether 3 CTAs with rings of `bytes` fit: their rings, static words and the 1 KiB the driver reserves each, in an
// SM's 228 KiB (sm_90, sm_100)
constexpr bool ring_fits(uint32_t bytes) {
  return kRingMinBlocks * (bytes + 2 * 2 * kTileWarps * 4 + 1024) <= 228 * 1024;
}
static_assert(ring_fits(kRingBytes), "3 CTAs per SM");

// Where a thread's chunks of tile o lie (the tile walk of `__tile`).
struct TileAt {
  uint32_t M, K2, col, row0, k_in;
  bool col_ok;
  TK_DEV TileAt(uint32_t o, uint32_t ntk, uint32_t jc, uint32_t r0, uint32_t H) {
    M = o / ntk;
    K2 = o - M * ntk;
    col = K2 * kTileCols + jc * kChunkElems;
    col_ok = col < H;
    k_in = col / kTileInCols;
    row0 = M * kTileRows + r0;
  }
  TK_DEV bool live(int s, uint32_t T) const { return col_ok && row0 + s * kTileRowsPerPass < T; }
  TK_DEV uint32_t row(int s) const { return row0 + s * kTileRowsPerPass; }
};

// The kernel-wide constants of the tile walk.
struct TileWalk {
  uint32_t T, H, nbm, nbk, ntk, tiles, tid, warp, lane, jc, r0, half;
  bool in_packed, out_packed;
  const uint8_t* x;
  uint8_t* data;
  SfOut sf_out;
  TK_DEV explicit TileWalk(const PerBlockCastLosslessParams& p)
      : T(p.num_tokens), H(p.hidden), nbm((T + kTileRows - 1) / kTileRows), nbk((H + kTileOutCols - 1) / kTileOutCols),
        ntk((H + kTileCols - 1) / kTileCols), tiles(nbm * ntk), tid(threadIdx.x), warp(tid / kWarpSize),
        lane(tid % kWarpSize), jc(tid % kTileRowChunks), r0(tid / kTileRowChunks), half(jc / kTileBlockChunks),
        in_packed(p.x_sf_kind == kSfPackedChannel), out_packed((p.flags & kSfPackedUe8m0) != 0),
        x(reinterpret_cast<const uint8_t*>(p.x)), data(reinterpret_cast<uint8_t*>(p.data)),
        sf_out{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, nbk} {}
  TK_DEV TileAt at(uint32_t o) const { return TileAt(o, ntk, jc, r0, H); }
  TK_DEV const uint8_t* codes(const TileAt& a, int s) const {
    return x + static_cast<uint64_t>(a.row(s)) * (H / 2) + a.col / 2;
  }
};

// From the thread's max exponent byte to the tile's Eout of its output block: `__tile`'s shuffles (lane bits 0–2
// and 4 share a block), one shared word per warp and block (double-buffered by tile parity), one barrier.
TK_DEV uint32_t tile_eout(const TileWalk& t, uint32_t emax, uint32_t (&block_max)[2][kTileWarps]) {
  emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, 1));
  emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, 2));
  emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, 4));
  emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, 16));
  if ((t.lane & ~8u) == 0) block_max[t.half][t.warp] = emax;
  __syncthreads();
  emax = 0;
#pragma unroll
  for (int i = 0; i < kTileWarps; ++i) emax = max(emax, block_max[t.half][i]);
  return emax >= 6 ? emax - 6 : 0;
}

// After the barrier: `__tile`'s exactness check, scale write and encode of one tile.
TK_DEV void tile_finish(const PerBlockCastLosslessParams& p, const TileWalk& t, const TileAt& a, uint32_t eout,
                        const uint32_t (&w)[kTilePasses][2], const uint32_t (&ein)[kTilePasses]) {
  bool bad = false;
  if ((t.jc & 1) == 0) {
#pragma unroll
    for (int s = 0; s < kTilePasses; ++s) bad |= a.live(s, t.T) && ein[s] + 5 < eout;
  }
  report_fault_warp(p.error_word, p.op_id, kTileCondNotExact, bad);
  if (t.r0 == 0 && (t.jc % kTileBlockChunks) == 0 && a.col_ok)
    t.sf_out.store(a.M, a.K2 * 2 + t.half, t.out_packed ? eout : eout << 23);
#pragma unroll
  for (int s = 0; s < kTilePasses; ++s) {
    if (a.live(s, t.T)) {
      const int d = static_cast<int>(ein[s]) - static_cast<int>(eout);
      uint32_t lo[2], hi[2];
      e2m1x8_to_e4m3_pow2(w[s][0], d, lo);
      e2m1x8_to_e4m3_pow2(w[s][1], d, hi);
      st_v4(t.data + static_cast<uint64_t>(a.row(s)) * t.H + a.col, lo[0], lo[1], hi[0], hi[1]);
    }
  }
}

// Ring stage `stage` (shared address): its codes, [s][t] 8-byte slots, then exp_bytes of exponent words.
TK_DEV uint32_t ring_stage(uint32_t ring, int stage, uint32_t exp_bytes) {
  return ring + stage * (kRingCodeBytes + exp_bytes);
}

// The input sf word holding exponent_at's byte of the thread's chunk in pass s: fp32 S[m][k], or packed word
// (m, k / 4).
TK_DEV uint64_t sf_word(const PerBlockCastLosslessParams& p, const TileWalk& t, const TileAt& a, int s) {
  return t.in_packed ? a.row(s) * p.x_sf_stride0 + (a.k_in / kUe8m0PerWord) * p.x_sf_stride1
                     : a.row(s) * p.x_sf_stride0 + a.k_in * p.x_sf_stride1;
}

// `__tile_cp`'s slots: thread t copies its own chunks and exponent words into slots [s][t] of a stage and reads only
// those.
struct OwnSlots {
  static constexpr uint32_t kExpBytes = kRingExpBytes;
  static constexpr bool kPaired = false;
  TK_DEV static uint32_t exp_slot(int s, uint32_t tid) { return s * kTileThreads + tid; }
  // The thread's cp.async copies of tile a into a ring stage's codes and exponent words (its own slots; a dead chunk
  // reads nothing and its slots become zeros, so its exponent counts as 0, as in `__tile`).
  TK_DEV static void fill(const PerBlockCastLosslessParams& p, const TileWalk& t, const TileAt& a, uint32_t codes,
                          uint32_t exps) {
    const uint8_t* sf = reinterpret_cast<const uint8_t*>(p.x_sf);
#pragma unroll
    for (int s = 0; s < kTilePasses; ++s) {
      const bool live = a.live(s, t.T);
      const uint32_t slot = s * kTileThreads + t.tid;
      const uint64_t word = sf_word(p, t, a, s);
      cp_async<8>(codes + 8 * slot, live ? t.codes(a, s) : t.x, live);
      cp_async<4>(exps + 4 * slot, live ? sf + 4 * word : sf, live);
    }
  }
};

// Copies tile o, if there is one, into ring stage `stage`.
template <class Slots>
TK_DEV void fill_stage(const PerBlockCastLosslessParams& p, const TileWalk& t, uint32_t o, uint32_t ring,
                       int stage) {
  if (o >= t.tiles) return;
  const uint32_t codes = ring_stage(ring, stage, Slots::kExpBytes);
  Slots::fill(p, t, t.at(o), codes, codes + kRingCodeBytes);
}

// The ring's tile walk, for `__tile_cp`'s slots (OwnSlots) and per_block_cast_lossless_g.cu's lane-pair slots: a
// stage's codes are [s][t] 8-byte slots, followed by Slots::kExpBytes of exponent words (the thread's word of pass s
// at Slots::exp_slot); Slots::fill copies a tile into a stage. With Slots::kPaired a thread reads slots its partner
// lane wrote and refills slots its partner read: a __syncwarp before the refill and one after the copy wait.
template <class Slots>
TK_DEV void lossless_tiles_ring(const PerBlockCastLosslessParams& p) {
  __shared__ uint32_t block_max[2][2][kTileWarps];  // [tile parity][output block of the tile][warp]
  extern __shared__ __align__(16) uint8_t ring_smem[];
  const TileWalk t(p);
  const uint32_t ring = smem_addr(ring_smem);
  const uint32_t shift = t.in_packed ? 8 * (t.jc / 2 % kUe8m0PerWord) : 23;  // k_in % 4 = (jc / 2) % 4 in a tile
#pragma unroll
  for (int i = 0; i < kRingTiles - 1; ++i) {
    fill_stage<Slots>(p, t, blockIdx.x + i * gridDim.x, ring, i);
    cp_async_commit();
  }
  uint32_t parity = 0;
  int stage = 0;
  for (uint32_t o = blockIdx.x; o < t.tiles; o += gridDim.x, parity ^= 1u) {
    // the stage refilled here held the previous tile, whose slots this thread has read (its stores used them);
    // paired: the partner lane's reads of them come before this point
    if constexpr (Slots::kPaired) __syncwarp();
    fill_stage<Slots>(p, t, o + (kRingTiles - 1) * gridDim.x, ring, stage == 0 ? kRingTiles - 1 : stage - 1);
    cp_async_commit();
    cp_async_wait<kRingTiles - 1>();
    // paired: this tile's copies, the partner lane's half included, are visible from here
    if constexpr (Slots::kPaired) __syncwarp();
    const TileAt a = t.at(o);
    const uint32_t codes = ring_stage(ring, stage, Slots::kExpBytes);
    const uint32_t exps = codes + kRingCodeBytes;
    uint32_t w[kTilePasses][2], ein[kTilePasses];
    uint32_t emax = 0;
#pragma unroll
    for (int s = 0; s < kTilePasses; ++s) {
      uint32_t e[1];
      ld_shared(exps + 4 * Slots::exp_slot(s, t.tid), e);
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

#ifndef TK_PER_BLOCK_CAST_LOSSLESS_P_NO_ENTRIES  // (per_block_cast_lossless_g.cu includes this file for its tile walk)
extern "C" __global__ void __launch_bounds__(tk::kTileThreads, tk::kRingMinBlocks)
    tk_per_block_cast_lossless__tile_cp(const __grid_constant__ PerBlockCastLosslessParams p) {
  tk::lossless_tiles_ring<tk::OwnSlots>(p);
}
#endif  // TK_PER_BLOCK_CAST_LOSSLESS_P_NO_ENTRIES

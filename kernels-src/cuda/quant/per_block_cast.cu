// Per-block cast to e4m3 / e2m1 (spec/quant.md §3, §4): perBlockCast, perBlockCastWithSfOnly and
// perBlockCastWithPrecomputedSf, one kernel per (input format, output format, block shape).
//
// Symbols
//   tk_per_block_cast__<in>_<out>_<r>x<c>   in ∈ {fp32, bf16}, out ∈ {e4m3, e2m1}, r, c ∈ {32, 128}
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, the kernels are grid-stride over tiles):
//
//   kernel     block.x  dynamic smem  grid.x
//   all        256      0             min(tiles, 2 · SMs)      tiles = (T / r) · ceilDiv(H, E / r)
//
//   E = tile elements = 64 KiB of input: 16384 (fp32), 32768 (bf16). 2 = resident blocks per SM the registers are
//   sized for (≤ 128). SMs = multiprocessors. Static shared memory: 384 B (three rotating rows of at most 32 block
//   maxima).
//
// Tile: a CTA owns r rows × (E / r) columns of one block row (fp32 128 × 128 or 32 × 512, bf16 128 × 256 or
// 32 × 1024 elements: 1 to 32 blocks), 16 chunks of 16 bytes per thread (V = 4 fp32 / 8 bf16 elements), held in
// registers from the load to the store. Chunk i of the tile (row-major in the tile) belongs to thread i % 256, so
// a thread's chunks share one column (a warp reads 512 contiguous bytes of a row) and so one scale block; T % 128
// == 0 and r | 128 make every tile's rows real, H % 128 == 0 and c | 128 make every block whole (only the columns
// of the last tile may run past H: dead chunks are not read or written). Block amax: the thread's max over its
// chunks, an xor-butterfly over the lanes of the same block (lane bits below c / V: same row; bits at or above the
// chunks per row: same column), then one shared atomicMax per block and warp (non-negative binary32 order as
// uint32; NaN never reaches it: max_num from +0 ignores it), one __syncthreads, and every thread computes sfAndInv
// of its block (§2.3). The shared maxima rotate over three rows so that one barrier per tile suffices: row it % 3
// is filled, read after the barrier, and row (it + 2) % 3 is cleared after it (last read before that barrier, next
// filled after the following one).
//
// Pipeline: as soon as a thread has stored chunk u of its tile it loads chunk u of its next tile (tile + grid.x)
// into the same registers, so a CTA's reads of tile i + 1 are in flight while it casts and stores tile i, and no
// register is spent on a second buffer. (A bf16 tile used to be 128 × 128, 8 chunks a thread, 4 CTAs per SM, with
// every load issued at the top of the iteration: 79-83% of memcpy on an H200.)
//
// Modes (PER_BLOCK_MODE, runtime): 0 cast (data + sf), 1 sf only, 2 precomputed sf (fp32 row-major x_sf,
// inv = fl(1/s), no reduction, only data written). Column-major sf padding rows (sf_rows > T / r) are zeroed
// grid-stride by the same launch; packed words' unused bytes are zeroed by the writer of the last column (SfOut).
#include "../common/chunk.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/scale.cuh"
#include "../generated/per_block_params.h"

namespace tk {
namespace {

// PER_BLOCK_MODE of ops/quant/per_block_cast.params.ts
enum PerBlockMode : uint32_t { kBlockModeCast = 0, kBlockModeSfOnly = 1, kBlockModePrecomputedSf = 2 };

constexpr int kBlockThreads = 256;
// Input bytes of one CTA tile: 16 chunks of 16 bytes per thread (fp32 16384 elements, bf16 32768). Sized by the
// row piece a warp reads: a bf16 tile of r = 128 rows is 256 columns wide, so a warp load is one row × 512
// contiguous bytes (the former 128-column bf16 tile gave 2 rows × 256 bytes: 79-83% of memcpy on an H200).
// Setting bf16 to 32768 bytes and 4 CTAs per SM (and ops/quant/per_block_cast.ts's PB to match) restores that
// tile with the pipeline below: 64 registers, no spills, the A/B of docs/perf-notes/perf-block.md.
template <Fmt kIn>
constexpr int kTileBytes = 65536;
constexpr int kMaxTileBlocks = 32;  // scale blocks in one tile (bf16 32 × 1024 tile of 32 × 32 blocks)
constexpr int kAmaxRows = 3;        // rotating rows of block maxima (one barrier per tile)

// Resident CTAs per SM the registers are sized for: 2 (≤ 128 registers: 64 hold the tile; 2 × 64 KiB of reads
// issued per SM).
template <Fmt kIn>
constexpr int kMinBlocksPerSm = 2;

template <Fmt kIn, Fmt kOut, int kR, int kC>
struct BlockCast {
  static constexpr int kVec = kVecBytes * 8 / FmtTraits<kIn>::kBits;  // elements per 16-byte chunk: 4 / 8
  static constexpr int kTileElems = kTileBytes<kIn> * 8 / FmtTraits<kIn>::kBits;  // 16384 / 32768
  static constexpr int kTileCols = kTileElems / kR;                    // fp32 128 / 512, bf16 256 / 1024
  static constexpr int kCpr = kTileCols / kVec;                        // chunks per tile row: 16 … 128
  static constexpr int kCpb = kC / kVec;                               // chunks per block row: 4 … 32
  static constexpr int kU = kTileElems / kVec / kBlockThreads;         // chunks per thread: 16
  static constexpr int kRowStep = kBlockThreads / kCpr;                // tile rows between a thread's chunks
  static constexpr int kTileBlocks = kTileCols / kC;                   // scale blocks per tile
  static constexpr int kOutBytes = kOut == Fmt::kE4m3 ? kVec : kVec / 2;
  static constexpr int kOutWords = (kOutBytes + 3) / 4;
  static constexpr float kQmax = kOut == Fmt::kE4m3 ? kE4m3Max : kE2m1Max;
  static_assert(kBlockThreads % kCpr == 0 && kCpb <= kCpr && kU * kRowStep == kR, "tile shape");
  static_assert(kTileBlocks <= kMaxTileBlocks, "block maxima row");

  const PerBlockCastParams& p;

  TK_DEV explicit BlockCast(const PerBlockCastParams& params) : p(params) {}

  // The lanes of one warp that hold chunks of the same block differ only in these lane bits: those below the
  // chunks per block row (same row) and those at or above the chunks per tile row (same column, other rows).
  static constexpr uint32_t kGroupBits = ((kCpb - 1) | (~(kCpr - 1) & (kWarpSize - 1))) & (kWarpSize - 1);

  TK_DEV static float warp_block_max(float v) {
#pragma unroll
    for (int b = 1; b < kWarpSize; b <<= 1)
      if (kGroupBits & b) v = max_num(v, __shfl_xor_sync(kFullWarpMask, v, b));
    return v;
  }

  // Where this thread's chunks of a tile lie: row block m, column tile kt, first row row0, column col; dead
  // chunks (col ≥ H, last column tile only) are neither read nor written.
  struct TilePos {
    uint64_t m, row0;
    uint32_t kt, col;
    bool live;
  };

  TK_DEV static TilePos tile_pos(uint64_t tile, uint64_t col_tiles, uint32_t hidden, uint32_t cchunk, uint32_t trow) {
    TilePos t;
    t.m = tile / col_tiles;
    t.kt = static_cast<uint32_t>(tile % col_tiles);
    t.col = t.kt * kTileCols + cchunk * kVec;
    t.row0 = t.m * kR + trow;
    t.live = t.col < hidden;
    return t;
  }

  // Chunk u of the thread's part of a tile (zeros for a dead chunk: they add nothing to a maximum from +0).
  TK_DEV static void load(const TilePos& t, int u, uint32_t hidden, const uint8_t* x, bool x_aligned,
                          uint32_t (&w)[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = 0;
    if (t.live) {
      const uint64_t e = (t.row0 + static_cast<uint64_t>(u) * kRowStep) * hidden + t.col;
      load_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes>(x + e * (FmtTraits<kIn>::kBits / 8), w, x_aligned);
    }
  }

  TK_DEV void run() const {
    __shared__ uint32_t block_amax[kAmaxRows][kMaxTileBlocks];
    const uint32_t hidden = p.hidden;
    const uint64_t col_tiles = (hidden + kTileCols - 1) / kTileCols;
    const uint64_t tiles = static_cast<uint64_t>(p.num_tokens / kR) * col_tiles;
    const uint32_t nbk = hidden / kC;
    const uint32_t tid = threadIdx.x;
    const uint32_t lane = tid % kWarpSize;
    const uint32_t cchunk = tid % kCpr;    // this thread's chunk column inside a tile
    const uint32_t trow = tid / kCpr;      // its first row inside a tile
    const uint32_t tblk = cchunk / kCpb;   // its block inside a tile
    const bool precomputed = p.mode == kBlockModePrecomputedSf;
    const bool write_data = p.mode != kBlockModeSfOnly;
    const bool write_sf = !precomputed;
    const bool x_aligned = (p.x % kVecBytes) == 0;
    const bool data_aligned = (p.data % kOutBytes) == 0;
    // one lane per (warp, block) publishes the warp's block max: the lane whose same-block bits are all 0
    const bool publisher = (lane & kGroupBits) == 0;
    // the writer of a block's sf entry: the thread holding the block's first chunk of the tile's first row
    const bool sf_writer = trow == 0 && cchunk % kCpb == 0;
    const SfOut sf_out{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, nbk};
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    uint8_t* data = reinterpret_cast<uint8_t*>(p.data);

    if (!precomputed) {
      for (uint32_t i = tid; i < kAmaxRows * kMaxTileBlocks; i += kBlockThreads) (&block_amax[0][0])[i] = 0;
      __syncthreads();
    }

    // Software pipeline without extra registers: chunk u of the next tile is loaded into w[u] as soon as chunk u
    // of this tile is stored, so the next tile's reads are in flight while this tile is cast, stored and, in the
    // CTA's next iteration, waited for at the barrier.
    uint32_t w[kU][4];
    TilePos pos = tile_pos(blockIdx.x, col_tiles, hidden, cchunk, trow);
    if (blockIdx.x < tiles) {
#pragma unroll
      for (int u = 0; u < kU; ++u) load(pos, u, hidden, x, x_aligned, w[u]);
    }

    uint32_t it = 0;
    for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++it) {
      const uint64_t m = pos.m;
      const uint32_t col = pos.col;
      const bool live = pos.live;
      const uint32_t k = pos.kt * kTileBlocks + tblk;  // this thread's global block column (< nbk when live)
      const uint64_t row0 = pos.row0;
      const uint64_t next = tile + gridDim.x;
      const bool has_next = next < tiles;
      pos = tile_pos(next, col_tiles, hidden, cchunk, trow);

      float inv;
      if (precomputed) {
        inv = live ? div_rn(1.0f, load_scale(p.x_sf, kSfFp32, p.x_sf_stride0, p.x_sf_stride1, m, k)) : 0.0f;
      } else {
        float a = 0.0f;
#pragma unroll
        for (int u = 0; u < kU; ++u)
#pragma unroll
          for (int i = 0; i < kVec; ++i) a = max_num(a, abs_f(element<kIn>(w[u], i)));
        a = warp_block_max(a);
        uint32_t* amax_row = block_amax[it % kAmaxRows];
        if (publisher && live) atomicMax(amax_row + tblk, f2u(a));
        __syncthreads();
        const ScaleAndInv si = sf_and_inv(u2f(amax_row[tblk]), p.amax_clamp, kQmax, p.flags);
        if (tid < kTileBlocks) block_amax[(it + 2) % kAmaxRows][tid] = 0;
        if (sf_writer && live) sf_out.store(m, k, si.stored);
        inv = si.inv;
      }

#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (write_data && live) {
          float v[kVec];
#pragma unroll
          for (int i = 0; i < kVec; ++i) v[i] = mul_rn(element<kIn>(w[u], i), inv);
          uint32_t o[kOutWords];
          encode_chunk<kOut, kVec>(v, o);
          const uint64_t e = (row0 + static_cast<uint64_t>(u) * kRowStep) * hidden + col;
          store_chunk<kOutBytes>(data + (kOut == Fmt::kE4m3 ? e : e / 2), o, data_aligned);
        }
        if (has_next) load(pos, u, hidden, x, x_aligned, w[u]);
      }
    }
    if (write_sf) sf_out.zero_padding_rows(p.num_tokens / kR, p.sf_rows);
  }
};

}  // namespace
}  // namespace tk

#define TK_PER_BLOCK_CAST(in, IN, out, OUT, r, c)                                                   \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::IN>) \
      tk_per_block_cast__##in##_##out##_##r##x##c(const __grid_constant__ PerBlockCastParams p) {   \
    tk::BlockCast<tk::Fmt::IN, tk::Fmt::OUT, r, c>(p).run();                                        \
  }
#define TK_PER_BLOCK_CAST_SHAPES(in, IN, out, OUT) \
  TK_PER_BLOCK_CAST(in, IN, out, OUT, 32, 32)      \
  TK_PER_BLOCK_CAST(in, IN, out, OUT, 32, 128)     \
  TK_PER_BLOCK_CAST(in, IN, out, OUT, 128, 32)     \
  TK_PER_BLOCK_CAST(in, IN, out, OUT, 128, 128)

TK_PER_BLOCK_CAST_SHAPES(fp32, kFp32, e4m3, kE4m3)
TK_PER_BLOCK_CAST_SHAPES(fp32, kFp32, e2m1, kE2m1)
TK_PER_BLOCK_CAST_SHAPES(bf16, kBf16, e4m3, kE4m3)
TK_PER_BLOCK_CAST_SHAPES(bf16, kBf16, e2m1, kE2m1)

// Per-block cast to e4m3 / e2m1 (spec/quant.md §3, §4): perBlockCast, perBlockCastWithSfOnly and
// perBlockCastWithPrecomputedSf, one kernel per (input format, output format, block shape).
//
// Symbols
//   tk_per_block_cast__<in>_<out>_<r>x<c>   in ∈ {fp32, bf16}, out ∈ {e4m3, e2m1}, r, c ∈ {32, 128}
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, the kernels are grid-stride over tiles):
//
//   kernel     block.x  dynamic smem  grid.x
//   all        256      0             min(tiles, B · SMs)      tiles = (T / r) · ceilDiv(H, 16384 / r)
//
//   B = resident blocks per SM the registers are sized for: 2 (fp32 input), 4 (bf16 input). SMs = multiprocessors.
//   Every kernel issues griddepcontrol.launch_dependents first and griddepcontrol.wait before its first global access
//   (programmatic dependent launch, round 10): the host launches the sf-only mode (perBlockCastWithSfOnly) with the
//   PDL attribute while config.pdl is set, the cast and precomputed-sf modes plainly (no effect there; they did not
//   gain on the H200: docs/perf-notes/perf10-pdl.md, Measured).
//   Static shared memory: 192 B (three rotating rows of at most 16 block maxima), plus 32 KiB for bf16 input (the
//   next tile's slots: 4 blocks per SM hold 129 KiB). bf16: 60–64 registers on sm_90a / sm_100a, no spills.
//   Measured on an H200 (bf16 → e4m3 128 × 128, 7168 wide) before the shared-memory stage: 78–80% of copy at 8192,
//   83% at 16384; 64 KiB tiles at 2 blocks per SM with the next loads in registers measured 50% (fewer resident
//   warps), so the stage keeps 4 blocks and 32 warps per SM.
//
// Tile: a CTA owns r rows × (16384 / r) columns of one block row (128 × 128 or 32 × 512 elements: 1 or 4 blocks
// when r = 128, 4 or 16 blocks when r = 32), i.e. 16384 elements, 64 per thread, read ONCE into registers
// (fp32: 16 chunks of 16 bytes per thread, bf16: 8). bf16 tiles are double-buffered: tile t + grid.x is copied
// into shared memory (cp.async, each thread its own slots) from the barrier of tile t on, while tile t is cast and
// stored, and a CTA's reads are no longer idle from its barrier to its next tile's first load. Chunk i of the tile (16 bytes, V = 4 fp32 / 8 bf16 elements,
// row-major in the tile) belongs to thread i % 256, so a thread's chunks share one column (a warp reads 512
// contiguous bytes of a row) and so one scale block; T % 128 == 0 and r | 128 make every tile's rows real, H %
// 128 == 0 and c | 128 make every block whole (only the columns of the last tile may run past H: dead chunks are
// not read or written). Block amax: the thread's max over its chunks, an xor-butterfly over the lanes of the same
// block (lane bits below c / V: same row; bits at or above the chunks per row: same column), then one shared
// atomicMax per block and warp (non-negative binary32 order as uint32; NaN never reaches it: max_num from +0
// ignores it), one __syncthreads, and every thread computes sfAndInv of its block (§2.3). The shared maxima rotate
// over three rows so that one barrier per tile suffices: row it % 3 is filled, read after the barrier, and row
// (it + 2) % 3 is cleared after it (last read before that barrier, next filled after the following one).
//
// Modes (PER_BLOCK_MODE, runtime): 0 cast (data + sf), 1 sf only, 2 precomputed sf (fp32 row-major x_sf,
// inv = fl(1/s), no reduction, only data written). Column-major sf padding rows (sf_rows > T / r) are zeroed
// grid-stride by the same launch; packed words' unused bytes are zeroed by the writer of the last column (SfOut).
//
// L2 hints (flags bits kHint*, common/load_hint.cuh): the bf16 input's aligned 16-byte cp.async (every tile's
// copies, all issued by issue_next) carry .L2::128B / .L2::256B and / or an L2::evict_first policy; unaligned views
// (element-wise staging) and fp32 input ignore the bits (fp32's hinted loads spilled at 128 registers, e2m1 output).
// The host sets .L2::128B for the sf-only mode only (measured on the H200, bf16 → e4m3 128 × 128: 85.7 / 92.7% of
// copy against 74.1 / 75.5% off at 8192 / 16384 tokens; the cast and precomputed modes lost with it, perf5-hint.md)
// and no bit otherwise. Same bytes either way.
#include "../common/chunk.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/load_hint.cuh"
#include "../common/scale.cuh"
#include "../generated/per_block_params.h"

namespace tk {
namespace {

// PER_BLOCK_MODE of ops/quant/per_block_cast.params.ts
enum PerBlockMode : uint32_t { kBlockModeCast = 0, kBlockModeSfOnly = 1, kBlockModePrecomputedSf = 2 };

constexpr int kBlockThreads = 256;
constexpr int kTileElems = 16384;  // elements of one CTA tile: 64 per thread
constexpr int kMaxTileBlocks = 16;  // scale blocks in one tile (32 × 512 tile of 32 × 32 blocks)
constexpr int kAmaxRows = 3;        // rotating rows of block maxima (one barrier per tile)

template <Fmt kIn>
constexpr int kMinBlocksPerSm = kIn == Fmt::kFp32 ? 2 : 4;

// kCastOnly (per_block_cast_gc23.cu, the generic cast's [16, 64] form): the host launches it in mode 0 (cast) only,
// without L2 hint bits, with x 16-byte and data kOutBytes aligned (it traps otherwise), so the precomputed and
// sf-only paths, the hinted copies and the element-wise fallbacks are compiled out (the kernel's code is a third).
template <Fmt kIn, Fmt kOut, int kR, int kC, bool kCastOnly = false>
struct BlockCast {
  static constexpr int kVec = kVecBytes * 8 / FmtTraits<kIn>::kBits;  // elements per 16-byte chunk: 4 / 8
  static constexpr int kTileCols = kTileElems / kR;                    // 128 or 512
  static constexpr int kCpr = kTileCols / kVec;                        // chunks per tile row: 16 … 128
  static constexpr int kCpb = kC / kVec;                               // chunks per block row: 4 … 32
  static constexpr int kU = kTileElems / kVec / kBlockThreads;         // chunks per thread: 16 / 8
  static constexpr int kRowStep = kBlockThreads / kCpr;                // tile rows between a thread's chunks
  static constexpr int kTileBlocks = kTileCols / kC;                   // scale blocks per tile
  static constexpr int kOutBytes = kOut == Fmt::kE4m3 ? kVec : kVec / 2;
  static constexpr int kOutWords = (kOutBytes + 3) / 4;
  static constexpr float kQmax = kOut == Fmt::kE4m3 ? kE4m3Max : kE2m1Max;
  // bf16 tiles (32 KiB) are double-buffered: the next one in shared memory, the current one in registers
  static constexpr bool kPipelined = kIn == Fmt::kBf16;
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

  TK_DEV void run() const {
    __shared__ uint32_t block_amax[kAmaxRows][kMaxTileBlocks];
    // Programmatic dependent launch (round 10, docs/perf-notes/perf10-pdl.md): the stream's next grid, when launched
    // with the PDL attribute, may be scheduled from now on (it waits for this grid's completion before its own first
    // global access). griddepcontrol.wait below, before the first tile's copies: every global access (x, x_sf, data,
    // sf, the sf padding rows) comes after it; the launch parameters and the shared maxima above do not count.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const uint32_t hidden = p.hidden;
    const uint64_t col_tiles = (hidden + kTileCols - 1) / kTileCols;
    const uint64_t tiles = static_cast<uint64_t>(p.num_tokens / kR) * col_tiles;
    const uint32_t nbk = hidden / kC;
    const uint32_t tid = threadIdx.x;
    const uint32_t lane = tid % kWarpSize;
    const uint32_t cchunk = tid % kCpr;    // this thread's chunk column inside a tile
    const uint32_t trow = tid / kCpr;      // its first row inside a tile
    const uint32_t tblk = cchunk / kCpb;   // its block inside a tile
    if constexpr (kCastOnly) {
      if (p.mode != kBlockModeCast || load_hint_of(p.flags) != 0 || (p.x % kVecBytes) != 0 || (p.data % kOutBytes) != 0)
        __trap();  // the host launches the cast-only form only under these conditions
    }
    const bool precomputed = !kCastOnly && p.mode == kBlockModePrecomputedSf;
    const bool write_data = kCastOnly || p.mode != kBlockModeSfOnly;
    const bool write_sf = !precomputed;
    const bool x_aligned = kCastOnly || (p.x % kVecBytes) == 0;
    // L2 hints on the input's 16-byte loads (common/load_hint.cuh)
    const uint32_t hint = kCastOnly ? 0u : load_hint_of(p.flags);
    const bool data_aligned = kCastOnly || (p.data % kOutBytes) == 0;
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

    // Where tile t's chunk u of this thread sits: its element offset, and whether its column is inside H.
    auto chunk_elem = [&](uint64_t t, int u, bool& live) {
      const uint64_t m = t / col_tiles;
      const uint32_t col = static_cast<uint32_t>(t % col_tiles) * kTileCols + cchunk * kVec;
      live = col < hidden;
      return (m * kR + trow + static_cast<uint64_t>(u) * kRowStep) * hidden + col;
    };
    // bf16 input: tile t + grid.x is copied (cp.async) into this thread's shared slots while tile t is cast and
    // stored, and moved into registers when tile t is done (the thread reads only its own slots). The copies are
    // issued after the tile's barrier: every thread's ld.shared of the previous tile from those slots has been
    // performed by then (bar.sync), so a slot is never overwritten before it has been read.
    __shared__ __align__(16) uint32_t next_tile[kPipelined ? kU : 1][kBlockThreads][4];
    auto issue_next = [&](uint64_t t) {
      if constexpr (kPipelined) {
        if (t >= tiles) return;  // block-uniform: the last tile has no successor
        // the hint test once per tile (launch-uniform), not once per chunk
        if (hint == 0) {
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            bool live;
            const uint64_t e = chunk_elem(t, u, live);
            stage_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes>(smem_addr(next_tile[u][tid]),
                                                                 live ? x + e * (FmtTraits<kIn>::kBits / 8) : x, live, x_aligned);
          }
        } else {
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            bool live;
            const uint64_t e = chunk_elem(t, u, live);
            stage_chunk16_hinted<FmtTraits<kIn>::kAccessBytes>(smem_addr(next_tile[u][tid]),
                                                               live ? x + e * (FmtTraits<kIn>::kBits / 8) : x, live, x_aligned, hint);
          }
        }
        cp_async_commit();
      }
    };
    // Tile t's chunks into w[][] (zeros for dead chunks): from the shared slots when pipelined, else from HBM.
    auto fetch = [&](uint64_t t, uint32_t (&w)[kU][4]) {
      if constexpr (kPipelined) {
        cp_async_wait<0>();
#pragma unroll
        for (int u = 0; u < kU; ++u) ld_shared(smem_addr(next_tile[u][tid]), w[u]);
      } else {
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          bool live;
          const uint64_t e = chunk_elem(t, u, live);
#pragma unroll
          for (int i = 0; i < 4; ++i) w[u][i] = 0;
          if (live) load_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes>(x + e * (FmtTraits<kIn>::kBits / 8), w[u], x_aligned);
        }
      }
    };

    // the previous grid (when this one was launched with the attribute) has completed and its memory is visible;
    // a plain launch has no prerequisite grid in flight: it returns at once
    asm volatile("griddepcontrol.wait;" ::: "memory");
    uint32_t w[kU][4];
    if (blockIdx.x < tiles) {
      issue_next(blockIdx.x);
      fetch(blockIdx.x, w);
    }
    uint32_t it = 0;
    for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++it) {
      const uint64_t m = tile / col_tiles;
      const uint32_t kt = static_cast<uint32_t>(tile % col_tiles);
      const uint32_t col = kt * kTileCols + cchunk * kVec;
      const bool live = col < hidden;
      const uint32_t k = kt * kTileBlocks + tblk;  // this thread's global block column (< nbk when live)
      const uint64_t row0 = m * kR + trow;

      float inv;
      if (precomputed) {
        if constexpr (kPipelined) __syncthreads();  // the barrier that orders the slots' reads before the next copies
        issue_next(tile + gridDim.x);
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
        issue_next(tile + gridDim.x);
        const ScaleAndInv si = sf_and_inv(u2f(amax_row[tblk]), p.amax_clamp, kQmax, p.flags);
        if (tid < kTileBlocks) block_amax[(it + 2) % kAmaxRows][tid] = 0;
        if (sf_writer && live) sf_out.store(m, k, si.stored);
        inv = si.inv;
      }

      if (write_data && live) {
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          float v[kVec];
#pragma unroll
          for (int i = 0; i < kVec; ++i) v[i] = mul_rn(element<kIn>(w[u], i), inv);
          uint32_t o[kOutWords];
          encode_chunk<kOut, kVec>(v, o);
          const uint64_t e = (row0 + static_cast<uint64_t>(u) * kRowStep) * hidden + col;
          store_chunk<kOutBytes>(data + (kOut == Fmt::kE4m3 ? e : e / 2), o, data_aligned);
        }
      }
      if (tile + gridDim.x < tiles) fetch(tile + gridDim.x, w);
    }
    if (write_sf) sf_out.zero_padding_rows(p.num_tokens / kR, p.sf_rows);
  }
};

}  // namespace
}  // namespace tk

#ifndef TK_PER_BLOCK_CAST_NO_ENTRIES  // (per_block_cast_gc23.cu includes this file for BlockCast)
#define TK_PER_BLOCK_CAST(in, IN, out, OUT, r, c)                                                   \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::IN>) \
      tk_per_block_cast__##in##_##out##_##r##x##c(const __grid_constant__ PerBlockCastParams p) {   \
    tk::BlockCast<tk::Fmt::IN, tk::Fmt::OUT, r, c>(p).run();                                       \
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
#endif  // TK_PER_BLOCK_CAST_NO_ENTRIES

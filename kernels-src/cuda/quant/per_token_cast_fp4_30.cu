// perTokenCast bf16 → e2m1 with groups of 16 and column-major (TMA-aligned) e4m3 sf (NVFP4), round 30
// (docs/perf-notes/perf30-fp4c.md): round 29's lane body (per_token_cast_fp4_29.cu, Nvfp4Wide::lane_unit<true>: the
// same amax, sf and codes) walked in units of 16 rows × 64 columns instead of 1 row × 1024 columns, so that a warp
// owns 16 adjacent rows of each sf column it writes and stores them as 4-byte words.
//
// Symbol
//   tk_per_token_cast__bf16_e2m1_g16_nvc   perTokenCast (mode 0 only), groups of 16, e4m3 sf without roundSf, no
//                                          stochasticCast, column-major sf (sf_stride0 1) only
// The host (ops/quant/per_token_cast.ts, perTokenLaunchTuning.nvfp4ColTiles, default off) launches it only for those
// calls with x's base and row stride and data's base multiples of 16 bytes, the sf's base and column stride multiples
// of 4 bytes; the kernel traps on other sf flags or a row-major sf.
//
// Why: `_g16_nvw` reaches 71.5 / 77.5% of copy (8192 / 16384 × 7168) with row-major sf but 43.8 / 47.2% with
// column-major sf, the same encoder and the same data bytes. Its warp unit is one row: a lane's two sf bytes are two
// columns of the column-major sf, align(T, 16) bytes apart, so each warp store of sf bytes touches 32 sectors (64 a
// unit, one byte each: 7.3 M one-byte stores at 16384 × 7168, four times the 1.8 M sectors of the codes). Here a
// unit is 16 rows × 8 chunks (the same 128 chunks, 4 a lane, lane l: row l / 2, chunks 4 · (l % 2) … + 3, still two
// whole groups), so the unit's 4 × 16 sf bytes are 4 column runs of 16 adjacent bytes: gathered by 4 shuffles a lane
// and written as 16 four-byte words, one warp store of 4 × 16 bytes instead of 2 of 32 × 1. Codes: a row's 8 chunks
// are 32 code bytes (one whole sector) per 2 lanes; x: a row's 8 chunks are one 128-byte line.
#define TK_PTC_FP4_29_NO_ENTRIES
#include "per_token_cast_fp4_29.cu"

namespace tk {
namespace {

struct Nvfp4ColTiles {
  using NW = Nvfp4Wide;
  using LW = NW::LW;
  static constexpr int kU = NW::kU;                  // 4 chunks a lane: 2 groups
  static constexpr int kWarps = NW::kWarps;
  static constexpr uint32_t kTileRows = 16;          // rows of a unit: one TMA-aligned run of an sf column
  static constexpr uint32_t kTileChunks = 8;         // chunks of a unit's row: 64 columns, 4 groups
  static_assert(kTileRows * kTileChunks == LW::kUnitChunks, "a unit is the 128 chunks of LaneWideE2m1's ring");

  // The unit's sf bytes (lane l's pair = its row l / 2's groups 2 · (l % 2) and + 1, low byte first) as column runs:
  // lane j < 16 stores column j / 4, rows 4 · (j % 4) … + 3 of the tile, one 4-byte word (rows beyond `rows` carry
  // the zero pairs of their dead lanes: the layout's padding). Every lane shuffles (lanes ≥ 16 mirror 0–15).
  static TK_DEV void store_sf(const NW::GC& gc, const PerTokenCastParams& p, uint64_t r0, uint32_t k0, uint32_t pair,
                              uint32_t lane) {
    const uint32_t j = lane % 16, col = j / 4, quad = j % 4;
    const uint32_t src = 8 * quad + col / 2;  // lane of row 4 · quad, column col
    uint32_t v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = __shfl_sync(kFullWarpMask, pair, src + 2 * i);
    const uint32_t sel = (col % 2) | (4 + col % 2) << 4;  // byte col % 2 of the first operand, then of the second
    const uint32_t word = prmt(prmt(v[0], v[1], sel), prmt(v[2], v[3], sel), 0x5410u);
    const uint64_t r = r0 + 4 * quad;
    if (lane < 16 && r < p.sf_rows) st_u32(gc.sf_out.base + r + static_cast<uint64_t>(k0 + col) * gc.sf_out.s1, word);
  }

  // LaneWideE2m1::walk's ring and stage layout with this unit map (walk's units are one row each)
  static TK_DEV void run(const PerTokenCastParams& p) {
    const NW::GC gc(p);
    const bool e4m3_sf = (p.flags & (kSfRound | kSfPackedUe8m0 | kSfE4m3Out)) == kSfE4m3Out;
    if (!e4m3_sf || (gc.write_sf && gc.sf_out.s0 != 1)) __trap();  // the host launches it so only
    __shared__ __align__(16) uint8_t stage_buf[kStages][kWarps][LW::kUnitChunks][16];
    __shared__ float inv_tab[256];
    gc.fill_inv_tab(inv_tab);
    const uint32_t rows = p.num_tokens;
    const uint32_t lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const uint32_t tiles = gc.chunks / kTileChunks;  // chunks % 8 == 0 (H % 64 == 0): no partial tile
    const uint32_t blocks = (rows + kTileRows - 1) / kTileRows;
    const uint64_t x_stride = row_stride_bytes<Fmt::kBf16>(p);
    const uint64_t grid_warps = static_cast<uint64_t>(gridDim.x) * kWarps;
    const uint64_t q0 = static_cast<uint64_t>(blockIdx.x) * kWarps + warp;
    // units (row block, tile) with the tile fastest: the warps of a block read adjacent lines of the same rows
    const uint64_t rb_step = grid_warps / tiles;
    const uint32_t ct_step = static_cast<uint32_t>(grid_warps % tiles);
    uint64_t rb = q0 / tiles;
    uint32_t ct = static_cast<uint32_t>(q0 % tiles);

    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    auto prefetch = [&](int st, uint64_t b, uint32_t t) {
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t g = u * kWarpSize + lane;  // lanes 8i … 8i + 7: one row's 128-byte line
        const uint64_t r = b * kTileRows + g / kTileChunks;
        const bool live = r < rows;
        const uint8_t* src = x + r * x_stride + static_cast<uint64_t>(t * kTileChunks + g % kTileChunks) * 16;
        cp_async<16>(smem_addr(stage_buf[st][warp][LW::slot(g)]), live ? src : x, live);
      }
    };

    if (rb < blocks) prefetch(0, rb, ct);
    cp_async_commit();
    for (int stage = 0; rb < blocks; stage ^= 1) {  // warp-uniform
      uint64_t next_rb = rb + rb_step;
      uint32_t next_ct = ct + ct_step;
      if (next_ct >= tiles) {
        next_ct -= tiles;
        ++next_rb;
      }
      if (next_rb < blocks) prefetch(stage ^ 1, next_rb, next_ct);
      cp_async_commit();
      cp_async_wait<1>();  // this lane's copies of this unit
      __syncwarp();        // and every other lane's
      uint32_t w[kU][4];
#pragma unroll
      for (int u = 0; u < kU; ++u) ld_shared(smem_addr(stage_buf[stage][warp][LW::slot(kU * lane + u)]), w[u]);
      __syncwarp();  // every lane has read this stage before any lane prefetches into it again
      const uint64_t r0 = rb * kTileRows;
      const uint64_t row = r0 + lane / 2;
      const uint32_t c0 = ct * kTileChunks + kU * (lane % 2);
      uint32_t pair = 0;
      if (row < rows) NW::lane_unit<true>(gc, p, row, c0, w, inv_tab, &pair);
      if (gc.write_sf) store_sf(gc, p, r0, ct * (kTileChunks / 2), pair, lane);
      rb = next_rb;
      ct = next_ct;
    }
    // the units wrote rows [rows, 16 · blocks) of the padding already
    if (gc.write_sf) gc.sf_out.zero_padding_rows(min(blocks * kTileRows, p.sf_rows), p.sf_rows);
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_per_token_cast__bf16_e2m1_g16_nvc(const __grid_constant__ PerTokenCastParams p) {
  tk::Nvfp4ColTiles::run(p);
}

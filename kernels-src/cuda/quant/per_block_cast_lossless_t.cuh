// The tiles of perBlockCastLossless (spec/quant.md §10) in ONE launch for MXFP4-style input: the constants of the
// tiled forms `__tile_cp` (per_block_cast_lossless_p.cu) and `__tile_cg` (per_block_cast_lossless_g.cu), which
// replace both of the two-launch path's kernels (`__sf`, then `__data` / `__data_a`) where the host's checks hold
// (knob `losslessLaunchTuning.tiled`, ops/quant/per_block_cast_lossless.ts, on by default since round 16).
// No entry: the design below is round 16's `tk_per_block_cast_lossless__tile` (docs/perf-notes/perf16-lsl.md), whose
// loads, max, check and stores the ring forms keep; `__tile` itself was kept for A/B (tiledForm 0) until trim24
// removed it (its source: docs/branches/trim24-removed.patch).
//
// Accepted (the host checks, and runs main's two launches otherwise): block sizes as the kernels take them
// (after deviceBlocks) in [1, 32], out [ro, 128] with ro = 128, or ro ≥ T and T ≤ 128 (a single block row);
// the codes' base 8-byte aligned and the output data's base 16-byte aligned; H % 32 == 0 as for every call. Any
// input sf layout the op takes (fp32 or channel-packed UE8M0, row- or column-major strides) and any output layout.
//
// `__tile`'s launch geometry: block.x 256, 128 B of static shared memory, grid.x = min(tiles, 4 · SMs); grid-stride
// over tiles (any grid.x ≥ 1 is correct). __launch_bounds__(256, 4): 4 CTAs (1024 threads) per SM resident.
//
// A tile is 128 rows × 256 columns: output blocks (M, 2 K2) and (M, 2 K2 + 1), each 128 × 128 (the second may lie
// past H, or the tile's rows past T: those chunks are neither read nor written). Thread t owns the 16-element chunk
// column jc = t % 16 of the tile (output block jc / 8, input block jc / 2) in rows t / 16 + 16 s, s < 8: its 8
// chunks' code loads (8 bytes each: a warp instruction reads 2 rows × 128 contiguous bytes, whole lines) and its 8
// input exponents (one per chunk; the two lanes of an input block load the same word in the same instruction) are
// all issued before any is used. Then, without floats: the max of the exponent bytes over the thread, over the
// 16 lanes of its output block (xor 1, 2, 4, 16), over the 8 warps (one shared word per warp and block, double-
// buffered by tile parity so that one barrier a tile suffices), Eout = Emax ≥ 6 ? Emax − 6 : 0; the thread's own
// exponents decide the exactness check (some Ein + 5 < Eout) — the input blocks and Eout are __sf's, so the error
// word gets the same op id and condition bit (its count is of lanes with a bad block, like __sf's, but over other
// lanes: a diagnostic, not an output); thread 0 / 8 writes the block's scale; and each chunk becomes 16 e4m3
// bytes by the shifted table (e2m1x8_to_e4m3_pow2 with d = Ein − Eout, exactly `__data_a`'s), one 16-byte store
// (a warp instruction writes 2 rows × 256 contiguous bytes).
//
// So every input byte is read once (main: the input scales twice, and the output scales read back), there is no
// second launch and no gap between launches, and no pass over the scales that waits for its own loads before the
// data are requested. Same bytes as main (data and sf, padding included) wherever the contract holds; where it
// does not, the data are unspecified and the error word is set, as on main.
#pragma once
#define TK_PER_BLOCK_CAST_LOSSLESS_A_NO_ENTRIES
#include "per_block_cast_lossless_a.cu"
#include "../common/error_word.cuh"

namespace tk {
namespace {

constexpr int kTileThreads = 256;
constexpr uint32_t kTileRows = 128;  // one output block row
constexpr uint32_t kTileCols = 256;  // two output blocks of 128 columns
constexpr uint32_t kTileInCols = 32;   // input block width (the only one this form takes)
constexpr uint32_t kTileOutCols = 128;  // output block width
constexpr uint32_t kTileRowChunks = kTileCols / kChunkElems;              // 16 chunk columns
constexpr uint32_t kTileRowsPerPass = kTileThreads / kTileRowChunks;      // 16 rows
constexpr int kTilePasses = static_cast<int>(kTileRows / kTileRowsPerPass);  // 8 chunks a thread
constexpr int kTileWarps = kTileThreads / kWarpSize;
constexpr uint32_t kTileBlockChunks = kTileOutCols / kChunkElems;  // 8 chunk columns an output block
constexpr uint32_t kTileCondNotExact = 1;  // per_block_cast_lossless.cu's condition bit

}  // namespace
}  // namespace tk

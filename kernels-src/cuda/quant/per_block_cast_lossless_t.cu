// perBlockCastLossless (spec/quant.md §10) in ONE launch for MXFP4-style input, `__tile` (round 16,
// docs/perf-notes/perf16-lsl.md; knob `losslessLaunchTuning.tiled`, ops/quant/per_block_cast_lossless.ts, default
// off). It replaces both of main's launches (`__sf`, then `__data` / `__data_a`) where the host's checks hold.
//
// Symbol
//   tk_per_block_cast_lossless__tile   output scales, exactness check, sf padding and e4m3 codes, one launch
//
// Accepted (the host checks, and runs main's two launches otherwise): block sizes as the kernels take them
// (after deviceBlocks) in [1, 32], out [ro, 128] with ro = 128, or ro ≥ T and T ≤ 128 (a single block row);
// the codes' base 8-byte aligned and the output data's base 16-byte aligned; H % 32 == 0 as for every call. Any
// input sf layout the op takes (fp32 or channel-packed UE8M0, row- or column-major strides) and any output layout.
//
// Launch geometry: block.x 256, 128 B of static shared memory, grid.x = min(tiles, 4 · SMs); grid-stride over tiles
// (any grid.x ≥ 1 is correct). __launch_bounds__(256, 4): 4 CTAs (1024 threads) per SM resident.
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
#define TK_PER_BLOCK_CAST_LOSSLESS_A_NO_ENTRIES
#include "per_block_cast_lossless_a.cu"
#include "../common/error_word.cuh"

namespace tk {
namespace {

constexpr int kTileThreads = 256;
constexpr int kTileMinBlocks = 4;  // 4 · 256 threads per SM at ≤ 64 registers
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

TK_DEV void lossless_tiles(const PerBlockCastLosslessParams& p) {
  __shared__ uint32_t block_max[2][2][kTileWarps];  // [tile parity][output block of the tile][warp]
  const uint32_t T = p.num_tokens, H = p.hidden;
  const uint32_t nbm = (T + kTileRows - 1) / kTileRows;
  const uint32_t nbk = (H + kTileOutCols - 1) / kTileOutCols;
  const uint32_t ntk = (H + kTileCols - 1) / kTileCols;
  const uint32_t tiles = nbm * ntk;
  const uint32_t tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const uint32_t jc = tid % kTileRowChunks, r0 = tid / kTileRowChunks;
  const uint32_t half = jc / kTileBlockChunks;
  const bool in_packed = p.x_sf_kind == kSfPackedChannel, out_packed = (p.flags & kSfPackedUe8m0) != 0;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
  uint8_t* data = reinterpret_cast<uint8_t*>(p.data);
  const uint64_t row_codes = H / 2;
  const SfOut sf_out{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, nbk};
  uint32_t parity = 0;
  for (uint32_t o = blockIdx.x; o < tiles; o += gridDim.x, parity ^= 1u) {
    const uint32_t M = o / ntk, K2 = o - M * ntk;
    const uint32_t col = K2 * kTileCols + jc * kChunkElems;
    const bool col_ok = col < H;
    const uint32_t k_in = col / kTileInCols;
    const uint32_t row0 = M * kTileRows + r0;
    // every load of the tile first (a row past T or a chunk past H is never read)
    uint32_t w[kTilePasses][2], ein[kTilePasses];
#pragma unroll
    for (int s = 0; s < kTilePasses; ++s) {
      const uint32_t row = row0 + s * kTileRowsPerPass;
      w[s][0] = w[s][1] = 0;
      ein[s] = 0;
      if (col_ok && row < T) {
        ld_stream(x + row * row_codes + col / 2, w[s]);
        ein[s] = exponent_at(p.x_sf, in_packed, p.x_sf_stride0, p.x_sf_stride1, row, k_in);
      }
    }
    uint32_t emax = 0;
#pragma unroll
    for (int s = 0; s < kTilePasses; ++s) emax = max(emax, ein[s]);
    // lanes of one output block: lane bits 0–2 (chunk column within the block) and 4 (row); bit 3 is the block
    emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, 1));
    emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, 2));
    emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, 4));
    emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, 16));
    if ((lane & ~8u) == 0) block_max[parity][half][warp] = emax;
    __syncthreads();
    emax = 0;
#pragma unroll
    for (int i = 0; i < kTileWarps; ++i) emax = max(emax, block_max[parity][half][i]);
    const uint32_t eout = emax >= 6 ? emax - 6 : 0;
    // the exactness check, by the even lane of each input block (min Ein + 5 < Eout iff some Ein + 5 < Eout)
    bool bad = false;
    if ((jc & 1) == 0) {
#pragma unroll
      for (int s = 0; s < kTilePasses; ++s) bad |= col_ok && row0 + s * kTileRowsPerPass < T && ein[s] + 5 < eout;
    }
    report_fault_warp(p.error_word, p.op_id, kTileCondNotExact, bad);
    if (r0 == 0 && (jc % kTileBlockChunks) == 0 && col_ok) sf_out.store(M, K2 * 2 + half, out_packed ? eout : eout << 23);
#pragma unroll
    for (int s = 0; s < kTilePasses; ++s) {
      const uint32_t row = row0 + s * kTileRowsPerPass;
      if (col_ok && row < T) {
        const int d = static_cast<int>(ein[s]) - static_cast<int>(eout);
        uint32_t lo[2], hi[2];
        e2m1x8_to_e4m3_pow2(w[s][0], d, lo);
        e2m1x8_to_e4m3_pow2(w[s][1], d, hi);
        st_v4(data + static_cast<uint64_t>(row) * H + col, lo[0], lo[1], hi[0], hi[1]);
      }
    }
  }
  sf_out.zero_padding_rows(nbm, p.sf_rows);
}

}  // namespace
}  // namespace tk

#ifndef TK_PER_BLOCK_CAST_LOSSLESS_T_NO_ENTRIES  // (per_block_cast_lossless_p.cu includes this file for its tile constants)
extern "C" __global__ void __launch_bounds__(tk::kTileThreads, tk::kTileMinBlocks)
    tk_per_block_cast_lossless__tile(const __grid_constant__ PerBlockCastLosslessParams p) {
  tk::lossless_tiles(p);
}
#endif  // TK_PER_BLOCK_CAST_LOSSLESS_T_NO_ENTRIES

// perBlockCastLossless (spec/quant.md §10): the data launch for aligned operands, `__data_a`
// (docs/perf-notes/perf11-lsl.md). It replaces per_block_cast_lossless.cu's `__data` when the host's knob
// `losslessLaunchTuning.dataAligned` is set and the operands allow it; the `__sf` launch before it is unchanged
// and writes the output scales this kernel reads back.
//
// Symbol
//   tk_per_block_cast_lossless__data_a   e2m1x2 codes → e4m3 codes, each times 2^(Ein − Eout) (exact)
//
// Accepted (the host checks, and falls back to `__data` otherwise): input block width ci ≥ 16 (as the kernels take
// it: a chunk then lies in one input block), the codes' base 8-byte aligned and the output data's base 16-byte aligned. H % 32 == 0 as for every call.
//
// Launch geometry: block.x 256, no shared memory, grid.x = min(ceilDiv(T · H, 8192), 8 · SMs). Grid-stride over
// tiles of 8192 elements (a warp's 1024 per tile); __launch_bounds__(256, 8) holds registers to 32 so that the
// 8 · SMs blocks are all resident: one wave (main's `__data` asks for the same grid but its 48 registers fit 5
// blocks per SM, so 3 of every 8 blocks ran as a second, thinner wave).
//
// A lane converts 32 elements per tile: the 16-element chunks l and l + 32 of its warp's 64 (elements
// [16·l, 16·l + 16) and [512 + 16·l, 512 + 16·l + 16) of the warp's 1024). Each warp instruction then reads 256
// contiguous code bytes (one 8-byte vector a lane) and writes 512 contiguous e4m3 bytes (one 16-byte vector a
// lane): whole 32-byte sectors, each requested once. (A lane owning 32 consecutive elements would load one 16-byte
// vector, but its 32 output bytes would go out as two 16-byte stores 32 bytes apart: every store instruction then
// writes 32 half sectors, twice the L2 store requests for the same bytes.) No byte-wise fallback is compiled in:
// the unaligned operands go to `__data`. A chunk's row and column are carried from step to step (one add and
// one compare each), not divided out: the only divisions are two per thread before the loop.
//
// Numerics are `__data`'s for ci ≥ 16: Ein from the input sf, Eout read back from the output sf, and the e4m3
// bytes of decode(q) · 2^(Ein − Eout) from the shifted table of e2m1x8_to_e4m3_pow2 (exact for d ∈ [−5, 6], which
// the contract guarantees; outside it the data is unspecified and `__sf` has set the error word).
#include "../common/e2m1_fast.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/scale.cuh"
#include "../common/work.cuh"
#include "../generated/per_block_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr int kMinBlocksPerSm = 8;  // 8 · 256 threads: the whole SM at ≤ 32 registers
constexpr uint32_t kChunkElems = 16;  // half a lane's share: 8 code bytes in, 16 e4m3 bytes out
constexpr uint32_t kWarpChunks = 2 * kWarpSize;  // chunks of a warp per tile

// The exponent byte of scale S[m][k] in the two storages the op takes (LOSSLESS_SF_KIND): channel-packed UE8M0
// (the byte) or binary32 (its exponent field). Two cases rather than scale_storage's four: an if-converted switch
// issues every case's load on every call.
TK_DEV uint32_t exponent_at(uint64_t sf, bool packed, uint64_t s0, uint64_t s1, uint32_t m, uint32_t k) {
  const uint8_t* base = reinterpret_cast<const uint8_t*>(sf);
  if (packed) return ld_u8(base + 4 * (m * s0 + (k / kUe8m0PerWord) * s1) + k % kUe8m0PerWord);
  return (ld_u32(base + 4 * (m * s0 + k * s1)) >> 23) & 0xffu;
}

// Quotient by a block size: a shift for powers of two (all column sizes, and the usual row sizes).
TK_DEV uint32_t div_rows(uint32_t v, uint32_t b) { return (b & (b - 1)) == 0 ? v >> log2_pow2(b) : v / b; }

// A chunk's place, carried along the grid-stride walk: row and chunk column (16-element units).
struct ChunkPos {
  uint32_t row, col;
  // Advance by dq rows and dc columns (dc < cpr), carrying a full row of columns.
  TK_DEV void advance(uint32_t dq, uint32_t dc, uint32_t cpr) {
    row += dq;
    col += dc;
    if (col >= cpr) {
      col -= cpr;
      ++row;
    }
  }
};

TK_DEV void lossless_data_aligned(const PerBlockCastLosslessParams& p) {
  const uint32_t cpr = p.hidden / kChunkElems;
  const uint64_t chunks = static_cast<uint64_t>(p.num_tokens) * cpr;
  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint64_t warp = static_cast<uint64_t>(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * (blockDim.x / kWarpSize) * kWarpChunks;  // chunks a step
  const uint32_t dq = static_cast<uint32_t>(step / cpr), dc = static_cast<uint32_t>(step % cpr);
  const uint32_t ci_shift = log2_pow2(p.in_block_cols), co_shift = log2_pow2(p.out_block_cols);
  const bool in_packed = p.x_sf_kind == kSfPackedChannel, out_packed = (p.flags & kSfPackedUe8m0) != 0;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
  uint8_t* data = reinterpret_cast<uint8_t*>(p.data);

  uint64_t c[2];
  ChunkPos pos[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    c[h] = warp * kWarpChunks + h * kWarpSize + lane;
    pos[h] = {static_cast<uint32_t>(c[h] / cpr), static_cast<uint32_t>(c[h] % cpr)};
  }
  for (; c[0] < chunks; c[0] += step, c[1] += step) {
    // both halves' code loads and scale loads first, then the conversions (a row past the tensor is never read)
    uint32_t w[2][2], ein[2], eout[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      w[h][0] = w[h][1] = 0;
      ein[h] = eout[h] = 0;
      if (c[h] < chunks) {
        ld_stream(x + c[h] * (kChunkElems / 2), w[h]);
        const uint32_t col = pos[h].col * kChunkElems;
        ein[h] = exponent_at(p.x_sf, in_packed, p.x_sf_stride0, p.x_sf_stride1, div_rows(pos[h].row, p.in_block_rows), col >> ci_shift);
        eout[h] = exponent_at(p.sf, out_packed, p.sf_stride0, p.sf_stride1, div_rows(pos[h].row, p.out_block_rows), col >> co_shift);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (c[h] < chunks) {
        const int d = static_cast<int>(ein[h]) - static_cast<int>(eout[h]);
        uint32_t lo[2], hi[2];
        e2m1x8_to_e4m3_pow2(w[h][0], d, lo);
        e2m1x8_to_e4m3_pow2(w[h][1], d, hi);
        st_v4(data + c[h] * kChunkElems, lo[0], lo[1], hi[0], hi[1]);
      }
      pos[h].advance(dq, dc, cpr);
    }
  }
}

}  // namespace
}  // namespace tk

#ifndef TK_PER_BLOCK_CAST_LOSSLESS_A_NO_ENTRIES  // (per_block_cast_lossless_t.cuh includes this file for exponent_at)
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm)
    tk_per_block_cast_lossless__data_a(const __grid_constant__ PerBlockCastLosslessParams p) {
  tk::lossless_data_aligned(p);
}
#endif  // TK_PER_BLOCK_CAST_LOSSLESS_A_NO_ENTRIES

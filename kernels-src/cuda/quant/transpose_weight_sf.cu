// batchedTransposeWeightSf (spec/quant.md §9.1): fp32 power-of-two weight scales [G, nS, kS] to the two packed
// UE8M0 layouts DeepGEMM reads. E = (bits >> 23) & 0xFF (sign and mantissa ignored), four blocks per int32 word,
// the first in the low byte, 0 for blocks past the edge.
//   sf0 word (g, p, i) at g·P0·n + p·n + i  = pack E[g][⌊i/bs⌋][4p … 4p+3]      P0 = ⌈kS/4⌉, n = nS·bs
//   sf1 word (g, p, c) at g·P1·k + p·k + c  = pack E[g][4p … 4p+3][⌊c/bs⌋]      P1 = ⌈nS/4⌉, k = kS·bs
//
// Symbol: tk_transpose_weight_sf (one launch per weight, all G groups and both outputs).
//
// Launch geometry (any grid.x ≥ 1 is correct: grid-stride over output rows):
//
//   kernel                   block.x  dynamic smem  grid.x
//   tk_transpose_weight_sf   256      0             min(G·(P0 + P1), 8 · SMs)
//
//   An output row is the n (sf0) or k (sf1) words of one (g, p): row ρ < G·P0 is sf0 row ρ = g·P0 + p at word
//   ρ·n, the rest sf1 rows ρ - G·P0 = g·P1 + p at word (ρ - G·P0)·k, so a row is contiguous. A block takes whole
//   rows; its threads walk a row in units of four consecutive words (four rows or columns of one scale block,
//   since bs ≥ 32 and n, k are multiples of 128): one word computed, one 16-byte store; two units per thread
//   and step, their loads issued together. The row's (g, p) costs one division per row, not per unit: a per-unit
//   decomposition (five 64-bit divisions and remainders per 16 bytes) made the kernel issue-bound at 31% of memcpy. The kernel is bound by its writes (the outputs are about bs
//   times the input); the input is tiny and read through L1, four scalar loads per unit shared by the warp.
//   32 registers (launch bound 8 blocks per SM, sm_90a and sm_100a, no spills): the 8 · SMs grid is resident.
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/work.cuh"
#include "../generated/per_channel_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr int kStepUnits = 2;  // units per thread whose loads are issued together (32 registers: 8 blocks per SM)

// a / b with the 32-bit divide when a fits (always, for any real weight), the 64-bit one otherwise.
TK_DEV uint64_t div_u64_u32(uint64_t a, uint32_t b) {
  return (a >> 32) == 0 ? static_cast<uint32_t>(a) / b : a / b;
}

TK_DEV void run(const TransposeWeightSfParams& p) {
  const uint32_t log_bs = log2_pow2(p.block_size);
  const uint32_t p0 = (p.k_blocks + 3) / 4, p1 = (p.n_blocks + 3) / 4;
  const uint64_t rows0 = static_cast<uint64_t>(p.groups) * p0;
  const uint64_t rows = rows0 + static_cast<uint64_t>(p.groups) * p1;
  const uint64_t group_elems = static_cast<uint64_t>(p.n_blocks) * p.k_blocks;
  for (uint64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const bool first = row < rows0;
    const uint64_t r = first ? row : row - rows0;  // g·P + p, P = P0 (sf0) or P1 (sf1)
    const uint32_t per_group = first ? p0 : p1;
    const uint64_t g = div_u64_u32(r, per_group);
    const uint32_t pw = static_cast<uint32_t>(r - g * per_group);
    // S[g][a][b] sits at (g·nS + a)·kS + b. The four packed blocks 4p+h run along b for sf0 (a = the unit's
    // block) and along a for sf1 (b = the unit's block); those past the edge (4p+h ≥ kS or nS) stay 0.
    const uint64_t h_stride = first ? 1 : p.k_blocks;
    const uint64_t blk_stride = first ? p.k_blocks : 1;
    const uint32_t valid = min(4u, (first ? p.k_blocks : p.n_blocks) - 4 * pw);
    const uint8_t* src = reinterpret_cast<const uint8_t*>(p.sf) + 4 * (g * group_elems + 4 * pw * h_stride);
    const uint64_t len = static_cast<uint64_t>(first ? p.n_blocks : p.k_blocks) << log_bs;  // words of the row
    uint8_t* out = reinterpret_cast<uint8_t*>(first ? p.sf0 : p.sf1) + 4 * r * len;
    // kStepUnits units per thread and step, all their loads before any store: a short grid (one small weight:
    // G·(P0 + P1) blocks) still has several loads in flight per thread instead of one L2 round trip per unit.
    const uint64_t unit_stride = 4 * static_cast<uint64_t>(blockDim.x);  // words between a thread's units
    for (uint64_t word0 = 4 * threadIdx.x; word0 < len; word0 += kStepUnits * unit_stride) {
      uint32_t e[kStepUnits][4];
#pragma unroll
      for (int j = 0; j < kStepUnits; ++j) {
        const uint64_t word = word0 + j * unit_stride;
        const uint8_t* blk = src + 4 * (word >> log_bs) * blk_stride;
#pragma unroll
        for (uint32_t h = 0; h < 4; ++h) {
          e[j][h] = 0;
          if (word < len && h < valid) e[j][h] = ld_u32(blk + 4 * h * h_stride);
        }
      }
#pragma unroll
      for (int j = 0; j < kStepUnits; ++j) {
        const uint64_t word = word0 + j * unit_stride;
        if (word >= len) break;
        uint32_t packed = 0;
#pragma unroll
        for (uint32_t h = 0; h < 4; ++h) packed |= ((e[j][h] >> 23) & 0xffu) << (8 * h);
        st_v4(out + 4 * word, packed, packed, packed, packed);
      }
    }
  }
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 8)
    tk_transpose_weight_sf(const __grid_constant__ TransposeWeightSfParams p) {
  tk::run(p);
}

// batchedTransposeWeightSf (spec/quant.md §9.1): fp32 power-of-two weight scales [G, nS, kS] to the two packed
// UE8M0 layouts DeepGEMM reads. E = (bits >> 23) & 0xFF (sign and mantissa ignored), four blocks per int32 word,
// the first in the low byte, 0 for blocks past the edge.
//   sf0 word (g, p, i) at g·P0·n + p·n + i  = pack E[g][⌊i/bs⌋][4p … 4p+3]      P0 = ⌈kS/4⌉, n = nS·bs
//   sf1 word (g, p, c) at g·P1·k + p·k + c  = pack E[g][4p … 4p+3][⌊c/bs⌋]      P1 = ⌈nS/4⌉, k = kS·bs
//
// Symbol: tk_transpose_weight_sf (one launch per weight; both outputs).
//
// Launch geometry (any grid.x ≥ 1 is correct: grid-stride):
//
//   kernel                   block.x  dynamic smem  grid.x
//   tk_transpose_weight_sf   256      0             min(ceilDiv(U, 256), 8 · SMs)
//
//   U = G·P0·n/4 + G·P1·k/4 units. A unit is four consecutive words of one output row (i or c, i.e. four rows of
//   one scale block, since bs ≥ 32 and n, k are multiples of 128): one word computed, one 16-byte store. The
//   kernel is bound by its writes (the outputs are bs·4/… times the input); the input is tiny and read cached.
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../generated/per_channel_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;

// The exponent byte of S[g][a][b], 0 outside the grid.
TK_DEV uint32_t exponent_byte(const TransposeWeightSfParams& p, uint64_t g, uint32_t a, uint32_t b) {
  if (a >= p.n_blocks || b >= p.k_blocks) return 0;
  const uint64_t idx = (g * p.n_blocks + a) * p.k_blocks + b;
  return (ld_u32(reinterpret_cast<const uint8_t*>(p.sf) + 4 * idx) >> 23) & 0xffu;
}

TK_DEV void run(const TransposeWeightSfParams& p) {
  const uint64_t n = static_cast<uint64_t>(p.n_blocks) * p.block_size;
  const uint64_t k = static_cast<uint64_t>(p.k_blocks) * p.block_size;
  const uint64_t p0 = (p.k_blocks + 3) / 4, p1 = (p.n_blocks + 3) / 4;
  const uint64_t units0 = p.groups * p0 * (n / 4);
  const uint64_t units = units0 + p.groups * p1 * (k / 4);
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t u = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units; u += step) {
    const bool first = u < units0;
    const uint64_t v = first ? u : u - units0;
    const uint64_t len = first ? n : k;           // words of one output row (p)
    const uint64_t per_group = (first ? p0 : p1) * (len / 4);
    const uint64_t g = v / per_group;
    const uint64_t r = v % per_group;
    const uint32_t pw = static_cast<uint32_t>(r / (len / 4));
    const uint64_t word = 4 * (r % (len / 4));      // first of the unit's four words: row i (sf0) or column c (sf1)
    const uint32_t blk = static_cast<uint32_t>(word / p.block_size);
    uint32_t packed = 0;
#pragma unroll
    for (uint32_t h = 0; h < 4; ++h) {
      const uint32_t e = first ? exponent_byte(p, g, blk, 4 * pw + h) : exponent_byte(p, g, 4 * pw + h, blk);
      packed |= e << (8 * h);
    }
    uint8_t* out = reinterpret_cast<uint8_t*>(first ? p.sf0 : p.sf1) + 4 * (g * per_group * 4 + pw * len + word);
    st_v4(out, packed, packed, packed, packed);
  }
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads)
    tk_transpose_weight_sf(const __grid_constant__ TransposeWeightSfParams p) {
  tk::run(p);
}

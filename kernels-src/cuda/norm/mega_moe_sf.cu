// The mega-MoE scale scatter of normForwardAndPerTokenCast (spec/norm-rope-rand.md A.1, `megaMoeSf` with
// `megaMoeBlockM = m`): after the fused cast wrote its scales (numPerChannels 32, roundSf: powers of two), token t's
// four UE8M0 exponent bytes of columns 128g … 128g + 127 go, byte k from sf column 4g + k (little-endian), into the
// int32 at (ρ(t), g) of the M-major megaMoeSf (element (ρ, g) at ρ + g·R), with i = t mod m and
//   ρ(t) = ⌊t/m⌋·align(m, 128) + ⌊i/128⌋·128 + (i mod 32)·4 + ⌊(i mod 128)/32⌋.
// Every other word of megaMoeSf is left as it was. The UE8M0 byte of an fp32 power-of-two scale is its exponent
// field (bits 23–30; +Inf, from an infinite amax, gives 0xFF as the packed form does).
//
// Symbol
//   tk_mega_moe_sf__scatter
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, the kernel is grid-stride):
//   kernel  block.x  dynamic smem  grid.x
//   all     256      0             max(1, min(ceilDiv(T · G, 256), 4 · SMs))      G = H / 128
// Item j = t + T·g (tokens fastest): with column-major scales a warp reads consecutive words, and its 32 writes
// fall in one 128-word chunk of megaMoeSf.
#include <stdint.h>
#include "../generated/mega_moe_params.h"

namespace {

constexpr int kBlockThreads = 256;

__device__ __forceinline__ uint32_t ue8m0_byte(const MegaMoeSfParams& p, uint64_t t, uint32_t c) {
  if (p.packed) {
    const uint32_t* sf = reinterpret_cast<const uint32_t*>(p.sf);
    return (sf[t * p.sf_stride0 + (c >> 2) * p.sf_stride1] >> (8 * (c & 3))) & 0xffu;
  }
  const uint32_t* sf = reinterpret_cast<const uint32_t*>(p.sf);  // fp32 bit patterns
  return (sf[t * p.sf_stride0 + c * p.sf_stride1] >> 23) & 0xffu;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kBlockThreads) tk_mega_moe_sf__scatter(const __grid_constant__ MegaMoeSfParams p) {
  const uint64_t items = static_cast<uint64_t>(p.num_tokens) * p.groups;
  const uint64_t m = p.block_m;
  const uint64_t pitch = (m + 127) / 128 * 128;  // align(m, 128)
  int32_t* out = reinterpret_cast<int32_t*>(p.out);
  for (uint64_t j = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < items;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint64_t t = j % p.num_tokens;
    const uint32_t g = static_cast<uint32_t>(j / p.num_tokens);
    const uint64_t i = t % m;
    const uint64_t rho = t / m * pitch + i / 128 * 128 + (i % 32) * 4 + (i % 128) / 32;
    uint32_t word = 0;
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) word |= ue8m0_byte(p, t, 4 * g + k) << (8 * k);
    out[rho + g * p.out_stride1] = static_cast<int32_t>(word);
  }
}

// Standard normal samples (spec/norm-rope-rand.md §C.2): randn, randnLike. Element i of the logical (row-major)
// output gets z_i of stream (seed, offset): Philox4x32-10 block j = ⌊i/4⌋, lane i mod 4, the binary64 Box–Muller
// transform of common/philox.cuh, then §C.2.3's storage rounding: fp32 RN32(z), bf16 RNbf16(RN32(z)), fp16
// RNfp16(RN32(z)). A thread computes whole Philox blocks, so the bits depend on (seed, offset, i) only, never on
// the grid, the block size or the output's strides.
//
// Symbols: tk_randn__<dtype>, dtype ∈ {fp32, bf16, fp16}.
//
// Launch geometry (any grid.x ≥ 1 and any block.x ≤ 256 give the same bits: blocks are walked grid-stride):
//
//   kernel         block.x  dynamic smem  grid.x
//   tk_randn__*    256      0             min(ceilDiv(⌈n / 4⌉, 256), 64 · SMs)
//
// Static shared memory: 528 B per block, the 33 (E ⊗ LN2_HI, E ⊗ LN2_LO) pairs of common/philox.cuh, filled by
// the block's first threads before its loop (one __syncthreads; any block.x ≥ 1 fills all 33).
//
// Output: rank 0 is a contiguous run (one 16-byte fp32 or 8-byte bf16/fp16 store per block when the address
// allows it, element stores otherwise and for the last partial block); rank 1…6 is a strided view whose dims the
// host has merged where it could, written element by element. The op is compute-bound by design: per Philox
// block (4 elements) the sm_90a code issues ~390–400 instructions, 160 of them binary64 (40 per element: 64 per
// pair for the spec's operations that stay binary64, plus 8 each for the correctly rounded division and square
// root), which keep the FP64 pipe (16 lanes per SM sub-partition) busy for 320 of those cycles, 6 conversions and
// 4 MUFU (docs/perf-notes/perf3-randn.md; 172 binary64 and 10 conversions before u's split and the ln 2 products
// left the FP64 pipe).
#include "../common/codec.cuh"
#include "../common/f16.cuh"
#include "../common/fp.cuh"
#include "../common/ldst.cuh"
#include "../common/philox.cuh"
#include "../generated/rope_randn_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr int kMaxDims = 6;

enum class Elem { kFp32, kBf16, kFp16 };

template <Elem kE>
TK_DEV uint32_t store_bits(double z) {
  const float f = __double2float_rn(z);
  if constexpr (kE == Elem::kFp32) {
    return f2u(f);
  } else if constexpr (kE == Elem::kBf16) {
    return encode_bf16(f);
  } else {
    return encode_fp16(f);
  }
}

template <Elem kE>
TK_DEV void store_elem(uint8_t* q, uint32_t bits) {
  if constexpr (kE == Elem::kFp32) {
    st_u32(q, bits);
  } else {
    st_u16(q, bits);
  }
}

template <Elem kE>
TK_DEV void run(const RandnParams& p) {
  constexpr uint64_t kElemBytes = kE == Elem::kFp32 ? 4 : 2;
  const uint64_t n = p.numel;
  const uint64_t blocks = (n + 3) / 4;
  const uint64_t sizes[kMaxDims] = {p.size0, p.size1, p.size2, p.size3, p.size4, p.size5};
  const int64_t strides[kMaxDims] = {p.stride0, p.stride1, p.stride2, p.stride3, p.stride4, p.stride5};
  const int rank = static_cast<int>(p.rank);
  uint8_t* const out = reinterpret_cast<uint8_t*>(p.out);
  const bool vec = (p.out % (4 * kElemBytes)) == 0;
  __shared__ double2 ln2[kLn2Entries];
  normal_fill_ln2(ln2);
  __syncthreads();
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t j = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < blocks; j += step) {
    double z[4];
    normal_block(p.seed, p.offset, j, ln2, z);
    uint32_t bits[4];
#pragma unroll
    for (int l = 0; l < 4; ++l) bits[l] = store_bits<kE>(z[l]);
    const uint64_t i0 = 4 * j;
    if (rank == 0) {
      uint8_t* q = out + i0 * kElemBytes;
      if (vec && i0 + 4 <= n) {
        if constexpr (kE == Elem::kFp32) {
          st_v4(q, bits[0], bits[1], bits[2], bits[3]);
        } else {
          st_v2(q, bits[0] | (bits[1] << 16), bits[2] | (bits[3] << 16));
        }
      } else {
#pragma unroll
        for (int l = 0; l < 4; ++l) {
          if (i0 + l < n) store_elem<kE>(q + l * kElemBytes, bits[l]);
        }
      }
      continue;
    }
    // Strided: the multi-index of element i0 (innermost dim last), then carry it along the block's elements.
    uint64_t idx[kMaxDims];
    int64_t off = 0;
    uint64_t rem = i0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      idx[d] = 0;
      if (d < rank) {
        idx[d] = rem % sizes[d];
        rem /= sizes[d];
        off += static_cast<int64_t>(idx[d]) * strides[d];
      }
    }
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      if (i0 + l >= n) break;
      store_elem<kE>(out + off * static_cast<int64_t>(kElemBytes), bits[l]);
#pragma unroll
      for (int d = kMaxDims - 1; d >= 0; --d) {
        if (d < rank) {
          off += strides[d];
          if (++idx[d] < sizes[d]) break;
          off -= static_cast<int64_t>(idx[d]) * strides[d];
          idx[d] = 0;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tk

#define TK_RANDN(name, E)                                                                               \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads)                                      \
      tk_randn__##name(const __grid_constant__ RandnParams p) {                                        \
    tk::run<tk::Elem::E>(p);                                                                           \
  }

TK_RANDN(fp32, kFp32)
TK_RANDN(bf16, kBf16)
TK_RANDN(fp16, kFp16)

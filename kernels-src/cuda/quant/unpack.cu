// unpackFromE2m1fnX2 (spec/quant.md §9.2): every byte of a [rows, K] view of e2m1x2 / uint8 / int8 codes becomes
// two exact values, low nibble first, in a contiguous [rows, 2K] fp32 or bf16 output.
//
// Symbols: tk_unpack_e2m1x2__<out>, out ∈ {fp32, bf16}.
//
// Launch geometry (any grid.x ≥ 1 is correct: grid-stride):
//
//   kernel   block.x  dynamic smem  grid.x
//   all      256      0             max(1, min(ceilDiv(ceilDiv(rows · K, 8), 256), 4 · SMs))
//
//   Contiguous codes (col_stride 1, row_stride K): a thread chunk is 8 code bytes (one 8-byte load) → 16 values
//   (64 bytes fp32 / 32 bytes bf16, 16-byte stores); codes or outputs off that alignment load and store byte-wide;
//   the last rows·K % 8 bytes go one per thread. Any other view: one code byte per thread step, addressed by its
//   row and column (signed strides), which is correct for every view and slower.
#include "../common/codec.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../generated/elem_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr int kChunkBytes = 8;

template <bool kBf16>
struct Unpack {
  static constexpr int kOutBytes = kChunkBytes * 2 * (kBf16 ? 2 : 4);

  // The two values of one code byte, as output storage (fp32 bits or bf16, exact either way).
  TK_DEV static uint32_t value(uint32_t nibble) {
    const float v = decode_e2m1(nibble);
    return kBf16 ? (f2u(v) >> 16) : f2u(v);
  }

  // One element-wide store per value: an output view need only be element-aligned.
  TK_DEV static void store_byte(uint8_t* out, uint64_t e, uint32_t b) {
    if constexpr (kBf16) {
      st_u16(out + 4 * e, value(b & 0xfu));
      st_u16(out + 4 * e + 2, value(b >> 4));
    } else {
      st_u32(out + 8 * e, value(b & 0xfu));
      st_u32(out + 8 * e + 4, value(b >> 4));
    }
  }

  TK_DEV static void run(const UnpackParams& p) {
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    uint8_t* out = reinterpret_cast<uint8_t*>(p.out);
    const uint64_t n = p.rows * p.cols;
    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    const uint64_t gtid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (p.col_stride == 1 && (p.rows <= 1 || p.row_stride == static_cast<int64_t>(p.cols))) {
      const uint64_t chunks = n / kChunkBytes;
      const bool in_aligned = (p.x % kChunkBytes) == 0;
      const bool out_aligned = (p.out % kVecBytes) == 0;
      for (uint64_t c = gtid; c < chunks; c += threads) {
        uint32_t w[2];
        load_chunk<kChunkBytes, 1>(x + c * kChunkBytes, w, in_aligned);
        uint32_t o[kOutBytes / 4];
#pragma unroll
        for (int i = 0; i < 2 * kChunkBytes; ++i) {
          const uint32_t v = value((w[i / 8] >> (4 * (i % 8))) & 0xfu);
          if constexpr (kBf16) {
            if (i % 2 == 0) o[i / 2] = v;
            else o[i / 2] |= v << 16;
          } else {
            o[i] = v;
          }
        }
        store_chunk<kOutBytes>(out + c * kOutBytes, o, out_aligned);
      }
      const uint64_t e = chunks * kChunkBytes + gtid;
      if (e < n) store_byte(out, e, ld_u8(x + e));
      return;
    }
    for (uint64_t e = gtid; e < n; e += threads) {
      const uint64_t r = e / p.cols, k = e % p.cols;
      const int64_t off = static_cast<int64_t>(r) * p.row_stride + static_cast<int64_t>(k) * p.col_stride;
      store_byte(out, e, ld_u8(x + off));
    }
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4) tk_unpack_e2m1x2__fp32(const __grid_constant__ UnpackParams p) {
  tk::Unpack<false>::run(p);
}
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4) tk_unpack_e2m1x2__bf16(const __grid_constant__ UnpackParams p) {
  tk::Unpack<true>::run(p);
}

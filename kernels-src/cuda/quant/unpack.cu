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
//   Contiguous codes (col_stride 1, row_stride K): a warp converts 256 code bytes per step, in rounds of one
//   16-byte store per lane (2 code bytes → 4 fp32, or 4 → 8 bf16) covering 512 contiguous output bytes; codes or
//   outputs off that alignment load and store byte-wide; the last rows·K % 256 bytes go one per thread. The grid
//   gives one warp per 256 code bytes (n / 8 threads) up to the cap. Any other view: one code byte per thread step,
//   addressed by its row and column (signed strides), which is correct for every view and slower.
#include "../common/codec.cuh"
#include "../common/e2m1_fast.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../generated/elem_params.h"

namespace tk {
namespace {

constexpr int kUnpackThreads = 256;
constexpr int kSpanBytes = 256;  // code bytes a warp converts per step (512 values)

template <bool kBf16>
struct Unpack {
  // In store round r of a step, lane l converts the kPiece code bytes at kPiece·(32·r + l) of the warp's span into
  // one 16-byte store (4 fp32 or 8 bf16 values), so every store instruction of the warp writes 512 contiguous bytes:
  // whole 32-byte sectors. (Before: 8 code bytes per lane, 64 / 32 output bytes per lane written by 4 / 2 stores a
  // lane stride apart, each instruction writing half of every sector it touched: 38.5–39.3% of copy bandwidth for
  // fp32, 76–82% for bf16, on an H200.)
  static constexpr int kPiece = kBf16 ? 4 : 2;
  static constexpr int kRounds = kSpanBytes / (kWarpSize * kPiece);  // 2 (bf16) or 4 (fp32)
  static constexpr int kOutElemBytes = kBf16 ? 2 : 4;

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

  // kPiece code bytes, first in the low byte: one load when aligned, byte loads otherwise.
  TK_DEV static uint32_t load_piece(const uint8_t* p, bool aligned) {
    if (aligned) return kPiece == 4 ? ld_u32(p) : ld_u16(p);
    uint32_t c = 0;
#pragma unroll
    for (int i = 0; i < kPiece; ++i) c |= ld_u8(p + i) << (8 * i);
    return c;
  }

  TK_DEV static void run(const UnpackParams& p) {
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    uint8_t* out = reinterpret_cast<uint8_t*>(p.out);
    const uint64_t n = p.rows * p.cols;
    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    const uint64_t gtid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (p.col_stride == 1 && (p.rows <= 1 || p.row_stride == static_cast<int64_t>(p.cols))) {
      const uint64_t spans = n / kSpanBytes;
      const bool in_aligned = (p.x % kPiece) == 0;
      const bool out_aligned = (p.out % kVecBytes) == 0;
      const uint32_t lane = threadIdx.x % kWarpSize;
      for (uint64_t s = gtid / kWarpSize; s < spans; s += threads / kWarpSize) {
        const uint64_t b0 = s * kSpanBytes + lane * kPiece;  // this lane's first code byte
        uint32_t c[kRounds];
#pragma unroll
        for (int r = 0; r < kRounds; ++r) c[r] = load_piece(x + b0 + r * kWarpSize * kPiece, in_aligned);
#pragma unroll
        for (int r = 0; r < kRounds; ++r) {
          uint32_t o[4];
          if constexpr (kBf16) {
            e2m1x8_to_bf16(c[r], o);
          } else {
#pragma unroll
            for (int i = 0; i < 4; ++i) o[i] = value((c[r] >> (4 * i)) & 0xfu);
          }
          const uint64_t b = b0 + r * kWarpSize * kPiece;
          store_chunk<kVecBytes>(out + b * 2 * kOutElemBytes, o, out_aligned);
        }
      }
      // the last n % 256 code bytes, one per thread (a launch has at least 256 threads)
      const uint64_t e = spans * kSpanBytes + gtid;
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

#ifndef TK_UNPACK_NO_ENTRIES  // (unpack24.cu includes this file for Unpack, not these entries)
extern "C" __global__ void __launch_bounds__(tk::kUnpackThreads, 4) tk_unpack_e2m1x2__fp32(const __grid_constant__ UnpackParams p) {
  tk::Unpack<false>::run(p);
}
extern "C" __global__ void __launch_bounds__(tk::kUnpackThreads, 4) tk_unpack_e2m1x2__bf16(const __grid_constant__ UnpackParams p) {
  tk::Unpack<true>::run(p);
}
#endif  // TK_UNPACK_NO_ENTRIES

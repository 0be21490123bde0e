// FP4 → FP8 exact re-blocking (spec/quant.md §10): perBlockCastLossless, in two launches on one stream.
//
// Symbols
//   tk_per_block_cast_lossless__sf     output scales: Eout of every output block, the exactness check, sf padding
//   tk_per_block_cast_lossless__data   e2m1x2 codes → e4m3 codes, each times 2^(Ein − Eout) (exact)
//
// Launch geometry (both grid-stride: any grid.x ≥ 1 is correct):
//
//   kernel   block.x  dynamic smem  grid.x
//   __sf     256      0             min(ceilDiv(nbm · nbk, 8), 4 · SMs)     one warp per output block
//   __data   256      0             min(ceilDiv(T · H / 16, 256 · 2), 8 · SMs)
//
//   nbm = ceilDiv(T, ro), nbk = ceilDiv(H, co). SMs = multiprocessors. No shared memory.
//
// __sf: a warp owns output block (M, K); its lanes walk the input blocks inside it that start inside the tensor
// (rows [M·ro/ri, min((M+1)·ro/ri, ceilDiv(T, ri))), likewise columns; 8 loads in flight per lane), take the max
// exponent byte Emax (fp32 scales: the exponent field; packed UE8M0: the byte), Eout = Emax ≥ 6 ? Emax − 6 : 0,
// and check min Ein + 5 ≥ Eout (the min taken in the same pass); a block that fails sets bit 1 of the error word
// (op perBlockCastLossless, DESIGN §6) and the data are then unspecified (but every access stays in bounds).
// Lane 0 writes the scale: byte Eout (packed) or f32(Eout << 23); column-major padding rows are zeroed
// grid-stride.
// __data: a thread converts chunks of 16 elements (8 input bytes → 16 output bytes), two chunks per step with
// both chunks' loads issued first (ci ≥ 16: codes, Ein and Eout; ci < 16: the codes). Ein is read from the input
// sf and Eout back from the output sf the __sf launch wrote (stream order makes it visible); both are read once
// per chunk when ci ≥ 16, once per ci elements otherwise. ci ≥ 16: the e4m3 bytes of decode(q) · 2^d come from a
// table shifted by d (exact for d ∈ [−5, 6], i.e. whenever the contract holds; common/e2m1_fast.cuh). ci < 16:
// 2^(Ein − Eout) is built from its exponent (d clamped to [−126, 127], which only matters when the contract is
// violated); decode(q) · 2^d is then exact and so is its e4m3 encoding (§10).
#include "../common/chunk.cuh"
#include "../common/e2m1_fast.cuh"
#include "../common/error_word.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/scale.cuh"
#include "../common/work.cuh"
#include "../generated/per_block_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr int kElems = 16;     // elements per data chunk: 8 bytes of e2m1x2 in, 16 bytes of e4m3 out
constexpr int kSteps = 2;      // chunks per thread per step, loads issued together
constexpr uint32_t kCondNotExact = 1;  // condition bit: an input block too far below its output block's maximum
constexpr int kSfBatch = 8;            // input scale loads a lane of the __sf kernel has in flight

// Exponent byte of a scale storage element: the byte itself (packed UE8M0) or the binary32 exponent field.
TK_DEV uint32_t exponent_byte(uint32_t kind, uint32_t raw) { return kind == kSfFp32 ? (raw >> 23) & 0xffu : raw; }

TK_DEV uint32_t input_exponent(const PerBlockCastLosslessParams& p, uint64_t m, uint64_t k) {
  return exponent_byte(p.x_sf_kind, scale_storage(p.x_sf, p.x_sf_kind, p.x_sf_stride0, p.x_sf_stride1, m, k));
}

TK_DEV uint32_t output_exponent(const PerBlockCastLosslessParams& p, uint64_t m, uint64_t k) {
  const uint32_t kind = (p.flags & kSfPackedUe8m0) ? kSfPackedChannel : kSfFp32;
  return exponent_byte(kind, scale_storage(p.sf, kind, p.sf_stride0, p.sf_stride1, m, k));
}

TK_DEV void lossless_sf(const PerBlockCastLosslessParams& p) {
  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint64_t nbm = (p.num_tokens + p.out_block_rows - 1) / p.out_block_rows;
  const uint32_t nbk = (p.hidden + p.out_block_cols - 1) / p.out_block_cols;
  const uint64_t nbm_in = (p.num_tokens + p.in_block_rows - 1) / p.in_block_rows;
  const uint32_t nbk_in = (p.hidden + p.in_block_cols - 1) / p.in_block_cols;
  const uint32_t fm = p.out_block_rows / p.in_block_rows, fk = p.out_block_cols / p.in_block_cols;
  const SfOut sf_out{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, nbk};
  const uint64_t warps = static_cast<uint64_t>(gridDim.x) * (blockDim.x / kWarpSize);
  for (uint64_t o = static_cast<uint64_t>(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
       o < nbm * nbk; o += warps) {
    const uint64_t M = o / nbk;
    const uint32_t K = static_cast<uint32_t>(o % nbk);
    const uint64_t m0 = M * fm, k0 = static_cast<uint64_t>(K) * fk;
    const uint64_t rows = min(static_cast<uint64_t>(fm), nbm_in - m0);
    const uint64_t cols = min(static_cast<uint64_t>(fk), nbk_in - k0);
    const uint64_t n = rows * cols;
    // One pass: the largest exponent gives Eout and the smallest decides the exactness check (some Ein + 5 < Eout
    // iff min Ein + 5 < Eout). Each lane issues kSfBatch loads before it uses any (two passes of one dependent
    // load per iteration measured 27–29% of copy bandwidth for the whole op on an H200).
    uint32_t emax = 0, emin = 0xffu;
    auto scan = [&](auto idx_type) {
      using I = decltype(idx_type);
      const I cn = static_cast<I>(n), cc = static_cast<I>(cols);
      for (I i0 = lane; i0 < cn; i0 += kWarpSize * kSfBatch) {
        uint32_t e[kSfBatch];
#pragma unroll
        for (int j = 0; j < kSfBatch; ++j) {
          const I i = i0 + j * kWarpSize;
          e[j] = i < cn ? input_exponent(p, m0 + i / cc, k0 + i % cc) : 0u;
        }
#pragma unroll
        for (int j = 0; j < kSfBatch; ++j) {
          if (i0 + j * kWarpSize < cn) {
            emax = max(emax, e[j]);
            emin = min(emin, e[j]);
          }
        }
      }
    };
    if (n < (1ull << 31)) {
      scan(uint32_t{0});  // 32-bit index arithmetic: the usual case by far
    } else {
      scan(uint64_t{0});
    }
#pragma unroll
    for (int b = 1; b < kWarpSize; b <<= 1) emax = max(emax, __shfl_xor_sync(kFullWarpMask, emax, b));
    const uint32_t eout = emax >= 6 ? emax - 6 : 0;
    const bool bad = emin + 5 < eout;  // this lane's blocks (emin stays 0xFF when it has none)
    report_fault_warp(p.error_word, p.op_id, kCondNotExact, bad);
    if (lane == 0) sf_out.store(M, K, (p.flags & kSfPackedUe8m0) ? eout : eout << 23);
  }
  sf_out.zero_padding_rows(static_cast<uint32_t>(nbm), p.sf_rows);
}

// The data kernels' view of their operands: the chunk grid, codes in (kElems / 2 bytes a chunk) and e4m3 bytes out (kElems), each
// vector-aligned or not, and the grid-stride walk over chunks (kSteps chunks a thread per round).
struct ChunkIo {
  uint32_t cpr;     // chunks per row (H % 32 == 0)
  uint64_t chunks;  // in all
  uint32_t ci_shift, co_shift;  // log2 of the input and output block widths
  const uint8_t* x;
  uint8_t* data;
  bool x_aligned, data_aligned;
  uint64_t threads, first;
  TK_DEV explicit ChunkIo(const PerBlockCastLosslessParams& p)
      : cpr(p.hidden / kElems), chunks(static_cast<uint64_t>(p.num_tokens) * cpr),
        ci_shift(log2_pow2(p.in_block_cols)), co_shift(log2_pow2(p.out_block_cols)),
        x(reinterpret_cast<const uint8_t*>(p.x)), data(reinterpret_cast<uint8_t*>(p.data)),
        x_aligned((p.x % (kElems / 2)) == 0), data_aligned((p.data % kElems) == 0),
        threads(static_cast<uint64_t>(gridDim.x) * blockDim.x),
        first(static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) {}
};

// Input blocks narrower than a chunk (ci < 16): a scale per ci elements, looked up element by element.
TK_DEV void lossless_data_fine(const PerBlockCastLosslessParams& p) {
  const ChunkIo io(p);
  const uint32_t cpr = io.cpr, ci_shift = io.ci_shift, co_shift = io.co_shift;
  const uint64_t chunks = io.chunks, threads = io.threads;
  const uint32_t sub_mask = min(p.in_block_cols, static_cast<uint32_t>(kElems)) - 1;  // elements sharing a scale − 1
  for (uint64_t c0 = io.first; c0 < chunks; c0 += kSteps * threads) {
    uint32_t w[kSteps][2];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const uint64_t c = c0 + s * threads;
      w[s][0] = w[s][1] = 0;
      if (c < chunks) load_chunk<kElems / 2, 1>(io.x + c * (kElems / 2), w[s], io.x_aligned);
    }
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const uint64_t c = c0 + s * threads;
      if (c >= chunks) break;
      const uint64_t t = c / cpr;
      const uint32_t col = static_cast<uint32_t>(c % cpr) * kElems;
      const uint64_t m = t / p.in_block_rows, M = t / p.out_block_rows;
      float v[kElems];
      float mul = 0.0f;
#pragma unroll
      for (int i = 0; i < kElems; ++i) {
        if ((i & sub_mask) == 0) {
          const uint32_t j = col + i;
          int d = static_cast<int>(input_exponent(p, m, j >> ci_shift)) - static_cast<int>(output_exponent(p, M, j >> co_shift));
          d = min(max(d, -126), 127);
          mul = u2f(static_cast<uint32_t>(127 + d) << 23);
        }
        v[i] = mul_rn(element<Fmt::kE2m1>(w[s], i), mul);
      }
      uint32_t o[kElems / 4];
      encode_chunk<Fmt::kE4m3, kElems>(v, o);
      store_chunk<kElems>(io.data + c * kElems, o, io.data_aligned);
    }
  }
}

// Quotient by a block size: a shift for powers of two (all column sizes, and the usual row sizes).
TK_DEV uint32_t div_block(uint32_t v, uint32_t b) { return (b & (b - 1)) == 0 ? v >> log2_pow2(b) : v / b; }

// ci ≥ 16: a chunk lies in one input block and one output block. Each thread issues its kSteps chunks' code
// loads and their two exponent loads together before it uses any (before: the exponents were loaded, one
// dependent round trip after another, between the chunks' computations); the row comes from one 32-bit division
// per chunk and the scale rows from shifts when the block rows are powers of two (before: four 64-bit divisions
// per chunk); and the codes become e4m3 bytes by table (e2m1x8_to_e4m3_pow2: 4 values per prmt) instead of a
// decode, a multiply and an encode per value. Measured before: 27–29% of copy bandwidth for the op on an H200.
TK_DEV void lossless_data(const PerBlockCastLosslessParams& p) {
  if (p.in_block_cols < kElems) {
    lossless_data_fine(p);
    return;
  }
  const ChunkIo io(p);
  const uint32_t cpr = io.cpr, ci_shift = io.ci_shift, co_shift = io.co_shift;
  const uint64_t chunks = io.chunks, threads = io.threads;
  const bool narrow = chunks <= (1ull << 32);  // every chunk index fits 32 bits
  for (uint64_t c0 = io.first; c0 < chunks; c0 += kSteps * threads) {
    uint32_t w[kSteps][2], ein[kSteps], eout[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const uint64_t c = c0 + s * threads;
      w[s][0] = w[s][1] = 0;
      ein[s] = eout[s] = 0;
      if (c < chunks) {
        load_chunk<kElems / 2, 1>(io.x + c * (kElems / 2), w[s], io.x_aligned);
        const uint32_t row = narrow ? static_cast<uint32_t>(c) / cpr : static_cast<uint32_t>(c / cpr);
        const uint32_t col = static_cast<uint32_t>(c - static_cast<uint64_t>(row) * cpr) * kElems;
        ein[s] = input_exponent(p, div_block(row, p.in_block_rows), col >> ci_shift);
        eout[s] = output_exponent(p, div_block(row, p.out_block_rows), col >> co_shift);
      }
    }
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const uint64_t c = c0 + s * threads;
      if (c >= chunks) break;
      const int d = static_cast<int>(ein[s]) - static_cast<int>(eout[s]);
      uint32_t lo[2], hi[2];
      e2m1x8_to_e4m3_pow2(w[s][0], d, lo);
      e2m1x8_to_e4m3_pow2(w[s][1], d, hi);
      const uint32_t o[kElems / 4] = {lo[0], lo[1], hi[0], hi[1]};
      store_chunk<kElems>(io.data + c * kElems, o, io.data_aligned);
    }
  }
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads)
    tk_per_block_cast_lossless__sf(const __grid_constant__ PerBlockCastLosslessParams p) {
  tk::lossless_sf(p);
}

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads)
    tk_per_block_cast_lossless__data(const __grid_constant__ PerBlockCastLosslessParams p) {
  tk::lossless_data(p);
}

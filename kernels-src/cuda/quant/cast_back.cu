// Block dequantization (spec/quant.md §6, §2.6): castBack and perTokenCastBack.
//   out[t][j] = fl(decode(q[t][j]) · s(⌊t/r⌋, ⌊j/c⌋)), then fp32 as is or bf16 by §1.5 RNE (NaN → 0x7FC0).
//
// Symbols: tk_cast_back__<in>_<out>, in ∈ {e4m3, e2m1}, out ∈ {fp32, bf16}.
//
// Launch geometry (any grid.x ≥ 1 is correct: grid-stride):
//
//   kernel                block.x  dynamic smem  grid.x
//   tk_cast_back__*_bf16  256      0             min(ceilDiv(T, R), 8 · SMs)
//   tk_cast_back__*_fp32  256      0             ceilDiv(T, R)          (no cap: measured faster uncapped)
//
//   R = 8 / w, w = min(8, nextPow2(ceilDiv(H / V, 32))), V = 16 (bf16 out) or 8 (fp32 out); SMs = multiprocessors.
//   Static shared memory 16 KiB (e4m3 in) / 8 KiB (e2m1 in). bf16 out: 72 (sm_90a) / 80 (sm_100a) registers hold
//   3 blocks per SM; a grid of exactly one resident wave (3 · SMs) measured slower than 8 · SMs on the H200
//   (2026-11-30: 73–76% against 75–79% at [128,128]), so the cap stays 8 · SMs. Measured on an H200 before the
//   hardware bf16 pairs (encode_bf16x2), 16384 × 7168, per-token [1,128]: e4m3 → bf16
//   79% of the large-memcpy bandwidth, e4m3 → fp32 83%, e2m1 → fp32 90%, e2m1 → bf16 56%; [128,128] e4m3 → bf16
//   75–79%.
//
// Block shapes (block_rows r, block_cols c) are powers of two: per-token [1, c], per-block [r, c], per-channel
// [r, 1]. With c ≥ 16 the elements of a thread's chunk share one scale; with c = 1 every element has its own,
// read with 16-byte loads when the scale row is contiguous and aligned, element by element otherwise.
// fp32 outputs leave NaN as 0x7FC00000 (one pattern, as the CPU reference writes it; the GPU multiply would give
// 0x7FFFFFFF).
#include "../common/chunk.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/scale.cuh"
#include "../common/work.cuh"
#include "../generated/quant_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
// Resident blocks per SM the register budget is sized for: 4 (≤ 64 registers); the 16-element bf16 chunks hold
// 16 scales and 16 products and get 3 (≤ 80) rather than spill on sm_100a.
template <Fmt kOut>
constexpr int kMinBlocksPerSm = kOut == Fmt::kBf16 ? 3 : 4;
constexpr int kStages = 2;        // units staged at once: the one computed and the next

template <Fmt kIn, Fmt kOut>
struct CastBack {
  // Elements per thread chunk: 16 for bf16 output, 8 for fp32, i.e. 32 output bytes (two 16-byte stores) per chunk;
  // more elements per chunk amortise its fixed costs (staging, scale, addressing), which bound this kernel more
  // than its arithmetic (measured on an H200: bf16 with 8 per chunk reached 68% of memcpy). H % 64 == 0 keeps
  // chunks inside rows and c ≥ 16 keeps them inside scale blocks.
  static constexpr int kVec = kOut == Fmt::kBf16 ? 16 : 8;
  static constexpr int kU = kOut == Fmt::kBf16 ? 2 : 4;  // chunks per thread per unit: 32 elements either way
  static constexpr int kInBytes = kVec * FmtTraits<kIn>::kBits / 8;  // 4 to 16
  static constexpr int kInWords = kInBytes / 4;
  static constexpr int kOutElemBytes = kOut == Fmt::kFp32 ? 4 : 2;
  static constexpr int kOutBytes = kVec * kOutElemBytes;

  const CastBackParams& p;
  uint32_t chunks;  // per row
  uint32_t row_shift, col_shift;
  bool per_element;     // c == 1: one scale per column
  bool scale_rows_vec;  // a chunk's per-column scales are kVec contiguous, 16-byte aligned 4-byte words
  bool out_aligned;

  TK_DEV explicit CastBack(const CastBackParams& params) : p(params) {
    chunks = p.hidden / kVec;
    row_shift = log2_pow2(p.block_rows);
    // a whole-row block (perTokenCastBack with numPerChannels = H) need not be a power of two: every column has
    // block 0, and col >> 31 is 0 for every col < H ≤ 2^31
    col_shift = p.block_cols >= p.hidden ? 31u : log2_pow2(p.block_cols);
    per_element = p.block_cols == 1;
    // fp32 scales [nbm, H] or token-packed words [ceil(nbm/4), H] with unit column stride: element (m, j) is
    // word m'·s0 + j, and j of a chunk start is a multiple of kVec (16-byte loads of 4 scales)
    scale_rows_vec = (p.sf_kind == kSfFp32 || p.sf_kind == kSfPackedToken) && p.sf_stride1 == 1 &&
                     ((p.sf | (p.sf_stride0 * 4)) % kVecBytes) == 0;
    out_aligned = rows_aligned(p.out, p.out_row_stride * kOutElemBytes, kVecBytes);
  }

  // The kVec per-column scales of a chunk (c == 1).
  TK_DEV void column_scales(uint64_t row, uint32_t col, float (&s)[kVec]) const {
    const uint64_t m = row >> row_shift;
    if (scale_rows_vec) {
      const bool token = p.sf_kind == kSfPackedToken;
      const uint64_t word_row = token ? m / kUe8m0PerWord : m;
      const uint8_t* src = reinterpret_cast<const uint8_t*>(p.sf) + 4 * (word_row * p.sf_stride0 + col);
      const uint32_t byte_shift = 8 * static_cast<uint32_t>(m % kUe8m0PerWord);
#pragma unroll
      for (int q = 0; q < kVec / 4; ++q) {
        uint32_t w[4];
        ld_cached(src + 16 * q, w);
#pragma unroll
        for (int i = 0; i < 4; ++i) s[4 * q + i] = token ? decode_ue8m0(w[i] >> byte_shift) : u2f(w[i]);
      }
    } else {
      // any layout, one scale at a time; a rolled loop shifting into s[] keeps one copy of load_scale and s[] in
      // registers (this is the rare path: strided or unaligned per-channel scales)
#pragma unroll 1
      for (int i = 0; i < kVec; ++i) {
        const float v = load_scale(p.sf, p.sf_kind, p.sf_stride0, p.sf_stride1, m, col + i);
#pragma unroll
        for (int j = 0; j + 1 < kVec; ++j) s[j] = s[j + 1];
        s[kVec - 1] = v;
      }
    }
  }

  // The storage element of the chunk's block scale (c ≥ 16), loaded together with the chunk's codes.
  TK_DEV uint32_t block_scale_storage(uint64_t row, uint32_t col) const {
    return per_element ? 0u : scale_storage(p.sf, p.sf_kind, p.sf_stride0, p.sf_stride1, row >> row_shift, col >> col_shift);
  }

  TK_DEV void process(const uint32_t (&w)[kInWords], uint32_t raw_scale, uint64_t row, uint32_t col,
                      uint8_t* out_row) const {
    float s[kVec];
    if (per_element) {
      column_scales(row, col, s);
    } else {
      const float sc = decode_scale(p.sf_kind, raw_scale);
#pragma unroll
      for (int i = 0; i < kVec; ++i) s[i] = sc;
    }
    float q[kVec];
    decode_chunk<kIn, kVec>(w, q);
    float y[kVec];
#pragma unroll
    for (int i = 0; i < kVec; ++i) y[i] = mul_rn(q[i], s[i]);
    uint32_t o[kOutBytes / 4];
#pragma unroll
    for (int i = 0; i < kOutBytes / 4; ++i) {
      if constexpr (kOut == Fmt::kFp32) {
        o[i] = f2u(canonical_nan(y[i]));
      } else {
        o[i] = encode_bf16x2(y[2 * i], y[2 * i + 1]);
      }
    }
    store_chunk<kOutBytes>(out_row + static_cast<uint64_t>(col) * kOutElemBytes, o, out_aligned);
  }

  TK_DEV void run() const {
    // thread-private staging slots, [stage][item][thread]: the next unit's codes load while this one is computed
    __shared__ __align__(16) uint8_t stage_buf[kStages][kU][kBlockThreads][kInBytes];
    const uint32_t rows = p.num_tokens;
    const uint32_t lane = threadIdx.x % kWarpSize;
    const bool in_aligned = rows_aligned(p.data, p.data_row_stride, kInBytes);
    const RowTeam team(chunks);

    // Block scales travel with their codes, one register per chunk and stage; the pipeline is unrolled over the
    // two stages so that `st` is a compile-time index and the array stays in registers.
    uint32_t raw_scale[kStages][kU] = {};
    auto prefetch = [&](auto st, uint64_t row, uint32_t base) {
      const uint8_t* in_row = reinterpret_cast<const uint8_t*>(p.data) + row * p.data_row_stride;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t c = base + u * team.threads + lane;
        const bool live = c < chunks;
        stage_chunk<kInBytes, 1>(smem_addr(stage_buf[st][u][threadIdx.x]),
                                 live ? in_row + static_cast<uint64_t>(c) * kInBytes : in_row, live, in_aligned);
        raw_scale[st][u] = live ? block_scale_storage(row, c * kVec) : 0u;
      }
    };
    pipelined_units<kU, true>(team, rows, chunks, prefetch, [&](auto st, uint64_t row, uint32_t base) {
      uint8_t* out_row = reinterpret_cast<uint8_t*>(p.out) + row * p.out_row_stride * kOutElemBytes;
      // one copy of process per stage: a rolled loop, the scales shifting down a register queue
      uint32_t rs[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) rs[u] = raw_scale[st][u];
#pragma unroll 1
      for (int u = 0; u < kU; ++u) {
        const uint32_t c = base + u * team.threads + lane;
        if (c < chunks) {
          uint32_t w[kInWords];
          ld_shared(smem_addr(stage_buf[st][u][threadIdx.x]), w);
          process(w, rs[0], row, c * kVec, out_row);
        }
#pragma unroll
        for (int v = 0; v + 1 < kU; ++v) rs[v] = rs[v + 1];
      }
    });
  }
};

}  // namespace
}  // namespace tk

#define TK_CAST_BACK(in, IN, out, OUT)                                                                  \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::OUT>)                \
      tk_cast_back__##in##_##out(const __grid_constant__ CastBackParams p) {                          \
    tk::CastBack<tk::Fmt::IN, tk::Fmt::OUT>(p).run();                                                 \
  }

TK_CAST_BACK(e4m3, kE4m3, fp32, kFp32)
TK_CAST_BACK(e4m3, kE4m3, bf16, kBf16)
TK_CAST_BACK(e2m1, kE2m1, fp32, kFp32)
TK_CAST_BACK(e2m1, kE2m1, bf16, kBf16)

// perChannelCastFused of an e4m3 input with [1, 128] fp32 scales, R = 128, the tile staged in shared memory
// (branch perf16-pcf, docs/perf-notes/perf16-pcf.md). Numerics: per_channel_cast.cu, spec/quant.md §5.1-5.2.
//
// Symbol
//   tk_per_channel_cast__e4m3_r128_sm   data [T_out, H]; the host runs it only for perChannelCastFused of an
//                                       e4m3 input with numPerChannels 128 and 16-byte aligned x and data
//                                       (perChannelLaunchTuning.stagedE4m3)
//
// Launch geometry: the base e4m3 r128 kernel's (block.x 256, no dynamic shared memory, grid.x = ceilDiv(T_out,
// 128) · ceilDiv(H, 128), one CTA per 128 × 128 tile; any grid.x ≥ 1 is correct, the kernel is grid-stride).
//
// Why: the base kernel keeps a thread's 4 rows × 16 codes in registers, 16 KiB of reads per CTA and 64 registers,
// so 4 CTAs (64 KiB of reads) per SM, and every CTA's reads wait for its posToToken loads and then sit alone in
// front of its arithmetic; it measured ~50% of copy at 16384 × 7168, slower in absolute time than the bf16 gather
// that moves 1.5× the bytes through the same tile. Here the tile's codes go to shared memory by cp.async (no
// registers held for bytes in flight), so the kernel needs few registers and 8 CTAs fit per SM: 128 KiB of
// reads in flight per SM and twice the CTAs to overlap one CTA's wait with another's arithmetic.
//
// Phases of a tile:
//   1. Thread t loads the posToToken entries of rows t / 8 + 32 j (j < 4) and copies their 16-byte piece t % 8
//      of the tile's 128 columns into the staged tile by cp.async (a dead or zero row is written zeros and read
//      from nowhere); the first thread of each row (t % 8 == 0) loads the row's input scale into s_in (0 for a
//      dead or zero row, as the base kernel's s_in).
//   2. Column maxima: warp w reads rows 16w … 16w + 15, lane l columns 4l … 4l + 3 (one 32-bit word of a row per
//      lane, a whole 128-byte row per warp: conflict-free), d = fl(q · s_in) as the base kernel, maximumNumber
//      of |d|; the 8 warps' partial maxima go through shared memory, one thread per column reduces them, computes
//      (sf, inv), stores sf and publishes inv.
//   3. Cast: the same mapping; each lane re-reads its word, fl(fl(q · s_in) · inv), encodes, and stores 4 bytes
//      of the output row (a warp: one whole 128-byte piece of a row). Rows ≥ T_out are warp-uniform: skipped.
//
// Same bits as the base kernel by construction: the same helpers on the same values (decode_e4m3x2, mul_rn,
// abs_f / max_num over the same set of values from +0, sf_and_inv, encode_e4m3x4); a maximumNumber reduction
// over a set of non-NaN values is independent of its order. Tails: the base kernel's (dead rows read nothing and
// contribute 0). H % 128 == 0 (numPerChannels 128), so no column is ever ≥ H.
#define TK_PER_CHANNEL_CAST_NO_ENTRIES
#include "per_channel_cast.cu"

namespace tk {
namespace {

// Resident CTAs per SM the registers are sized for: 8 (≤ 32 registers; 8 × 21.5 KiB of static shared memory,
// with the carveout at 100%).
constexpr int kStagedMinBlocksPerSm = 8;

struct PerChannelStaged {
  static constexpr int kR = 128, kCols = 128;                           // tile: one scale block × 128 columns
  static constexpr int kRowWords = kCols / 4;                           // 32 code words per tile row
  static constexpr int kWarps = kBlockThreads / kWarpSize;              // 8
  static constexpr int kRowsPerWarp = kR / kWarps;                      // 16
  static constexpr int kPieces = kCols / 16;                            // 16-byte pieces per tile row: 8
  static constexpr int kLoadRows = kR * kPieces / kBlockThreads;        // rows a thread copies: 4
  static constexpr int kLoadRowStride = kBlockThreads / kPieces;        // 32
  static_assert(kRowWords == kWarpSize && kRowsPerWarp * kWarps == kR, "tile shape");

  struct Smem {
    uint32_t raw[kR * kRowWords];  // the tile's codes, row-major (16 KiB)
    float s_in[kR];                // input scale of each tile row (0: dead or zero row)
    float red[kWarps * kCols];     // partial column maxima [warp][column]
    float inv[kCols];              // inverse scale per column
  };

  const PerChannelCastParams& p;
  PerChannel<Fmt::kE4m3, 128, false> base;  // store_sf, nbm
  uint32_t col_tiles;

  TK_DEV explicit PerChannelStaged(const PerChannelCastParams& params) : p(params), base(params) {
    col_tiles = (p.hidden + kCols - 1) / kCols;
  }

  TK_DEV void run() const {
    __shared__ __align__(16) Smem s;
    const uint32_t lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const uint32_t piece = threadIdx.x % kPieces, lrow = threadIdx.x / kPieces;
    const uint64_t tiles = static_cast<uint64_t>(base.nbm) * col_tiles;
    for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const uint32_t m = static_cast<uint32_t>(tile / col_tiles);
      const uint32_t col0 = static_cast<uint32_t>(tile % col_tiles) * kCols;
      const uint64_t row0 = static_cast<uint64_t>(m) * kR;

      // 1. indices of the thread's rows (all loaded before any is used), the rows' pieces, their scales
      int64_t src[kLoadRows];
      {
        uint32_t raw[kLoadRows];
#pragma unroll
        for (int j = 0; j < kLoadRows; ++j) {
          const uint64_t row = row0 + lrow + kLoadRowStride * j;
          raw[j] = 0u;
          if (row < p.out_tokens) {
            raw[j] = p.pos_to_token == 0 ? static_cast<uint32_t>(row)
                                         : ld_u32(reinterpret_cast<const uint8_t*>(p.pos_to_token) + 4 * row);
          }
        }
        const bool reporter = piece == 0 && col0 == 0;
#pragma unroll
        for (int j = 0; j < kLoadRows; ++j) {
          const bool live = row0 + lrow + kLoadRowStride * j < p.out_tokens;
          const int32_t si = static_cast<int32_t>(raw[j]);
          const bool bad = p.pos_to_token != 0 && live && si >= 0 && static_cast<uint32_t>(si) >= p.num_tokens;
          report_fault_warp(p.error_word, p.op_id, kCondPosOutOfRange, bad && reporter);
          src[j] = (!live || si < 0 || bad) ? -1 : si;
        }
      }
#pragma unroll
      for (int j = 0; j < kLoadRows; ++j) {
        const uint32_t r = lrow + kLoadRowStride * j;
        const uint8_t* a = reinterpret_cast<const uint8_t*>(p.x);
        if (src[j] >= 0) a += static_cast<uint64_t>(src[j]) * p.hidden + col0 + 16 * piece;
        cp_async<16>(smem_addr(&s.raw[r * kRowWords + 4 * piece]), a, src[j] >= 0);
      }
      cp_async_commit();
      if (piece == 0) {
        const uint32_t k_in = col0 / p.num_per_channels;
#pragma unroll
        for (int j = 0; j < kLoadRows; ++j) {
          s.s_in[lrow + kLoadRowStride * j] =
              src[j] >= 0 ? load_scale(p.x_sf, p.x_sf_kind, p.x_sf_stride0, p.x_sf_stride1, static_cast<uint64_t>(src[j]), k_in)
                          : 0.0f;
        }
      }
      cp_async_wait<0>();
      __syncthreads();

      // 2. column maxima of |fl(q · s_in)| (maximumNumber: NaN ignored, §1.1-5)
      float cm[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 8
      for (int i = 0; i < kRowsPerWarp; ++i) {
        const uint32_t r = warp * kRowsPerWarp + i;
        const uint32_t w = s.raw[r * kRowWords + lane];
        const float sc = s.s_in[r];
        float v[4];
        decode_chunk<Fmt::kE4m3, 4>(&w, v);
#pragma unroll
        for (int e = 0; e < 4; ++e) cm[e] = max_num(cm[e], abs_f(mul_rn(v[e], sc)));
      }
      *reinterpret_cast<float4*>(&s.red[warp * kCols + 4 * lane]) = make_float4(cm[0], cm[1], cm[2], cm[3]);
      __syncthreads();
      if (threadIdx.x < static_cast<uint32_t>(kCols)) {
        const uint32_t q = threadIdx.x;
        float a = 0.0f;
#pragma unroll
        for (int g = 0; g < kWarps; ++g) a = max_num(a, s.red[g * kCols + q]);
        const uint32_t c = col0 + q;
        float inv = 0.0f;
        if (c < p.hidden) {
          const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, kE4m3Max, p.flags);
          base.store_sf(m, c, si.stored);
          inv = si.inv;
        }
        s.inv[q] = inv;
      }
      __syncthreads();

      // 3. cast: fl(fl(q · s_in) · inv), encoded; live rows only (warp-uniform)
      const float4 iv = *reinterpret_cast<const float4*>(&s.inv[4 * lane]);
      const float inv[4] = {iv.x, iv.y, iv.z, iv.w};
      const uint64_t wrow0 = row0 + warp * kRowsPerWarp;  // the warp's first row
      const uint32_t n_live = wrow0 < p.out_tokens ? static_cast<uint32_t>(p.out_tokens - wrow0) : 0u;
      uint8_t* out = reinterpret_cast<uint8_t*>(p.data) + wrow0 * p.hidden + col0 + 4 * lane;
#pragma unroll 8
      for (int i = 0; i < kRowsPerWarp; ++i, out += p.hidden) {
        const uint32_t r = warp * kRowsPerWarp + i;
        if (static_cast<uint32_t>(i) >= n_live) break;
        const uint32_t w = s.raw[r * kRowWords + lane];
        const float sc = s.s_in[r];
        float v[4];
        decode_chunk<Fmt::kE4m3, 4>(&w, v);
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = mul_rn(mul_rn(v[e], sc), inv[e]);
        uint32_t o;
        encode_chunk<Fmt::kE4m3, 4>(v, &o);
        *reinterpret_cast<uint32_t*>(out) = o;
      }
      if (tile + gridDim.x < tiles) __syncthreads();  // this tile's readers of s are done before the next is staged
    }
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kStagedMinBlocksPerSm)
    tk_per_channel_cast__e4m3_r128_sm(const __grid_constant__ PerChannelCastParams p) {
  tk::PerChannelStaged(p).run();
}

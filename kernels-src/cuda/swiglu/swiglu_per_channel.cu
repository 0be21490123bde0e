// swigluForwardAndPerChannelCastAndTranspose (spec/quant.md §8.6, 1.0 semantics): the SwiGLU forward value of
// §8.3 (clamp by selects, no weights, no expert layout) rounded to bf16, then the per-channel e4m3 cast of §5.1
// on that activation, data written transposed (§5.3) or not. For row t and column j < H of x bf16 [T, 2H]:
//
//   g, u = x[t][j], x[t][H + j];  with clampValue c: g = (g > c) ? c : g;  u = (u > c) ? c : ((u < −c) ? −c : u)
//   a    = bf16(fl(fl(g / fl(1 + expf(−g))) · u))                          (§8.3, then §1.5)
//   per column j and block m of R = numPerTokens rows: amax = max |a|, (sf, inv) = sfAndInv(amax) (§2.3),
//   data = encodeE4m3(fl(a · inv)),  sf[m][j] fp32
//
// Symbols
//   tk_swiglu_per_channel_cast__bf16_r<R>                R ∈ {32, 128}: data [T, H]   (withoutTranspose)
//   tk_swiglu_per_channel_cast_and_transpose__bf16_r<R>  R ∈ {32, 128}: data [H, T]
//   tk_swiglu_per_channel_cast__bf16_an                  R and the layout from flags; aligned views, no clamp
//                                                        (section "`_an`" at the end, perf32-spc)
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, the kernels are grid-stride):
//
//   kernel   block.x  dynamic smem  grid.x
//   all      256      0             min(tiles, 12 · SMs),  tiles = (T / R) · ceilDiv(H, C)
//   _an      256      0             min(tiles, 4 · SMs) on sm_90, min(tiles, 3 · SMs) on sm_100 (one wave; the A/B
//                                   also runs it at 12 · SMs)
//
//   A tile is R rows (one scale block) × C columns, C = 8 · 1024 / R (64 for R = 128, 256 for R = 32). A thread
//   owns 4 consecutive rows × 8 columns: per row one 16-byte chunk of gate and one of up (128 bytes of loads in
//   flight per thread, 32 KiB per CTA), so a warp reads whole 128-byte lines. The grid is persistent (12 · SMs CTAs:
//   3 waves of 4 resident CTAs per SM on sm_90, 4 waves of 3 on sm_100) because every CTA first copies its shared-memory table of silu(g) = g / (1 + e^(−g)) over every bf16 gate
//   (common/silu_bf16.cuh; 34 KiB from common/bf16_gate_tables.h, computed on the host, where computing its 8704
//   expf_cr and divisions per CTA cost about the arithmetic of one tile); after that silu(g) is one shared-memory
//   load and ~10 integer, multiply and select operations (two gates share their offset arithmetic; the exact
//   fix-up outside the window is g · k, k from the edge entry: silu_bf16_fix) instead of ~17 binary64 operations,
//   which would cost about as much time as the memory traffic, and a division, whose exact-rounding check sends a warp to a
//   called slow path whenever one lane's gate is ≤ −87.3. Static shared memory: the table (34 KiB), the
//   column-amax exchange or (its lifetime does not overlap) the transposed tile of codes (R · C bytes = 8 KiB),
//   and the tile's inverses (4 · C bytes).
//
// The activation stays in registers (as bf16) between the amax and the quantization. The column amax crosses
// row groups through shared memory: each thread writes its 8 column maxima, one thread per column reduces the R/4
// partials, computes (sf, inv), stores sf and publishes inv. Transposed, the codes go through shared memory and
// are written 16 tokens × 4 columns per thread after 4 × 4 byte transposes.
//
// Tails: T % R == 0 (T % 128 == 0), so every row of a tile exists; columns ≥ H (H % 64 == 0 but C may be 256)
// read nothing, compute zeros and store nothing. x views whose base is not 16-byte aligned take element loads
// (rows are multiples of 256 bytes); the outputs are fresh allocations, checked all the same.
// No value inside a device tensor steers an access: there is nothing to guard (DESIGN §6).
#include "../common/bf16_gate_tables.h"
#include "../common/chunk.cuh"
#include "../common/code_tile.cuh"
#include "../common/codec.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/reduce.cuh"
#include "../common/scale.cuh"
#include "../common/silu_bf16.cuh"
#include "../generated/swiglu_per_channel_params.h"

namespace tk {
namespace {

// SWIGLU_PER_CHANNEL_FLAG of ops/quant/swiglu_per_channel.params.ts (roundSf is SfFlag's kSfRound bit)
enum SwigluPerChannelFlag : uint32_t { kRoundSf = 1, kClamp = 2 };
static_assert(kRoundSf == kSfRound, "roundSf is passed to sf_and_inv as is");

constexpr int kBlockThreads = 256;
constexpr int kRowsPerThread = 4;
constexpr int kV = kVecBytes / 2;  // columns per thread: one 16-byte chunk of bf16
// Resident CTAs per SM the register budget is sized for: 4 on sm_90 (≤ 64 registers without spills, 4 × 43 KiB of
// shared memory: 32 warps per SM, 128 KiB of loads in flight while all four load), 3 on sm_100 (≤ 80 registers;
// at 64 its code spills). The host's grid of 12 · SMs is a whole number of waves either way.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr int kMinBlocks = 3;
#else
constexpr int kMinBlocks = 4;
#endif

template <int kR, bool kTranspose>
struct SwigluPerChannel {
  static constexpr int kRowGroups = kR / kRowsPerThread;         // 32 or 8
  static constexpr int kColGroups = kBlockThreads / kRowGroups;  // 8 or 32
  static constexpr int kCols = kColGroups * kV;                  // tile columns C: 64 or 256
  static constexpr int kPieceStride = kColGroups * 4;            // floats between a thread's 4-column pieces
  using Codes = CodeTile<kR, kCols, kBlockThreads>;
  static_assert(kCols <= kBlockThreads, "one reducing thread per column");

  struct Smem {
    float silu_table[kExpNegBf16TableSize];  // silu(g) = g / (1 + e^(−g)) of every bf16 gate (common/silu_bf16.cuh)
    union {
      float red[kRowGroups * kCols];      // partial column maxima, [row group][piece-major column position]
      uint32_t codes[Codes::kWords];      // transposed: the tile's codes (common/code_tile.cuh)
    };
    float inv[kCols];  // inverse scale per column position
  };

  const SwigluPerChannelParams& p;

  TK_DEV explicit SwigluPerChannel(const SwigluPerChannelParams& params) : p(params) {}

  // Column (inside the tile) of column position q: positions are piece-major so that the exchange through shared
  // memory is conflict-free (a quarter-warp writes 8 consecutive 16-byte pieces).
  static TK_DEV uint32_t column_of(uint32_t q) { return (q % kPieceStride) / 4 * kV + (q / kPieceStride) * 4 + q % 4; }

  TK_DEV void run() const {
    __shared__ __align__(16) Smem s;
    copy_bf16_gate_table(s.silu_table, kSiluBf16Table);
    const bool clamp = p.flags & kClamp;
    const float c = p.clamp;
    const float silu_clamped = clamp ? silu_cr(c) : 0.0f;  // silu of a clamped gate (g = c, any binary32)
    const uint32_t H = p.hidden;
    const uint32_t col_tiles = (H + kCols - 1) / kCols;
    const uint64_t tiles = static_cast<uint64_t>(p.num_tokens / kR) * col_tiles;
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    const uint64_t x_row = 4ull * H;  // bytes of one row of x (2H bf16)
    const bool x_aligned = (p.x % kVecBytes) == 0;
    const bool out_aligned = (p.data % kVecBytes) == 0;
    const uint32_t rg = threadIdx.x / kColGroups, cg = threadIdx.x % kColGroups;
    __syncthreads();  // the table is filled

    for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const uint32_t m = static_cast<uint32_t>(tile / col_tiles);
      const uint32_t col0 = static_cast<uint32_t>(tile % col_tiles) * kCols;
      const uint32_t col = col0 + cg * kV;
      const bool live = col < H;
      const uint64_t row0 = static_cast<uint64_t>(m) * kR + kRowsPerThread * rg;

      uint32_t gw[kRowsPerThread][4], uw[kRowsPerThread][4];
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
#pragma unroll
        for (int k = 0; k < 4; ++k) gw[i][k] = uw[i][k] = 0;
        if (live) {
          const uint8_t* gp = x + (row0 + i) * x_row + 2ull * col;
          load_chunk<kVecBytes, 2>(gp, gw[i], x_aligned);
          load_chunk<kVecBytes, 2>(gp + 2ull * H, uw[i], x_aligned);
        }
      }

      // the bf16 activation (§8.6) and the column maxima over the thread's rows (maximumNumber: NaN ignored)
      uint32_t aw[kRowsPerThread][kV / 2];
      float cm[kV];
#pragma unroll
      for (int e = 0; e < kV; ++e) cm[e] = 0.0f;
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        // a row's 8 lookups first, the clamp test outside the element loop (one basic block: the lookups overlap),
        // the bf16 pairs by the hardware conversion (encode_bf16x2: encode_bf16's bytes)
        // (the entries' offsets two gates a word, with each half's outside-the-window flag: exp_neg_bf16x2_offsets)
        float sl[kV], u[kV];
        bool out[kV];
#pragma unroll
        for (int k = 0; k < kV / 2; ++k) {
          const Bf16x2Offsets o = exp_neg_bf16x2_offsets(gw[i][k]);
          sl[2 * k] = bf16_table_at(s.silu_table, o.lo);
          sl[2 * k + 1] = bf16_table_at(s.silu_table, o.hi);
          out[2 * k] = (o.outside & 0xffffu) != 0;
          out[2 * k + 1] = o.outside > 0xffffu;
        }
#pragma unroll
        for (int e = 0; e < kV; ++e) {
          u[e] = element<Fmt::kBf16>(uw[i], e);
          sl[e] = silu_bf16_fix(element<Fmt::kBf16>(gw[i], e), sl[e], out[e]);  // fl(g / fl(1 + expf(−g))), NaN for NaN
        }
        if (clamp) {
#pragma unroll
          for (int e = 0; e < kV; ++e) {
            const uint32_t gb = (gw[i][e / 2] >> (16 * (e % 2))) & 0xffffu;
            sl[e] = select_f32(u2f(gb << 16) > c, silu_clamped, sl[e]);
            u[e] = select_f32(u[e] > c, c, select_f32(u[e] < -c, -c, u[e]));
          }
        }
#pragma unroll
        for (int k = 0; k < kV / 2; ++k) {
          aw[i][k] = encode_bf16x2(mul_rn(sl[2 * k], u[2 * k]), mul_rn(sl[2 * k + 1], u[2 * k + 1]));
          cm[2 * k] = max_num(cm[2 * k], abs_f(bf16_lo(aw[i][k])));
          cm[2 * k + 1] = max_num(cm[2 * k + 1], abs_f(bf16_hi(aw[i][k])));
        }
      }

      __syncthreads();  // the previous tile's readers of s.codes and s.inv are done
#pragma unroll
      for (int q = 0; q < kV / 4; ++q) {
        const uint32_t pos = rg * kCols + q * kPieceStride + cg * 4;
        const uint32_t pw[4] = {f2u(cm[4 * q]), f2u(cm[4 * q + 1]), f2u(cm[4 * q + 2]), f2u(cm[4 * q + 3])};
        st_shared(smem_addr(&s.red[pos]), pw);
      }
      __syncthreads();
      if (threadIdx.x < static_cast<uint32_t>(kCols)) {
        const uint32_t q = threadIdx.x;
        float a = 0.0f;
#pragma unroll 8
        for (int r = 0; r < kRowGroups; ++r) a = max_num(a, s.red[r * kCols + q]);
        const uint32_t jc = col0 + column_of(q);
        float inv = 0.0f;
        if (jc < H) {
          const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, kE4m3Max, p.flags & kRoundSf);
          st_u32(reinterpret_cast<uint8_t*>(p.sf) + 4 * (static_cast<uint64_t>(m) * H + jc), si.stored);
          inv = si.inv;
        }
        s.inv[q] = inv;
      }
      __syncthreads();  // s.inv is published; s.red is dead (s.codes may be written)

      float inv[kV];
#pragma unroll
      for (int q = 0; q < kV / 4; ++q) {
        uint32_t iw[4];
        ld_shared(smem_addr(&s.inv[q * kPieceStride + cg * 4]), iw);
#pragma unroll
        for (int e = 0; e < 4; ++e) inv[4 * q + e] = u2f(iw[e]);
      }
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        float v[kV];
#pragma unroll
        for (int e = 0; e < kV; ++e) v[e] = mul_rn(element<Fmt::kBf16>(aw[i], e), inv[e]);
        uint32_t o[kV / 4];
        encode_chunk<Fmt::kE4m3, kV>(v, o);
        if constexpr (kTranspose) {
          // columns ≥ H hold codes of zeros; the write-out skips them
          const uint32_t row = kRowsPerThread * rg + i;
          st_shared(smem_addr(&s.codes[Codes::word(row, cg * (kV / 4))]), o);  // 2 adjacent words
        } else if (live) {
          store_chunk<kV>(reinterpret_cast<uint8_t*>(p.data) + (row0 + i) * H + col, o, out_aligned);
        }
      }
      if constexpr (kTranspose) {
        __syncthreads();
        uint8_t* base = reinterpret_cast<uint8_t*>(p.data) + static_cast<uint64_t>(m) * kR;
        const uint32_t valid = H - col0 < static_cast<uint32_t>(kCols) ? H - col0 : kCols;
        Codes::store_transposed(s.codes, valid, [&](uint32_t c) { return base + static_cast<uint64_t>(col0 + c) * p.num_tokens; },
                                out_aligned);
      }
    }
  }
};

// ---- `_an` (perf32-spc): one kernel for both R and both layouts, for aligned views without a clamp ----------------
//
// Main's geometry and arithmetic (a thread owns 4 rows × 8 columns of a tile of R rows × C = 8192 / R columns; the
// same silu table, row code, sf_and_inv and encode), with what the roofline's launches never use taken out and the
// column amax made cheaper:
//   - x and data are 16-byte aligned (the host checks): only the 16-byte loads and the 8- and 16-byte stores are
//     compiled, not main's element-wide fallbacks, whose loads it issues predicated off on every row;
//   - no clamp (the host sends clamped calls to main's kernels): no clamp selects and no binary64 silu_cr;
//   - the activation's bf16 pairs keep the hardware's NaN pattern: they only feed the amax, which drops a NaN, and
//     the e4m3 encode, which gives 0x7F for any NaN, so the canonical NaN fix-up of encode_bf16x2 is not needed;
//   - column maxima as bf16 pairs (max.bf16x2 of |a|, as perChannelCastAndTranspose's `_rt`); with R = 128 a
//     warp's 4 row groups are combined by 2 xor shuffles first, so with either R the exchange holds one partial per
//     warp (8 per column) and the column reduce reads 8 (main: 32 with R = 128, on 2 of 8 warps).
// R and the layout are run-time values (flags kRows32 / kTransposed) so that one copy of the row code serves the
// three roofline shapes: the package has room for one kernel of this size, not three.

// SWIGLU_PER_CHANNEL_FLAG rows32 / transposed of ops/quant/swiglu_per_channel.params.ts (main's kernels ignore them)
enum SwigluPerChannelAnFlag : uint32_t { kRows32 = 4, kTransposed = 8 };

constexpr int kAnWarps = kBlockThreads / kWarpSize;  // partial maxima per column: one per warp
constexpr int kAnTileElems = 8 * 1024;               // R · C

struct SwigluPerChannelAn {
  struct Smem {
    float silu_table[kExpNegBf16TableSize];  // as main's kernels
    union {
      float red[kAnWarps * kAnTileElems / 32];  // [warp][piece-major column position], C ≤ 256 positions
      uint32_t codes[kAnTileElems / 4];         // transposed: the tile's codes, CodeTile's layout with run-time C
    };
    float inv[kAnTileElems / 32];  // inverse scale per column position
  };

  const SwigluPerChannelParams& p;

  TK_DEV explicit SwigluPerChannelAn(const SwigluPerChannelParams& params) : p(params) {}

  TK_DEV void run() const {
    __shared__ __align__(16) Smem s;
    copy_bf16_gate_table(s.silu_table, kSiluBf16Table);
    const bool r32 = p.flags & kRows32;
    const bool transposed = p.flags & kTransposed;
    // geometry of main's SwigluPerChannel<R, ·>: column groups 8 / 32, C = 64 / 256, piece stride 32 / 128 floats
    const uint32_t R = r32 ? 32 : 128;
    const uint32_t cg_bits = r32 ? 5 : 3;
    const uint32_t cols = 8u << cg_bits;
    const uint32_t piece_stride = 4u << cg_bits;
    const uint32_t H = p.hidden;
    const uint32_t col_tiles = (H + cols - 1) / cols;
    const uint64_t tiles = static_cast<uint64_t>(p.num_tokens / R) * col_tiles;
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    const uint64_t x_row = 4ull * H;  // bytes of one row of x (2H bf16)
    const uint32_t rg = threadIdx.x >> cg_bits, cg = threadIdx.x & ((1u << cg_bits) - 1);
    const uint32_t warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    __syncthreads();  // the table is filled

    for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const uint32_t m = static_cast<uint32_t>(tile / col_tiles);
      const uint32_t col0 = static_cast<uint32_t>(tile % col_tiles) * cols;
      const uint32_t col = col0 + cg * kV;
      const bool live = col < H;
      const uint64_t row0 = static_cast<uint64_t>(m) * R + kRowsPerThread * rg;

      uint32_t gw[kRowsPerThread][4], uw[kRowsPerThread][4];
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
#pragma unroll
        for (int k = 0; k < 4; ++k) gw[i][k] = uw[i][k] = 0;
        if (live) {
          const uint8_t* gp = x + (row0 + i) * x_row + 2ull * col;
          load_chunk<kVecBytes, 2>(gp, gw[i], true);
          load_chunk<kVecBytes, 2>(gp + 2ull * H, uw[i], true);
        }
      }

      // the bf16 activation (§8.6) and the column maxima over the thread's rows, as main's row code without clamp
      uint32_t aw[kRowsPerThread][kV / 2];
      uint32_t cw[kV / 2];  // |a| maxima, bf16 pairs: ≥ +0 and never NaN (max.bf16x2 drops a NaN operand)
#pragma unroll
      for (int k = 0; k < kV / 2; ++k) cw[k] = 0;
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        float sl[kV], u[kV];
        bool out[kV];
#pragma unroll
        for (int k = 0; k < kV / 2; ++k) {
          const Bf16x2Offsets o = exp_neg_bf16x2_offsets(gw[i][k]);
          sl[2 * k] = bf16_table_at(s.silu_table, o.lo);
          sl[2 * k + 1] = bf16_table_at(s.silu_table, o.hi);
          out[2 * k] = (o.outside & 0xffffu) != 0;
          out[2 * k + 1] = o.outside > 0xffffu;
        }
#pragma unroll
        for (int e = 0; e < kV; ++e) {
          u[e] = element<Fmt::kBf16>(uw[i], e);
          sl[e] = silu_bf16_fix(element<Fmt::kBf16>(gw[i], e), sl[e], out[e]);  // fl(g / fl(1 + expf(−g))), NaN for NaN
        }
#pragma unroll
        for (int k = 0; k < kV / 2; ++k) {
          aw[i][k] = encode_bf16x2_nan_unfixed(mul_rn(sl[2 * k], u[2 * k]), mul_rn(sl[2 * k + 1], u[2 * k + 1]));
          cw[k] = max_bf16x2(cw[k], aw[i][k] & 0x7fff7fffu);
        }
      }
      if (!r32) {
        // R = 128: lanes cg, cg + 8, cg + 16, cg + 24 hold the same columns for the warp's 4 row groups
#pragma unroll
        for (int d = 8; d < kWarpSize; d *= 2) {
#pragma unroll
          for (int k = 0; k < kV / 2; ++k) cw[k] = max_bf16x2(cw[k], __shfl_xor_sync(kFullWarpMask, cw[k], d));
        }
      }

      __syncthreads();  // the previous tile's readers of s.codes and s.inv are done
      if (lane < (1u << cg_bits)) {  // one row group's lanes per warp (R = 32: the whole warp)
#pragma unroll
        for (int q = 0; q < kV / 4; ++q) {
          const uint32_t pos = warp * cols + q * piece_stride + cg * 4;
          const uint32_t pw[4] = {f2u(bf16_lo(cw[2 * q])), f2u(bf16_hi(cw[2 * q])), f2u(bf16_lo(cw[2 * q + 1])),
                                  f2u(bf16_hi(cw[2 * q + 1]))};
          st_shared(smem_addr(&s.red[pos]), pw);
        }
      }
      __syncthreads();
      if (threadIdx.x < cols) {
        const uint32_t q = threadIdx.x;
        float a = 0.0f;
#pragma unroll
        for (int r = 0; r < kAnWarps; ++r) a = max_num(a, s.red[r * cols + q]);
        // main's column_of: positions are piece-major
        const uint32_t jc = col0 + (q & (piece_stride - 1)) / 4 * kV + (q >> (cg_bits + 2)) * 4 + q % 4;
        float inv = 0.0f;
        if (jc < H) {
          const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, kE4m3Max, p.flags & kRoundSf);
          st_u32(reinterpret_cast<uint8_t*>(p.sf) + 4 * (static_cast<uint64_t>(m) * H + jc), si.stored);
          inv = si.inv;
        }
        s.inv[q] = inv;
      }
      __syncthreads();  // s.inv is published; s.red is dead (s.codes may be written)

      float inv[kV];
#pragma unroll
      for (int q = 0; q < kV / 4; ++q) {
        uint32_t iw[4];
        ld_shared(smem_addr(&s.inv[q * piece_stride + cg * 4]), iw);
#pragma unroll
        for (int e = 0; e < 4; ++e) inv[4 * q + e] = u2f(iw[e]);
      }
      const uint32_t words_per_row = cols / 4;
      uint32_t o[kRowsPerThread][kV / 4];
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        float v[kV];
#pragma unroll
        for (int e = 0; e < kV; ++e) v[e] = mul_rn(element<Fmt::kBf16>(aw[i], e), inv[e]);
        encode_chunk<Fmt::kE4m3, kV>(v, o[i]);
      }
      if (transposed) {
        // columns ≥ H hold codes of zeros; the write-out skips them. The thread's 4 rows lie in one 16-row segment,
        // so they share the swizzle: row i's 2 adjacent words are i rows after row 0's.
        const uint32_t a0 = smem_addr(&s.codes[code_word(kRowsPerThread * rg, cg * (kV / 4), words_per_row)]);
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) st_shared(a0 + 4 * words_per_row * i, o[i]);
        __syncthreads();
        store_codes_transposed(s.codes, m, col0, R, words_per_row);
      } else if (live) {
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) store_chunk<kV>(reinterpret_cast<uint8_t*>(p.data) + (row0 + i) * H + col, o[i], true);
      }
    }
  }

  // CodeTile<R, C, 256>::word with C a run-time value (16 or 64 words a row).
  static TK_DEV uint32_t code_word(uint32_t row, uint32_t w, uint32_t words_per_row) {
    const uint32_t swizzle = ((row / 16) * (words_per_row >= 64 ? 16 : 4)) & (words_per_row - 1);
    return row * words_per_row + (w ^ swizzle);
  }

  // CodeTile<R, C, 256>::store_transposed of the tile's columns < H with run-time R and C: 16 tokens × 4 columns per
  // unit, R / 16 · C / 4 = 128 units either way.
  TK_DEV void store_codes_transposed(const uint32_t* tile, uint32_t m, uint32_t col0, uint32_t R, uint32_t words_per_row) const {
    const uint32_t row_segs = R / 16;
    const uint32_t valid = p.hidden - col0 < 4 * words_per_row ? p.hidden - col0 : 4 * words_per_row;
    uint8_t* base = reinterpret_cast<uint8_t*>(p.data) + static_cast<uint64_t>(m) * R;
    for (uint32_t unit = threadIdx.x; unit < words_per_row * row_segs; unit += kBlockThreads) {
      const uint32_t rs = unit % row_segs, cq = unit / row_segs;
      const uint32_t* seg = tile + code_word(16 * rs, cq, words_per_row);  // the segment's 16 rows share the swizzle
      uint32_t o[4][4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        uint32_t a[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) a[j] = seg[(4 * q + j) * words_per_row];
        // byte b of a[j] is (row j, column b); o[b][q] gathers byte b of a[0 … 3]
        const uint32_t lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
        const uint32_t lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
        o[0][q] = __byte_perm(lo01, lo23, 0x5410);
        o[1][q] = __byte_perm(lo01, lo23, 0x7632);
        o[2][q] = __byte_perm(hi01, hi23, 0x5410);
        o[3][q] = __byte_perm(hi01, hi23, 0x7632);
      }
      uint8_t* dst = base + static_cast<uint64_t>(col0 + 4 * cq) * p.num_tokens + 16 * rs;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        if (4 * cq + b < valid) store_chunk<16>(dst, o[b], true);
        dst += p.num_tokens;
      }
    }
  }
};

}  // namespace
}  // namespace tk

#define TK_SWIGLU_PER_CHANNEL(name, r, transpose)                                                           \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocks) name##_r##r(             \
      const __grid_constant__ SwigluPerChannelParams p) {                                                   \
    tk::SwigluPerChannel<r, transpose>(p).run();                                                            \
  }

TK_SWIGLU_PER_CHANNEL(tk_swiglu_per_channel_cast__bf16, 32, false)
TK_SWIGLU_PER_CHANNEL(tk_swiglu_per_channel_cast__bf16, 128, false)
TK_SWIGLU_PER_CHANNEL(tk_swiglu_per_channel_cast_and_transpose__bf16, 32, true)
TK_SWIGLU_PER_CHANNEL(tk_swiglu_per_channel_cast_and_transpose__bf16, 128, true)

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocks) tk_swiglu_per_channel_cast__bf16_an(
    const __grid_constant__ SwigluPerChannelParams p) {
  tk::SwigluPerChannelAn(p).run();
}

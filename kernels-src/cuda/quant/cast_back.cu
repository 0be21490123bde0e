// Block dequantization (spec/quant.md §6, §2.6): castBack and perTokenCastBack.
//   out[t][j] = fl(decode(q[t][j]) · s(⌊t/r⌋, ⌊j/c⌋)), then fp32 as is or bf16 by §1.5 RNE (NaN → 0x7FC0).
//
// Symbols: tk_cast_back__<in>_<out>, in ∈ {e4m3, e2m1}, out ∈ {fp32, bf16}.
//
// Launch geometry (any grid.x ≥ 1 is correct: grid-stride):
//
//   kernel                     block.x  dynamic smem  grid.x
//   tk_cast_back__*_bf16       256      0             min(ceilDiv(T, R), 10 · SMs)   (two waves of 5 blocks per SM)
//   tk_cast_back__*_fp32       256      0             ceilDiv(T, R)                   (no cap: measured faster uncapped)
//   tk_cast_back_seg__e4m3_bf16 256     0             T · ceilDiv(H / 8, 512)         (one row segment per block)
//   (the segmented kernel with programmatic dependent launch, round 10: launched with the PDL attribute while
//   config.pdl is set; run_segments)
//
//   The host takes the segmented kernel for e4m3 → bf16 when H / 8 ≥ 256 (ops/quant/cast_back.ts; fp32 output keeps
//   the row teams, at 92% of copy; an fp32-output segmented instance was never selected and is not built); no shared memory, launch bound 8 (32 / 30 registers on sm_90a / sm_100a, no spills):
//   64 warps per SM, 2 pieces (16 codes for bf16, 8 for fp32) loaded per thread before any is computed.
//   L2 hints (flags bits kHint*, common/load_hint.cuh): the segmented kernels' code loads of block scales (c ≥ 16)
//   carry .L2::128B / .L2::256B and / or an L2::evict_first policy; the per-channel path and the row-team kernels
//   ignore the bits. The host sets .L2::256B for e4m3 → bf16 (measured +1.8 to +5.9 points, perf5-hint.md), no bit
//   otherwise. Same bytes either way.
//   R = 8 / w, w = min(8, nextPow2(ceilDiv(H / V, 32))), V = kVecOf (8 for bf16 out, 4 for e4m3 → fp32, 8 for
//   e2m1 → fp32); SMs = multiprocessors. Static shared memory 16 KiB (e4m3 in) / 8 KiB (e2m1 in); launch bound 5
//   (48 registers, no spills on sm_90a and sm_100a): 40 warps per SM.
//   History (H200, 16384 × 7168): with 16-element pieces (two 16-byte stores per lane at a 32-byte lane stride),
//   72–80 registers and 3 blocks per SM, e4m3 → bf16 measured 76–79% of the large-memcpy bandwidth at [128,128]
//   and per-token [1,128] (torch.compile: 88–94%), e4m3 → fp32 83%, e2m1 → fp32 90%.
//
// Block shapes (block_rows r, block_cols c) are powers of two: per-token [1, c], per-block [r, c], per-channel
// [r, 1]. With c ≥ 16 the elements of a thread's piece share one scale; with c = 1 every element has its own,
// read with 16-byte loads when the scale row is contiguous and aligned, element by element otherwise.
// e2m1 → bf16 with a finite power-of-two (or zero) block scale, MXFP4's case, decodes 8 codes through prmt byte
// tables and scales them with bf16x2 multiplies, exact there (common/e2m1_fast.cuh); other scales decode per value.
// fp32 outputs leave NaN as 0x7FC00000 (one pattern, as the CPU reference writes it; the GPU multiply would give
// 0x7FFFFFFF).
#include "../common/chunk.cuh"
#include "../common/e2m1_fast.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/load_hint.cuh"
#include "../common/scale.cuh"
#include "../common/work.cuh"
#include "../generated/quant_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
// Resident blocks per SM the register budget is sized for: 5 (≤ 48 registers). 6 (≤ 40) spills 8–128 bytes, the
// per-channel path (4 scales of its own per group) being the largest user.
constexpr int kMinBlocksPerSm = 5;
constexpr int kStages = 2;        // units staged at once: the one computed and the next

// Elements per thread piece: one 16-byte store of output (8 bf16 or 4 fp32), so that a warp's store covers
// 512 contiguous bytes and every 32-byte sector it writes is written whole; e2m1 → fp32 takes 8 (32 output bytes,
// two stores a lane apart) because 4 e2m1 codes are 2 bytes, below the 4-byte minimum of cp.async.
template <Fmt kIn, Fmt kOut>
constexpr int kVecOf = kOut == Fmt::kBf16 ? 8 : kIn == Fmt::kE4m3 ? 4 : 8;

template <Fmt kIn, Fmt kOut>
struct CastBack {
  // A piece holds kVec consecutive elements of a row; consecutive lanes take consecutive pieces, so the codes a
  // warp loads (128–256 bytes) and the outputs it stores (512 bytes) are contiguous. H % 64 == 0 keeps pieces
  // inside rows and c ≥ 16 keeps them inside scale blocks. The 16-element pieces of the previous version stored
  // 2 × 16 bytes per lane at a 32-byte lane stride: every store instruction wrote half of 32 sectors (measured on
  // an H200: 76–79% of memcpy for e4m3 → bf16, where torch.compile's 8-element pieces reach 88–92%).
  static constexpr int kVec = kVecOf<kIn, kOut>;
  static constexpr int kU = 32 / kVec;  // pieces per thread per unit: 32 elements, 16 or 32 staged bytes
  static constexpr int kInBytes = kVec * FmtTraits<kIn>::kBits / 8;  // 4 or 8
  static constexpr int kInWords = kInBytes / 4;
  static constexpr int kOutElemBytes = kOut == Fmt::kFp32 ? 4 : 2;
  static constexpr int kOutBytes = kVec * kOutElemBytes;

  const CastBackParams& p;
  uint32_t chunks;  // pieces per row
  uint32_t row_shift, col_shift;
  bool per_element;     // c == 1: one scale per column
  bool scale_rows_vec;  // a piece's per-column scales are kVec contiguous, 16-byte aligned 4-byte words
  bool out_aligned;

  TK_DEV explicit CastBack(const CastBackParams& params) : p(params) {
    chunks = p.hidden / kVec;
    row_shift = log2_pow2(p.block_rows);
    // a whole-row block (perTokenCastBack with numPerChannels = H) need not be a power of two: every column has
    // block 0, and col >> 31 is 0 for every col < H ≤ 2^31
    col_shift = p.block_cols >= p.hidden ? 31u : log2_pow2(p.block_cols);
    per_element = p.block_cols == 1;
    // fp32 scales [nbm, H] or token-packed words [ceil(nbm/4), H] with unit column stride: element (m, j) is
    // word m'·s0 + j, and j of a piece start is a multiple of kVec (16-byte loads of 4 scales)
    scale_rows_vec = (p.sf_kind == kSfFp32 || p.sf_kind == kSfPackedToken) && p.sf_stride1 == 1 &&
                     ((p.sf | (p.sf_stride0 * 4)) % kVecBytes) == 0;
    out_aligned = rows_aligned(p.out, p.out_row_stride * kOutElemBytes, kVecBytes);
  }

  // The 4 per-column scales of columns col … col + 3 (c == 1). A piece takes its per-column scales 4 at a time
  // (one 16-byte load): with 8 at once the per-channel path held 8 scales and 8 products and set the register
  // count of every variant.
  TK_DEV void column_scales(uint64_t row, uint32_t col, float (&s)[4]) const {
    const uint64_t m = row >> row_shift;
    if (scale_rows_vec) {
      const bool token = p.sf_kind == kSfPackedToken;
      const uint64_t word_row = token ? m / kUe8m0PerWord : m;
      const uint8_t* src = reinterpret_cast<const uint8_t*>(p.sf) + 4 * (word_row * p.sf_stride0 + col);
      const uint32_t byte_shift = 8 * static_cast<uint32_t>(m % kUe8m0PerWord);
      uint32_t w[4];
      ld_cached(src, w);
#pragma unroll
      for (int i = 0; i < 4; ++i) s[i] = token ? decode_ue8m0(w[i] >> byte_shift) : u2f(w[i]);
    } else {
      // any layout, one scale at a time; a rolled loop shifting into s[] keeps one copy of load_scale and s[] in
      // registers (this is the rare path: strided or unaligned per-channel scales)
#pragma unroll 1
      for (int i = 0; i < 4; ++i) {
        const float v = load_scale(p.sf, p.sf_kind, p.sf_stride0, p.sf_stride1, m, col + i);
#pragma unroll
        for (int j = 0; j + 1 < 4; ++j) s[j] = s[j + 1];
        s[3] = v;
      }
    }
  }

  // Block scales (c ≥ 16) are fetched one unit ahead, with the unit's codes, by the warp together: the pieces of
  // item u of a unit (32 lanes × kVec columns from a multiple of 32·kVec) meet B = max(1, 32·kVec / c) blocks, so
  // a unit needs kU·B = max(kU, 1024 / c) ≤ 64 scales, and lane l holds the storage of slots l and 32 + l
  // (slot u·B + b: item u, its b-th block). Two registers per stage instead of kU, and one scale load per lane
  // and unit instead of kU (with the per-channel scales taken 4 at a time, 48 registers: 5 blocks per SM); a
  // piece fetches its scale with one shuffle.
  TK_DEV uint32_t log_blocks_per_item() const {
    constexpr uint32_t kLogSpan = 5 + (kVec == 8 ? 3 : 2);  // log2(32 · kVec)
    return col_shift < kLogSpan ? kLogSpan - col_shift : 0u;
  }

  TK_DEV void block_scales(uint64_t row, uint32_t base, uint32_t team_threads, uint32_t lane, uint32_t (&rs)[2]) const {
    const uint32_t log_b = log_blocks_per_item();
    const uint64_t m = row >> row_shift;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const uint32_t slot = 32u * r + lane;
      const uint32_t u = slot >> log_b;
      // first column of the slot's block inside item u (b << 31 is 0: b is 0 whenever col_shift is 31)
      const uint32_t col = (base + u * team_threads) * kVec + ((slot & ((1u << log_b) - 1u)) << col_shift);
      rs[r] = u < kU && col < p.hidden ? scale_storage(p.sf, p.sf_kind, p.sf_stride0, p.sf_stride1, m, col >> col_shift) : 0u;
    }
  }

  // The storage element of the block scale of this lane's piece of item u (a whole-warp shuffle: every lane calls
  // it, live or not). Slots of item u all sit in rs[0] or all in rs[1] (B divides 32), a warp-uniform choice.
  TK_DEV uint32_t piece_scale(const uint32_t (&rs)[2], int u, uint32_t lane) const {
    const uint32_t slot = (static_cast<uint32_t>(u) << log_blocks_per_item()) + ((lane * kVec) >> col_shift);
    return __shfl_sync(kFullWarpMask, slot < 32u ? rs[0] : rs[1], slot & 31u);
  }

  // kBlockOnly: the caller has checked c ≥ 16 (the per-column path is then left out of this copy).
  template <bool kBlockOnly = false>
  TK_DEV void process(const uint32_t (&w)[kInWords], uint32_t raw_scale, uint64_t row, uint32_t col,
                      uint8_t* out_row) const {
    const bool per_element = !kBlockOnly && this->per_element;
    const float sc = per_element ? 0.0f : decode_scale(p.sf_kind, raw_scale);
    uint32_t o[kOutBytes / 4];
    if constexpr (kIn == Fmt::kE2m1 && kOut == Fmt::kBf16) {
      // A finite power-of-two block scale (MXFP4's ue8m0, roundSf fp32) or zero: the products are exact bf16
      if (!per_element && e2m1_bf16_scale_exact(sc)) {
        decode_e2m1x8_bf16_pow2(w[0], sc, o);
        store_chunk<kOutBytes>(out_row + static_cast<uint64_t>(col) * kOutElemBytes, o, out_aligned);
        return;
      }
    }
#pragma unroll
    for (int g = 0; g < kVec / 4; ++g) {
      float s[4] = {sc, sc, sc, sc};
      if (per_element) column_scales(row, col + 4 * g, s);
      // the 4 codes of the group: a whole e4m3 word, or an e2m1 half-word
      const uint32_t codes[1] = {FmtTraits<kIn>::kBits == 8 ? w[g] : w[g / 2] >> (16 * (g % 2))};
      float q[4];
      decode_chunk<kIn, 4>(codes, q);
      float y[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) y[i] = mul_rn(q[i], s[i]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (kOut == Fmt::kFp32) o[4 * g + i] = f2u(canonical_nan(y[i]));
      }
      if constexpr (kOut == Fmt::kBf16) encode_bf16x2_words<2>(y, o + 2 * g);
    }
    store_chunk<kOutBytes>(out_row + static_cast<uint64_t>(col) * kOutElemBytes, o, out_aligned);
  }

  // Segmented geometry (tk_cast_back_seg__*): a work item is one segment of kSegPieces = 256 · kP consecutive
  // pieces of one row (items numbered row-major, so consecutive blocks work on consecutive bytes); thread t takes
  // pieces t, t + 256, … of its segment. Each thread issues the loads of all kP pieces and their block scales
  // first, then decodes and stores: no shared memory, no pipeline, one item per block when grid.x = items (the
  // Inductor pointwise shape: many short blocks, so a block's start and the last wave cost one small item each).
  // Programmatic dependent launch (round 10, docs/perf-notes/perf10-pdl.md): griddepcontrol.launch_dependents first
  // (the stream's next grid, when launched with the PDL attribute, may be scheduled from then on; it waits for this
  // grid's completion before its own first global access), griddepcontrol.wait before the item walk (the previous
  // grid, when this one was launched with the attribute, has completed and its memory is visible); nothing before it
  // touches memory (launch parameters, geometry). The host launches the segmented kernel with the attribute while
  // config.pdl is set; without it both instructions have no effect.
  template <int kP>
  TK_DEV void run_segments() const {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    constexpr uint32_t kSegPieces = kBlockThreads * kP;
    const uint32_t segs = (chunks + kSegPieces - 1) / kSegPieces;
    const bool in_aligned = rows_aligned(p.data, p.data_row_stride, kInBytes);
    const uint32_t hint = load_hint_of(p.flags);  // L2 hints on the block-scale path's code loads (load_hint.cuh)
    // grid-stride over items = row · segs + seg, kept as (row, seg) by increments: one division per thread
    const uint32_t step_rows = gridDim.x / segs, step_segs = gridDim.x % segs;
    uint64_t row = blockIdx.x / segs;
    uint32_t seg = blockIdx.x % segs;
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (; row < p.num_tokens;) {
      const uint8_t* in_row = reinterpret_cast<const uint8_t*>(p.data) + row * p.data_row_stride;
      uint8_t* out_row = reinterpret_cast<uint8_t*>(p.out) + row * p.out_row_stride * kOutElemBytes;
      if (per_element) {
        // per-channel scales (c = 1, the rare path): one piece at a time, its 2 or 4 16-byte scale loads in process
#pragma unroll 1
        for (int q = 0; q < kP; ++q) {
          const uint32_t c = seg * kSegPieces + q * kBlockThreads + threadIdx.x;
          if (c < chunks) {
            uint32_t w[kInWords];
            load_chunk<kInBytes, 1>(in_row + static_cast<uint64_t>(c) * kInBytes, w, in_aligned);
            process(w, 0u, row, c * kVec, out_row);
          }
        }
      } else {
        const uint64_t m = row >> row_shift;
        uint32_t w[kP][kInWords];
        uint32_t raw[kP];
#pragma unroll
        for (int q = 0; q < kP; ++q) {
          const uint32_t c = seg * kSegPieces + q * kBlockThreads + threadIdx.x;
          raw[q] = 0u;
#pragma unroll
          for (int i = 0; i < kInWords; ++i) w[q][i] = 0u;
          if (c < chunks) {
            load_chunk_hinted<kInBytes, 1>(in_row + static_cast<uint64_t>(c) * kInBytes, w[q], in_aligned, hint);
            raw[q] = scale_storage(p.sf, p.sf_kind, p.sf_stride0, p.sf_stride1, m, (c * kVec) >> col_shift);
          }
        }
#pragma unroll
        for (int q = 0; q < kP; ++q) {
          const uint32_t c = seg * kSegPieces + q * kBlockThreads + threadIdx.x;
          if (c < chunks) process<true>(w[q], raw[q], row, c * kVec, out_row);
        }
      }
      row += step_rows;
      seg += step_segs;
      if (seg >= segs) {
        seg -= segs;
        ++row;
      }
    }
  }

  TK_DEV void run() const {
    // thread-private staging slots, [stage][item][thread]: the next unit's codes load while this one is computed
    __shared__ __align__(16) uint8_t stage_buf[kStages][kU][kBlockThreads][kInBytes];
    const uint32_t rows = p.num_tokens;
    const uint32_t lane = threadIdx.x % kWarpSize;
    const bool in_aligned = rows_aligned(p.data, p.data_row_stride, kInBytes);
    const RowTeam team(chunks);

    // The pipeline is unrolled over the two stages so that `st` is a compile-time index and the block scales of
    // both stages stay in registers.
    uint32_t raw_scale[kStages][2] = {};
    auto prefetch = [&](auto st, uint64_t row, uint32_t base) {
      const uint8_t* in_row = reinterpret_cast<const uint8_t*>(p.data) + row * p.data_row_stride;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t c = base + u * team.threads + lane;
        const bool live = c < chunks;
        stage_chunk<kInBytes, 1>(smem_addr(stage_buf[st][u][threadIdx.x]),
                                 live ? in_row + static_cast<uint64_t>(c) * kInBytes : in_row, live, in_aligned);
      }
      if (!per_element) block_scales(row, base, team.threads, lane, raw_scale[st]);
    };
    pipelined_units<kU, true>(team, rows, chunks, prefetch, [&](auto st, uint64_t row, uint32_t base) {
      uint8_t* out_row = reinterpret_cast<uint8_t*>(p.out) + row * p.out_row_stride * kOutElemBytes;
      // one copy of process per stage: a rolled loop
#pragma unroll 1
      for (int u = 0; u < kU; ++u) {
        const uint32_t c = base + u * team.threads + lane;
        const uint32_t rs = per_element ? 0u : piece_scale(raw_scale[st], u, lane);
        if (c < chunks) {
          uint32_t w[kInWords];
          ld_shared(smem_addr(stage_buf[st][u][threadIdx.x]), w);
          process(w, rs, row, c * kVec, out_row);
        }
      }
    });
  }
};

}  // namespace
}  // namespace tk

#define TK_CAST_BACK(in, IN, out, OUT)                                                                  \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm)                \
      tk_cast_back__##in##_##out(const __grid_constant__ CastBackParams p) {                          \
    tk::CastBack<tk::Fmt::IN, tk::Fmt::OUT>(p).run();                                                 \
  }

namespace tk {
// Segmented geometry (run_segments): e4m3 inputs only. kP = 2 pieces per thread (16 codes and 32 output bytes for
// bf16, 8 codes and 32 bytes for fp32); launch bound 8 (≤ 32 registers: 64 warps per SM).
constexpr int kSegPiecesPerThread = 2;
constexpr int kSegMinBlocksPerSm = 8;
}  // namespace tk

#define TK_CAST_BACK_SEG(in, IN, out, OUT)                                                              \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kSegMinBlocksPerSm)             \
      tk_cast_back_seg__##in##_##out(const __grid_constant__ CastBackParams p) {                      \
    tk::CastBack<tk::Fmt::IN, tk::Fmt::OUT>(p).run_segments<tk::kSegPiecesPerThread>();               \
  }

#ifndef TK_CAST_BACK_NO_ENTRIES  // (unpack24.cu includes this file for CastBack, not these entries)
TK_CAST_BACK_SEG(e4m3, kE4m3, bf16, kBf16)

TK_CAST_BACK(e4m3, kE4m3, fp32, kFp32)
TK_CAST_BACK(e4m3, kE4m3, bf16, kBf16)
TK_CAST_BACK(e2m1, kE2m1, fp32, kFp32)
TK_CAST_BACK(e2m1, kE2m1, bf16, kBf16)
#endif  // TK_CAST_BACK_NO_ENTRIES

// perTokenCastWithPrecomputedSf bf16 → e4m3 with groups of 128, x and data on a 16-byte boundary: per_token_cast.cu's
// chunk conversion fed by a warp's cp.async ring in shared memory, two consecutive chunks a lane and one 16-byte
// store for both (round 25, docs/perf-notes/perf25-ptps.md; host ops/quant/per_token_cast.ts,
// perTokenLaunchTuning.precomputedRing, the default since the twentieth run: 8192 × 7168 86.0 → 92.2% of copy,
// 16384 90.4 → 93.1% on the H200).
//
// Symbol
//   tk_per_token_cast__bf16_e4m3_g128_psr4   a warp's unit: 1024 columns of a row (2 pairs of chunks a lane), 32 KiB
//                                            a CTA, launch bound 4. The one-pair `_psr2` (512 columns, 16 KiB, bound
//                                            8) tied at 8192 and lost at 16384 (92.1%) and is not instantiated.
//
// Why: main runs this case on `_g128` (GroupCast, mode 2), measured 89.8% of copy at 16384 × 7168 and ~86% at 8192
// (H200). Its 8-warp row team stages 2 thread-private chunks a step (one unit in four dead at H = 7168: 896 chunks
// against 2 · 256 a step), and a group's scale is read by its owner lane only once the unit's data is in, then
// divided and shuffled: a dependent global load in every step. The form that won three times on this project
// (perBlockCastLossless `__tile_cg`, perf20-lsl.md; stochasticCast `_sr_a12w2`, cast_sr23.cu) replaces it here: a
// warp's step is a unit of consecutive chunks of one row, copied by coalesced 16-byte `cp.async.cg` (512 contiguous
// bytes an instruction), one commit, one wait, 2 __syncwarp, then a lane converts 2 consecutive chunks (16 values)
// a pair and stores their 16 codes at once. A lane loads its pairs' scale storage elements with the unit's copies,
// a step before it divides them, so no scale load is waited for in the step that uses it.
//
// Layout: a stage is [warp][σ(j)] × 16 bytes, σ(j) = j ^ ((j >> 3) & 1) for chunk j of the unit (cast_sr23.cu's
// swizzle): lane t copies chunks t + 32h and reads chunks 64q + 2t, 64q + 2t + 1 (pair q), which other lanes copied:
// a __syncwarp after the wait makes them visible, a second one after the reads keeps the next step's refill behind
// every lane's reads (no CTA barrier; each warp owns its slice of a stage). A quarter warp's copies and its reads
// each touch 8 distinct 16-byte bank groups, the minimum 4 wavefronts a warp access.
//
// Same bytes as `_g128` by construction: chunk c of row r goes through step()'s precomputed-sf path for bf16 → e4m3
// — decode_chunk<bf16, 8>, mul_rn by inv = div_rn(1, load_scale(x_sf, kind, s0, s1, r, c / 16)) (here split into
// scale_storage, issued a step early, and decode_scale), encode_chunk<e4m3, 8> — on the 16 bytes of chunk c (the
// slot holds exactly them) and its 8 codes land at data + r · H + 8c, the pair's two chunks side by side in one
// 16-byte store. A chunk's codes depend only on its values and its group's scale, never on the grid, the unit, the
// lane or the order. H % 64 == 0 makes the chunk count a multiple of 8, so a pair is wholly inside or wholly past
// the row end; past it a copy reads nothing (src-size 0) and nothing is converted or stored.
//
// Launch: grid.x = max(1, min(⌈T · U / 8⌉, B · SMs)) blocks of 256, U = ⌈(H / 8) / unit chunks⌉ units a row, B the
// host's blocks per SM (perTokenLaunchTuning.precomputedRingBlocksPerSm; units are warp-grid-stride, so any grid.x ≥ 1
// is correct), static shared memory only. The host takes these symbols only for mode 2 (precomputed sf, fp32 or
// e4m3, row-major), bf16 → e4m3, 128 columns a scale, x's base and row stride and data's base multiples of 16 bytes
// (the kernels trap otherwise). Programmatic dependent launch as `_g128_pdl`: launch_dependents first, wait before
// the first global access; the host sets the attribute iff config.pdl and perTokenLaunchTuning.precomputedRingPdl.
#define TK_PTC_NO_KERNELS
#include "per_token_cast.cu"

namespace tk {
namespace {

template <uint32_t kPairs, int kMinBlocks>
struct PrecomputedSfRing {
  static constexpr uint32_t kChunkBytes = 16;  // 8 bf16 values in, 8 e4m3 codes out
  static constexpr uint32_t kChunkCols = 8;
  static constexpr uint32_t kGroupChunks = 128 / kChunkCols;
  static constexpr uint32_t kUnitChunks = 2 * kWarpSize * kPairs;
  static constexpr uint32_t kUnitBytes = kUnitChunks * kChunkBytes;
  static constexpr uint32_t kCopies = kUnitChunks / kWarpSize;  // 16-byte copies a lane a unit
  static constexpr uint32_t kWarps = kBlockThreads / kWarpSize;
  static constexpr uint32_t kRingStages = 2;
  // kMinBlocks CTAs per SM: their rings and the 1 KiB the driver reserves each, in an SM's 228 KiB (sm_90, sm_100)
  static_assert(kMinBlocks * (kRingStages * kWarps * kUnitBytes + 1024) <= 228 * 1024, "CTAs per SM");

  TK_DEV static uint32_t slot(uint32_t j) { return kChunkBytes * (j ^ ((j >> 3) & 1)); }

  TK_DEV static void run(const PerTokenCastParams& p) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    __shared__ __align__(16) uint8_t ring[kRingStages][kWarps][kUnitBytes];
    const uint64_t x_stride = p.x_row_stride * 2;
    if (((p.x | x_stride | p.data) % kChunkBytes) != 0) __trap();  // the host launches it only aligned
    const uint32_t rows = p.num_tokens;
    const uint32_t chunks = p.hidden / kChunkCols;  // a multiple of 8 (H % 64 == 0)
    const uint32_t lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const uint32_t upr = (chunks + kUnitChunks - 1) / kUnitChunks;  // ≥ 1
    // warp-grid-stride over units q = row · upr + seg, kept as (row, seg) by increments
    const uint32_t warps = gridDim.x * kWarps;
    const uint32_t row_step = warps / upr, seg_step = warps % upr;
    const uint32_t gwarp = blockIdx.x * kWarps + warp;
    uint64_t row = gwarp / upr;
    uint32_t seg = gwarp % upr;
    const uint32_t first_stage = smem_addr(ring[0][warp]);
    const uint32_t stage_xor = first_stage ^ smem_addr(ring[1][warp]);
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);

    // Unit (r, sg)'s chunks into the stage at `stage` (the caller commits), and the scale storage element of each of
    // this lane's live pairs into raw.
    auto copy_unit = [&](uint32_t stage, uint64_t r, uint32_t sg, uint32_t (&raw)[kPairs]) {
      const uint8_t* src = x + r * x_stride;
      const uint32_t c0 = sg * kUnitChunks;
#pragma unroll
      for (uint32_t h = 0; h < kCopies; ++h) {
        const uint32_t j = lane + kWarpSize * h;
        const bool live = c0 + j < chunks;
        cp_async<16>(stage + slot(j), live ? src + static_cast<uint64_t>(c0 + j) * kChunkBytes : src, live);
      }
#pragma unroll
      for (uint32_t q = 0; q < kPairs; ++q) {
        const uint32_t c = c0 + 2 * (kWarpSize * q + lane);
        if (c < chunks) raw[q] = scale_storage(p.x_sf, p.x_sf_kind, p.x_sf_stride0, p.x_sf_stride1, r, c / kGroupChunks);
      }
    };

    asm volatile("griddepcontrol.wait;" ::: "memory");  // before the first global access
    uint32_t stage = first_stage;
    uint32_t raw[kPairs] = {};
    if (row < rows) copy_unit(stage, row, seg, raw);
    cp_async_commit();
    // row is the same for the whole warp, so the loop and its __syncwarp are warp-uniform
    while (row < rows) {
      uint64_t next_row = row + row_step;
      uint32_t next_seg = seg + seg_step;
      if (next_seg >= upr) {
        next_seg -= upr;
        ++next_row;
      }
      // the next unit into the other stage (read in the previous step: every lane's reads of it were done before
      // that step's second __syncwarp), its scales loaded a step before they are used
      uint32_t next_raw[kPairs] = {};
      if (next_row < rows) copy_unit(stage ^ stage_xor, next_row, next_seg, next_raw);
      cp_async_commit();
      cp_async_wait<1>();  // every group but the one just committed: this unit's
      __syncwarp();        // the other lanes' copies of this unit are visible from here
      uint32_t w[kPairs][2][4];
#pragma unroll
      for (uint32_t q = 0; q < kPairs; ++q) {
        const uint32_t j = 2 * (kWarpSize * q + lane);
        ld_shared(stage + slot(j), w[q][0]);
        ld_shared(stage + slot(j + 1), w[q][1]);
      }
      __syncwarp();  // every lane has read this stage: the next step may refill it
      uint8_t* dr = reinterpret_cast<uint8_t*>(p.data) + row * p.hidden;
#pragma unroll
      for (uint32_t q = 0; q < kPairs; ++q) {
        const uint32_t c = seg * kUnitChunks + 2 * (kWarpSize * q + lane);
        if (c < chunks) {
          const float inv = div_rn(1.0f, decode_scale(p.x_sf_kind, raw[q]));
          uint32_t o[2][2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            float v[kChunkCols];
            decode_chunk<Fmt::kBf16, kChunkCols>(w[q][h], v);
#pragma unroll
            for (uint32_t i = 0; i < kChunkCols; ++i) v[i] = mul_rn(v[i], inv);
            encode_chunk<Fmt::kE4m3, kChunkCols>(v, o[h]);
          }
          st_v4(dr + static_cast<uint64_t>(c) * kChunkCols, o[0][0], o[0][1], o[1][0], o[1][1]);
        }
      }
      row = next_row;
      seg = next_seg;
      stage ^= stage_xor;
#pragma unroll
      for (uint32_t q = 0; q < kPairs; ++q) raw[q] = next_raw[q];
    }
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_per_token_cast__bf16_e4m3_g128_psr4(const __grid_constant__ PerTokenCastParams p) {
  tk::PrecomputedSfRing<2, 4>::run(p);
}

// perTokenCast bf16 → e2m1, the lane-wide walk (docs/perf-notes/perf17-fp4.md): one lane owns 32 consecutive values
// (4 chunks of 8 bf16), i.e. whole groups (NVFP4: 2 groups of 16; MXFP4: 1 group of 32), instead of _u4's 4
// chunks strided by the row team with a group spread over 2 / 4 adjacent lanes. No entry: the lane-wide forms
// include this file for LaneWideE2m1's group types, ring and walk (per_token_cast_fp4_26.cu `_g32_mxw`,
// per_token_cast_fp4_29.cu `_g16_nvw`).
//
// Round 17's own form, tk_per_token_cast__bf16_e2m1_g16_lw (NVFP4; perTokenLaunchTuning.e2m1LaneWide, the default
// from round 17 to round 29, when `_g16_nvw` replaced it under the same conditions), left the package in trim32 with
// its per-lane body (lane_unit: the lane-local group amax, group_inv's sf and inverse, _u4's encoder dispatch a
// chunk, one 16-byte code store): docs/branches/trim32-removed.patch restores it. Its MXFP4 entry `_g32_lw` lost its
// A/B to _u4sca (73.9 → 73.2% at 16384) and was never built.
//
// The walk: work is walked as _sr_wu's warp units (row, 1024-column segment) flat over the grid: at H = 7168 a row
// is 7 whole units, where _u4's 8-warp row team leaves one unit item in eight dead yet pays its amax and scale work.
// Loads: cp.async one unit ahead as _sr_wu (two stages of 2 KiB per warp, 32 KiB a block), each lane copying
// chunk u·32 + lane of the unit (coalesced) into the slot of the lane that owns it; a lane then reads its own 64
// bytes. Slots are xor-rotated inside each lane's 64 bytes (slot()) so that both sides hit distinct banks per
// 8 lanes. A lane reads chunks other lanes copied: __syncwarp after cp.async.wait_group (visibility) and after
// the reads (the next prefetch overwrites that stage only after every lane has read it).
#define TK_PTC_NO_KERNELS
#include "per_token_cast.cu"

namespace tk {
namespace {

template <int kN>
struct LaneWideE2m1 {
  static constexpr bool kSca = kN == 32;
  using GC = GroupCast<Fmt::kBf16, Fmt::kE2m1, kN, false, 4, kSca ? kFormE2m1Sca : kFormAnyMode>;
  static constexpr int kU = 4;               // chunks per lane: 32 values
  static constexpr uint32_t kUnitChunks = kU * kWarpSize;  // 128 chunks = 1024 columns
  static constexpr int kWarps = kBlockThreads / kWarpSize;
  static_assert(kN == 16 || kN == 32, "lane-wide form: groups of 16 or 32");

  // 16-byte slot of chunk g (< 128) of a unit in its warp's stage: lane g / 4's four slots, rotated by bits 1–2
  // of that lane. Writers (one cp.async instruction, lanes 8j … 8j + 7: chunks of two owner lanes with equal bits
  // 1–2) and readers (one LDS.128, lanes 8j … 8j + 7 at a 64-byte stride) cover 8 distinct 16-byte bank groups.
  static TK_DEV uint32_t slot(uint32_t g) {
    const uint32_t l = g >> 2;
    return 4 * l + ((g & 3) ^ ((l >> 1) & 3));
  }

  // The warp-unit walk and 2-stage ring of every lane-wide e2m1 form (round 26's `_g32_mxw`, round 29's
  // `_g16_nvw`; round 17's `_g16_lw` until trim32): `unit(row, c0, w)` converts lane's 4 chunks c0 … c0 + 3 of
  // row `row` from `w`; then the sf padding rows. `stage_buf` is the caller's (its shared declarations keep their
  // order).
  template <class Unit>
  static TK_DEV void walk(const PerTokenCastParams& p, const GC& gc,
                          uint8_t (&stage_buf)[kStages][kWarps][kUnitChunks][16], Unit&& unit) {
    const uint32_t rows = p.num_tokens;
    const uint32_t lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const uint32_t chunks = gc.chunks;
    const uint64_t x_stride = row_stride_bytes<Fmt::kBf16>(p);
    const uint32_t upr = (chunks + kUnitChunks - 1) / kUnitChunks;  // ≥ 1 (H ≥ 64)
    const uint64_t grid_warps = static_cast<uint64_t>(gridDim.x) * kWarps;
    const uint64_t q0 = static_cast<uint64_t>(blockIdx.x) * kWarps + warp;
    const uint64_t row_step = grid_warps / upr;
    const uint32_t seg_step = static_cast<uint32_t>(grid_warps % upr);
    uint64_t row = q0 / upr;
    uint32_t seg = static_cast<uint32_t>(q0 % upr);

    auto prefetch = [&](int st, uint64_t r, uint32_t sg) {
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + r * x_stride;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t g = u * kWarpSize + lane;
        const uint32_t c = sg * kUnitChunks + g;
        const bool live = c < chunks;
        cp_async<16>(smem_addr(stage_buf[st][warp][slot(g)]), live ? xr + static_cast<uint64_t>(c) * 16 : xr, live);
      }
    };

    if (row < rows) prefetch(0, row, seg);
    cp_async_commit();
    for (int stage = 0; row < rows; stage ^= 1) {  // warp-uniform
      uint64_t next_row = row + row_step;
      uint32_t next_seg = seg + seg_step;
      if (next_seg >= upr) {
        next_seg -= upr;
        ++next_row;
      }
      if (next_row < rows) prefetch(stage ^ 1, next_row, next_seg);
      cp_async_commit();
      cp_async_wait<1>();  // this lane's copies of this unit
      __syncwarp();        // and every other lane's
      uint32_t w[kU][4];
#pragma unroll
      for (int u = 0; u < kU; ++u) ld_shared(smem_addr(stage_buf[stage][warp][slot(kU * lane + u)]), w[u]);
      __syncwarp();  // every lane has read this stage before any lane prefetches into it again
      const uint32_t c0 = seg * kUnitChunks + kU * lane;
      if (c0 < chunks) unit(row, c0, w);  // chunks % 8 == 0: all 4 chunks live or none
      row = next_row;
      seg = next_seg;
    }
    if (gc.write_sf) gc.sf_out.zero_padding_rows(rows, p.sf_rows);
  }
};

}  // namespace
}  // namespace tk

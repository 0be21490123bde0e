// perTokenCast bf16 → e2m1, lane-wide form (docs/perf-notes/perf17-fp4.md): one lane owns 32 consecutive values
// (4 chunks of 8 bf16), i.e. whole groups (NVFP4: 2 groups of 16; MXFP4: 1 group of 32), instead of _u4's 4
// chunks strided by the row team with a group spread over 2 / 4 adjacent lanes.
//
// Symbols
//   tk_per_token_cast__bf16_e2m1_g16_lw   perTokenCast (mode 0 only), groups of 16, no stochasticCast (NVFP4: e4m3 sf)
// The template also covers groups of 32 with roundSf (MXFP4: _u4sca's encoders and amax); that entry,
// tk_per_token_cast__bf16_e2m1_g32_lw, lost its A/B to _u4sca (73.9 → 73.2% at 16384; perf17-fp4.md) and is not built.
// The host (ops/quant/per_token_cast.ts, perTokenLaunchTuning.e2m1LaneWide, default on since round 17) launches it only for
// perTokenCast with x's base and row stride and data's base multiples of 16 bytes (H % 64 == 0 always holds).
//
// What changes against _u4 / _u4sca (same arithmetic per value and per group, so the same bytes):
//   - a group's amax is lane-local: the max of the same per-chunk bf16 maxima (unsigned 16-bit max of non-negative
//     patterns, associative), no butterfly shuffle; the group's (sf, inv) is computed by its lane (group_inv's body
//     literally), no select of the owner item and no inverse shuffle
//   - the lane's 16 code bytes go out in one 16-byte store (a warp store: 512 contiguous bytes, 16 whole sectors)
//     instead of four 4-byte stores; NVFP4's two sf bytes of a lane in one 2-byte store where the sf layout puts
//     them side by side (row-major e4m3, even address), else two byte stores as before
//   - work is walked as _sr_wu's warp units (row, 1024-column segment) flat over the grid: at H = 7168 a row is 7
//     whole units, where _u4's 8-warp row team leaves one unit item in eight dead yet pays its amax and scale work
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
  static constexpr int kCpg = kN / 8;        // chunks per group
  static constexpr int kGroups = kU / kCpg;  // groups per lane
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

  // group_inv's non-precomputed body (per_token_cast.cu), returning the stored sf word too (the caller stores it)
  static TK_DEV float sf_of(const PerTokenCastParams& p, float amax, const float* inv_tab, uint32_t& stored) {
    if (p.flags & (kSfRound | kSfE4m3Out)) {
      const float sf_raw = div6_rn(max_num(amax, p.amax_clamp));
      float inv;
      if (p.flags & kSfRound) {
        const uint32_t biased = ((f2u(sf_raw) - 1u) >> 23) + 1u;
        stored = (p.flags & kSfPackedUe8m0) ? (biased & 0xffu) : biased << 23;
        inv = u2f((254u - biased) << 23);
      } else {
        stored = encode_e4m3_hw(sf_raw);
        inv = inv_tab[stored];
      }
      return inv;
    }
    const ScaleAndInv si = sf_and_inv(amax, p.amax_clamp, kQmaxOf<Fmt::kE2m1>, p.flags);
    stored = si.stored;
    return si.inv;
  }

  // step()'s encoder dispatch for one chunk (kE2m1Sca as in _u4sca, else _u4's)
  static TK_DEV uint32_t encode(const GC& gc, const uint32_t (&w)[4], float inv) {
    uint32_t o[1];
    bool done = false;
    const uint32_t ib = f2u(inv);
    if ((ib & 0x7fffffu) == 0) {
      if constexpr (kSca) {
        done = gc.pow2_no_clamp ? encode_e2m1_bf16_pow2_nc(w, inv, o) : encode_e2m1_bf16_pow2(w, inv, o);
      } else {
        done = encode_e2m1_bf16_pow2(w, inv, o);
      }
    } else if (ib - 1u < 0x7f7fffffu) {
      if constexpr (kSca) {
        done = ib >= 0x02000000u ? encode_e2m1_bf16_f32_sat(w, mul_rn(inv, 0.125f), o) : encode_e2m1_bf16_f32(w, inv, o);
      } else {
        done = encode_e2m1_bf16_f32(w, inv, o);
      }
    }
    if (!done) {
      float v[8];
      decode_chunk<Fmt::kBf16, 8>(w, v);
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = mul_rn(v[i], inv);
      encode_e2m1_fast<8>(v, o);
    }
    return o[0];
  }

  // The lane's 4 chunks (c0 … c0 + 3 of `row`, all in the row): amax, sf, codes.
  static TK_DEV void lane_unit(const GC& gc, const PerTokenCastParams& p, uint64_t row, uint32_t c0,
                               const uint32_t (&w)[kU][4], const float* inv_tab) {
    float inv[kGroups];
    uint32_t stored[kGroups];
#pragma unroll
    for (int gi = 0; gi < kGroups; ++gi) {
      uint32_t pat;
      if constexpr (kSca) {
        // _u4sca: per-chunk lane maxima folded two items at a time, then max.u16x2 over the group's chunks
        uint32_t m[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) m[u] = abs_max_bf16x2_lanes<4>(w[gi * kCpg + u]);
        const uint32_t f01 = fold_max_u16x2_pair(m[0], m[1]), f23 = fold_max_u16x2_pair(m[2], m[3]);
        uint32_t v;
        asm("max.u16x2 %0, %1, %2;" : "=r"(v) : "r"(f01), "r"(f23));
        pat = max(v & 0xffffu, v >> 16);
      } else {
        pat = max(abs_max_bf16<4>(w[gi * kCpg]), abs_max_bf16<4>(w[gi * kCpg + 1]));
      }
      inv[gi] = sf_of(p, decode_bf16(pat), inv_tab, stored[gi]);
    }
    if (gc.write_sf) {
      const uint32_t k0 = c0 / kCpg;
      if constexpr (kGroups == 2) {
        uint8_t* a = gc.sf_out.base + row * gc.sf_out.s0 + k0 * gc.sf_out.s1;
        if ((p.flags & (kSfPackedUe8m0 | kSfE4m3Out)) == kSfE4m3Out && gc.sf_out.s1 == 1 &&
            (reinterpret_cast<uintptr_t>(a) & 1) == 0) {
          st_u16(a, stored[0] | (stored[1] << 8));
        } else {
          gc.sf_out.store(row, k0, stored[0]);
          gc.sf_out.store(row, k0 + 1, stored[1]);
        }
      } else {
        gc.sf_out.store(row, k0, stored[0]);
      }
    }
    if (gc.write_data) {
      uint32_t o[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) o[u] = encode(gc, w[u], inv[u / kCpg]);
      uint8_t* d = reinterpret_cast<uint8_t*>(p.data) + out_offset<Fmt::kE2m1>(row, p.hidden, 0) + static_cast<uint64_t>(c0) * 4;
      st_v4(d, o[0], o[1], o[2], o[3]);
    }
  }

  // The warp-unit walk and 2-stage ring of every lane-wide e2m1 form (`_g<N>_lw` here, round 26's `_g32_mxw`,
  // round 29's `_g16_nvw`): `unit(row, c0, w)` converts lane's 4 chunks c0 … c0 + 3 of row `row` from `w`; then
  // the sf padding rows. `stage_buf` is the caller's (its shared declarations keep their order).
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

  static TK_DEV void run(const PerTokenCastParams& p) {
    const GC gc(p);
    __shared__ __align__(16) uint8_t stage_buf[kStages][kWarps][kUnitChunks][16];
    __shared__ float inv_tab[256];
    gc.fill_inv_tab(inv_tab);
    walk(p, gc, stage_buf,
         [&](uint64_t row, uint32_t c0, uint32_t(&w)[kU][4]) { lane_unit(gc, p, row, c0, w, inv_tab); });
  }
};

}  // namespace
}  // namespace tk

// per_token_cast_fp4_26.cu includes this file for LaneWideE2m1's slot() with TK_PTC_FP4_17_NO_ENTRIES defined
#ifndef TK_PTC_FP4_17_NO_ENTRIES
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_per_token_cast__bf16_e2m1_g16_lw(const __grid_constant__ PerTokenCastParams p) {
  tk::LaneWideE2m1<16>::run(p);
}
#endif  // TK_PTC_FP4_17_NO_ENTRIES

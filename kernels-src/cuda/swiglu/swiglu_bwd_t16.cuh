// swigluBackwardAndPerTokenCast, e4m3 x (fp32 x scales, groups of 128), bf16 dy → bf16 xGrad + e4m3 groups of
// 128 + weightGrad (spec/quant.md §8.5, the cast of §2.3): the 16-lane team form (round 11,
// docs/perf-notes/perf11-sbc.md). Included by swiglu_bwd_t16w.cu, whose `_t16w` keeps this compute phase line for
// line and replaces its stores: its constants and T16Step are `_t16w`'s, and backward_t16 below is the baseline
// `_t16w`'s comments refer to. Round 11's entry tk_swiglu_backward__e4m3_bf16_g128_t16 ("team16", the default until
// round 17) left the package in trim20 (docs/branches/trim20-removed.patch restores it).
//
// `_t16`'s launches: the same bytes as tk_swiglu_backward__e4m3_bf16_g128 (swiglu.cu) for no clamp, no recompute,
// x / dy / xGrad / the e4m3 data 16-byte aligned (the host falls back to main's kernel otherwise); any sf layout, with
// or without weights and scale.
//
// Launch geometry: block.x 256, no dynamic shared memory, grid.x min(ceilDiv(T, 16), 8 · SMs) (any grid.x ≥ 1 is
// correct: grid-stride over row pairs by whole warps). Static shared memory 34.25 KiB: the staged inputs of two
// steps (18 KiB), the parked results of a step (16 KiB) and the 2^(j/32) table of expf_cr_n (256 bytes).
//
// Why a second form: main's kernel (8 lanes a row, 16 gates a lane per step) holds 116 registers, so only 2 CTAs
// (16 warps) fit an SM, and its step is a chain of long binary64 / reciprocal latencies that 4 warps per scheduler
// do not hide (Nsight Compute on the H200: issue- and occupancy-bound, DRAM 31%). Here a team of 16 lanes owns a
// row (a warp 2 rows, a CTA 16): in the step over columns [128b, 128b + 128) lane r takes the 4 columns
// 128b + 64s + 4r … + 3 of slot s ∈ {0, 1}, i.e. 8 gates a step instead of 16, and the launch bounds ask for 4 CTAs
// per SM (≤ 64 registers, 32 warps per SM).
//   - Weight gradient, §8.5's fixed order: lane r meets exactly the columns j ≡ 4r … 4r + 3 (mod 64), in increasing
//     j (slot 0 before slot 1, step after step), so P_l for l = 4r + i are 4 registers of lane r, summed in the
//     reference's order; the halving tree is 4 xor shuffles (P_l += P_{l+32}, +16, +8, +4: lanes xor 8, 4, 2, 1)
//     and 2 in-lane steps.
//   - Group of 128 = the 16 lanes × 2 slots × 4 columns of one step, in the gate half (group b) and in the up half
//     (group H/128 + b): both amaxes by one 16-lane butterfly that splits the team after its first exchange, and
//     one sf_and_inv a lane-step (lanes 0–7 the gate group's, 8–15 the up group's), exchanged by one shuffle.
//   - Results parked: a slot's 8 binary32 results go to the thread's own shared-memory slots as soon as they are
//     computed (with the bf16 stores), and are read back only for the encode after the group's amax, shuffles and
//     divisions, so no value register is live across the reduction; only the two running maxima are.
//   - Inputs staged: step b + 1's gate / up codes, dy and the two x scales of a row are copied into its team's
//     shared-memory stage by cp.async while step b is computed (as main's BwdStage, without registers), in whole
//     16-byte pieces by the team (3 copies a lane-step instead of 8 of 4–8 bytes into the lane's own slots); a warp
//     barrier after the wait makes the other lanes' pieces visible, one before each copy keeps the parity being
//     overwritten from being read still.
// Each element's operations and their order are main's (backward<kE4m3, kBf16, kBf16, 128> with kLateUp and
// kFastRecip): gate decode × scale, expf_cr_n (table fast path, binary64), 1 + e, recip_rn_n, the FMA-corrected
// silu (weights only), gx, gu, the weight partial; then the amax (max is exact and order independent), §2.3, the
// e4m3 encode of v · inv.
//
// The psum search, the psum contract check and the row weight are swiglu.cu's (swiglu_rows.cuh).
#pragma once
#include "../common/chunk.cuh"
#include "../common/codec.cuh"
#include "../common/error_word.cuh"
#include "../common/expf.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/recip.cuh"
#include "../common/reduce.cuh"
#include "../common/scale.cuh"
#include "../generated/swiglu_params.h"
#include "swiglu_rows.cuh"

namespace tk {
namespace {

constexpr int kT16Threads = 256;
constexpr int kT16Team = 16;                         // lanes per row
constexpr int kT16Cols = 4;                          // columns a lane takes per slot
constexpr int kT16Step = 128;                        // columns of a step = one group of 128
constexpr int kT16RowsPerWarp = kWarpSize / kT16Team;  // 2
// 4 CTAs per SM on sm_90 (≤ 64 registers, no spills: 32 warps per SM against main's 16); 3 on sm_100 (80
// registers, no spills), whose code spills 16 bytes at 64.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr int kT16MinBlocks = 3;
#else
constexpr int kT16MinBlocks = 4;
#endif

// A team's step as staged, 576 bytes: the row's 128 gate codes, 128 up codes, 128 dy (bf16), then the fp32 bits of
// the gate group's and the up group's x scale (one group each: both slots of the step) in a word per lane, of which
// lanes 2–15 copy nothing (zeros: a 4-byte copy by every lane, predicated by its size, where a branch around two
// lanes' copies made ptxas spill at 64 registers).
struct T16Step {
  static constexpr uint32_t kUp = 128, kDy = 256, kScales = 512;  // byte offsets
  uint32_t w[(kScales + 4 * kT16Team) / 4];
};
// Per CTA: each team's step staged two steps deep ([warp][step parity][team]) and a step's results parked
// ([slot][gx / gu][thread]: one field's array over the threads, so that a warp's accesses are consecutive).
struct T16Smem {
  T16Step in[kT16Threads / kWarpSize][2][kT16RowsPerWarp];
  uint32_t park[2][2][kT16Threads][4];
};

TK_DEV void backward_t16(const SwigluParams& p) {
  __shared__ __align__(16) T16Smem sm;
  __shared__ double exp_tab[kExp2TableSize];
  check_psum(p);
  fill_exp2_table(exp_tab);
  __syncthreads();

  const uint32_t H = p.hidden, steps = H / kT16Step;  // H % 128 == 0 (groups of 128)
  const uint32_t sf_cols = 2 * H / kT16Step;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
  const uint8_t* dy = reinterpret_cast<const uint8_t*>(p.dy);
  uint8_t* gout = reinterpret_cast<uint8_t*>(p.out);
  uint8_t* data = reinterpret_cast<uint8_t*>(p.data);
  const bool weighted = p.flags & kHasWeights;
  const SfOut sf_out{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.sf_flags, sf_cols};
  const uint32_t t = threadIdx.x, lane = t % kWarpSize, r = lane % kT16Team;
  const uint64_t warps = static_cast<uint64_t>(gridDim.x) * (blockDim.x / kWarpSize);
  const uint64_t warp = static_cast<uint64_t>(blockIdx.x) * (blockDim.x / kWarpSize) + t / kWarpSize;
  const uint64_t T = p.num_tokens;

  for (uint64_t row0 = warp * kT16RowsPerWarp; row0 < T; row0 += warps * kT16RowsPerWarp) {
    const uint64_t row = row0 + lane / kT16Team;  // < 2^32: T is a uint32
    const bool inside = row < T;
    const bool real = inside && row_is_real(p, static_cast<int64_t>(row));
    const bool pad = inside && !real;
    const float w = real ? row_weight(p, row) : 1.0f;
    const uint32_t rr = real ? static_cast<uint32_t>(row) : 0u;  // a dead slot's source stays inside row 0 (nothing is read)
    uint8_t* orow = gout + row * 2 * H * 2;
    uint8_t* drow = data + row * 2 * H;
    float part[kT16Cols];  // P_l for l = 4r + i (§8.5)
#pragma unroll
    for (int i = 0; i < kT16Cols; ++i) part[i] = 0.0f;

    // Step b's inputs into the team's stage: the team copies the row's 512 bytes of the step in 16-byte pieces, two a
    // lane (lane r: the gate codes' piece r, or for r ≥ 8 the up codes' piece r − 8, and dy's piece r), and lanes 0
    // and 1 the two scales; a lane then reads its columns from there (after a warp barrier: the pieces are other
    // lanes' copies). A step past the row (b = steps) or a row that is not real stages zeros. The barrier first:
    // the parity written here was read by every lane of the team two steps ago (or by the previous row).
    const uint32_t st_base = smem_addr(&sm.in[t / kWarpSize][0][lane / kT16Team]);
    constexpr uint32_t kParity = sizeof(T16Step) * kT16RowsPerWarp;  // bytes between the two parities of a team
    // This lane's sources at step 0; a step advances them by 128 codes, 256 bytes of dy and one scale.
    const uint8_t* xs = x + static_cast<uint64_t>(rr) * 2 * H + (r < 8 ? 16 * r : H + 16 * (r - 8));
    const uint8_t* ds = dy + static_cast<uint64_t>(rr) * H * 2 + 16 * r;
    const float* ss = reinterpret_cast<const float*>(p.x_sf) + static_cast<uint64_t>(rr) * sf_cols + (r == 0 ? 0 : steps);
    const auto stage_step = [&](uint32_t b) {
      __syncwarp();
      const uint32_t dst = st_base + (b & 1) * kParity + 16 * r;
      const bool live = real && b < steps;
      const uint32_t bl = live ? b : 0;
      cp_async<16>(dst, xs + bl * kT16Step, live);
      cp_async<16>(dst + T16Step::kDy, ds + bl * (2 * kT16Step), live);
      cp_async<4>(dst - 12 * r + T16Step::kScales, ss + bl, live && r < 2);
      cp_async_commit();
    };

    stage_step(0);
    for (uint32_t b = 0; b < steps; ++b) {
      stage_step(b + 1);
      cp_async_wait<1>();  // step b's group of this lane has landed
      __syncwarp();        // and those of the team's other lanes
      const uint32_t in = st_base + (b & 1) * kParity;
      float amx = 0.0f, amu = 0.0f;  // maximumNumber of {0} ∪ {|v|} over the lane's gx / gu of the step
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const uint32_t col = b * kT16Step + s * (kT16Step / 2) + kT16Cols * r;
        float gx[kT16Cols], gu[kT16Cols];
#pragma unroll
        for (int i = 0; i < kT16Cols; ++i) gx[i] = gu[i] = 0.0f;
        if (real) {
          // the gate's part, the exponentials, then the up and dy part (main's kLateUp order of independent work)
          uint32_t gw[1], sgw[1];
          ld_shared(in + s * (kT16Step / 2) + kT16Cols * r, gw);
          ld_shared(in + T16Step::kScales, sgw);
          float g[kT16Cols], xn[kT16Cols], e[kT16Cols], tmp[kT16Cols], sgm[kT16Cols];
          decode_chunk<Fmt::kE4m3, kT16Cols>(gw, g);
          const float sg = u2f(sgw[0]);
#pragma unroll
          for (int i = 0; i < kT16Cols; ++i) {
            g[i] = mul_rn(g[i], sg);
            xn[i] = -g[i];
          }
          expf_cr_n<kT16Cols>(xn, e, exp_tab);
          uint32_t uw[1], dw[2], suw[1];
          ld_shared(in + T16Step::kUp + s * (kT16Step / 2) + kT16Cols * r, uw);
          ld_shared(in + T16Step::kDy + 2 * (s * (kT16Step / 2) + kT16Cols * r), dw);
          ld_shared(in + T16Step::kScales + 4, suw);
          float u[kT16Cols], d[kT16Cols];
          decode_chunk<Fmt::kE4m3, kT16Cols>(uw, u);
          decode_chunk<Fmt::kBf16, kT16Cols>(dw, d);
          const float su = u2f(suw[0]);
#pragma unroll
          for (int i = 0; i < kT16Cols; ++i) {
            u[i] = mul_rn(u[i], su);
            tmp[i] = add_rn(1.0f, e[i]);
          }
          recip_rn_n(tmp, sgm);  // = div_rn(1.0f, tmp[i]) for every input
          if (weighted) {
#pragma unroll
            for (int i = 0; i < kT16Cols; ++i) {
              const float est = mul_rn(g[i], sgm[i]);
              const float tmpf = fminf(tmp[i], 3.40282346638528859812e+38f);  // minimumNumber: NaN → FLT_MAX
              const float res = __fmaf_rn(est, tmpf, -g[i]);
              const float sl = __fmaf_rn(-res, sgm[i], est);
              part[i] = add_rn(part[i], mul_rn(d[i], mul_rn(sl, u[i])));
            }
          }
#pragma unroll
          for (int i = 0; i < kT16Cols; ++i) {
            const float ws = mul_rn(mul_rn(d[i], w), sgm[i]);
            gx[i] = mul_rn(mul_rn(ws, u[i]), __fmaf_rn(g[i], __fsub_rn(1.0f, sgm[i]), 1.0f));
            gu[i] = mul_rn(ws, g[i]);
            amx = max_num(amx, abs_f(gx[i]));
            amu = max_num(amu, abs_f(gu[i]));
          }
        }
        if (inside) {
          uint32_t ox[2], ou[2];
#pragma unroll
          for (int k = 0; k < 2; ++k) {
            ox[k] = encode_bf16x2(gx[2 * k], gx[2 * k + 1]);
            ou[k] = encode_bf16x2(gu[2 * k], gu[2 * k + 1]);
          }
          st_v2(orow + 2ull * col, ox[0], ox[1]);
          st_v2(orow + 2ull * (H + col), ou[0], ou[1]);
          const uint32_t px[4] = {f2u(gx[0]), f2u(gx[1]), f2u(gx[2]), f2u(gx[3])};
          const uint32_t pu[4] = {f2u(gu[0]), f2u(gu[1]), f2u(gu[2]), f2u(gu[3])};
          st_shared(smem_addr(sm.park[s][0][t]), px);
          st_shared(smem_addr(sm.park[s][1][t]), pu);
        }
      }
      // The two groups of the step (gate half: sf column b, up half: H/128 + b) in one butterfly: after the xor-8
      // exchange lanes r < 8 hold the gate group's partial maximum and lanes r ≥ 8 the up group's, xor 4, 2, 1
      // finish each inside its half (max is exact and order independent). Each half then computes its group's
      // (sf, inv) once (§2.3: sf_and_inv, two divisions), its first lane stores the sf entry, and one more shuffle
      // gives every lane the other group's inv: 5 shuffles and 1 sf_and_inv a lane-step instead of 8 and 2.
      // Padding rows: values 0, inv 0 (codes 0x00) and their sf entries written 0.
      const bool up_half = r >= kT16Team / 2;
      float am = max_num(up_half ? amu : amx, __shfl_xor_sync(kFullWarpMask, up_half ? amx : amu, kT16Team / 2));
      am = group_max<kT16Team / 2>(am);
      const uint32_t k = up_half ? steps + b : b;
      const bool owner = r % (kT16Team / 2) == 0;
      float inv = 0.0f;
      if (real) {
        const ScaleAndInv si = sf_and_inv(am, p.amax_clamp, kE4m3Max, p.sf_flags);
        if (owner) sf_out.store(row, k, si.stored);
        inv = si.inv;
      } else if (pad && owner) {
        sf_out.store(row, k, 0);
      }
      const float other = __shfl_xor_sync(kFullWarpMask, inv, kT16Team / 2);
      const float ix = up_half ? other : inv, iu = up_half ? inv : other;
      if (inside) {
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const uint32_t col = b * kT16Step + s * (kT16Step / 2) + kT16Cols * r;
          uint32_t pw[4];
          float v[kT16Cols];
          uint32_t o[1];
          ld_shared(smem_addr(sm.park[s][0][t]), pw);
#pragma unroll
          for (int i = 0; i < kT16Cols; ++i) v[i] = mul_rn(u2f(pw[i]), ix);
          encode_chunk<Fmt::kE4m3, kT16Cols>(v, o);
          st_u32(drow + col, o[0]);
          ld_shared(smem_addr(sm.park[s][1][t]), pw);
#pragma unroll
          for (int i = 0; i < kT16Cols; ++i) v[i] = mul_rn(u2f(pw[i]), iu);
          encode_chunk<Fmt::kE4m3, kT16Cols>(v, o);
          st_u32(drow + H + col, o[0]);
        }
      }
    }
    cp_async_wait<0>();  // step `steps`'s zeros land before the next row stages step 0
    if (weighted) {
      // halving tree of §8.5: P_l += P_{l+32}, +16, +8, +4 across lanes (l = 4r + i), then +2, +1 inside lane 0
#pragma unroll
      for (int m = kT16Team / 2; m >= 1; m /= 2) {
#pragma unroll
        for (int i = 0; i < kT16Cols; ++i) part[i] = add_rn(part[i], __shfl_xor_sync(kFullWarpMask, part[i], m));
      }
#pragma unroll
      for (int step = kT16Cols / 2; step >= 1; step /= 2)
#pragma unroll
        for (int i = 0; i < step; ++i) part[i] = add_rn(part[i], part[i + step]);
      if (r == 0 && inside) {
        float acc = real ? part[0] : 0.0f;
        if (real && (p.flags & kHasScale)) acc = mul_rn(acc, p.scale);
        st_u32(reinterpret_cast<uint8_t*>(p.weight_grad) + 4 * row, f2u(canonical_nan(acc)));
      }
    }
  }
  sf_out.zero_padding_rows(p.num_tokens, p.sf_rows);
}

}  // namespace
}  // namespace tk

// swigluBackwardAndPerTokenCast, e4m3 x (fp32 x scales, groups of 128), bf16 dy → bf16 xGrad + e4m3 groups of
// 128 + weightGrad (spec/quant.md §8.5, the cast of §2.3): the 16-lane team form with whole 16-byte output stores
// `_t16w` (round 17, docs/perf-notes/perf17-sbc.md; swigluLaunchTuning.backwardCastForm = "team16w", the default).
//
// Symbol
//   tk_swiglu_backward__e4m3_bf16_g128_t16w  the same bytes as main's kernel (swiglu.cu) under the 16-lane team
//                                            form's conditions (the host selects it only there).
//
// Round 11's `_t16` (backward_t16, removed from swiglu_bwd_t16.cuh with its entry in trim20; Nsight Compute on the
// H200, 16384 × 7168: issue-bound, SM 79%, issue active 82%) stores its outputs from the compute phase's lane mapping
// (lane r: columns 64s + 4r … + 3 of slot s): per lane-step 4 bf16 stores of 8 bytes and 4 e4m3 stores of 4 bytes,
// 4.6 M store warp instructions at 5.2 sectors each. Here the compute phase is `_t16`'s, line for line, except that the
// gx / gu values only go to the park (no bf16 store there), into a swizzled per-team layout; after the group's
// sf_and_inv a lane reads back 16 consecutive columns of one half (lanes r < 8 the gate half, whose group's inv they
// computed, lanes r ≥ 8 the up half: so the shuffle that exchanged the other group's inv is gone too) and writes them
// as 2 16-byte bf16 stores and 1 16-byte e4m3 store. Per element the operations are the same: encode_bf16x2 of the
// binary32 value, and the e4m3 encode of fl(v · inv) with the group's inv. Padding rows park zeros and get inv 0, so
// they are written +0 / 0x00 as before; the sf entries and weightGrad are `_t16`'s.
//
// Park layout (T16wTeam): per team and half 32 chunks of 16 bytes (4 columns each); column chunk c = 16s + r (slot s,
// lane r) lives at chunk position c ^ ((c >> 3) & 3), so that both the parking (8 lanes: c = 16s + 8h + 0 … 7) and
// the read back (8 lanes: c = 4q + k, q = 0 … 7) touch 8 distinct 16-byte bank groups.
#include "swiglu_bwd_t16.cuh"

namespace tk {
namespace {

constexpr uint32_t kT16wHalf = 32 * 16;  // bytes of one half's parked step of a team
// Per team: its staged inputs two steps deep (`_t16`'s T16Step), a step's results parked per [gate / up][chunk
// position], and 64 bytes of padding, so that the two teams of a warp start 64 bytes apart modulo 128 as in `_t16`
// (their 4-byte stage reads then fall in different banks). The park is at a constant offset from the stage, so one
// base register serves both (at 64 registers a second base spilled).
struct T16wTeam {
  T16Step in[2];
  uint32_t park[2][32][4];
  uint32_t pad[16];
};
static_assert(sizeof(T16wTeam) % 128 == 64, "teams 64 bytes apart modulo 128");
constexpr uint32_t kT16wPark = 2 * sizeof(T16Step);  // offset of park in T16wTeam
struct T16wSmem {
  T16wTeam team[kT16Threads / kWarpSize][kT16RowsPerWarp];
};

TK_DEV void backward_t16w(const SwigluParams& p) {
  __shared__ __align__(16) T16wSmem sm;
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
  // Rows in 32 bits (T is a uint32; the grid's rows a pass, 2 · warps, fit too): `_t16`'s 64-bit row counters cost
  // this form a spill at 64 registers. row0 steps to T (the loop's end) where another stride would pass 2^32.
  const uint32_t stride = gridDim.x * (blockDim.x / kWarpSize) * kT16RowsPerWarp;
  const uint32_t T = p.num_tokens;

  for (uint32_t row0 = (blockIdx.x * (blockDim.x / kWarpSize) + t / kWarpSize) * kT16RowsPerWarp; row0 < T;
       row0 = T - row0 > stride ? row0 + stride : T) {
    const uint32_t row = row0 + lane / kT16Team;  // ≤ T: a team past T has row == T only if row0 = T − 1
    const bool inside = row < T;
    const bool real = inside && row_is_real(p, static_cast<int64_t>(row));
    const bool pad = inside && !real;
    const float w = real ? row_weight(p, row) : 1.0f;
    const uint32_t rr = real ? static_cast<uint32_t>(row) : 0u;  // a dead slot's source stays inside row 0 (nothing is read)
    float part[kT16Cols];  // P_l for l = 4r + i (§8.5)
#pragma unroll
    for (int i = 0; i < kT16Cols; ++i) part[i] = 0.0f;

    // Step b's inputs into the team's stage: the team copies the row's 512 bytes of the step in 16-byte pieces, two a
    // lane (lane r: the gate codes' piece r, or for r ≥ 8 the up codes' piece r − 8, and dy's piece r), and lanes 0
    // and 1 the two scales; a lane then reads its columns from there (after a warp barrier: the pieces are other
    // lanes' copies). A step past the row (b = steps) or a row that is not real stages zeros. The barrier first:
    // the parity written here was read by every lane of the team two steps ago (or by the previous row).
    const uint32_t st_base = smem_addr(&sm.team[t / kWarpSize][lane / kT16Team]);
    const uint32_t park = st_base + kT16wPark;
    constexpr uint32_t kParity = sizeof(T16Step);  // bytes between the two parities of a team
    // This lane's sources at step 0; a step advances them by 128 codes, 256 bytes of dy and one scale.
    // (x's and dy's rows are both 2H bytes: one 64-bit row offset serves both, which keeps the step loop at 64
    // registers without a spill; `_t16` holds two pointers)
    const uint64_t roff = static_cast<uint64_t>(rr) * 2 * H;
    const uint32_t xoff = r < 8 ? 16 * r : H + 16 * (r - 8);
    const float* ss = reinterpret_cast<const float*>(p.x_sf) + static_cast<uint64_t>(rr) * sf_cols + (r == 0 ? 0 : steps);
    const auto stage_step = [&](uint32_t b) {
      __syncwarp();
      const uint32_t dst = st_base + (b & 1) * kParity + 16 * r;
      const bool live = real && b < steps;
      const uint32_t bl = live ? b : 0;
      cp_async<16>(dst, x + roff + (xoff + bl * kT16Step), live);
      cp_async<16>(dst + T16Step::kDy, dy + roff + (16 * r + bl * (2 * kT16Step)), live);
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
          // park only: the bf16 words are made from the parked values in the store phase below (16 columns a lane)
          const uint32_t px[4] = {f2u(gx[0]), f2u(gx[1]), f2u(gx[2]), f2u(gx[3])};
          const uint32_t pu[4] = {f2u(gu[0]), f2u(gu[1]), f2u(gu[2]), f2u(gu[3])};
          const uint32_t pos = (16 * s + r) ^ (2 * s + r / 8);  // chunk 16s + r, swizzled (T16wTeam)
          st_shared(park + 16 * pos, px);
          st_shared(park + kT16wHalf + 16 * pos, pu);
        }
      }
      // The two groups of the step (gate half: sf column b, up half: H/128 + b) in one butterfly: after the xor-8
      // exchange lanes r < 8 hold the gate group's partial maximum and lanes r ≥ 8 the up group's, xor 4, 2, 1
      // finish each inside its half (max is exact and order independent). Each half then computes its group's
      // (sf, inv) once (§2.3: sf_and_inv, two divisions) and its first lane stores the sf entry; each half then stores
      // its own group's columns, so no lane needs the other group's inv (4 shuffles a lane-step, `_t16` 5).
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
      // Store phase: lane r of the team takes the 16 columns 16q … 16q + 15 (q = r % 8) of the step in the gate half
      // (r < 8) or the up half (r ≥ 8), whose group's inv this lane computed above: they are the parked chunks 4q … 4q +
      // 3 of lanes 4(q % 4) … + 3, slot q / 4. Each output row piece goes out in whole 16-byte stores: 2 of bf16, 1 of
      // e4m3 codes (per lane-step 3 store instructions against 8). The warp barrier makes the other lanes' parked
      // values visible (the next step's parking comes after stage_step's barrier).
      __syncwarp();
      if (inside) {
        const uint32_t q = r % (kT16Team / 2), h = q / 2;
        const uint32_t col = (up_half ? H : 0u) + b * kT16Step + 16 * q;
        const uint32_t src = park + (up_half ? kT16wHalf : 0u) + 64 * q;
        uint8_t* orow = gout + static_cast<uint64_t>(row) * 2 * H * 2;
        uint8_t* drow = data + static_cast<uint64_t>(row) * 2 * H;
        uint32_t o[4], ow[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {  // chunk c: columns 4c … 4c + 3 of the lane's 16 (one e4m3 word, two bf16 words)
          uint32_t pw[4];
          ld_shared(src + 16 * (c ^ h), pw);
          float gv[4], v[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) gv[i] = u2f(pw[i]);
          ow[2 * (c % 2)] = encode_bf16x2(gv[0], gv[1]);
          ow[2 * (c % 2) + 1] = encode_bf16x2(gv[2], gv[3]);
          if (c % 2 == 1) st_v4(orow + 2ull * (col + 4 * (c - 1)), ow[0], ow[1], ow[2], ow[3]);
#pragma unroll
          for (int i = 0; i < 4; ++i) v[i] = mul_rn(gv[i], inv);
          encode_chunk<Fmt::kE4m3, 4>(v, o + c);
        }
        st_v4(drow + col, o[0], o[1], o[2], o[3]);
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
        st_u32(reinterpret_cast<uint8_t*>(p.weight_grad) + 4ull * row, f2u(canonical_nan(acc)));
      }
    }
  }
  sf_out.zero_padding_rows(p.num_tokens, p.sf_rows);
}

}  // namespace
}  // namespace tk

#ifndef TK_SWIGLU_BWD_T16W_NO_ENTRIES  // (swiglu_bwd_t16x.cu includes this file for T16wTeam, not this entry)
extern "C" __global__ void __launch_bounds__(tk::kT16Threads, tk::kT16MinBlocks)
    tk_swiglu_backward__e4m3_bf16_g128_t16w(const __grid_constant__ SwigluParams p) {
  tk::backward_t16w(p);
}
#endif  // TK_SWIGLU_BWD_T16W_NO_ENTRIES

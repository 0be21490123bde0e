// swigluBackwardAndPerTokenCast, e4m3 x (fp32 x scales, groups of 128), bf16 dy → bf16 xGrad + e4m3 groups of
// 128 + weightGrad (spec/quant.md §8.5, the cast of §2.3): `_t16w` with fewer issued instructions per lane-step
// `_t16x` (round 28, docs/perf-notes/perf28-sbc.md; swigluLaunchTuning.backwardCastForm = "team16x", the default
// since its A/B; `_t16w` itself left the package in trim32: docs/branches/trim32-removed.patch).
//
// Symbol
//   tk_swiglu_backward__e4m3_bf16_g128_t16x  the same bytes as `_t16w` (and main's kernel, swiglu.cu) under the
//                                            16-lane team form's conditions (the host selects it only there).
//
// `_t16w` is issue-bound (Nsight Compute on the H200, 16384 × 7168: SM 79%, issue active 82%, top stall
// not_selected). Its walk, stage, park, group butterfly, sf entries and weight gradient are kept line for line; every
// element still goes through the same operations in the same order. What changes is the bookkeeping around the
// per-element arithmetic: the instructions a warp issues per step (the sm_90a .text walked along the roofline case's
// path, docs/perf-notes/perf28-sbc.md) go from `_t16w`'s 864 to 789:
//   - The exponentials' and reciprocals' fast-path verdicts. `_t16w` (expf_cr_n, recip_rn_n) builds a bit mask per
//     element (a select and a bit insert after each test) for its rare slow loop. Here each verdict is folded into one
//     flag (ptxas accumulates it in the compare's predicate), and only when the flag is off does the rare path work
//     out which elements need it: for the reciprocals recip_fast_ok again (a few integer operations); for the
//     exponentials every element of the 4 takes expf_slow, which is expf_cr for every binary32 input (the reference's
//     definition, Math.fround(Math.exp(x)): tests/expf.test.ts, tools/expf_tab_proof.cpp), so the results equal the
//     fast path's wherever that one is taken.
//   - The bf16 NaN fix of the store phase. encode_bf16x2 fixes every word branch-free (cvt.rn.bf16x2 gives 0x7FFF for a
//     NaN, §1.5 wants 0x7FC0): 8 words a lane-step. Here the words are converted unfixed and fixed only when one of the
//     lane's 16 values is a NaN, detected from its e4m3 codes: a NaN value v gives v · inv = NaN, whose code is 0x7F or
//     0xFF (the only e4m3 NaN bytes), i.e. a byte with its low 7 bits set; 4 code words to test instead of 8 words to
//     fix. A non-NaN product that is NaN (±Inf · 0) also sets the flag; the fix leaves non-NaN halves unchanged, so a
//     false alarm costs time, not bytes.
//   - The store phase's two row pointers are formed once per row; a step adds its column offset.
#include "swiglu_bwd_t16w.cuh"

namespace tk {
namespace {

// expf_cr of N inputs: the table fast paths (any x, no early exit) with their verdicts folded into one flag; when
// any of them fails (|x| > 87, NaN, or near a binary32 midpoint: about 4 in 10^6 of the inputs in range), all N take
// expf_slow, which equals expf_cr for every input (one inlined copy, as expf_cr_n).
template <int N>
TK_DEV void expf_cr_all_or_slow(const float (&x)[N], float (&y)[N], const double* tab) {
  bool slow = false;
#pragma unroll
  for (int i = 0; i < N; ++i) slow |= !expf_fast_tab(x[i], tab, y[i]);
  if (slow) {
#pragma unroll 1  // one inlined expf_slow (a constant mask would unroll expf_slow_n into N copies)
    for (int j = 0; j < N; ++j) {
      float xj = x[0];
#pragma unroll
      for (int i = 1; i < N; ++i) xj = select_f32(i == j, x[i], xj);
      const float yj = expf_slow(xj);
#pragma unroll
      for (int i = 0; i < N; ++i) y[i] = select_f32(i == j, yj, y[i]);
    }
  }
}

// recip_rn_n with the range verdicts folded into one flag: y[i] = div_rn(1.0f, b[i]) for every input; the inputs
// recip_fast_ok rejects are found again (and divided) only when there is one.
template <int N>
TK_DEV void recip_rn_flag(const float (&b)[N], float (&y)[N]) {
  bool fast = true;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    y[i] = recip_from_seed(b[i], rcp_seed(b[i]));
    fast &= recip_fast_ok(b[i]);
  }
  if (!fast) {
    uint32_t slow = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) slow |= static_cast<uint32_t>(!recip_fast_ok(b[i])) << i;
    while (slow != 0) {
      const int j = __ffs(slow) - 1;
      slow &= slow - 1;
      float bj = b[0];
#pragma unroll
      for (int i = 1; i < N; ++i) bj = select_f32(i == j, b[i], bj);
      const float yj = div_rn(1.0f, bj);
#pragma unroll
      for (int i = 0; i < N; ++i) y[i] = select_f32(i == j, yj, y[i]);
    }
  }
}

TK_DEV void backward_t16x(const SwigluParams& p) {
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
  // `_t16w`'s walk: rows in 32 bits, row0 steps to T where another stride would pass 2^32.
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

    // `_t16w`'s stage (swiglu_bwd_t16w.cu): step b's inputs copied by the team into its stage, two steps deep.
    const uint32_t st_base = smem_addr(&sm.team[t / kWarpSize][lane / kT16Team]);
    const uint32_t park = st_base + kT16wPark;
    constexpr uint32_t kParity = sizeof(T16Step);
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

    // The store phase's row pieces: lane r writes columns 16q … 16q + 15 (q = r % 8) of the gate half (r < 8) or the
    // up half of each step (see there); their addresses at step 0, a step adding 128 columns.
    const bool up_half = r >= kT16Team / 2;
    const uint32_t q = r % (kT16Team / 2), h = q / 2;
    const uint64_t col0 = (up_half ? H : 0u) + 16 * q;
    uint8_t* const orow = gout + static_cast<uint64_t>(row) * 2 * H * 2 + 2 * col0;
    uint8_t* const drow = data + static_cast<uint64_t>(row) * 2 * H + col0;
    stage_step(0);
    for (uint32_t b = 0; b < steps; ++b) {
      stage_step(b + 1);
      cp_async_wait<1>();
      __syncwarp();
      const uint32_t in = st_base + (b & 1) * kParity;
      float amx = 0.0f, amu = 0.0f;  // maximumNumber of {0} ∪ {|v|} over the lane's gx / gu of the step
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        float gx[kT16Cols], gu[kT16Cols];
#pragma unroll
        for (int i = 0; i < kT16Cols; ++i) gx[i] = gu[i] = 0.0f;
        if (real) {
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
          expf_cr_all_or_slow<kT16Cols>(xn, e, exp_tab);
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
          recip_rn_flag(tmp, sgm);  // = div_rn(1.0f, tmp[i]) for every input
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
          const uint32_t px[4] = {f2u(gx[0]), f2u(gx[1]), f2u(gx[2]), f2u(gx[3])};
          const uint32_t pu[4] = {f2u(gu[0]), f2u(gu[1]), f2u(gu[2]), f2u(gu[3])};
          const uint32_t pos = (16 * s + r) ^ (2 * s + r / 8);  // chunk 16s + r, swizzled (T16wTeam)
          st_shared(park + 16 * pos, px);
          st_shared(park + kT16wHalf + 16 * pos, pu);
        }
      }
      // `_t16w`'s group maxima, sf entries and inv (one butterfly, one sf_and_inv per half).
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
      // `_t16w`'s store phase (16 columns of one half a lane: 2 bf16 and 1 e4m3 16-byte stores), the bf16 words
      // fixed for NaN only when the lane's codes show one (see the header).
      __syncwarp();
      if (inside) {
        const uint32_t src = park + (up_half ? kT16wHalf : 0u) + 64 * q;
        uint32_t o[4], ow[8];
#pragma unroll
        for (int c = 0; c < 4; ++c) {  // chunk c: columns 4c … 4c + 3 of the lane's 16 (one e4m3 word, two bf16 words)
          uint32_t pw[4];
          ld_shared(src + 16 * (c ^ h), pw);
          float gv[4], v[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) gv[i] = u2f(pw[i]);
          ow[2 * c] = encode_bf16x2_nan_unfixed(gv[0], gv[1]);
          ow[2 * c + 1] = encode_bf16x2_nan_unfixed(gv[2], gv[3]);
#pragma unroll
          for (int i = 0; i < 4; ++i) v[i] = mul_rn(gv[i], inv);
          encode_chunk<Fmt::kE4m3, 4>(v, o + c);
        }
        // a byte whose low 7 bits are all ones (0x7F, 0xFF): bit 7 of (byte & 0x7F) + 1; no carry crosses bytes
        const uint32_t nan = ((o[0] & 0x7f7f7f7fu) + 0x01010101u) | ((o[1] & 0x7f7f7f7fu) + 0x01010101u) |
                             ((o[2] & 0x7f7f7f7fu) + 0x01010101u) | ((o[3] & 0x7f7f7f7fu) + 0x01010101u);
        if (nan & 0x80808080u) {
#pragma unroll
          for (int j = 0; j < 8; ++j) ow[j] = bf16x2_fix_nan(ow[j]);
        }
        st_v4(orow + 2 * kT16Step * b, ow[0], ow[1], ow[2], ow[3]);
        st_v4(orow + 2 * kT16Step * b + 16, ow[4], ow[5], ow[6], ow[7]);
        st_v4(drow + kT16Step * b, o[0], o[1], o[2], o[3]);
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

#ifndef TK_SWIGLU_BWD_T16X_NO_ENTRIES  // (swiglu_bwd_t16y.cu includes this file for its helpers, not this entry)
extern "C" __global__ void __launch_bounds__(tk::kT16Threads, tk::kT16MinBlocks)
    tk_swiglu_backward__e4m3_bf16_g128_t16x(const __grid_constant__ SwigluParams p) {
  tk::backward_t16x(p);
}
#endif  // TK_SWIGLU_BWD_T16X_NO_ENTRIES

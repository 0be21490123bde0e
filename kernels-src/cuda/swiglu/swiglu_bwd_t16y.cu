// swigluBackwardAndPerTokenCast, e4m3 x (fp32 x scales, groups of 128), bf16 dy → bf16 xGrad + e4m3 groups of
// 128 + weightGrad (spec/quant.md §8.5, the cast of §2.3): `_t16x` for binary32 sf entries, `_t16y` (round 32,
// docs/perf-notes/perf32-sbc.md; swigluLaunchTuning.backwardCastForm = "team16y", default off).
//
// Symbol
//   tk_swiglu_backward__e4m3_bf16_g128_t16y  the same bytes as `_t16x` (and main's kernel, swiglu.cu) under `_t16x`'s
//                                            conditions with binary32 sf entries (neither roundSf nor packed; the host
//                                            takes `_t16x` otherwise).
//
// `_t16x` is issue-bound: its 8.7% fewer issued instructions than `_t16w` bought 8.7% less time. `_t16y` keeps its
// stage, park, butterfly, store phase and weight gradient, and every element goes through the same operations in the
// same order. The sm_90a hot path (the roofline case's path through one step, docs/perf-notes/perf32-sbc.md) goes
// from 789 to 723 warp instructions:
//   - The compute of a slot runs for every team, without `_t16x`'s `if (real)` (and the park without `if (inside)`):
//     a padding row or a team past T stages zeros (cp.async of size 0), from which every value is +0, so its parked
//     values are the zeros `_t16x` parks; its inv is 0 and its sf entry 0 as before (selected, not branched).
//   - The amax takes |v| as an operand modifier (fabsf into max_num) where abs_f is a LOP3: max_num ignores a NaN
//     whatever its sign, and for a number both are the value with the sign bit cleared. 16 LOP3 a step.
//   - The reciprocals' range verdict uses b = 1 + e^(−g) ≥ 1 (or NaN): recip_fast_ok's bits(b) − bits(1) ≤
//     bits(2^124) − bits(1) is then bits(b) ≤ bits(2^124), and its significand test is one AND with the complement
//     (recip_rn_ge1_flag): the same verdicts with 2 integer operations fewer an input.
//   - sf entries are binary32 only (the host's condition), so sf_and_inv's roundSf / packed branches and SfOut's layout
//     branches are gone; the column-major padding rows are zeroed a warp a row, without the division of SfOut's
//     grid-stride index.
// Package size (the sm_90a and sm_100a cubins together must stay under 80 KB): the slot loop is not unrolled (one
// copy of the slot; `_t16x` unrolls it, which is ~107 KB of cubins with a copy of expf_slow per slot), expf_slow is
// called out of line (one copy), and the exponential table is copied from constant memory by 32 lanes.
#define TK_SWIGLU_BWD_T16X_NO_ENTRIES
#include "swiglu_bwd_t16x.cu"

namespace tk {
namespace {

// expf_slow out of line: one copy in the code for the whole kernel (called by a slot whose exponentials' fast paths
// do not all hold: |x| > 87, NaN, or near a binary32 midpoint).
__device__ __noinline__ float expf_slow_call(float x) { return expf_slow(x); }

// expf_cr of N inputs as expf_cr_all_or_slow (swiglu_bwd_t16x.cu), the slow ones through expf_slow_call.
template <int N>
TK_DEV void expf_cr_all_or_call(const float (&x)[N], float (&y)[N], const double* tab) {
  bool slow = false;
#pragma unroll
  for (int i = 0; i < N; ++i) slow |= !expf_fast_tab(x[i], tab, y[i]);
  if (slow) {
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = expf_slow_call(x[i]);
  }
}

// recip_rn_flag (swiglu_bwd_t16x.cu) for b = 1 + e^(−g): b ≥ 1 or NaN, where recip_fast_ok's range test
// b − 1 ≤ 2^124 − 1 (in bits) is b ≤ 2^124 (a NaN's bits are above it whatever its sign), and its significand test is
// one AND with the complement: 3 integer operations an input instead of 5, the same verdicts.
template <int N>
TK_DEV void recip_rn_ge1_flag(const float (&b)[N], float (&y)[N]) {
  bool fast = true;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    y[i] = recip_from_seed(b[i], rcp_seed(b[i]));
    fast &= f2u(b[i]) <= 0x7d800000u && (~f2u(b[i]) & 0x7fffffu) != 0u;
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

// The 2^(j/32) table of expf_fast_tab in constant memory, copied into the block's shared array by warp 0 (one
// entry a lane): fill_exp2_table's 32 stores of immediates by one thread are ~80 instructions of code.
__constant__ uint64_t kExp2Bits[kExp2TableSize] = {
    exp2_32nd_bits(0),  exp2_32nd_bits(1),  exp2_32nd_bits(2),  exp2_32nd_bits(3),  exp2_32nd_bits(4),
    exp2_32nd_bits(5),  exp2_32nd_bits(6),  exp2_32nd_bits(7),  exp2_32nd_bits(8),  exp2_32nd_bits(9),
    exp2_32nd_bits(10), exp2_32nd_bits(11), exp2_32nd_bits(12), exp2_32nd_bits(13), exp2_32nd_bits(14),
    exp2_32nd_bits(15), exp2_32nd_bits(16), exp2_32nd_bits(17), exp2_32nd_bits(18), exp2_32nd_bits(19),
    exp2_32nd_bits(20), exp2_32nd_bits(21), exp2_32nd_bits(22), exp2_32nd_bits(23), exp2_32nd_bits(24),
    exp2_32nd_bits(25), exp2_32nd_bits(26), exp2_32nd_bits(27), exp2_32nd_bits(28), exp2_32nd_bits(29),
    exp2_32nd_bits(30), exp2_32nd_bits(31)};

TK_DEV void backward_t16y(const SwigluParams& p) {
  __shared__ __align__(16) T16wSmem sm;
  __shared__ double exp_tab[kExp2TableSize];
  check_psum(p);
  if (threadIdx.x < kExp2TableSize) exp_tab[threadIdx.x] = u2d(kExp2Bits[threadIdx.x]);
  __syncthreads();

  const uint32_t H = p.hidden, steps = H / kT16Step;  // H % 128 == 0 (groups of 128)
  const uint32_t sf_cols = 2 * H / kT16Step;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
  const uint8_t* dy = reinterpret_cast<const uint8_t*>(p.dy);
  uint8_t* gout = reinterpret_cast<uint8_t*>(p.out);
  uint8_t* data = reinterpret_cast<uint8_t*>(p.data);
  const bool weighted = p.flags & kHasWeights;
  uint8_t* sf = reinterpret_cast<uint8_t*>(p.sf);  // binary32 entries (the host's condition)
  const uint32_t t = threadIdx.x, lane = t % kWarpSize, r = lane % kT16Team;
  // `_t16w`'s walk: rows in 32 bits, row0 steps to T where another stride would pass 2^32.
  const uint32_t stride = gridDim.x * (blockDim.x / kWarpSize) * kT16RowsPerWarp;
  const uint32_t T = p.num_tokens;

  for (uint32_t row0 = (blockIdx.x * (blockDim.x / kWarpSize) + t / kWarpSize) * kT16RowsPerWarp; row0 < T;
       row0 = T - row0 > stride ? row0 + stride : T) {
    const uint32_t row = row0 + lane / kT16Team;  // ≤ T: a team past T has row == T only if row0 = T − 1
    const bool inside = row < T;
    const bool real = inside && row_is_real(p, static_cast<int64_t>(row));
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
#pragma unroll 1  // one copy of the slot (package size), its expf_slow out of line
      for (int s = 0; s < 2; ++s) {
        float gx[kT16Cols], gu[kT16Cols];
        {  // every team (a padding row or a team past T computes +0 from its staged zeros; see the header)
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
          expf_cr_all_or_call<kT16Cols>(xn, e, exp_tab);
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
          recip_rn_ge1_flag(tmp, sgm);  // = div_rn(1.0f, tmp[i]) for every input
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
            amx = max_num(amx, fabsf(gx[i]));  // |v| as an operand modifier (abs_f: a LOP3)
            amu = max_num(amu, fabsf(gu[i]));
          }
        }
        {
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
      const ScaleAndInv si = sf_and_inv(am, p.amax_clamp, kE4m3Max, 0u);  // binary32 sf entries
      const float inv = real ? si.inv : 0.0f;  // padding rows: codes 0x00 and sf entries 0, as `_t16x`
      if (inside && owner) st_u32(sf + 4 * (row * p.sf_stride0 + k * p.sf_stride1), real ? si.stored : 0u);
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
  // SfOut::zero_padding_rows for binary32 entries: the alignment rows [T, sf_rows) of a column-major layout, a warp a
  // row (no division by the row's entry count).
  for (uint64_t m = T + blockIdx.x * (blockDim.x / kWarpSize) + t / kWarpSize; m < p.sf_rows;
       m += gridDim.x * (blockDim.x / kWarpSize)) {
    for (uint32_t u = lane; u < sf_cols; u += kWarpSize) st_u32(sf + 4 * (m * p.sf_stride0 + u * p.sf_stride1), 0u);
  }
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kT16Threads, tk::kT16MinBlocks)
    tk_swiglu_backward__e4m3_bf16_g128_t16y(const __grid_constant__ SwigluParams p) {
  tk::backward_t16y(p);
}

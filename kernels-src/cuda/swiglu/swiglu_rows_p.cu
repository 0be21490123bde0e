// SwiGLU forward by whole rows with the next row's input in flight (spec/quant.md §8.1–§8.4): the row-prefetch
// forms `_anrp` of swigluForwardAndPerTokenCast (bf16 → e4m3, groups of 128) and swigluForward (bf16 → bf16), for
// H = 7168 only (docs/perf-notes/perf15-swf.md). A/B candidates, selected by swigluLaunchTuning.rowPrefetch
// (ops/quant/swiglu_launch.ts, default off): the same bytes as `_anr2` (the cast) and `_an` (the bf16 forward).
//
// Symbols
//   tk_swiglu_forward__bf16_e4m3_g128_anrp    swigluForwardAndPerTokenCast, bf16 x, groups of 128, H = 7168
//   tk_swiglu_forward__bf16_bf16_anrp         swigluForward, bf16 x, bf16 out, H = 7168
// Under `_anr2`'s conditions (every view aligned for its vector accesses, no clamp and hence no counters; the bf16
// out's base and row stride multiples of 16 bytes), with swiglu_rows.cu's PDL prologue.
//
// Geometry: swiglu_rows.cu's (448 threads, a team of 8 lanes per group of 128 columns, lane r of team q the chunks at
// 128q + 8r and 128q + 64 + 8r of gate and up; 2 blocks per SM, grid min(T, 2 · SMs), rows blockIdx.x, + gridDim.x …).
//
// The one change against `_anr2`: a thread issues the 4 loads (64 bytes) and the weight of its block's NEXT row
// before it computes the current one, whose raw words it loaded one iteration earlier. `_anr2` loads a row and then
// waits for it, so a thread has nothing in flight while it computes and every row pays one exposed load latency;
// here the latency of row n + 1 runs under the arithmetic of row n (16 more registers: the next row's raw words).
// The next row's input is loaded for any row < T (x and the weights have T rows; a padding row's words are read and
// never used, as `_anl`'s late search does); whether it is real (the psum search) is found after the current
// row's stores, while its loads are still in flight. Every value, code, sf and bf16 word is computed by the same
// operations as `_anr2` (row_chunk_values, the `_anl` amax, sf_and_inv, mul_rn + encode_e4m3x4) and swiglu.cu's
// `_an` (mul_rn chain, encode_bf16x2 per pair); padding rows get nothing written.
#define TK_SWIGLU_ROWS_NO_ENTRIES
#include "swiglu_rows.cu"

namespace tk {
namespace {

// A row's raw input words: slot s's gate chunk g[s] and up chunk u[s] (16 bytes each).
struct RowRaw {
  uint32_t g[2][4], u[2][4];
};

TK_DEV void load_row_raw(const SwigluParams& p, uint32_t row, uint32_t c0, RowRaw& raw) {
  const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + static_cast<uint64_t>(row) * (4 * kRowHidden) + 2 * c0;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    ld_stream(xr + 2 * 64 * s, raw.g[s]);
    ld_stream(xr + 2 * (kRowHidden + 64 * s), raw.u[s]);
  }
}

// The cast of one real row (`_anr2`'s row body, operation for operation).
TK_DEV void cast_row(const SwigluParams& p, const float* table, uint32_t row, uint32_t q, uint32_t r, uint32_t c0,
                     const RowRaw& raw, float w) {
  constexpr uint32_t H = kRowHidden;
  float v[2][kRowChunk];
#pragma unroll
  for (int s = 0; s < 2; ++s) row_chunk_values(table, raw.g[s], raw.u[s], p.flags & kHasWeights, w, v[s]);
  float m[kRowChunk];
#pragma unroll
  for (int i = 0; i < kRowChunk; ++i) m[i] = max_num(fabsf(v[0][i]), fabsf(v[1][i]));
#pragma unroll
  for (int h = kRowChunk / 2; h >= 1; h /= 2)
#pragma unroll
    for (int i = 0; i < h; ++i) m[i] = max_num(m[i], m[i + h]);
  const float amax = group_max<kRowTeam>(max_num(m[0], 0.0f));
  const ScaleAndInv si = sf_and_inv(amax, p.amax_clamp, kE4m3Max, p.sf_flags);
  uint8_t* const outr = reinterpret_cast<uint8_t*>(p.data) + static_cast<uint64_t>(row) * H + c0;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    float sc[kRowChunk];
#pragma unroll
    for (int i = 0; i < kRowChunk; ++i) sc[i] = mul_rn(v[s][i], si.inv);
    uint32_t o[2];
    encode_chunk<Fmt::kE4m3, kRowChunk>(sc, o);
    st_v2(outr + 64 * s, o[0], o[1]);
  }
  if (r == 0) row_sf_out(p).store(row, q, si.stored);
}

// The bf16 output of one real row: per chunk the values (swiglu.cu's `_an`: silu(g) · u, then · w), the pairs by
// encode_bf16x2 (store8<kBf16>'s conversion), one 16-byte store. The out row stride is p.out_row_stride elements.
TK_DEV void bf16_row(const SwigluParams& p, const float* table, uint32_t row, uint32_t c0, const RowRaw& raw, float w) {
  uint8_t* const outr = reinterpret_cast<uint8_t*>(p.out) + static_cast<uint64_t>(row) * (p.out_row_stride * 2) + 2 * c0;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    float v[kRowChunk];
    row_chunk_values(table, raw.g[s], raw.u[s], p.flags & kHasWeights, w, v);
    uint32_t o[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) o[k] = encode_bf16x2(v[2 * k], v[2 * k + 1]);
    st_v4(outr + 2 * 64 * s, o[0], o[1], o[2], o[3]);
  }
}

template <bool kCast>
TK_DEV void forward_rows_prefetch(const SwigluParams& p) {
  row_pdl_launch_dependents();
  __shared__ __align__(16) float table[kExpNegBf16TableSize];
  copy_bf16_gate_table(table, kSiluBf16Table);  // the module's constant table: no grid writes it
  __syncthreads();
  row_pdl_wait();  // from here on memory another grid may write (psum, x, weights, the outputs, the error word)
  check_psum(p);

  const uint32_t q = threadIdx.x / kRowTeam, r = threadIdx.x % kRowTeam;
  const uint32_t c0 = q * kRowGroup + r * kRowChunk;  // slot 0's first column; slot 1's is c0 + 64
  const uint32_t T = p.num_tokens;
  uint32_t row = blockIdx.x;
  RowRaw cur;
  float w = 1.0f;
  if (row < T) {
    load_row_raw(p, row, c0, cur);
    w = row_weight(p, row);
  }
  bool real = row < T && row_real(p, row);
  for (; row < T; row += gridDim.x) {
    const uint32_t next = row + gridDim.x;
    RowRaw nxt;
    float wn = 1.0f;
    if (next < T) {  // block-uniform; in flight during this row's arithmetic
      load_row_raw(p, next, c0, nxt);
      wn = row_weight(p, next);
    } else {
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int k = 0; k < 4; ++k) nxt.g[s][k] = nxt.u[s][k] = 0;
    }
    if (real) {  // padding rows (§8.1) get nothing written
      if constexpr (kCast) cast_row(p, table, row, q, r, c0, cur, w);
      else bf16_row(p, table, row, c0, cur, w);
    }
    real = next < T && row_real(p, next);  // after the stores: the search runs under the next row's loads
    cur = nxt;
    w = wn;
  }
  if constexpr (kCast) row_sf_out(p).zero_padding_rows(p.num_tokens, p.sf_rows);
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kRowThreads, tk::kRowMinBlocks) tk_swiglu_forward__bf16_e4m3_g128_anrp(
    const __grid_constant__ SwigluParams p) {
  tk::forward_rows_prefetch<true>(p);
}
extern "C" __global__ void __launch_bounds__(tk::kRowThreads, tk::kRowMinBlocks) tk_swiglu_forward__bf16_bf16_anrp(
    const __grid_constant__ SwigluParams p) {
  tk::forward_rows_prefetch<false>(p);
}

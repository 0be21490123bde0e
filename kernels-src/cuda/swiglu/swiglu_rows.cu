// SwiGLU forward (and per-token cast) by whole rows (spec/quant.md §8.1–§8.4), for H = 7168 only: the row forms of
// swigluForwardAndPerTokenCast (bf16 → e4m3, groups of 128) and swigluForward (bf16 → bf16). Selected where swiglu.cu's
// lean cast form `_anl` (swigluLaunchTuning.rowForm, ops/quant/swiglu_launch.ts, the default; false selects `_anl` for
// A/B) or swigluForward's `_an` (swigluLaunchTuning.rowPrefetch, the default; false selects `_an`) would run with
// H = 7168; the same bytes as those forms, which serve every other launch.
//
// Symbols
//   tk_swiglu_forward__bf16_e4m3_g128_anrs    swigluForwardAndPerTokenCast, bf16 x, groups of 128, H = 7168 (round 17)
//   tk_swiglu_forward__bf16_bf16_anrps        swigluForward, bf16 x, bf16 out, H = 7168 (round 18)
//   tk_swiglu_forward__bf16_e4m3_g128_anrt    swigluForwardAndPerTokenCast, `_anrs` with the next row's loads under
//                                             the current row's cast (round 33, A/B only)
// (The forms they refined, round 11's `_anr2` and round 15's `_anrp` (the same walks with each warp's binary psum
// search per row instead of the block's expert cursor), were kept for A/B behind the knobs castRowScan and
// forwardRowScan until trim24 removed them with the knobs; their source: docs/branches/trim24-removed.patch.)
//
// Under `_anl`'s or `_an`'s conditions (swigluFormSuffix: every view aligned for its vector accesses, no clamp and
// hence no counters), with programmatic dependent launch as swiglu.cu's kFormPdl (launched with the attribute while
// config.pdl is set).
//
// Launch geometry (ops/quant/swiglu_launch.ts follows it; any grid.x ≥ 1 is correct, the kernel is grid-stride):
//   block.x = kRowThreads = 448, no dynamic shared memory, grid.x = min(T, 2 · SMs) (one wave, kRowMinBlocks = 2)
//   Static shared memory: 34 KiB, the silu table of common/silu_bf16.cuh (copied by each CTA once).
//
// Work split: one row per block at a time, the block walks rows blockIdx.x, + gridDim.x, … A team of 8 adjacent
// lanes owns one group of 128 output columns (56 teams = 448 threads cover H = 7168): lane r of team q takes the
// chunks of 8 columns at 128q + 8r and 128q + 64 + 8r (gate and up: the same columns of both halves), as a step of
// swiglu.cu's forward does. So a group of 128 is one team, its amax one xor butterfly of 3 shuffles, and its scale
// and inverse (sf_and_inv: two IEEE divisions) are computed once per group. A row's weight is loaded with its 4 loads,
// and the expert test of the block's next row (the expert cursor below; `_anr2`'s psum search) runs while they are in flight,
// so neither stands between a row's loads and its arithmetic; a row's whole input is loaded before any of it is
// computed (16 registers of raw words), and the warps of the SM (2 × 14) hide the load latency of each other.
// Why rows instead of swiglu.cu's units of 4 rows × a part of the columns: no per-unit prologue (psum search, weight,
// first loads before the first step), one group per thread-team per row (no second sf_and_inv, no prefetch
// registers), and the psum search off the critical path. Measured on the H200 (2026-12-02): 85.5% of copy at
// 16384 × 7168 against `_anl`'s 81.2%; the 3-CTA build (≤ 40 registers, spills) and a bf16-output row form were
// slower and were removed (docs/perf-notes/perf11-swr.md).
#include "../common/bf16_gate_tables.h"
#include "../common/chunk.cuh"
#include "../common/codec.cuh"
#include "../common/error_word.cuh"
#include "../common/expf_bf16.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/reduce.cuh"
#include "../common/scale.cuh"
#include "../common/silu_bf16.cuh"
#include "../generated/swiglu_params.h"
#include "swiglu_rows.cuh"

namespace tk {
namespace {

constexpr uint32_t kRowHidden = 7168;  // H: the only hidden size of this form (ROW_HIDDEN of swiglu_launch.ts)
constexpr int kRowTeam = 8;            // lanes per group of 128 columns
constexpr int kRowChunk = 8;           // columns per chunk (16 bytes of bf16)
constexpr int kRowGroup = 128;
constexpr int kRowThreads = kRowHidden / kRowGroup * kRowTeam;  // 448 (ROW_THREADS of swiglu_launch.ts)
static_assert(kRowThreads % kWarpSize == 0, "whole warps");
// Resident blocks per SM (ROW_CTAS_PER_SM of swiglu_launch.ts): 2 × 448 threads, 28 warps per SM, no spills
// (at 3 blocks per SM, ≤ 40 registers, the form spilled 32 bytes on sm_90a around the slow path of sf_and_inv's
// divisions, and measured slower).
constexpr int kRowMinBlocks = 2;

TK_DEV void row_pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
TK_DEV void row_pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// The e4m3 cast's scale tensor (swiglu.cu's make_sf_out): H / 128 scale columns.
TK_DEV SfOut row_sf_out(const SwigluParams& p) {
  return SfOut{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.sf_flags, kRowHidden / kRowGroup};
}

// The 8 values of one chunk (§8.3: silu(g) · u, then · w): swiglu.cu's forward for bf16 x without a clamp,
// operation for operation (the silu entries first, the exact fix-ups of common/silu_bf16.cuh only when a gate of
// the chunk lies outside the table's window). One chunk at a time, so that a chunk's raw words are dead once its
// values exist: the lane's 16 raw words and 16 values are never all live at once (the 40 registers).
TK_DEV void row_chunk_values(const float* table, const uint32_t (&gw)[4], const uint32_t (&uw)[4], bool weighted,
                             float w, float (&v)[kRowChunk]) {
  uint32_t outside = 0;
#pragma unroll
  for (int k = 0; k < kRowChunk / 2; ++k) {
    const Bf16x2Offsets o = exp_neg_bf16x2_offsets(gw[k]);
    v[2 * k] = bf16_table_at(table, o.lo);
    v[2 * k + 1] = bf16_table_at(table, o.hi);
    outside |= o.outside;
  }
  if (outside != 0) {
#pragma unroll
    for (int i = 0; i < kRowChunk; ++i) {
      const float g = element<Fmt::kBf16>(gw, i);
      v[i] = silu_bf16_fix(g, v[i], silu_bf16_outside(f2u(g) >> 16));
    }
  }
#pragma unroll
  for (int i = 0; i < kRowChunk; ++i) v[i] = mul_rn(v[i], element<Fmt::kBf16>(uw, i));
  if (weighted) {
#pragma unroll
    for (int i = 0; i < kRowChunk; ++i) v[i] = mul_rn(v[i], w);
  }
}

// Both row forms' start after the PDL trigger: the block's copy of the silu table, then the wait for the previous
// grid (from here on memory another grid may write: psum, x, weights, the outputs, the error word) and the psum check.
TK_DEV void row_prologue(const SwigluParams& p, float* table) {
  copy_bf16_gate_table(table, kSiluBf16Table);  // the module's constant table: no grid writes it
  __syncthreads();
  row_pdl_wait();
  check_psum(p);
}

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

}  // namespace
}  // namespace tk

// swigluForwardAndPerTokenCast by whole rows with a per-block expert cursor (round 17, docs/perf-notes/perf17-swl.md):
// `_anrs` (bf16 → e4m3, groups of 128, H = 7168), selected by swigluLaunchTuning.castRowScan (ops/quant/swiglu_launch.ts;
// the default since round 17's A/B; off: `_anl`). Round 11's `_anr2` geometry, walk, PDL prologue and row body (the
// same operations per element: row_chunk_values, the `_anl` amax, group_max, sf_and_inv, mul_rn + encode_chunk<kE4m3>,
// the sf by lane 0 of the team, zero_padding_rows), under `_anl`'s conditions.
//
// What changes: `_anr2`'s Nsight profile (bench/runs/2026-12-02-h200-ncu-round16.txt) counts 2.77 M global load warp
// instructions at 6.0 sectors each. The input loads are already whole 16-sector requests (0.92 M of them: 4 per warp
// per row); the other ~1.85 M are 1-sector loads: each of a block's 14 warps runs the binary psum search of every row
// (~7 dependent loads and an integer division) plus the row weight. A block walks its rows in increasing order, so the
// first expert e with psum[e] > t only moves forward: `_anrs` keeps it (and psum[e], align(psum[e−1], A)) in
// registers; a row below psum[e] needs no load, a row past it one coalesced load of psum[e .. e+30] by the warp's lanes
// and a ballot (a binary search over the rest only when the 31 experts are passed as well). For a psum that keeps §11.2
// (non-decreasing) the expert found is the binary search's, so the rows found real are the same; a psum that breaks
// §11.2 is reported by check_psum as before, and every psum index stays inside [0, E).
// A variant that also stored the codes 16 bytes a lane (`_anrw`: lane pairs swapping 8-byte halves by two shuffles)
// tied `_anrs` in the A/B and was dropped (docs/perf-notes/perf17-swl.md, Measured).
namespace tk {
namespace {

// §8.1's expert of the block's current row: e the first expert with psum[e] > t (E when none), end = psum[e] (e < E),
// start = align(psum[e − 1], A) (0 for e = 0).
struct ExpertCursor {
  uint32_t e;
  int32_t end;
  int64_t start;
};

// The binary search's predicate psum[e] > t (as int64: psum[e] ≥ 0 and psum[e] > t unsigned).
TK_DEV bool psum_above(int32_t v, uint32_t t) { return v >= 0 && static_cast<uint32_t>(v) > t; }

// Moves the cursor to row t (t ≥ every row it was moved to before; block-uniform, every lane of the warp active) and
// says whether t is real: the answer of a binary search of the first e with psum[e] > t (swiglu_rows.cuh's
// row_is_real) for a non-decreasing psum.
TK_DEV bool cursor_real(const SwigluParams& p, ExpertCursor& c, uint32_t t) {
  const uint32_t E = p.num_experts;
  if (E == 0) return true;
  if (c.e < E && !psum_above(c.end, t)) {
    const uint32_t lane = threadIdx.x % kWarpSize;
    const uint32_t base = c.e + 1;      // psum[c.e] ≤ t: the expert is past c.e
    const uint32_t idx = base + lane - 1;  // lane 0: psum[c.e] (the start of base), lanes 1 … 31: experts base … base + 30
    const int32_t v = idx < E ? psum_at(p, idx) : 0;
    const uint32_t hit = __ballot_sync(~0u, lane > 0 && idx < E && psum_above(v, t));
    if (hit != 0) {
      const int f = __ffs(hit) - 1;  // ≥ 1
      c.e = base + f - 1;
      c.end = __shfl_sync(~0u, v, f);
      c.start = align_up(__shfl_sync(~0u, v, f - 1), p.token_alignment);
    } else if (base + 30 >= E - 1) {  // every expert from base on looked at: t at or beyond psum[E − 1]
      c.e = E;
    } else {  // more than 31 experts passed: the binary search over [base + 31, E)
      uint32_t lo = base + 31, hi = E;
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (psum_above(psum_at(p, mid), t)) hi = mid;
        else lo = mid + 1;
      }
      c.e = lo;
      if (lo < E) {
        c.end = psum_at(p, lo);
        c.start = align_up(psum_at(p, lo - 1), p.token_alignment);
      }
    }
  }
  return c.e < E && static_cast<int64_t>(t) >= c.start;
}

TK_DEV void forward_rows_cast_scan(const SwigluParams& p) {
  row_pdl_launch_dependents();
  __shared__ __align__(16) float table[kExpNegBf16TableSize];
  row_prologue(p, table);

  constexpr uint32_t H = kRowHidden;
  const uint32_t q = threadIdx.x / kRowTeam, r = threadIdx.x % kRowTeam;
  const uint32_t c0 = q * kRowGroup + r * kRowChunk;  // slot 0's first column; slot 1's is c0 + 64
  const uint32_t T = p.num_tokens;
  ExpertCursor cur{0, 0, 0};
  if (p.num_experts != 0) cur.end = psum_at(p, 0);  // after row_prologue's wait
  uint32_t row = blockIdx.x;
  bool real = row < T && cursor_real(p, cur, row);
  for (; row < T; row += gridDim.x) {
    uint32_t gw[2][4], uw[2][4];
    if (real) {
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + static_cast<uint64_t>(row) * (4 * H) + 2 * c0;
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        ld_stream(xr + 2 * 64 * s, gw[s]);
        ld_stream(xr + 2 * (H + 64 * s), uw[s]);
      }
    }
    const float w = real ? row_weight(p, row) : 1.0f;  // in flight with the row's loads
    const uint32_t next = row + gridDim.x;               // the cursor moves to the block's next row meanwhile
    const bool real_next = next < T && cursor_real(p, cur, next);
    if (real) {  // padding rows (§8.1) get nothing written
      float v[2][kRowChunk];
#pragma unroll
      for (int s = 0; s < 2; ++s) row_chunk_values(table, gw[s], uw[s], p.flags & kHasWeights, w, v[s]);
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
      uint32_t o[2][2];
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        float sc[kRowChunk];
#pragma unroll
        for (int i = 0; i < kRowChunk; ++i) sc[i] = mul_rn(v[s][i], si.inv);
        encode_chunk<Fmt::kE4m3, kRowChunk>(sc, o[s]);
      }
#pragma unroll
      for (int s = 0; s < 2; ++s) st_v2(outr + 64 * s, o[s][0], o[s][1]);
      if (r == 0) row_sf_out(p).store(row, q, si.stored);
    }
    real = real_next;
  }
  row_sf_out(p).zero_padding_rows(p.num_tokens, p.sf_rows);
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kRowThreads, tk::kRowMinBlocks) tk_swiglu_forward__bf16_e4m3_g128_anrs(
    const __grid_constant__ SwigluParams p) {
  tk::forward_rows_cast_scan(p);
}

// swigluForward by whole rows with the next row's input in flight AND the block's expert kept in registers (round 18,
// docs/perf-notes/perf18-swf.md): `_anrps` (bf16 → bf16, H = 7168), selected by swigluLaunchTuning.forwardRowScan
// (ops/quant/swiglu_launch.ts; the default since round 18's A/B; off: `_an`) wherever `_an` would run with H = 7168, under
// `_an`'s conditions (every view aligned for its vector accesses, no clamp and hence no counters; the bf16 out's base
// and row stride multiples of 16 bytes).
// Round 15's `_anrp` (docs/perf-notes/perf15-swf.md: 86.4 → 88.2% of copy at 16384 × 7168 against `_an`): a thread
// issues the 4 loads (64 bytes) and the weight of its block's NEXT row before it computes the current one, whose raw
// words it loaded one iteration earlier, so the latency of row n + 1 runs under the arithmetic of row n (16 more
// registers: the next row's raw words); every bf16 word by the same operations as swiglu.cu's `_an`
// (row_chunk_values: silu(g) · u, then · w; encode_bf16x2 per pair); padding rows get nothing written.
// `_anrp`'s geometry, PDL prologue, walk and row body (load_row_raw, row_weight, bf16_row: the same operations per
// element), with the realness of each row decided by `_anrs`'s ExpertCursor / cursor_real instead of each warp's
// binary psum search per row (~7 dependent 1-sector loads and an integer division). The cursor runs where `_anrp`'s
// search ran (after the current row's stores, under the next row's loads), but one row further ahead: so the
// realness of the block's next row is known before its loads are issued, and a padding row's input and weight are
// not loaded (`_anrp` loads them and never uses them). The rows written, and every word of them, are `_anrp`'s.
namespace tk {
namespace {

TK_DEV void forward_rows_prefetch_scan(const SwigluParams& p) {
  row_pdl_launch_dependents();
  __shared__ __align__(16) float table[kExpNegBf16TableSize];
  row_prologue(p, table);

  const uint32_t q = threadIdx.x / kRowTeam, r = threadIdx.x % kRowTeam;
  const uint32_t c0 = q * kRowGroup + r * kRowChunk;  // slot 0's first column; slot 1's is c0 + 64
  const uint32_t T = p.num_tokens;
  const uint32_t G = gridDim.x;
  ExpertCursor ec{0, 0, 0};
  if (p.num_experts != 0) ec.end = psum_at(p, 0);  // after row_prologue's wait
  uint32_t row = blockIdx.x;
  // real: the current row's realness; real_next: the block's next row's (the cursor moves row, row + G, … in order)
  bool real = row < T && cursor_real(p, ec, row);
  RowRaw cur;
  float w = 1.0f;
  if (real) {
    load_row_raw(p, row, c0, cur);
    w = row_weight(p, row);
  } else {
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int k = 0; k < 4; ++k) cur.g[s][k] = cur.u[s][k] = 0;
  }
  bool real_next = row + G < T && cursor_real(p, ec, row + G);
  for (; row < T; row += G) {
    const uint32_t next = row + G;
    RowRaw nxt;
    float wn = 1.0f;
    if (real_next) {  // block-uniform (real_next implies next < T); in flight during this row's arithmetic
      load_row_raw(p, next, c0, nxt);
      wn = row_weight(p, next);
    } else {
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int k = 0; k < 4; ++k) nxt.g[s][k] = nxt.u[s][k] = 0;
    }
    if (real) {  // padding rows (§8.1) get nothing written
      bf16_row(p, table, row, c0, cur, w);
    }
    real = real_next;
    // after the stores, under the next row's loads: the row after next (no load while it stays in the expert)
    real_next = next < T && next + G < T && cursor_real(p, ec, next + G);
    cur = nxt;
    w = wn;
  }
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kRowThreads, tk::kRowMinBlocks) tk_swiglu_forward__bf16_bf16_anrps(
    const __grid_constant__ SwigluParams p) {
  tk::forward_rows_prefetch_scan(p);
}

// swigluForwardAndPerTokenCast with the next row's loads issued under the current row's cast (round 33,
// docs/perf-notes/perf33-swc.md): `_anrt` (bf16 → e4m3, groups of 128, H = 7168), selected by
// swigluLaunchTuning.castTailPrefetch (ops/quant/swiglu_launch.ts; default off: `_anrs`) wherever `_anrs` would run.
// `_anrs` issues a row's loads, runs the cursor, then computes the row: from the values on (the amax tree, the team's 3
// shuffles, sf_and_inv's two divisions, 16 products, the encodes, the stores) the warp has nothing of its own in flight.
// `_anrps` (swigluForward) keeps the whole next row in flight and reaches ~90% of copy, but the same full prefetch
// for the cast (`_anrq`, perf16-swc: 16 more registers) lost. `_anrt` loads the next row into the raw words of the
// current one as soon as its values exist (the raw words are dead from there), so the loads run under the cast's
// dependent tail and the cursor, and the registers live at once are `_anrs`'s (16 raw words and 16 values at most).
// Every byte is `_anrs`'s: the same row body (row_chunk_values, the `_anl` amax, group_max, sf_and_inv, mul_rn +
// encode_chunk<kE4m3>, the sf by lane 0 of the team), the same cursor (rows visited in the same order, so the same
// rows found real), padding rows get nothing written, zero_padding_rows at the end.
namespace tk {
namespace {

TK_DEV void forward_rows_cast_tail(const SwigluParams& p) {
  row_pdl_launch_dependents();
  __shared__ __align__(16) float table[kExpNegBf16TableSize];
  row_prologue(p, table);

  constexpr uint32_t H = kRowHidden;
  const uint32_t q = threadIdx.x / kRowTeam, r = threadIdx.x % kRowTeam;
  const uint32_t c0 = q * kRowGroup + r * kRowChunk;  // slot 0's first column; slot 1's is c0 + 64
  const uint32_t T = p.num_tokens;
  const uint32_t G = gridDim.x;
  ExpertCursor ec{0, 0, 0};
  if (p.num_experts != 0) ec.end = psum_at(p, 0);  // after row_prologue's wait
  // One pass per row loaded, plus one: the pass of row n loads row n (its cursor first) and casts row n − G, whose
  // words the pass before loaded. So the loop has the kernel's only cursor and load sites (each inlined copy of the
  // cursor is ~100 instructions of .text).
  bool real = false;  // the previous row's realness (none before the first pass)
  RowRaw raw;         // read only for a real row, whose words were loaded into it before
  float w = 1.0f;
  for (uint32_t next = blockIdx.x;; next += G) {
    const uint32_t row = next - G;  // used only where real: then next ≥ blockIdx.x + G
    // under the previous row's loads (issued under the cast of the row before it), as `_anrs`'s cursor runs under
    // its row's loads; the cursor moves blockIdx.x, + G, … in order
    const bool real_next = next < T && cursor_real(p, ec, next);
    float v[2][kRowChunk];
    if (real) {
#pragma unroll
      for (int s = 0; s < 2; ++s) row_chunk_values(table, raw.g[s], raw.u[s], p.flags & kHasWeights, w, v[s]);
    }
    float wn = 1.0f;
    if (real_next) {  // block-uniform; the raw words are dead: the next row's land in them under the cast below
      load_row_raw(p, next, c0, raw);
      wn = row_weight(p, next);
    }
    if (real) {  // padding rows (§8.1) get nothing written
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
      uint32_t o[2][2];
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        float sc[kRowChunk];
#pragma unroll
        for (int i = 0; i < kRowChunk; ++i) sc[i] = mul_rn(v[s][i], si.inv);
        encode_chunk<Fmt::kE4m3, kRowChunk>(sc, o[s]);
      }
#pragma unroll
      for (int s = 0; s < 2; ++s) st_v2(outr + 64 * s, o[s][0], o[s][1]);
      if (r == 0) row_sf_out(p).store(row, q, si.stored);
    }
    if (next >= T) break;
    real = real_next;
    w = wn;
  }
  row_sf_out(p).zero_padding_rows(p.num_tokens, p.sf_rows);
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kRowThreads, tk::kRowMinBlocks) tk_swiglu_forward__bf16_e4m3_g128_anrt(
    const __grid_constant__ SwigluParams p) {
  tk::forward_rows_cast_tail(p);
}

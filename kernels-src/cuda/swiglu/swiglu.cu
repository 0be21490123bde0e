// SwiGLU family (spec/quant.md §8.1–§8.5): swigluForward, swigluForwardAndPerTokenCast, swigluBackward,
// swigluBackwardAndPerTokenCast, and the device expf check kernel.
//
// Symbols
//   tk_swiglu_forward__<in>_<out>             in ∈ {fp32, bf16}, out ∈ {fp32, bf16}        (swigluForward)
//   tk_swiglu_forward__<in>_e4m3_g<N>         in ∈ {fp32, bf16}, N ∈ {32, 128}             (+ per-token cast)
//   tk_swiglu_backward__<in>_<out>            in = x = actXGrad ∈ {fp32, bf16}, out ∈ {fp32, bf16}
//   tk_swiglu_backward__e4m3_<dy>_g<N>        dy ∈ {fp32, bf16}, N ∈ {32, 128}             (e4m3 x, + cast)
//   <one of the above>_a, _an                 aligned-only forms (SwigluForm below): `_a` for views that allow
//                                             every vector access, `_an` also without a clamp; the same geometry,
//                                             launch bounds and bytes as the kernel they derive from. `_a`, `_an`
//                                             of forward__bf16_bf16, `_a` of backward__bf16_bf16; the launch takes
//                                             them by default where their conditions hold
//   tk_swiglu_forward__bf16_e4m3_g128_anl     the lean cast form (kFormLeanCast): `_an`'s conditions (the launch
//                                             takes it by default where they hold), the same bytes, 4 CTAs per SM
//                                             on sm_90a and 4 column parts (see below)
//                                             Every aligned-only form (`_a`, `_an`, `_anl`) with programmatic
//                                             dependent launch (kFormPdl, round 10): launched with the PDL
//                                             attribute while config.pdl is set
//   tk_swiglu_expf_check                      out[i] = expf_cr(x[i]) for i < num_tokens    (tests; the pattern
//                                             0xffffffff, a NaN, where expf_cr_tab(x[i]) has other bits)
//   tk_swiglu_recip_check                     out[i] = recip_rn_n's 1/x[i]                 (tests; 0xffffffff
//                                             where it differs from div_rn(1, x[i]), NaN results aside)
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, the kernels are grid-stride):
//
//   kernel                 block.x  dynamic smem  grid.x
//   forward (all)          256      0             min(ceilDiv(T, 32) · P, 8 · P · SMs),  P = kFwdParts = 3
//     except _g128_anl     256      0             the same with P = kFwdLeanParts = 4
//   backward (all)         256      0             min(ceilDiv(T, 32), 8 · SMs)
//   tk_swiglu_expf_check   256      0             min(ceilDiv(n, 256), 8 · SMs)
//   tk_swiglu_recip_check  256      0             min(ceilDiv(n, 256), 8 · SMs)  (8 elements a thread)
//
//   Static shared memory: 256 bytes (a 2^(j/32) table, see below) in the kernels whose x is fp32 or e4m3 and in
//   tk_swiglu_expf_check, plus 40 KiB (BwdStage: a step's inputs staged two steps deep) in backward__e4m3_bf16_*;
//   34 KiB in the kernels whose x is bf16 (forward__bf16_*, backward__bf16_*): a table over every bf16 gate, of
//   silu(g) = g / (1 + e^(−g)) for the forward (common/silu_bf16.cuh) and of e^(−g) for the backward
//   (common/expf_bf16.cuh), which each CTA first copies from global memory (common/bf16_gate_tables.h,
//   computed on the host by the same functions: 8.5 sixteen-byte loads per thread, where computing the 8704
//   entries per CTA cost ~34 expf_cr and divisions per thread, a few µs with no load in flight). A lookup
//   is one shared-memory load and ~5 integer operations (a word's two gates share their offset arithmetic:
//   exp_neg_bf16x2_offsets; plus, for silu, ~8 exact fix-ups when a chunk has a gate outside the window)
//   instead of expf_cr's ~17 binary64 operations and 2 conversions (the FP64 pipe runs 64 lanes per SM per
//   clock, and at H200 speed that alone cost about as long as the memory traffic) and, for silu, the division.
//   A clamped gate is c, any binary32: its value is computed once per thread. fp32 gates (any binary32) and e4m3
//   gates (a code times a binary32 scale per group) have no finite table and compute expf_cr's results, 8 at a time
//   (expf_cr_n: the 8 binary64 chains interleave, and the rare slow path is one inlined copy per call site, not
//   one per element), by its table form (common/expf.cuh, expf_fast_tab: 2^(j/32) from a 256-byte shared table
//   that each CTA of those kernels, and of tk_swiglu_expf_check, fills first; ~9 binary64 operations a gate
//   instead of ~17; tools/expf_tab_proof.cpp: the same bits as expf_cr for all 2^32 inputs).
//   The backward's s = fl(1 / (1 + e)) is div_rn, whose fast path ends in a branch to a slow-path call per
//   division, except in backward__bf16_* and backward__e4m3_bf16_g128: there recip_rn_n (common/recip.cuh: the
//   same bits, tools/recip_check.cpp) computes the 8 of a chunk in one branch-free block.
//
// Work split: a team of 8 adjacent lanes owns a row (a warp works on 4 rows, a block on 32); rows are walked
// grid-stride by whole warps (in the forward a warp's unit is a third of the column blocks of its 4 rows, so that
// there are 3 × as many warps of work: for_rows), so every loop bound is warp-uniform and the quantization groups
// can reduce with xor shuffles inside a team. A row is cut into blocks of 128 columns; in block b team lane r takes
// the chunks of 8 columns starting at 128b + 8r and 128b + 64 + 8r (gate and up: the same columns of both halves).
// So lane r meets exactly the columns j ≡ 8r … 8r + 7 (mod 64), in increasing j: the 64 partial sums of the weight
// gradient (§8.5's fixed order) are 8 registers per lane, and the halving tree is 3 xor shuffles plus 3 in-lane
// steps (the reason the backward cannot split a row's columns between warps as the forward does).
// A group of 32 columns is 4 lanes of one chunk slot, a group of 128 the 16 chunks of a block (8 lanes × 2).
// Chunks are 16-byte vector loads/stores when the views are aligned (fp32 uses two, e4m3 codes one 8-byte access),
// element-wide otherwise.
// With bf16 x a lane loads the chunks of block b + 1 (raw words: 16 registers forward, 24 backward) before it
// computes block b, so its loads stay in flight while it computes (~16 warps per SM cannot hide a load-then-compute
// step otherwise); the e4m3 cast form with bf16 dy copies block b + 1 into shared memory by cp.async (BwdStage)
// while it computes block b; fp32 x and the cast form with fp32 dy, short of registers, load a chunk where they use
// it.
//
// Rows of the expert layout (§8.1): row t is real when t ≥ align(psum[e−1], A) for the first e with psum[e] > t.
// Block 0 also checks the contract of §11.2 and reports a breach in the error word; whatever psum holds, every
// access stays inside [0, T) rows (the walk never leaves it) and inside psum ([0, E)).
// Forward skips padding rows; backward writes them 0 (every output, sf entries included).
#include "../common/bf16_gate_tables.h"
#include "../common/chunk.cuh"
#include "../common/codec.cuh"
#include "../common/error_word.cuh"
#include "../common/expf.cuh"
#include "../common/expf_bf16.cuh"
#include "../common/silu_bf16.cuh"
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

// SwigluFlag, SwigluFault and the row helpers (align_up, psum_at, row_is_real, check_psum, row_weight):
// swiglu_rows.cuh.
// Launch conditions compiled into the aligned-only forms (template argument kForm of forward / backward; symbol
// suffix `_a` = kFormAligned, `_an` = kFormAligned | kFormNoClamp; swigluFormSuffix of ops/quant/swiglu_launch.ts
// selects them wherever the conditions hold, main's kernels (kForm = 0) serve every other launch):
//   kFormAligned: every view the kernel reads or writes allows its vector accesses (x, dy, xGrad, actOut bases
//     16-byte aligned, the forward out's base and row stride too, e4m3 codes 8-byte), so the element-wide fallback
//     of load_chunk / store_chunk is not compiled. ptxas if-converts that fallback of the 16-byte loads into
//     predicated 2-byte loads which issue on every step even when their guard is off (docs/perf-notes/perf9-swiglu.md:
//     48 of the 431 instructions of a forward step, 72 of the 1120 of a backward step).
//   kFormNoClamp: the launch has no clamp (hence no counters, which need one): the clamp flags and selects of
//     every element are not compiled (without a clamp they still cost ~20 instructions a chunk: the 8 `clamped`
//     booleans are materialized). Forward only: the backward's `_an` was slower than main's kernel on the H200
//     (docs/perf-notes/perf9-swiglu.md, Measured) and was removed.
//   kFormLeanCast (forward + cast to groups of 128 with bf16 x, on top of kFormAligned | kFormNoClamp: `_anl`):
//     the cast's own work per step cut without changing an operation (docs/perf-notes/perf10-swc.md): the two chunk
//     slots of a step are one group, so its scale and inverse (sf_and_inv: two IEEE divisions) are computed once
//     a step instead of once per slot; the group's amax is one max tree over the 16 values with |v| folded into
//     the max's operands (fabsf: FMNMX |R|) instead of an integer mask per value and two chains; the e4m3 row
//     is addressed from a row pointer made once per unit; a unit issues its row weight and first step's loads
//     before its psum search (for_rows' kLateState), not after. Launched at kFwdLeanMinBlocks CTAs per SM (≤ 64
//     registers on sm_90a: 32 warps per SM instead of 24) with kFwdLeanParts column parts.
//   kFormPdl (round 10, docs/perf-notes/perf10-pdl.md; every aligned-only form, `_anl` included): programmatic
//     dependent launch. griddepcontrol.launch_dependents first (the stream's next grid, when launched with the PDL attribute, may be
//     scheduled from then on; it waits for this grid's completion before its own first global access), then the
//     CTA's gate table (copied from the module's constant __device__ tables, which no grid writes) and the clamp's
//     value, then griddepcontrol.wait (returns once the previous grid, when this one was launched with the attribute,
//     has completed and its memory is visible), and only then the first access to memory another grid may write:
//     psum's check, x, dy, weights, the outputs, sf, the counters, the error word. The host launches these forms with
//     the attribute while config.pdl is set; without it both instructions have no effect.
enum SwigluForm : int { kFormMain = 0, kFormAligned = 1, kFormNoClamp = 2, kFormLeanCast = 4, kFormPdl = 8 };

TK_DEV void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
TK_DEV void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

constexpr int kBlockThreads = 256;
constexpr int kTeam = 8;        // lanes per row
constexpr int kChunk = 8;       // columns per chunk
constexpr int kBlockCols = 128;  // columns per step of a team: 2 chunks per lane
constexpr int kRowsPerWarp = kWarpSize / kTeam;
// Column parts of a row group in the forward kernels (for_rows; FORWARD_PARTS of ops/quant/swiglu_launch.ts).
constexpr int kFwdParts = 3;
// Resident blocks per SM the register budget is sized for: 2 (≤ 128 registers, no spills on sm_90a / sm_100a).
constexpr int kMinBlocks = 2;
// The forward kernels with bf16 x, except the cast to groups of 32: 3 on sm_90 (≤ 80 registers without spills:
// 24 warps per SM, for which kFwdParts makes the work), 2 on sm_100 (its code needs ~105–115 registers). The others
// spill at 80 (fp32 x: 36–140 bytes, bf16 x with groups of 32: 4 bytes) and keep 2.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr int kFwdMinBlocks = 2;
#else
constexpr int kFwdMinBlocks = 3;
#endif
// The lean cast form (kFormLeanCast, `_anl`): 4 CTAs per SM on sm_90 (≤ 64 registers, no spills: 32 warps per SM,
// 4 × 34 KiB shared), 2 on sm_100 as its other forwards; kFwdLeanParts column parts of a row group
// (FORWARD_LEAN_PARTS of ops/quant/swiglu_launch.ts), so that T = 8192 makes 1024 CTAs, ~2 full waves of
// 4 × 132 (3 parts would leave the second wave 45% full).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr int kFwdLeanMinBlocks = 2;
#else
constexpr int kFwdLeanMinBlocks = 4;
#endif
constexpr int kFwdLeanParts = 4;

enum class RowState { kDead, kPadding, kReal };

// 8 consecutive elements of a row as loaded (fp32: 2 × 16 bytes, bf16: 16 bytes, e4m3: 8 bytes).
template <Fmt kFmt>
struct Raw8 {
  static constexpr int kBytes = kChunk * FmtTraits<kFmt>::kBits / 8;
  uint32_t w[kBytes / 4];

  // `aligned`: the element address is a multiple of the chunk's bytes (16 at most).
  TK_DEV void load(const uint8_t* p, bool aligned) {
    if constexpr (kBytes == 32) {
      uint32_t lo[4], hi[4];
      load_chunk<16, FmtTraits<kFmt>::kAccessBytes>(p, lo, aligned);
      load_chunk<16, FmtTraits<kFmt>::kAccessBytes>(p + 16, hi, aligned);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        w[i] = lo[i];
        w[4 + i] = hi[i];
      }
    } else {
      load_chunk<kBytes, FmtTraits<kFmt>::kAccessBytes>(p, w, aligned);
    }
  }

  TK_DEV void zero() {
#pragma unroll
    for (int i = 0; i < kBytes / 4; ++i) w[i] = 0;
  }

  // Widened to binary32 (codes decoded, not scaled).
  TK_DEV void decode(float (&v)[kChunk]) const { decode_chunk<kFmt, kChunk>(w, v); }
};

// Store 8 binary32 values as fp32 (NaN canonical) or bf16 (§1.5). kHw: bf16 by one hardware conversion per pair
// with the NaN halves fixed (encode_bf16x2: the same bytes as encode_bf16 in about half the instructions);
// otherwise encode_bf16 per value, which the e4m3-x backward with groups of 32 keeps (the hardware form spills
// it on sm_100a at 128 registers).
template <Fmt kFmt, bool kHw = true>
TK_DEV void store8(uint8_t* p, bool aligned, const float (&v)[kChunk]) {
  if constexpr (kFmt == Fmt::kFp32) {
    uint32_t w[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = f2u(canonical_nan(v[i]));
    store_chunk<32>(p, w, aligned);
  } else {
    static_assert(kFmt == Fmt::kBf16, "store8: fp32 or bf16");
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w[i] = kHw ? encode_bf16x2(v[2 * i], v[2 * i + 1]) : encode_bf16(v[2 * i]) | (encode_bf16(v[2 * i + 1]) << 16);
    store_chunk<16>(p, w, aligned);
  }
}

// 8 zero elements of kFmt (fp32 or bf16).
template <Fmt kFmt>
TK_DEV void store8_zero(uint8_t* p, bool aligned) {
  const uint32_t z[8] = {};
  store_chunk<kChunk * FmtTraits<kFmt>::kBits / 8>(p, z, aligned);
}

// Alignment a view needs for the vector form of a chunk access of `bytes` (16-byte accesses at most).
TK_HD constexpr uint32_t vec_align(int bytes) { return bytes < kVecBytes ? bytes : kVecBytes; }

// Clamp by selects (§8.3: NaN passes unchanged).
TK_DEV float clamp_gate(float g, float c) { return select_f32(g > c, c, g); }
TK_DEV float clamp_up(float u, float c) { return select_f32(u > c, c, select_f32(u < -c, -c, u)); }

// A function of the gate (§8.3): silu(g) = fl(g / fl(1 + expf(−g))) for the forward (kSilu), expf(−g) for the
// backward, equal to the reference's operations for every gate whose result is not NaN. bf16 x: the gate as loaded
// is a bf16 value, looked up in the CTA's shared table (common/silu_bf16.cuh, common/expf_bf16.cuh); a clamped
// gate is c, whose value the thread computed once. Other formats: the reference's operations. A NaN gate gets a
// NaN silu, or an unspecified e^(−g): every backward output it reaches is NaN whatever e is (the gate enters each
// of them through an operation that propagates NaN), and NaN leaves the kernels canonical.
// kExpGroup: expf_cr_n's group size (no table).
template <Fmt kIn, bool kSilu, int kExpGroup = 4>
struct GateFn {
  static constexpr bool kTable = kIn == Fmt::kBf16;
  const float* table;     // shared memory; unused unless kTable
  float f_clamped;        // the function at g = c with a clamp; unused unless kTable
  bool clamp;             // a clamp is given (kTable only)
  const double* exp_tab;  // shared memory, 2^(j/32) for expf_cr_n's table fast path; unused if kTable

  // f[i] for the 8 gates of a chunk. gw: the chunk's raw words as loaded (kTable only: the bf16 gates); g: the
  // gates as loaded; clamped: g > c under a clamp; gc: the gates after the clamp. Without a table the 8
  // exponentials run side by side (expf_cr_n), not one after another.
  TK_DEV void operator()(const uint32_t* gw, const float (&g)[kChunk], const bool (&clamped)[kChunk],
                         const float (&gc)[kChunk], float (&f)[kChunk]) const {
    if constexpr (kTable) {
      // silu: the entries first (their offsets two gates a word: exp_neg_bf16x2_offsets), the exact fix-ups of
      // common/silu_bf16.cuh only when a gate of the chunk lies outside the table's window (rare in activations:
      // ~12 fewer operations per gate otherwise); the clamp's select only under a clamp.
      uint32_t outside = 0;
#pragma unroll
      for (int k = 0; k < kChunk / 2; ++k) {
        const Bf16x2Offsets o = exp_neg_bf16x2_offsets(gw[k]);
        f[2 * k] = bf16_table_at(table, o.lo);
        f[2 * k + 1] = bf16_table_at(table, o.hi);
        if constexpr (kSilu) outside |= o.outside;
      }
      if (kSilu && outside != 0) {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) f[i] = silu_bf16_fix(g[i], f[i], silu_bf16_outside(f2u(g[i]) >> 16));
      }
      if (clamp) {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) f[i] = select_f32(clamped[i], f_clamped, f[i]);
      }
    } else {
      float xn[kChunk];
#pragma unroll
      for (int i = 0; i < kChunk; ++i) xn[i] = -gc[i];
      expf_cr_n<kExpGroup>(xn, f, exp_tab);
      if constexpr (kSilu) {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) f[i] = div_rn(gc[i], add_rn(1.0f, f[i]));  // silu_cr(gc)
      }
    }
  }
};

// Every thread of the CTA calls it (with a table it fills the table and synchronizes).
// `no_clamp`: the kernel form has no clamp (kFormNoClamp), whatever the flags say.
template <Fmt kIn, bool kSilu, int kExpGroup = 4>
TK_DEV GateFn<kIn, kSilu, kExpGroup> make_gate_fn(const SwigluParams& p, bool no_clamp = false) {
  if constexpr (GateFn<kIn, kSilu, kExpGroup>::kTable) {
    __shared__ __align__(16) float table[kExpNegBf16TableSize];
    copy_bf16_gate_table(table, kSilu ? kSiluBf16Table : kExpNegBf16Table);
    const bool clamp = !no_clamp && (p.flags & kHasClamp);
    const float f_clamped = !clamp ? 0.0f : kSilu ? silu_cr(p.clamp) : expf_cr(-p.clamp);
    __syncthreads();
    return GateFn<kIn, kSilu, kExpGroup>{table, f_clamped, clamp, nullptr};
  } else {
    __shared__ double exp_tab[kExp2TableSize];
    fill_exp2_table(exp_tab);
    __syncthreads();
    return GateFn<kIn, kSilu, kExpGroup>{nullptr, 0.0f, false, exp_tab};
  }
}

// Per-token cast of one item (8 values) of a row: group amax over kN / 8 lanes (× 2 chunk slots for N = 128),
// (sf, inv) by §2.3, the owner lane stores the sf entry, every lane its 8 codes.
template <int kN>
struct GroupCast {
  static constexpr int kLanes = kN == 128 ? kTeam : kN / kChunk;  // 4 or 8
  const SfOut& sf_out;
  float amax_clamp;
  uint32_t sf_flags;

  TK_DEV static float local_amax(const float (&v)[kChunk]) {
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) m = max_num(m, abs_f(v[i]));
    return m;
  }

  // Encode 8 values with `inv` into 2 words of e4m3 codes.
  TK_DEV static void encode(const float (&v)[kChunk], float inv, uint32_t (&o)[2]) {
    float s[kChunk];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) s[i] = mul_rn(v[i], inv);
    encode_chunk<Fmt::kE4m3, kChunk>(s, o);
  }

  // amax over the group of each item (`a0`, `a1`: this lane's two items). Every lane of the warp calls it.
  TK_DEV void group_amax(float& a0, float& a1) const {
    if constexpr (kN == 128) {
      a0 = a1 = group_max<kLanes>(max_num(a0, a1));
    } else {
      a0 = group_max<kLanes>(a0);
      a1 = group_max<kLanes>(a1);
    }
  }

  TK_DEV float inv_and_store(float amax, uint64_t row, uint32_t k, bool owner) const {
    const ScaleAndInv si = sf_and_inv(amax, amax_clamp, kE4m3Max, sf_flags);
    if (owner) sf_out.store(row, k, si.stored);
    return si.inv;
  }
};

TK_DEV SfOut make_sf_out(const SwigluParams& p, uint32_t nbk) {
  return SfOut{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.sf_flags, nbk};
}

// Sum of a u64 over the warp, added atomically to counts[i] by lane 0.
TK_DEV void add_count(const SwigluParams& p, int i, uint64_t v) {
#pragma unroll
  for (int m = kWarpSize / 2; m >= 1; m /= 2) v += __shfl_xor_sync(kFullWarpMask, v, m);
  if (threadIdx.x % kWarpSize == 0 && v != 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p.counts + 8 * i * p.counts_stride), static_cast<unsigned long long>(v));
  }
}

// The walk shared by all kernels: body(row, state, lane_in_team, b0, b1) once per work unit of the warp,
// warp-uniformly. A unit is a group of 4 rows and one of kParts contiguous ranges [b0, b1) of its `steps` column
// blocks (the parts of a group are consecutive units). kParts > 1 (the forward) makes T / 4 · kParts warps of work
// instead of T / 4: at T = 8192 that is 15.5 warps per SM with whole rows, too few to hide the latency of a step,
// whatever the registers allow.
// kLateState: the state passed is only kDead or kReal (row < T); the body tells padding rows itself (row_is_real),
// after it has issued the loads that do not depend on it (the forward's kFormLeanCast).
template <int kParts, bool kLateState = false, class Body>
TK_DEV void for_rows(const SwigluParams& p, uint32_t steps, Body&& body) {
  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint64_t warps = static_cast<uint64_t>(gridDim.x) * (blockDim.x / kWarpSize);
  const uint64_t warp = static_cast<uint64_t>(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  const uint64_t T = p.num_tokens;
  const auto state = [&](uint64_t row) {
    if (row >= T) return RowState::kDead;
    if constexpr (kLateState) return RowState::kReal;
    return row_is_real(p, static_cast<int64_t>(row)) ? RowState::kReal : RowState::kPadding;
  };
  if constexpr (kParts == 1) {
    for (uint64_t row0 = warp * kRowsPerWarp; row0 < T; row0 += warps * kRowsPerWarp) {
      const uint64_t row = row0 + lane / kTeam;
      body(row, state(row), lane % kTeam, 0u, steps);
    }
  } else {
    const uint64_t units = (T + kRowsPerWarp - 1) / kRowsPerWarp * kParts;
    for (uint64_t u = warp; u < units; u += warps) {
      const uint64_t row = u / kParts * kRowsPerWarp + lane / kTeam;
      const uint32_t part = static_cast<uint32_t>(u % kParts);
      body(row, state(row), lane % kTeam, part * steps / kParts, (part + 1) * steps / kParts);
    }
  }
}

// ---- forward -----------------------------------------------------------------------------------------------------
// kN = 0: plain output kOut; kN ∈ {32, 128}: e4m3 codes + sf. kForm: SwigluForm bits.
template <Fmt kIn, Fmt kOut, int kN, int kForm = kFormMain>
TK_DEV void forward(const SwigluParams& p) {
  constexpr bool kAl = (kForm & kFormAligned) != 0, kNoClamp = (kForm & kFormNoClamp) != 0;
  constexpr bool kLean = (kForm & kFormLeanCast) != 0;
  static_assert(!kLean || (kN == 128 && kIn == Fmt::kBf16 && kAl && kNoClamp), "kFormLeanCast: bf16 x, groups of 128, _an");
  constexpr int kParts = kLean ? kFwdLeanParts : kFwdParts;
  constexpr bool kPdl = (kForm & kFormPdl) != 0;
  if constexpr (kPdl) pdl_launch_dependents();
  if constexpr (!kPdl) check_psum(p);
  constexpr int kInBytes = kChunk * FmtTraits<kIn>::kBits / 8;
  const uint32_t H = p.hidden, chunks = H / kChunk;
  const uint32_t steps = (H + kBlockCols - 1) / kBlockCols;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
  const uint64_t x_row = 2ull * H * (FmtTraits<kIn>::kBits / 8);
  const bool x_aligned = kAl || (p.x % vec_align(kInBytes)) == 0;  // rows are multiples of 128 elements
  constexpr int kOutElem = kN ? 1 : FmtTraits<kOut>::kBits / 8;
  const uint64_t out_row = kN ? H : p.out_row_stride * kOutElem;
  uint8_t* out = reinterpret_cast<uint8_t*>(kN ? p.data : p.out);
  const bool out_aligned = kAl || rows_aligned(kN ? p.data : p.out, out_row, vec_align(kN ? 8 : kChunk * kOutElem));
  const bool clamp = !kNoClamp && (p.flags & kHasClamp), counting = !kNoClamp && (p.flags & kHasCounts);
  const bool weighted = p.flags & kHasWeights;
  const float c = p.clamp;
  constexpr int kGroup = kN ? kN : 32;  // the plain output has no groups (GroupCast unused)
  const SfOut sf_out = make_sf_out(p, H / kGroup);
  const GroupCast<kGroup> cast{sf_out, p.amax_clamp, p.sf_flags};
  const GateFn<kIn, true> silu = make_gate_fn<kIn, true>(p, kNoClamp);
  if constexpr (kPdl) {
    pdl_wait();  // (kFormPdl: nothing above touched memory another grid may write)
    check_psum(p);
  }
  uint64_t n0 = 0, n1 = 0, n2 = 0, n3 = 0;

  for_rows<kParts, kLean>(p, steps, [&](uint64_t row, RowState st, uint32_t r, uint32_t b0, uint32_t b1) {
    // kLean: `real` first says only row < T (for_rows' kLateState): the row weight and the first step's loads are
    // issued for any row inside x and the weights (a padding row's are read and never used), and the psum search
    // (row_is_real: ~7 dependent loads) then runs while they are in flight instead of before them.
    bool real = st == RowState::kReal;
    const float w = real ? row_weight(p, row) : 1.0f;
    if (real && r == 0 && b1 == steps) n3 += H;  // once per row: only its last part ends at `steps`
    const uint8_t* xr = x + (real ? row : 0) * x_row;
    uint8_t* const outr = out + row * out_row;  // the row's output (kLean's stores; not dereferenced unless real)
    // bf16 x: the gate and up chunks of step b + 1 are loaded (raw words, 16 registers) before step b is computed,
    // so a warp keeps a step's loads in flight while it computes: with ~16 resident warps per SM the loads of a
    // warp that computes between them would leave HBM idle. fp32 x (32 registers of raw words; it spills on
    // sm_100a) loads a slot where it uses it. A slot past the row's chunks (every slot of step `steps`) loads
    // nothing, and so does step b1 (the next part's).
    constexpr bool kPrefetch = kIn == Fmt::kBf16;
    struct Slot {
      Raw8<kIn> g, u;
    };
    constexpr uint32_t kStepChunks = kBlockCols / kChunk;
    // the part's chunks end here; steps b < b1 are exactly those with b · 16 < ch_end (b · 16 < chunks for every
    // step b < steps)
    const uint32_t ch_end = b1 * kStepChunks < chunks ? b1 * kStepChunks : chunks;
    const auto load_slot = [&](uint32_t ch, Slot& sl) {
      if (real && ch < ch_end) {
        sl.g.load(xr + static_cast<uint64_t>(ch * kChunk) * (FmtTraits<kIn>::kBits / 8), x_aligned);
        sl.u.load(xr + static_cast<uint64_t>(H + ch * kChunk) * (FmtTraits<kIn>::kBits / 8), x_aligned);
      } else {
        sl.g.zero();
        sl.u.zero();
      }
    };
    Slot cur[2];
    if constexpr (kPrefetch) {
#pragma unroll
      for (int s = 0; s < 2; ++s) load_slot(b0 * kStepChunks + s * kTeam + r, cur[s]);
    }
    // kLean: from here `real` is the row's state (the later loads, the values and the stores follow it); n3 above
    // counted for a padding row too, but kLean has no counters (kNoClamp)
    if constexpr (kLean) real = real && row_is_real(p, static_cast<int64_t>(row));
    for (uint32_t base = b0 * kStepChunks; base < ch_end; base += kStepChunks) {  // step b = base / 16
      Slot nxt[2];
      if constexpr (kPrefetch) {
#pragma unroll
        for (int s = 0; s < 2; ++s) load_slot(base + kStepChunks + s * kTeam + r, nxt[s]);
      }
      float val[2][kChunk];
      bool live[2];
      uint32_t col[2];
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const uint32_t ch = base + s * kTeam + r;
        col[s] = ch * kChunk;
        live[s] = real && ch < chunks;
#pragma unroll
        for (int i = 0; i < kChunk; ++i) val[s][i] = 0.0f;
        if (live[s]) {
          if constexpr (!kPrefetch) load_slot(ch, cur[s]);
          float g[kChunk], u[kChunk];
          cur[s].g.decode(g);
          cur[s].u.decode(u);
          // One operation at a time over the chunk's 8 elements, the option tests outside the element loops (as
          // in the backward): the 8 lookups (or exponentials) share a basic block and overlap.
          float gc[kChunk], uc[kChunk], f[kChunk];
          bool cg[kChunk];
#pragma unroll
          for (int i = 0; i < kChunk; ++i) {
            gc[i] = g[i];
            uc[i] = u[i];
            cg[i] = false;
          }
          if (clamp) {
#pragma unroll
            for (int i = 0; i < kChunk; ++i) {
              cg[i] = g[i] > c;
              n0 += cg[i];
              n1 += u[i] > c;
              n2 += u[i] < -c;
              gc[i] = clamp_gate(g[i], c);
              uc[i] = clamp_up(u[i], c);
            }
          }
          silu(cur[s].g.w, g, cg, gc, f);
#pragma unroll
          for (int i = 0; i < kChunk; ++i) val[s][i] = mul_rn(f[i], uc[i]);
          if (weighted) {
#pragma unroll
            for (int i = 0; i < kChunk; ++i) val[s][i] = mul_rn(val[s][i], w);
          }
        }
      }
      if constexpr (kPrefetch) {
#pragma unroll
        for (int s = 0; s < 2; ++s) cur[s] = nxt[s];
      }
      if constexpr (kN == 0) {
#pragma unroll
        for (int s = 0; s < 2; ++s)
          if (live[s]) store8<kOut>(out + row * out_row + static_cast<uint64_t>(col[s]) * kOutElem, out_aligned, val[s]);
      } else if constexpr (kLean) {
        // Groups of 128: the step's 16 chunks (8 lanes × 2 slots) are one group, k = b. The group's amax is the
        // maximumNumber of {0} ∪ {|v|} over its 128 values, as in main's form (two chains from 0, then the lanes):
        // max is exact and order independent, fabsf only clears the sign (ptxas folds it into FMNMX's |R| operand,
        // where abs_f's integer mask was one LOP3 a value), and the final max with 0 leaves the same value whether
        // or not every value was NaN (fmaxf ignores a NaN operand, so the result is never NaN, as main's). Both
        // slots are live or neither (H % 128 == 0: base + 16 ≤ chunks), so sf_and_inv runs once a step, not once
        // per slot: the same scale and inverse main's form computes twice from the same amax.
        float m[kChunk];
#pragma unroll
        for (int i = 0; i < kChunk; ++i) m[i] = max_num(fabsf(val[0][i]), fabsf(val[1][i]));
#pragma unroll
        for (int h = kChunk / 2; h >= 1; h /= 2)
#pragma unroll
          for (int i = 0; i < h; ++i) m[i] = max_num(m[i], m[i + h]);
        const float amax = group_max<kTeam>(max_num(m[0], 0.0f));
        if (live[0]) {
          const float inv = cast.inv_and_store(amax, row, col[0] / kN, r == 0);
#pragma unroll
          for (int s = 0; s < 2; ++s) {
            if (!live[s]) continue;
            uint32_t o[2];
            cast.encode(val[s], inv, o);
            store_chunk<8>(outr + col[s], o, true);
          }
        }
      } else {
        float a0 = cast.local_amax(val[0]), a1 = cast.local_amax(val[1]);
        cast.group_amax(a0, a1);
        const float am[2] = {a0, a1};
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          if (!live[s]) continue;  // a group is live in all its lanes or in none (H % N == 0)
          const uint32_t k = col[s] / kN;
          const bool owner = kN == 128 ? (r == 0 && s == 0) : (r % GroupCast<kGroup>::kLanes == 0);
          const float inv = cast.inv_and_store(am[s], row, k, owner);
          uint32_t o[2];
          cast.encode(val[s], inv, o);
          store_chunk<8>(out + row * out_row + col[s], o, out_aligned);
        }
      }
    }
  });
  if constexpr (kN != 0) sf_out.zero_padding_rows(p.num_tokens, p.sf_rows);
  if (counting) {
    add_count(p, 0, n0);
    add_count(p, 1, n1);
    add_count(p, 2, n2);
    add_count(p, 3, n3);
  }
}

// ---- backward ----------------------------------------------------------------------------------------------------
// The cast form with bf16 dy stages a step's inputs in shared memory (see backward): per thread and slot the 8 gate
// and 8 up codes, the 8 dy values and the two x-scale words, two steps deep. Arrays of one field over the threads,
// so that a warp's accesses to a field are consecutive (no bank conflicts). 40 KiB per CTA (2 CTAs per SM: 80 KiB).
struct BwdStage {
  uint32_t d[2][2][kBlockThreads][4];  // [step parity][slot][thread]: dy, bf16
  uint32_t g[2][2][kBlockThreads][2];  // gate codes, e4m3
  uint32_t u[2][2][kBlockThreads][2];  // up codes, e4m3
  uint32_t sg[2][2][kBlockThreads];    // fp32 bits of the gate group's x scale
  uint32_t su[2][2][kBlockThreads];    // of the up group's
};

TK_DEV BwdStage& bwd_stage() {
  __shared__ __align__(16) BwdStage s;
  return s;
}

// kIn fp32 / bf16: plain form, outputs kOut. kIn e4m3: cast form (kOut = bf16 xGrad / actOut, e4m3 + sf of groups kN).
// kForm: kFormMain or kFormAligned (the no-clamp backward form lost on the H200: perf9-swiglu.md, Measured).
template <Fmt kIn, Fmt kDy, Fmt kOut, int kN, int kForm = kFormMain>
TK_DEV void backward(const SwigluParams& p) {
  static_assert(kForm == kFormMain || kForm == kFormAligned || kForm == (kFormAligned | kFormPdl),
                "backward forms: main, aligned (with PDL)");
  constexpr bool kAl = (kForm & kFormAligned) != 0;
  constexpr bool kPdl = (kForm & kFormPdl) != 0;
  if constexpr (kPdl) pdl_launch_dependents();
  if constexpr (!kPdl) check_psum(p);
  constexpr bool kCast = kIn == Fmt::kE4m3;
  constexpr int kInElem = FmtTraits<kIn>::kBits / 8, kDyElem = FmtTraits<kDy>::kBits / 8;
  constexpr int kOutElem = FmtTraits<kOut>::kBits / 8;
  const uint32_t H = p.hidden, chunks = H / kChunk;
  const uint32_t steps = (H + kBlockCols - 1) / kBlockCols;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
  const uint8_t* dy = reinterpret_cast<const uint8_t*>(p.dy);
  const bool x_aligned = kAl || (p.x % vec_align(kChunk * kInElem)) == 0;  // rows are multiples of 64 elements
  const bool dy_aligned = kAl || (p.dy % vec_align(kChunk * kDyElem)) == 0;
  uint8_t* gout = reinterpret_cast<uint8_t*>(p.out);
  uint8_t* act = reinterpret_cast<uint8_t*>(p.act_out);
  uint8_t* data = reinterpret_cast<uint8_t*>(p.data);
  const bool out_aligned = kAl || (p.out % vec_align(kChunk * kOutElem)) == 0;
  const bool act_aligned = kAl || (p.act_out % vec_align(kChunk * kOutElem)) == 0;
  const bool data_aligned = kAl || (p.data % 8) == 0;
  const bool clamp = p.flags & kHasClamp, weighted = p.flags & kHasWeights, recompute = p.flags & kRecompute;
  const bool need_act = weighted || recompute;
  const float c = p.clamp;
  constexpr int kNc = kCast ? kN : 32;
  constexpr bool kHwBf16 = !(kCast && kN == 32);  // see store8
  const uint32_t nbk = kCast ? 2 * H / kNc : 1;
  const uint32_t sf_cols = kCast ? (2 * H) / kNc : 0;  // input sf row length (fp32 row-major)
  const SfOut sf_out = make_sf_out(p, nbk);
  const GroupCast<kNc> cast{sf_out, p.amax_clamp, p.sf_flags};
  // expf_cr_n's group size: the largest without spills (expf.cuh). The cast to groups of 128 holds a slot's 16
  // results while it computes the next slot: with bf16 dy, whose up codes and dy are read from the stage only
  // after the exponentials (kLateUp below), all 8 of a chunk run together (128 / 126 registers on sm_90a / sm_100a,
  // no spills); fp32 dy keeps 2.
  constexpr int kExpGroup = kIn != Fmt::kE4m3 || kN != 128 ? 4 : kDy == Fmt::kBf16 ? 8 : 2;
  const GateFn<kIn, false, kExpGroup> exp_neg = make_gate_fn<kIn, false, kExpGroup>(p);
  if constexpr (kPdl) {
    pdl_wait();  // (kFormPdl: nothing above touched memory another grid may write)
    check_psum(p);
  }

  for_rows<1>(p, steps, [&](uint64_t row, RowState st, uint32_t r, uint32_t, uint32_t) {
    const bool real = st == RowState::kReal, pad = st == RowState::kPadding;
    const float w = real ? row_weight(p, row) : 1.0f;
    float part[kChunk];  // P_l for l = 8r + i (§8.5)
#pragma unroll
    for (int i = 0; i < kChunk; ++i) part[i] = 0.0f;
    const uint64_t rr = real ? row : 0;
    const uint8_t* xr = x + rr * 2 * H * kInElem;
    const uint8_t* dyr = dy + rr * H * kDyElem;
    const float* sfr = reinterpret_cast<const float*>(p.x_sf) + rr * sf_cols;
    // bf16 x: the gate, up and dy chunks of step b + 1 are loaded (raw words, 24 registers) before step b is
    // computed, as in the forward. The cast form with bf16 dy stages step b + 1 in shared memory (kStaged below).
    // A register prefetch there needs 10 registers a slot while the first slot's 16 results wait for the cast and
    // spills at 128; so does a step load with fp32 dy (4 more words a slot) on sm_100a. fp32 x
    // (48 registers of raw words) and the cast form with fp32 dy load a slot where they use it. A slot past the
    // row's chunks (every slot of step `steps`) loads nothing.
    struct Slot {
      Raw8<kIn> g, u;
      Raw8<kDy> d;
      uint32_t sg, su;  // cast form: the x scales of the gate and up groups (fp32 bits)
    };
    const auto load_slot = [&](uint32_t ch, Slot& sl) {
      if (real && ch < chunks) {
        sl.g.load(xr + static_cast<uint64_t>(ch * kChunk) * kInElem, x_aligned);
        sl.u.load(xr + static_cast<uint64_t>(H + ch * kChunk) * kInElem, x_aligned);
        sl.d.load(dyr + static_cast<uint64_t>(ch * kChunk) * kDyElem, dy_aligned);
        if constexpr (kCast) {
          sl.sg = ld_u32(sfr + ch * kChunk / kN);
          sl.su = ld_u32(sfr + (H + ch * kChunk) / kN);
        }
      } else {
        sl.g.zero();
        sl.u.zero();
        sl.d.zero();
        sl.sg = sl.su = 0;
      }
    };
    constexpr bool kPrefetch = kIn == Fmt::kBf16;
    // The cast form with bf16 dy: step b + 1 is staged in shared memory by cp.async (BwdStage; element loads into
    // it for unaligned views) while step b is computed, and a slot of step b is read back from there where it is
    // used. Its loads stay in flight during the computation without holding registers (a register
    // prefetch spills at 128; the loads of a step issued at its start left every step waiting one HBM round trip
    // with 16 warps per SM). A slot past the row's chunks reads nothing and is staged as zeros.
    constexpr bool kStaged = kCast && kDy == Fmt::kBf16;
    const auto stage_step = [&](uint32_t b) {
      if constexpr (kStaged) {
        BwdStage& sb = bwd_stage();
        const uint32_t t = threadIdx.x, q = b & 1;
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const uint32_t ch = b * (kBlockCols / kChunk) + s * kTeam + r;
          const bool live = real && ch < chunks;
          const uint32_t cl = live ? ch : 0;  // a dead slot's source stays inside row 0 (nothing is read)
          stage_chunk<8, 1>(smem_addr(sb.g[q][s][t]), xr + static_cast<uint64_t>(cl * kChunk), live, x_aligned);
          stage_chunk<8, 1>(smem_addr(sb.u[q][s][t]), xr + static_cast<uint64_t>(H + cl * kChunk), live, x_aligned);
          stage_chunk<16, 2>(smem_addr(sb.d[q][s][t]), dyr + static_cast<uint64_t>(cl * kChunk) * 2, live, dy_aligned);
          cp_async<4>(smem_addr(&sb.sg[q][s][t]), sfr + cl * kChunk / kN, live);
          cp_async<4>(smem_addr(&sb.su[q][s][t]), sfr + (H + cl * kChunk) / kN, live);
        }
        cp_async_commit();
      }
    };
    // Slot s of step b from the stage. Groups of 128 read a slot where it is used, groups of 32 both at the step's
    // start (each placement is the one that does not spill at 128 registers on sm_90a and sm_100a).
    constexpr bool kReadAtUse = kN == 128;
    // Read at use (groups of 128), the gate codes and scale come first and the up codes, dy and the up scale only
    // after the exponentials (kLateUp): their registers are not held across the binary64 chains, which lets all 8
    // of a chunk run together without spills. Only the place of independent operations moves; each element's
    // operations and their order are the same.
    constexpr bool kLateUp = kStaged && kReadAtUse;
    // The sigmoid's 1 / (1 + e) by recip_rn_n (common/recip.cuh: div_rn's bits, without a slow-path branch per
    // division, so the 8 of a chunk overlap) in this kernel and in the bf16-x backward (swigluBackward: 128 / 124–126
    // registers sm_90a / sm_100a, no spills); the fp32-x and the other cast kernels keep div_rn.
    constexpr bool kFastRecip = kLateUp || kIn == Fmt::kBf16;
    const auto read_staged_gate = [&](uint32_t b, int s, Slot& sl) {
      if constexpr (kStaged) {
        BwdStage& sb = bwd_stage();
        const uint32_t t = threadIdx.x, q = b & 1;
        uint32_t sg[1];
        ld_shared(smem_addr(sb.g[q][s][t]), sl.g.w);
        ld_shared(smem_addr(&sb.sg[q][s][t]), sg);
        sl.sg = sg[0];
      }
    };
    const auto read_staged_up = [&](uint32_t b, int s, Slot& sl) {
      if constexpr (kStaged) {
        BwdStage& sb = bwd_stage();
        const uint32_t t = threadIdx.x, q = b & 1;
        uint32_t su[1];
        ld_shared(smem_addr(sb.u[q][s][t]), sl.u.w);
        ld_shared(smem_addr(sb.d[q][s][t]), sl.d.w);
        ld_shared(smem_addr(&sb.su[q][s][t]), su);
        sl.su = su[0];
      }
    };
    const auto read_staged = [&](uint32_t b, int s, Slot& sl) {
      if constexpr (kStaged) {
        BwdStage& sb = bwd_stage();
        const uint32_t t = threadIdx.x, q = b & 1;
        uint32_t sg[1], su[1];
        ld_shared(smem_addr(sb.g[q][s][t]), sl.g.w);
        ld_shared(smem_addr(sb.u[q][s][t]), sl.u.w);
        ld_shared(smem_addr(sb.d[q][s][t]), sl.d.w);
        ld_shared(smem_addr(&sb.sg[q][s][t]), sg);
        ld_shared(smem_addr(&sb.su[q][s][t]), su);
        sl.sg = sg[0];
        sl.su = su[0];
      }
    };
    Slot cur[2];
    if constexpr (kPrefetch) {
#pragma unroll
      for (int s = 0; s < 2; ++s) load_slot(s * kTeam + r, cur[s]);
    }
    stage_step(0);
    for (uint32_t b = 0; b < steps; ++b) {
      Slot nxt[2];
      if constexpr (kPrefetch) {
#pragma unroll
        for (int s = 0; s < 2; ++s) load_slot((b + 1) * (kBlockCols / kChunk) + s * kTeam + r, nxt[s]);
      } else if constexpr (kStaged) {
        stage_step(b + 1);
        cp_async_wait<1>();  // step b's group has landed (this thread's own slots: no barrier)
        if constexpr (!kReadAtUse) {
#pragma unroll
          for (int s = 0; s < 2; ++s) read_staged(b, s, cur[s]);
        }
      }
      float gx[2][kChunk], gu[2][kChunk];
      bool live[2];
      uint32_t col[2];
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const uint32_t ch = b * (kBlockCols / kChunk) + s * kTeam + r;
        col[s] = ch * kChunk;
        live[s] = (real || pad) && ch < chunks;
#pragma unroll
        for (int i = 0; i < kChunk; ++i) gx[s][i] = gu[s][i] = 0.0f;
        if (real && ch < chunks) {
          if constexpr (kStaged) {
            if constexpr (kReadAtUse) read_staged_gate(b, s, cur[s]);
          } else if constexpr (!kPrefetch) {
            load_slot(ch, cur[s]);
          }
          float g[kChunk], u[kChunk], d[kChunk], a[kChunk];
          // One operation at a time over the chunk's 8 elements (each element's operations and their order are
          // the reference's): the option tests stay outside the element loops, so the 8 elements' chains share
          // basic blocks and interleave instead of each waiting out its own latency.
          float gc[kChunk], uc[kChunk], e[kChunk], tmp[kChunk], sgm[kChunk], ac[kChunk];
          bool cg[kChunk], cu[kChunk];
          if constexpr (!kLateUp) {
            cur[s].g.decode(g);
            cur[s].u.decode(u);
            cur[s].d.decode(d);
            if constexpr (kCast) {
              const float sg = u2f(cur[s].sg), su = u2f(cur[s].su);
#pragma unroll
              for (int i = 0; i < kChunk; ++i) {
                g[i] = mul_rn(g[i], sg);
                u[i] = mul_rn(u[i], su);
              }
            }
#pragma unroll
            for (int i = 0; i < kChunk; ++i) {
              gc[i] = g[i];
              uc[i] = u[i];
              cg[i] = cu[i] = false;
              ac[i] = 0.0f;
            }
            if (clamp) {
#pragma unroll
              for (int i = 0; i < kChunk; ++i) {
                cg[i] = g[i] > c;
                cu[i] = u[i] > c || u[i] < -c;
                gc[i] = clamp_gate(g[i], c);
                uc[i] = clamp_up(u[i], c);
              }
            }
            exp_neg(cur[s].g.w, g, cg, gc, e);
          } else {
            // the gate's part, the exponentials, then the up and dy part (the same operations per element)
            cur[s].g.decode(g);
            const float sg = u2f(cur[s].sg);
#pragma unroll
            for (int i = 0; i < kChunk; ++i) {
              g[i] = mul_rn(g[i], sg);
              gc[i] = g[i];
              cg[i] = false;
              ac[i] = 0.0f;
            }
            if (clamp) {
#pragma unroll
              for (int i = 0; i < kChunk; ++i) {
                cg[i] = g[i] > c;
                gc[i] = clamp_gate(g[i], c);
              }
            }
            exp_neg(cur[s].g.w, g, cg, gc, e);
            read_staged_up(b, s, cur[s]);
            cur[s].u.decode(u);
            cur[s].d.decode(d);
            const float su = u2f(cur[s].su);
#pragma unroll
            for (int i = 0; i < kChunk; ++i) {
              u[i] = mul_rn(u[i], su);
              uc[i] = u[i];
              cu[i] = false;
            }
            if (clamp) {
#pragma unroll
              for (int i = 0; i < kChunk; ++i) {
                cu[i] = u[i] > c || u[i] < -c;
                uc[i] = clamp_up(u[i], c);
              }
            }
          }
          if constexpr (kFastRecip) {
#pragma unroll
            for (int i = 0; i < kChunk; ++i) tmp[i] = add_rn(1.0f, e[i]);
            recip_rn_n(tmp, sgm);  // = div_rn(1.0f, tmp[i]) for every input, branch-free for tmp in [1, 2^124]
          } else {
#pragma unroll
            for (int i = 0; i < kChunk; ++i) {
              tmp[i] = add_rn(1.0f, e[i]);
              sgm[i] = div_rn(1.0f, tmp[i]);
            }
          }
          if (need_act) {
#pragma unroll
            for (int i = 0; i < kChunk; ++i) {
              const float est = mul_rn(gc[i], sgm[i]);
              const float tmpf = fminf(tmp[i], 3.40282346638528859812e+38f);  // minimumNumber: NaN → FLT_MAX
              const float res = __fmaf_rn(est, tmpf, -gc[i]);
              const float sl = __fmaf_rn(-res, sgm[i], est);
              ac[i] = mul_rn(sl, uc[i]);
            }
          }
#pragma unroll
          for (int i = 0; i < kChunk; ++i) {
            const float ws = mul_rn(mul_rn(d[i], w), sgm[i]);
            gx[s][i] = cg[i] ? 0.0f : mul_rn(mul_rn(ws, uc[i]), __fmaf_rn(gc[i], __fsub_rn(1.0f, sgm[i]), 1.0f));
            gu[s][i] = cu[i] ? 0.0f : mul_rn(ws, gc[i]);
          }
          if (weighted) {
#pragma unroll
            for (int i = 0; i < kChunk; ++i) part[i] = add_rn(part[i], mul_rn(d[i], ac[i]));
          }
#pragma unroll
          for (int i = 0; i < kChunk; ++i) a[i] = mul_rn(ac[i], w);
          if (recompute) store8<kOut, kHwBf16>(act + row * H * kOutElem + static_cast<uint64_t>(col[s]) * kOutElem, act_aligned, a);
        } else if (pad && ch < chunks && recompute) {
          store8_zero<kOut>(act + row * H * kOutElem + static_cast<uint64_t>(col[s]) * kOutElem, act_aligned);
        }
        if (live[s]) {
          uint8_t* orow = gout + row * 2 * H * kOutElem;
          store8<kOut, kHwBf16>(orow + static_cast<uint64_t>(col[s]) * kOutElem, out_aligned, gx[s]);
          store8<kOut, kHwBf16>(orow + static_cast<uint64_t>(H + col[s]) * kOutElem, out_aligned, gu[s]);
        }
      }
      if constexpr (kPrefetch) {
#pragma unroll
        for (int s = 0; s < 2; ++s) cur[s] = nxt[s];
      }
      if constexpr (kCast) {
        // gate half: groups k = col / N; up half: H / N + col / N (groups never straddle the halves). Padding rows
        // have all-zero values: their codes are 0x00 and their sf entries are written 0 below instead.
        float ax0 = cast.local_amax(gx[0]), ax1 = cast.local_amax(gx[1]);
        float au0 = cast.local_amax(gu[0]), au1 = cast.local_amax(gu[1]);
        cast.group_amax(ax0, ax1);
        cast.group_amax(au0, au1);
        const float amx[2] = {ax0, ax1}, amu[2] = {au0, au1};
        // Groups of 128 with kOneInv: both slots of a lane lie in the same group (the same amax, and live together
        // since H % 128 == 0), so its (sf, inv) pair is computed once a step, before the slot loop, instead of
        // once per slot (the same function of the same amax: 2 of the 4 sf_and_inv a step, with their 4 divisions,
        // were repeats).
        constexpr bool kOneInv = kN == 128 && kLateUp;
        float ix1 = 0.0f, iu1 = 0.0f;
        if constexpr (kOneInv) {
          if (live[0]) {
            const uint32_t k = col[0] / kN;
            const bool owner = r == 0;
            if (real) {
              ix1 = cast.inv_and_store(amx[0], row, k, owner);
              iu1 = cast.inv_and_store(amu[0], row, H / kN + k, owner);
            } else if (owner) {
              sf_out.store(row, k, 0);
              sf_out.store(row, H / kN + k, 0);
            }
          }
        }
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          if (!live[s]) continue;
          float ix = ix1, iu = iu1;
          if constexpr (!kOneInv) {
            const uint32_t k = col[s] / kN;
            const bool owner = kN == 128 ? (r == 0 && s == 0) : (r % GroupCast<kNc>::kLanes == 0);
            if (real) {
              ix = cast.inv_and_store(amx[s], row, k, owner);
              iu = cast.inv_and_store(amu[s], row, H / kN + k, owner);
            } else {
              ix = iu = 0.0f;
              if (owner) {
                sf_out.store(row, k, 0);
                sf_out.store(row, H / kN + k, 0);
              }
            }
          }
          uint32_t o[2];
          cast.encode(gx[s], ix, o);
          store_chunk<8>(data + row * 2 * H + col[s], o, data_aligned);
          cast.encode(gu[s], iu, o);
          store_chunk<8>(data + row * 2 * H + H + col[s], o, data_aligned);
        }
      }
    }
    if constexpr (kStaged) cp_async_wait<0>();  // step `steps`'s zeros land before the next row stages step 0
    if (weighted) {
      // halving tree of §8.5: P_l += P_{l+32}, +16, +8 across lanes (l = 8r + i), then +4, +2, +1 inside lane 0
#pragma unroll
      for (int m = 4; m >= 1; m /= 2) {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) {
          const float o = __shfl_xor_sync(kFullWarpMask, part[i], m);
          part[i] = add_rn(part[i], o);
        }
      }
#pragma unroll
      for (int step = 4; step >= 1; step /= 2)
#pragma unroll
        for (int i = 0; i < step; ++i) part[i] = add_rn(part[i], part[i + step]);
      if (r == 0 && (real || pad)) {
        float acc = real ? part[0] : 0.0f;
        if (real && (p.flags & kHasScale)) acc = mul_rn(acc, p.scale);
        st_u32(reinterpret_cast<uint8_t*>(p.weight_grad) + 4 * row, f2u(canonical_nan(acc)));
      }
    }
  });
  if constexpr (kCast) sf_out.zero_padding_rows(p.num_tokens, p.sf_rows);
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads) tk_swiglu_expf_check(const __grid_constant__ SwigluParams p) {
  const float* x = reinterpret_cast<const float*>(p.x);
  float* y = reinterpret_cast<float*>(p.out);
  __shared__ double exp_tab[tk::kExp2TableSize];
  tk::fill_exp2_table(exp_tab);
  __syncthreads();
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.num_tokens;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
  {
    const float a = tk::expf_cr(x[i]), b = tk::expf_cr_tab(x[i], exp_tab);
    y[i] = tk::f2u(a) == tk::f2u(b) ? a : tk::u2f(0xffffffffu);  // a NaN: the test fails on any finite x
  }
}

// Tests: y[i] = recip_rn_n's 1/x[i] (common/recip.cuh, 8 at a time as in the backward) where it has div_rn's bits,
// else the pattern 0xffffffff (a NaN: the test fails on any non-NaN x).
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads) tk_swiglu_recip_check(const __grid_constant__ SwigluParams p) {
  const float* x = reinterpret_cast<const float*>(p.x);
  float* y = reinterpret_cast<float*>(p.out);
  for (uint64_t i0 = (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8; i0 < p.num_tokens;
       i0 += static_cast<uint64_t>(gridDim.x) * blockDim.x * 8)
  {
    float b[8], r[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) b[i] = i0 + i < p.num_tokens ? x[i0 + i] : 1.0f;
    tk::recip_rn_n(b, r);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float d = tk::div_rn(1.0f, b[i]);
      const bool same = tk::f2u(d) == tk::f2u(r[i]) || (d != d && r[i] != r[i]);
      if (i0 + i < p.num_tokens) y[i0 + i] = same ? r[i] : tk::u2f(0xffffffffu);
    }
  }
}

#define TK_SWIGLU_FWD(in, IN, out, OUT, blocks)                                                                     \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, blocks) tk_swiglu_forward__##in##_##out(                    \
      const __grid_constant__ SwigluParams p) {                                                                 \
    tk::forward<tk::Fmt::IN, tk::Fmt::OUT, 0>(p);                                                               \
  }
#define TK_SWIGLU_FWD_CAST(in, IN, n, blocks)                                                                       \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, blocks) tk_swiglu_forward__##in##_e4m3_g##n(                \
      const __grid_constant__ SwigluParams p) {                                                                 \
    tk::forward<tk::Fmt::IN, tk::Fmt::kE4m3, n>(p);                                                             \
  }
#define TK_SWIGLU_BWD(in, IN, out, OUT)                                                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocks) tk_swiglu_backward__##in##_##out(            \
      const __grid_constant__ SwigluParams p) {                                                                 \
    tk::backward<tk::Fmt::IN, tk::Fmt::IN, tk::Fmt::OUT, 0>(p);                                                 \
  }
#define TK_SWIGLU_BWD_CAST(dy, DY, n)                                                                               \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocks) tk_swiglu_backward__e4m3_##dy##_g##n(        \
      const __grid_constant__ SwigluParams p) {                                                                 \
    tk::backward<tk::Fmt::kE4m3, tk::Fmt::DY, tk::Fmt::kBf16, n>(p);                                            \
  }

TK_SWIGLU_FWD(fp32, kFp32, fp32, kFp32, tk::kMinBlocks)
TK_SWIGLU_FWD(fp32, kFp32, bf16, kBf16, tk::kMinBlocks)
TK_SWIGLU_FWD(bf16, kBf16, fp32, kFp32, tk::kFwdMinBlocks)
TK_SWIGLU_FWD(bf16, kBf16, bf16, kBf16, tk::kFwdMinBlocks)
TK_SWIGLU_FWD_CAST(fp32, kFp32, 32, tk::kMinBlocks)
TK_SWIGLU_FWD_CAST(fp32, kFp32, 128, tk::kMinBlocks)
TK_SWIGLU_FWD_CAST(bf16, kBf16, 32, tk::kMinBlocks)
TK_SWIGLU_FWD_CAST(bf16, kBf16, 128, tk::kFwdMinBlocks)
TK_SWIGLU_BWD(fp32, kFp32, fp32, kFp32)
TK_SWIGLU_BWD(fp32, kFp32, bf16, kBf16)
TK_SWIGLU_BWD(bf16, kBf16, fp32, kFp32)
TK_SWIGLU_BWD(bf16, kBf16, bf16, kBf16)
TK_SWIGLU_BWD_CAST(bf16, kBf16, 32)
TK_SWIGLU_BWD_CAST(bf16, kBf16, 128)
TK_SWIGLU_BWD_CAST(fp32, kFp32, 32)
TK_SWIGLU_BWD_CAST(fp32, kFp32, 128)

// Aligned-only forms (SwigluForm; docs/perf-notes/perf9-swiglu.md), built for the kernels of the roofline cases
// where they were faster on the H200: `_a` (kFormAligned), `_an` (kFormAligned | kFormNoClamp). Same launch bounds
// and geometry as main's kernel. forward__bf16_e4m3_g128 has no `_a`: at its 80-register bound (3 CTAs/SM on
// sm_90a) that form spills 4 bytes. backward__bf16_bf16 has no `_an`: it was slower than main's kernel.
// forward__bf16_e4m3_g128_anl: `_an` with kFormLeanCast (docs/perf-notes/perf10-swc.md), 60 registers on sm_90a
// (no spills) at kFwdLeanMinBlocks = 4 CTAs per SM; it replaced forward__bf16_e4m3_g128_an (the same conditions
// and bytes; 72 registers, 3 CTAs per SM), which it beat on the H200 (perf10-swc.md, Measured: 74.9 → 75.8% at
// T = 8192, 77.5 → 79.1% at 16384).
#define TK_SWIGLU_FWD_FORM(in, IN, out, OUT, blocks, sfx, form)                                                     \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, blocks) tk_swiglu_forward__##in##_##out##_##sfx(  \
      const __grid_constant__ SwigluParams p) {                                                                 \
    tk::forward<tk::Fmt::IN, tk::Fmt::OUT, 0, form>(p);                                                         \
  }
#define TK_SWIGLU_FWD_CAST_FORM(in, IN, n, blocks, sfx, form)                                                       \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, blocks) tk_swiglu_forward__##in##_e4m3_g##n##_##sfx( \
      const __grid_constant__ SwigluParams p) {                                                                 \
    tk::forward<tk::Fmt::IN, tk::Fmt::kE4m3, n, form>(p);                                                       \
  }
#define TK_SWIGLU_BWD_FORM(in, IN, out, OUT, sfx, form)                                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocks) tk_swiglu_backward__##in##_##out##_##sfx( \
      const __grid_constant__ SwigluParams p) {                                                                 \
    tk::backward<tk::Fmt::IN, tk::Fmt::IN, tk::Fmt::OUT, 0, form>(p);                                           \
  }

// Each with the PDL prologue (kFormPdl, round 10): launched as a programmatic dependent while config.pdl is set.
TK_SWIGLU_FWD_FORM(bf16, kBf16, bf16, kBf16, tk::kFwdMinBlocks, a, tk::kFormAligned | tk::kFormPdl)
TK_SWIGLU_FWD_FORM(bf16, kBf16, bf16, kBf16, tk::kFwdMinBlocks, an, tk::kFormAligned | tk::kFormNoClamp | tk::kFormPdl)
TK_SWIGLU_FWD_CAST_FORM(bf16, kBf16, 128, tk::kFwdLeanMinBlocks, anl,
                        tk::kFormAligned | tk::kFormNoClamp | tk::kFormLeanCast | tk::kFormPdl)
TK_SWIGLU_BWD_FORM(bf16, kBf16, bf16, kBf16, a, tk::kFormAligned | tk::kFormPdl)

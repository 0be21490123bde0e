// Per-token cast to e4m3 / e2m1 (spec/quant.md §2, §4, §4.4): perTokenCast, perTokenCastWithSfOnly and
// perTokenCastWithPrecomputedSf, one kernel per (input format, output format, group width).
//
// Symbols
//   tk_per_token_cast__<in>_<out>_g<N>   in ∈ {fp32, bf16, e4m3, e2m1}, out ∈ {e4m3, e2m1}, N ∈ {16, 32, 64, 128}
//                                        (e4m3 / e2m1 input = re-quantization of [codes, sf], §4.4)
//   tk_per_token_cast__<in>_<out>_row    in ∈ {fp32, bf16}: one scale per row (numPerChannels == H)
//   tk_per_token_cast__bf16_e2m1_g<N>_u4 bf16 → e2m1 with groups: 4 chunks (32 values) per thread and unit instead
//                                        of 2 (same grid). It replaces the 2-chunk bf16 → e2m1 _g<N> kernel, which
//                                        measured slower (docs/DECISIONS.md, fourth round) and is not built; the
//                                        stochastic bf16 → e2m1 _g<N>_sr keeps 2 chunks
//   tk_per_token_cast__bf16_e2m1_g32_u4sca
//                                        the _u4 kernel with the round-7 encoders (docs/perf-notes/perf7-fp4.md):
//                                        a chunk scaled by the group's own roundSf inverse (not precomputed) is
//                                        encoded without the clamp at 6 (encode_e2m1_bf16_pow2_nc: every product
//                                        is ≤ 6 there), a non-power-of-two inverse ≥ 2^-123 by the saturating
//                                        encoder (encode_e2m1_bf16_f32_sat), and the bf16 amax is taken by
//                                        max.xorsign.abs.bf16x2 per lane with two items folded by one max.u16x2
//                                        (abs_max_bf16x2_lanes, fold_max_u16x2_pair). perTokenCast (mode 0) with
//                                        roundSf and groups of 32 takes it (MXFP4: 73.9 → 75.1% at 16384 × 7168);
//                                        the host never sends it other inverses (the saturating path lost NVFP4:
//                                        56 → 46%), so every other bf16 → e2m1 cast keeps _u4, roundSf with
//                                        groups of 16, 64 or 128 too (not measured, not built). Same grid as _u4
//   tk_per_token_cast__<in>_e4m3_g<N>_sor4
//                                        in ∈ {fp32, bf16}, N ∈ {32, 128}: perTokenCastWithSfOnly (mode 1 only,
//                                        data never written): register units of 4 chunks, the next unit loaded
//                                        before the current one is reduced, no shared-memory staging. Every
//                                        sf-only launch from fp32 / bf16 to e4m3 with groups of 32 or 128 takes it
//                                        (docs/perf-notes/perf7-sfonly.md: 84.1 → 89.7% fp32 sf, 82.4 → 91.0%
//                                        packed col-major, 16384 × 7168 bf16, groups of 128); e2m1 and groups of
//                                        16 or 64 (not measured, not built) keep _g<N> / _u4 in mode 1
//   tk_per_token_cast__<in>_e4m3_g<N>_pkl in ∈ {fp32, bf16}, N ∈ {32, 128}: the _g<N> kernel with its packed UE8M0
//                                        sf byte stores under an L2::evict_last policy; perTokenCast (mode 0) with
//                                        usePackedUe8m0 takes it, without stochasticCast (+0.4 … +2.6 points)
//   tk_per_token_cast__bf16_e4m3_g128_sor4_a
//                                        _sor4 for sf-only launches whose x base and row stride are multiples of 16
//                                        bytes (the host checks it): load_chunk's element-wide fallback compiled out
//                                        (ptxas if-converts it in _sor4: 8 predicated-off LDG.U16 and 4 PRMT issue
//                                        beside every 16-byte load). Every such perTokenCastWithSfOnly launch from
//                                        bf16 to e4m3 with groups of 128 takes it (docs/perf-notes/perf9-ptc.md:
//                                        +1.5 … +2.1 points, 4096 … 16384 × 7168); any other view keeps _sor4. The
//                                        same for perTokenCast (_g128_a / _g128_pkl_a, staged loads and byte stores
//                                        without fallbacks) measured a tie and is not built
//   tk_per_token_cast__bf16_e4m3_g128_pdl, tk_per_token_cast__bf16_e4m3_g128_pkl_pdl
//                                        _g128 / _g128_pkl launched with programmatic dependent launch (PDL;
//                                        docs/perf-notes/perf9-pdl.md): every perTokenCast (mode 0) bf16 → e4m3,
//                                        groups of 128, no stochasticCast, takes them while config.pdl is set (its
//                                        default; off: _g128 / _g128_pkl without the attribute). Measured 0.8 …
//                                        1.7 µs less per launch at 4096 … 16384 × 7168, back to back and with a
//                                        copy or another kernel between casts. A block first executes
//                                        griddepcontrol.launch_dependents (the next PDL grid in the stream may be
//                                        scheduled once all of this grid's blocks did), then only index math on the
//                                        launch parameters, then griddepcontrol.wait (the previous grid in the
//                                        stream has completed and its writes are visible) before its first global
//                                        read or write. Both are no-ops in a launch without the PDL attribute (PTX
//                                        ISA, griddepcontrol). Same bytes, same geometry as _g128 / _g128_pkl
//   tk_per_token_cast__bf16_e4m3_g128_sr_wu12 (per_token_cast_sr12.cu, the run_warp_units form of this file)
//                                        perTokenCast (mode 0 only) bf16 → e4m3 with stochasticCast, groups of 128,
//                                        x base / row stride and data base multiples of 16 bytes (the host checks
//                                        it): GroupCast::run_warp_units — warp units of 4 chunks per lane (32
//                                        values) walked flat over (row, 1024-column segment) pairs instead of
//                                        _g128_sr's 8-warp row teams of 2-chunk units (which leave one unit item in
//                                        eight dead at H = 7168 and pay the per-unit work — amax shuffles, sf_and_inv
//                                        with its two IEEE divisions, the sf store, staging — per 16 values), staged
//                                        one unit ahead by cp.async, no element-wide fallback; the same step() and
//                                        stochastic rounding as _g128_sr (§7.3 in the scaled domain of
//                                        common/stochastic.cuh), so the same bytes; the griddepcontrol prologue of
//                                        _pdl (launched with the PDL attribute while config.pdl is set);
//                                        docs/perf-notes/perf10-ptsr.md, perf12-sr.md
//   tk_per_token_cast__…_sr              the same with stochasticCast: the data's RN encode replaced by the
//                                        software stochastic rounding of common/sr_chunk.cuh (§2.5, §7.3–§7.4);
//                                        scales, geometry and every other step identical
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is still correct, the kernels are grid-stride):
//
//   kernel   block.x  dynamic smem  grid.x
//   _g<N>    256      0             min(ceilDiv(T, R), 8 · SMs)       R = 8 / w, w = min(8, nextPow2(ceilDiv(H / V, 32)))
//   _row     256      0             T
//   _u4sca   256      0             as _g<N>
//   _sor4    256      0             as _g<N> (4 resident blocks per SM, as _g<N>)
//   _pkl     256      0             as _g<N>
//   _sor4_a  256      0             as _g<N> (4 resident blocks per SM, as _sor4)
//   _pdl     256      0             as _g<N> (_g128_pdl, _g128_pkl_pdl; launched with the PDL attribute)
//   _sr_wu   256      0             max(1, min(ceilDiv(T · U, 8), 8 · SMs))   U = ceilDiv(H / 8, 128) warp units a row
//                                  (_g128_sr_wu12: 32 KiB static smem, 4 resident blocks per SM; PDL attribute iff
//                                  config.pdl)
//   _g<N> / _u4 / _sor4, sf only, fp32 / bf16 in, when ops/quant/per_token_cast.ts SF_ONLY_ONE_WAVE is set (off:
//            it measured slower with _g<N>): ceilDiv(G, n), G = ceilDiv(T, R), n = ceilDiv(G, 4 · SMs) (one wave)
//
//   V = elements per thread chunk = min(16 bytes / element size, N): fp32 4, bf16 8, e4m3 16, e2m1 min(32, N).
//   w = warps that share a row (common/work.cuh), R = rows a block works on at once. SMs = multiprocessor count.
//   Static shared memory: _g<N> 16 KiB (value inputs; + 1 KiB e2m1 outputs: the e4m3 inverse table; _u4 and _u4sca
//   32 + 1 KiB; _sor4 and _sor4_a none; _pkl and _pdl as _g<N>) / ≤ 8 KiB (code inputs), _row 128 B. Registers
//   (sm_90a, ptxas): _sor4 56–62, _u4sca 63 (sm_100a: _sor4 60–64, _u4sca 56, as _u4). bf16 → e4m3, sm_90a /
//   sm_100a: _g128 56 / 46, _g128_pkl 56 / 54, _g128_sor4 59 / 60, _g128_sor4_a 60 / 62; _g128_pdl and _g128_pkl_pdl
//   56 on sm_90a (as _g128 / _g128_pkl); _g128_sr 56 / 46, _g128_sr_wu (trim24: removed) 60 / 56.
//   The cap 8 · SMs (two rounds of 4 resident blocks per SM) measured best on an H200 (bf16 → e4m3, N = 128,
//   H = 7168: 91% of the large-memcpy bandwidth at T = 16384, 79% at T = 4096, where a memcpy moving the same
//   bytes reaches 75%; uncapped: 85% / 73%).
//   Column-major sf padding rows (sf_rows > T) are zeroed grid-stride by the same launch.
//
// Modes (PER_TOKEN_MODE, runtime): 0 cast (data + sf), 1 sf only (data pointer unused), 2 precomputed sf (fp32 /
// bf16 input only; sf read from x_sf, row-major fp32 or e4m3 per x_sf_kind; only data written).
//
// Work split (_g<N>): a team of w warps per row; a thread owns 16-byte chunks of the row, and a group of N
// columns is N / V adjacent lanes, so its amax is an xor-shuffle butterfly (no shared memory) and the group's
// (sf, inv) is computed by one lane and shuffled to the others. Loads are staged through shared memory with
// cp.async one unit ahead (common/ldst.cuh), so HBM stays busy while a unit is reduced, scaled and stored. Inputs
// whose base or row stride is not a multiple of the chunk size (any row stride ≥ H is legal for fp32 / bf16)
// stage through registers with element-wide loads instead: same kernel, slower, correct.
// e2m1 outputs of fp32 / bf16 inputs use the encoders of common/e2m1_fast.cuh: a bf16 chunk whose inverse scale
// is a power of two (roundSf) is scaled and rounded in bf16x2 arithmetic (the products are exact), a bf16 chunk
// with any other positive finite inverse (NVFP4) is scaled in binary32 and each product rounded once
// (encode_e2m1_bf16_f32), any other chunk (fp32 input, negative or non-finite inverses) is scaled in binary32 and
// rounded through round-to-odd f16 pairs; a chunk holding a NaN or an infinity falls back to the scalar
// encode_e2m1.
#include "../common/chunk.cuh"
#include "../common/e2m1_fast.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/reduce.cuh"
#include "../common/scale.cuh"
#include "../common/sr_chunk.cuh"
#include "../common/work.cuh"
#include "../generated/quant_params.h"

// A file that includes this one may swap the stochastic chunk encoder of step() (same signature as
// encode_chunk_sr) and keep the kernels below out of its image (per_token_cast_sr12.cu)
#ifndef TK_PTC_SR_ENCODE
#define TK_PTC_SR_ENCODE encode_chunk_sr
#endif

namespace tk {
namespace {

// PER_TOKEN_MODE of ops/quant/per_token_cast.params.ts
enum PerTokenMode : uint32_t { kModeCast = 0, kModeSfOnly = 1, kModePrecomputedSf = 2 };

constexpr int kBlockThreads = 256;
// Resident blocks per SM the register budget is sized for: 4 (≤ 64 registers) for the value inputs; the code
// inputs decode 16–32 values per chunk and get 2 (≤ 128 registers) rather than spill.
template <Fmt kIn>
constexpr int kMinBlocksPerSm = FmtTraits<kIn>::kCode ? 2 : 4;
// Chunks per thread in one unit of work (a unit is staged while the previous one is computed). Value inputs: 2 ×
// 16 bytes, measured on an H200 against 4 (bf16 → e4m3, 16384 × 7168: 90.6% vs 89.3% of memcpy). Code inputs
// decode 16–32 values per chunk; one chunk per unit keeps their registers and code size in check.
template <Fmt kIn>
constexpr int kItemsPerStep = FmtTraits<kIn>::kCode ? 1 : 2;
// Units whose loads are staged at once: the one being computed and the next.
constexpr int kStages = 2;
// Input-scale blocks of a re-quantized input are at least 16 columns wide and 16-aligned (§4.4: ci ≥ 16).
constexpr int kMinInBlockCols = 16;

template <Fmt kIn, Fmt kOut, int kN>
struct GroupShape {
  static constexpr int kVec = (kVecBytes * 8 / FmtTraits<kIn>::kBits) < kN ? (kVecBytes * 8 / FmtTraits<kIn>::kBits) : kN;
  static constexpr int kLoadBytes = kVec * FmtTraits<kIn>::kBits / 8;
  static constexpr int kLoadWords = kLoadBytes / 4;
  static constexpr int kLanes = kN / kVec;  // lanes sharing one group
  static constexpr int kOutBytes = kOut == Fmt::kE4m3 ? kVec : kVec / 2;
  static constexpr int kOutWords = (kOutBytes + 3) / 4;
  static constexpr int kSubBlocks = FmtTraits<kIn>::kCode ? kVec / kMinInBlockCols : 1;
  static constexpr int kSubElems = kVec / kSubBlocks;
  static_assert(kLanes >= 1 && kLanes <= kWarpSize, "group spans at most one warp");
  static_assert(64 % kVec == 0, "H % 64 == 0 keeps every chunk inside its row");
};

// Bytes of one input row step.
template <Fmt kIn>
TK_DEV uint64_t row_stride_bytes(const PerTokenCastParams& p) {
  return FmtTraits<kIn>::kBits >= 8 ? p.x_row_stride * (FmtTraits<kIn>::kBits / 8) : p.x_row_stride;
}

// Output data row of T·H codes: e4m3 one byte per element, e2m1x2 half a byte.
template <Fmt kOut>
TK_DEV uint64_t out_offset(uint64_t row, uint32_t hidden, uint32_t col) {
  return kOut == Fmt::kE4m3 ? row * hidden + col : (row * hidden + col) / 2;
}

TK_DEV SfOut make_sf_out(const PerTokenCastParams& p, uint32_t nbk) {
  return SfOut{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, nbk};
}

template <Fmt kOut>
constexpr float kQmaxOf = kOut == Fmt::kE4m3 ? kE4m3Max : kE2m1Max;

// fl(a / 6), sfRaw of §2.3 for e2m1 (Qmax 6), without the IEEE division (~8–10 SASS and a slow-path branch):
// q = fl(a · fl(1/6)), the remainder a − 6q exact by fma, one fma correction. Equal to div_rn(a, 6) for every a in
// [2^-119, FLT_MAX] (tools/e2m1_fast_check.cpp part 6: all of them); every other a (subnormal quotients, +Inf,
// negative or NaN) takes div_rn.
TK_DEV float div6_rn(float a) {
  constexpr float kSixth = 0x1.555556p-3f;  // fl(1/6)
  if (f2u(a) - 0x04000000u < 0x7f800000u - 0x04000000u) {
    const float q = mul_rn(a, kSixth);
    return __fmaf_rn(__fmaf_rn(-q, 6.0f, a), kSixth, q);
  }
  return div_rn(a, 6.0f);
}

// encode_e4m3(v) for one value by the hardware conversion: encode_e4m3x4's construction (common/codec.cuh: PTX's
// cvt.rn.satfinite.e4m3x2.f32 is §1.2 up to the sign of a NaN; on sm_90 the raw conversion was checked equal to
// encode_e4m3 for all 2^32 inputs on an H200, elsewhere a negative NaN byte 0xFF gets bit 7 cleared) on a pair
// holding v twice, instead of the scalar integer encode and its subnormal branch (~20 instructions per group).
TK_DEV uint32_t encode_e4m3_hw(float v) {
  uint16_t h;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %1;" : "=h"(h) : "f"(v));
  const uint32_t w = h & 0xffu;
#if __CUDA_ARCH__ == 900
  return w;
#else
  return w ^ (((w & 0x7fu) + 1u) & w & 0x80u);
#endif
}

// ---- groups of N ≤ 128 columns ----------------------------------------------------------------------------------
// Kernel forms (docs/perf-notes/perf7-sfonly.md). The default kernels serve all three modes at run time; the
// sf-only form serves PER_TOKEN_MODE 1 only (it writes the sf and never the data, whatever p.mode says) and the
// host launches it only for that mode. (Values 1 and 3 were the measured-slower _so4 and _pkw forms; 7 sets the
// three round-7 e2m1 encoder bits of perf7-fp4.md, whose forms with one or two of them set measured slower.)
enum KernelForm : int {
  kFormAnyMode = 0,  // the default kernels: mode read at run time, units staged through shared memory by cp.async
  kFormSfRegs = 2,   // sf only, units loaded straight into registers, the next unit's loads issued before the
                     // current unit's reduction (two register buffers, no shared memory): the _sor4 symbols
  kFormPackedEvictLast = 4,  // every mode; packed UE8M0 sf bytes stored as the default kernels store them, with an
                             // L2::evict_last cache policy, so that a 32-byte sector shared by 8 rows (8 blocks)
                             // stays in L2 until all of them wrote it (the _pkl symbols)
  kFormE2m1Sca = 7,  // every mode; bf16 → e2m1 only: the _u4sca encoders and amax (Symbols above)
  kFormSrWarpUnits = 8,  // perTokenCast (mode 0) with stochasticCast only, x and data 16-byte aligned: warp units
                         // of kU chunks per lane walked flat over (row, segment) pairs, staged by cp.async one unit
                         // ahead (run_warp_units; the _g128_sr_wu symbol, docs/perf-notes/perf10-ptsr.md)
};

// kUnits: chunks per thread in one unit when nonzero (the _u4 / _sor4 symbols), else kItemsPerStep.
// kAligned (the _sor4_a symbol, sf only): the launch guarantees that x's base and row stride are multiples of 16
// bytes (ops/quant/per_token_cast.ts checks it before it picks such a symbol), so the element-wide fallback of
// load_chunk is compiled out: no per-chunk alignment test, branch or fallback code.
// kPdl (the _pdl symbols): launched as a programmatic dependent (PDL) of the previous kernel in the stream; run()
// lets this grid's own dependents start at once and waits for the previous grid (griddepcontrol) before its first
// global access (Symbols above). Both instructions are no-ops for a launch without the PDL attribute.
template <Fmt kIn, Fmt kOut, int kN, bool kSr, int kUnits = 0, int kForm = kFormAnyMode, bool kAligned = false,
          bool kPdl = false>
struct GroupCast {
  using S = GroupShape<kIn, kOut, kN>;
  static constexpr bool kRequant = FmtTraits<kIn>::kCode;
  static constexpr bool kSfOnly = kForm == kFormSfRegs;
  static_assert(!kSfOnly || (!kRequant && !kSr), "the sf-only forms take value inputs and no stochastic rounding");
  static constexpr bool kSrWarpUnits = kForm == kFormSrWarpUnits;
  static_assert(!kAligned || kSfOnly || kSrWarpUnits, "the aligned-only forms are _sor4_a and _sr_wu");
  static_assert(!kSrWarpUnits || (kSr && kAligned && !kRequant), "_sr_wu: stochastic, aligned, value input");
  static constexpr bool kE2m1Sca = kForm == kFormE2m1Sca;
  static constexpr int kU = kUnits != 0 ? kUnits : kItemsPerStep<kIn>;
  // The (sf, inv) of a group is the same for all its lanes: each lane computes it for at most kSfRounds items of
  // the step and shares it by shuffle, instead of every lane computing sfAndInv (two IEEE divisions) kU times.
  static constexpr int kSfRounds = (kU + S::kLanes - 1) / S::kLanes;
  // e2m1 output of a value input: the packed-pair encoders of common/e2m1_fast.cuh instead of the scalar
  // encode_e2m1 (~17 integer operations and a branch per value held bf16 → e2m1 at 38–42% of copy bandwidth)
  static constexpr bool kFastE2m1 = kOut == Fmt::kE2m1 && !kSr && !kRequant && (S::kVec == 4 || S::kVec == 8);
  // e4m3 scales without roundSf (NVFP4): inv = fl(1 / decode_e4m3(c)) depends on the sf byte c only, so the block
  // computes the 256 values once (the same div_rn of the same decode, kernel start) and a group reads its inverse
  // from shared memory instead of decoding c and dividing (~20 instructions per group of 16 values).
  static constexpr bool kSfInvTable = kFastE2m1;
  static_assert(!kE2m1Sca || (kFastE2m1 && kIn == Fmt::kBf16), "the _u4sca encoders are for bf16 → e2m1 only");

  const PerTokenCastParams& p;
  uint32_t chunks;  // per row
  SfOut sf_out;
  bool precomputed, write_data, write_sf, data_aligned;
  bool e4m3_inv_table;  // kSfInvTable and this launch computes e4m3 scales (sf_and_inv's kSfE4m3Out branch)
  uint64_t l2_keep;  // kFormPackedEvictLast: the L2::evict_last policy of the sf stores
  // kE2m1Sca and the inverses are the groups' own roundSf ones (power-of-two chunks then have |x·inv| ≤ 6)
  bool pow2_no_clamp;
  uint32_t in_row_shift, in_col_shift;  // input block shape of a re-quantized input: powers of two (§4.4)

  TK_DEV explicit GroupCast(const PerTokenCastParams& params) : p(params) {
    chunks = p.hidden / S::kVec;
    sf_out = make_sf_out(p, (p.hidden + kN - 1) / kN);
    // _sr_wu serves mode 0 only (the host launches it for perTokenCast, never for the other modes)
    precomputed = !kSfOnly && !kRequant && !kSrWarpUnits && p.mode == kModePrecomputedSf;
    write_data = !kSfOnly && (kSrWarpUnits || p.mode != kModeSfOnly);
    write_sf = !precomputed && p.sf != 0;
    data_aligned = kSrWarpUnits || (p.data % kVecBytes) == 0;  // _sr_wu: the host checked it
    e4m3_inv_table = kSfInvTable && !precomputed && (p.flags & (kSfRound | kSfE4m3Out)) == kSfE4m3Out;
    pow2_no_clamp = kE2m1Sca && !precomputed && (p.flags & kSfRound) != 0;
    in_row_shift = kRequant ? log2_pow2(p.x_block_rows) : 0;
    in_col_shift = kRequant ? log2_pow2(p.x_block_cols) : 0;
    l2_keep = 0;
    if constexpr (kForm == kFormPackedEvictLast) {
      asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(l2_keep));
    }
  }

  // Writes S[row][k] (with the L2::evict_last policy for packed sf in kFormPackedEvictLast).
  TK_DEV void store_sf(uint64_t row, uint32_t k, uint32_t stored) const {
    if constexpr (kForm == kFormPackedEvictLast) {
      if (sf_out.flags & kSfPackedUe8m0) {  // SfOut::store's packed branch, with the policy
        uint8_t* word = sf_out.base + 4 * (row * sf_out.s0 + (k / kUe8m0PerWord) * sf_out.s1);
        const uint32_t b0 = k % kUe8m0PerWord;
        asm volatile("st.global.L2::cache_hint.u8 [%0], %1, %2;" ::"l"(word + b0), "r"(stored), "l"(l2_keep) : "memory");
        if (k == sf_out.nbk - 1)
          for (uint32_t b = b0 + 1; b < kUe8m0PerWord; ++b)
            asm volatile("st.global.L2::cache_hint.u8 [%0], %1, %2;" ::"l"(word + b), "r"(0u), "l"(l2_keep) : "memory");
        return;
      }
    }
    sf_out.store(row, k, stored);
  }

  // The inverse scale of group k of `row`: from its amax (§2.3), or read (precomputed mode, §2.5:
  // inv = fl(1/s)). The owner lane of the group writes the sf entry; in precomputed mode only the owner reads.
  TK_DEV float group_inv(float amax, uint64_t row, uint32_t k, bool owner, const float* inv_tab) const {
    if (precomputed) {
      return owner ? div_rn(1.0f, load_scale(p.x_sf, p.x_sf_kind, p.x_sf_stride0, p.x_sf_stride1, row, k)) : 0.0f;
    }
    if constexpr (kFastE2m1) {
      // sf_and_inv's roundSf and kSfE4m3Out branches, literally, with sfRaw from div6_rn and (e4m3) the inverse
      // from the table; fp32 scales below, unchanged
      if (p.flags & (kSfRound | kSfE4m3Out)) {
        const float sf_raw = div6_rn(max_num(amax, p.amax_clamp));
        uint32_t stored;
        float inv;
        if (p.flags & kSfRound) {
          const uint32_t biased = ((f2u(sf_raw) - 1u) >> 23) + 1u;
          stored = (p.flags & kSfPackedUe8m0) ? (biased & 0xffu) : biased << 23;
          inv = u2f((254u - biased) << 23);
        } else {
          stored = encode_e4m3_hw(sf_raw);
          inv = inv_tab[stored];  // e4m3_inv_table holds here: not precomputed, kSfE4m3Out without kSfRound
        }
        if (write_sf && owner) store_sf(row, k, stored);
        return inv;
      }
    }
    const ScaleAndInv si = sf_and_inv(amax, p.amax_clamp, kQmaxOf<kOut>, p.flags);
    if (write_sf && owner) store_sf(row, k, si.stored);
    return si.inv;
  }

  // One unit: kU chunks per lane of `row`, starting at chunk base + lane, data already in w.
  TK_DEV void step(uint64_t row, uint32_t base, uint32_t threads, const uint32_t (&w)[kU][S::kLoadWords],
                   const float* inv_tab) const {
    const uint32_t lane = threadIdx.x % kWarpSize;
    uint32_t c[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) c[u] = base + u * threads + lane;
    uint8_t* dr = reinterpret_cast<uint8_t*>(p.data) + out_offset<kOut>(row, p.hidden, 0);

    // Scale of each input block a chunk touches (re-quantization only).
    float s_in[kU][S::kSubBlocks];
#pragma unroll
    for (int u = 0; u < kU; ++u)
#pragma unroll
      for (int b = 0; b < S::kSubBlocks; ++b) {
        s_in[u][b] = 1.0f;
        if constexpr (kRequant) {
          if (c[u] < chunks)
            s_in[u][b] = load_scale(p.x_sf, p.x_sf_kind, p.x_sf_stride0, p.x_sf_stride1, row >> in_row_shift,
                                    (c[u] * S::kVec + b * S::kSubElems) >> in_col_shift);
        }
      }

    // Group amax of every item. Missing columns of a partial last group (dead lanes) contribute 0, which is
    // neutral: the clamp makes every amax positive anyway.
    float amax[kU];
    if (!precomputed) {
      if constexpr (kIn == Fmt::kBf16) {
        // bf16: |x| and maximumNumber on packed pairs (exact: the max of bf16 values is one of them), then
        // two items per shuffle as 16-bit patterns
        uint32_t m16[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          if constexpr (kE2m1Sca) {
            m16[u] = abs_max_bf16x2_lanes<S::kLoadWords>(w[u]);  // per lane; folded two items at a time below
          } else {
            m16[u] = abs_max_bf16<S::kLoadWords>(w[u]);
          }
        }
#pragma unroll
        for (int u = 0; u < kU; u += 2) {
          uint32_t pair;
          if constexpr (kE2m1Sca) {
            pair = fold_max_u16x2_pair(m16[u], u + 1 < kU ? m16[u + 1] : 0u);
          } else {
            pair = m16[u] | ((u + 1 < kU ? m16[u + 1] : 0u) << 16);
          }
          const uint32_t both = group_max_u16x2<S::kLanes>(pair);
          amax[u] = decode_bf16(both & 0xffffu);
          if (u + 1 < kU) amax[u + 1] = decode_bf16(both >> 16);
        }
      } else {
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          float x[S::kVec];
          decode_chunk<kIn, S::kVec>(w[u], x);
          float a = 0.0f;
#pragma unroll
          for (int b = 0; b < S::kSubBlocks; ++b) {
            float m = 0.0f;
#pragma unroll
            for (int i = 0; i < S::kSubElems; ++i) m = max_num(m, abs_f(x[b * S::kSubElems + i]));
            // §4.4: max_j fl(|q|·s_in) == fl(max_j |q| · s_in) (rounding is monotonic)
            a = max_num(a, kRequant ? mul_rn(m, s_in[u][b]) : m);
          }
          amax[u] = group_max<S::kLanes>(a);
        }
      }
    }

    // (sf, inv) per item, computed once per group: in round r lane g of a group handles item g + r·kLanes and
    // the group's other lanes read the result by shuffle. A group exists when its first chunk is in the row.
    float inv[kU];
    const uint32_t glane = lane % S::kLanes;
#pragma unroll
    for (int r = 0; r < kSfRounds; ++r) {
      float a = 0.0f;
      uint32_t cr = 0;
#pragma unroll
      for (int u = r * S::kLanes; u < kU && u < (r + 1) * S::kLanes; ++u) {
        const bool pick = glane + r * S::kLanes == static_cast<uint32_t>(u);
        if (!precomputed) a = select_f32(pick, amax[u], a);
        cr = select_u32(pick, c[u], cr);
      }
      const bool owner = glane + r * S::kLanes < static_cast<uint32_t>(kU) && cr - glane < chunks;
      const float my_inv = group_inv(a, row, cr / S::kLanes, owner, inv_tab);
#pragma unroll
      for (int u = r * S::kLanes; u < kU && u < (r + 1) * S::kLanes; ++u)
        inv[u] = S::kLanes == 1 ? my_inv : __shfl_sync(kFullWarpMask, my_inv, (lane - glane) + (u - r * S::kLanes));
    }

    if (!kSfOnly && write_data) {
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (c[u] < chunks) {
          uint32_t o[S::kOutWords];
          // bf16 times a power of two (roundSf scales): the e2m1 rounding on the exact bf16 products; times any
          // other positive finite inverse (NVFP4's e4m3 scales, fp32 scales): binary32 products rounded once
          bool done = false;
          if constexpr (kFastE2m1 && kIn == Fmt::kBf16) {
            const uint32_t ib = f2u(inv[u]);
            if ((ib & 0x7fffffu) == 0) {
              if constexpr (kE2m1Sca) {
                done = pow2_no_clamp ? encode_e2m1_bf16_pow2_nc(w[u], inv[u], o) : encode_e2m1_bf16_pow2(w[u], inv[u], o);
              } else {
                done = encode_e2m1_bf16_pow2(w[u], inv[u], o);
              }
            } else if (ib - 1u < 0x7f7fffffu) {
              if constexpr (kE2m1Sca) {
                // inv ≥ 2^-123: inv / 8 exact and normal (encode_e2m1_bf16_f32_sat's condition)
                done = ib >= 0x02000000u ? encode_e2m1_bf16_f32_sat(w[u], mul_rn(inv[u], 0.125f), o)
                                         : encode_e2m1_bf16_f32(w[u], inv[u], o);
              } else {
                done = encode_e2m1_bf16_f32(w[u], inv[u], o);
              }
            }
          }
          if (!done) {
            float v[S::kVec];
            decode_chunk<kIn, S::kVec>(w[u], v);
#pragma unroll
            for (int b = 0; b < S::kSubBlocks; ++b) {
              // §4.4: the product of the scales first, then the code value
              const float f = kRequant ? mul_rn(s_in[u][b], inv[u]) : inv[u];
#pragma unroll
              for (int i = 0; i < S::kSubElems; ++i) v[b * S::kSubElems + i] = mul_rn(v[b * S::kSubElems + i], f);
            }
            if constexpr (kSr) {
              TK_PTC_SR_ENCODE<kOut, S::kVec>(v, o, c[u] * S::kVec);
            } else if constexpr (kFastE2m1) {
              encode_e2m1_fast<S::kVec>(v, o);
            } else {
              encode_chunk<kOut, S::kVec>(v, o);
            }
          }
          store_chunk<S::kOutBytes>(dr + static_cast<uint64_t>(c[u]) * S::kOutBytes, o, data_aligned);
        }
      }
    }
  }

  // The table form's 256 e4m3 scale inverses, in the block's shared table (every thread waits for them).
  TK_DEV void fill_inv_tab(float* inv_tab) const {
    if constexpr (kSfInvTable) {
      if (e4m3_inv_table) {
        for (uint32_t c = threadIdx.x; c < 256; c += blockDim.x) inv_tab[c] = div_rn(1.0f, decode_e4m3(c));
      }
      __syncthreads();
    }
  }

  TK_DEV void run() const {
    if constexpr (kForm == kFormSfRegs) {
      run_regs();
      return;
    }
    if constexpr (kSrWarpUnits) {
      run_warp_units();
      return;
    }
    static_assert(!kPdl || (!kRequant && !kSfOnly), "the PDL forms are the value-input staged kernels");
    if constexpr (kPdl) {
      // The next grid in the stream (when launched with PDL) may be scheduled once every block of this grid has
      // issued this: its blocks then take the slots this grid's last blocks free, and its own griddepcontrol.wait
      // still holds it until this grid has completed and flushed its writes. No memory access of this grid
      // depends on it.
      asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
    // thread-private staging slots, [stage][item][thread] so that a warp's shared accesses are contiguous
    __shared__ __align__(16) uint8_t stage_buf[kStages][kU][kBlockThreads][S::kLoadBytes];
    __shared__ float inv_tab[kSfInvTable ? 256 : 1];
    fill_inv_tab(inv_tab);  // shared memory from constants only (and none in the e4m3 PDL forms)
    const uint32_t rows = p.num_tokens;
    const uint32_t lane = threadIdx.x % kWarpSize;
    const uint64_t x_stride = row_stride_bytes<kIn>(p);
    const bool x_aligned = rows_aligned(p.x, x_stride, S::kLoadBytes);
    const RowTeam team(chunks);
    if constexpr (kPdl) {
      // Everything above reads only the launch parameters (constant bank) and computes indices; below, the first
      // global read (the staging of x, the precomputed sf) and the first global write (data, sf, sf padding).
      // The previous grid in the stream may write x or read / write this launch's outputs: wait until it has
      // completed and its memory operations are visible.
      asm volatile("griddepcontrol.wait;" ::: "memory");
    }

    // copy the unit's chunks into stage `st` (dead chunks read nothing and stage zeros)
    auto prefetch = [&](auto st, uint64_t row, uint32_t base) {
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + row * x_stride;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t c = base + u * team.threads + lane;
        const bool live = c < chunks;
        stage_chunk<S::kLoadBytes, FmtTraits<kIn>::kAccessBytes>(
            smem_addr(stage_buf[st][u][threadIdx.x]), live ? xr + static_cast<uint64_t>(c) * S::kLoadBytes : xr, live,
            x_aligned);
      }
    };

    pipelined_units<kU, false>(team, rows, chunks, prefetch, [&](int st, uint64_t row, uint32_t base) {
      uint32_t w[kU][S::kLoadWords];
#pragma unroll
      for (int u = 0; u < kU; ++u) ld_shared(smem_addr(stage_buf[st][u][threadIdx.x]), w[u]);
      step(row, base, team.threads, w, inv_tab);
    });
    if (write_sf) sf_out.zero_padding_rows(rows, p.sf_rows);
  }

  // kFormSfRegs: the same units in the same order, each loaded straight into registers (dead chunks read nothing
  // and hold zeros, as a staged dead chunk does), the next unit's loads issued before step() reduces the current
  // one. Two register buffers swap roles every unit (the loop body is emitted once per buffer).
  TK_DEV void run_regs() const {
    __shared__ float inv_tab[kSfInvTable ? 256 : 1];
    fill_inv_tab(inv_tab);
    const uint32_t rows = p.num_tokens;
    const uint32_t lane = threadIdx.x % kWarpSize;
    const uint64_t x_stride = row_stride_bytes<kIn>(p);
    const bool x_aligned = kAligned || rows_aligned(p.x, x_stride, S::kLoadBytes);
    const RowTeam team(chunks);
    using Unit = uint32_t[kU][S::kLoadWords];

    auto load = [&](Unit& w, uint64_t row, uint32_t base) {
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + row * x_stride;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t c = base + u * team.threads + lane;
#pragma unroll
        for (int i = 0; i < S::kLoadWords; ++i) w[u][i] = 0;
        if (c < chunks)
          load_chunk<S::kLoadBytes, FmtTraits<kIn>::kAccessBytes>(xr + static_cast<uint64_t>(c) * S::kLoadBytes, w[u],
                                                                  x_aligned);
      }
    };

    uint64_t row = team.first_row;
    uint32_t base = team.warp_offset;
    Unit wa, wb;
    if (row < rows) load(wa, row, base);
    auto unit = [&](Unit& cur, Unit& nxt) {
      uint64_t next_row = row;
      uint32_t next_base = base;
      team.next<kU>(next_row, next_base, chunks);
      if (next_row < rows) load(nxt, next_row, next_base);
      step(row, base, team.threads, cur, inv_tab);
      row = next_row;
      base = next_base;
    };
    while (row < rows) {
      unit(wa, wb);
      if (row >= rows) break;
      unit(wb, wa);
    }
    if (write_sf) sf_out.zero_padding_rows(rows, p.sf_rows);
  }

  // kFormSrWarpUnits (_sr_wu): the row is cut into segments of kU·32 chunks (bf16: 1024 columns), and a warp unit
  // is one (row, segment) pair: lane l holds chunks seg·kU·32 + u·32 + l, u < kU — each u one contiguous 512-byte
  // warp access, each group of 128 columns 16 adjacent lanes of one u, as step() expects with threads = 32. Units
  // are numbered q = row · upr + seg (upr segments a row) and warp g of the grid takes q = g, g + G, g + 2G, …
  // (G warps in the grid): no row-team geometry, so a row of 896 chunks (H = 7168) is 7 full units instead of
  // 3.5 chunks per thread of an 8-warp team (one unit in eight of _g128_sr is dead there). Chunks past the row end
  // (H not a multiple of 1024) are dead as in step(). The next unit is staged by cp.async while the current one is
  // computed (two stages of kU · 16 bytes per thread, 32 KiB a block). x's base and row stride and data's base
  // are multiples of 16 bytes (the host checks it), so there is no element-wide fallback. Launched with or
  // without the PDL attribute (config.pdl): the griddepcontrol prologue of _pdl.
  TK_DEV void run_warp_units() const {
    if constexpr (kPdl) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    __shared__ __align__(16) uint8_t stage_buf[kStages][kU][kBlockThreads][S::kLoadBytes];
    constexpr uint32_t kUnitChunks = kU * kWarpSize;
    const uint32_t rows = p.num_tokens;
    const uint32_t lane = threadIdx.x % kWarpSize;
    const uint64_t x_stride = row_stride_bytes<kIn>(p);
    const uint32_t upr = (chunks + kUnitChunks - 1) / kUnitChunks;  // ≥ 1 (H ≥ 64)
    const uint32_t block_warps = blockDim.x / kWarpSize;
    // 64-bit: any grid.x is correct (the host's is at most 8 · SMs); the divisions run once per thread
    const uint64_t grid_warps = static_cast<uint64_t>(gridDim.x) * block_warps;
    const uint64_t q0 = static_cast<uint64_t>(blockIdx.x) * block_warps + threadIdx.x / kWarpSize;
    const uint64_t row_step = grid_warps / upr;
    const uint32_t seg_step = static_cast<uint32_t>(grid_warps % upr);
    uint64_t row = q0 / upr;
    uint32_t seg = static_cast<uint32_t>(q0 % upr);
    if constexpr (kPdl) asm volatile("griddepcontrol.wait;" ::: "memory");  // as run(): before any global access

    auto prefetch = [&](int st, uint64_t r, uint32_t sg) {
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + r * x_stride;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t c = sg * kUnitChunks + u * kWarpSize + lane;
        const bool live = c < chunks;
        cp_async<S::kLoadBytes>(smem_addr(stage_buf[st][u][threadIdx.x]),
                                live ? xr + static_cast<uint64_t>(c) * S::kLoadBytes : xr, live);
      }
    };

    if (row < rows) prefetch(0, row, seg);
    cp_async_commit();
    for (int stage = 0; row < rows; stage ^= 1) {  // warp-uniform: step() shuffles over the whole warp
      uint64_t next_row = row + row_step;
      uint32_t next_seg = seg + seg_step;
      if (next_seg >= upr) {
        next_seg -= upr;
        ++next_row;
      }
      if (next_row < rows) prefetch(stage ^ 1, next_row, next_seg);
      cp_async_commit();
      cp_async_wait<1>();  // this unit's copies (all but the group just committed)
      uint32_t w[kU][S::kLoadWords];
#pragma unroll
      for (int u = 0; u < kU; ++u) ld_shared(smem_addr(stage_buf[stage][u][threadIdx.x]), w[u]);
      step(row, seg * kUnitChunks, kWarpSize, w, nullptr);
      row = next_row;
      seg = next_seg;
    }
    if (write_sf) sf_out.zero_padding_rows(rows, p.sf_rows);
  }
};

// ---- one group per row (numPerChannels == H) ---------------------------------------------------------------------
// A block per row: pass 1 reduces |x| over the row (block-wide), pass 2 re-reads the row (L1/L2 hits: pass 1 loads
// allocate in L1) and encodes it.
template <Fmt kIn, Fmt kOut, bool kSr>
__device__ __forceinline__ void cast_rows(const PerTokenCastParams& p) {
  constexpr int kVec = kVecBytes * 8 / FmtTraits<kIn>::kBits;
  constexpr int kWords = kVecBytes / 4;
  constexpr int kOutBytes = kOut == Fmt::kE4m3 ? kVec : kVec / 2;
  constexpr int kU = kItemsPerStep<kIn>;
  __shared__ float red[kWarpSize];

  const uint32_t rows = p.num_tokens, hidden = p.hidden;
  const uint32_t chunks = hidden / kVec;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
  const uint64_t x_stride = row_stride_bytes<kIn>(p);
  const bool x_aligned = rows_aligned(p.x, x_stride, kVecBytes);
  uint8_t* data = reinterpret_cast<uint8_t*>(p.data);
  const bool precomputed = p.mode == kModePrecomputedSf;
  const bool write_data = p.mode != kModeSfOnly;
  const bool data_aligned = (p.data % kVecBytes) == 0;
  const SfOut sf_out = make_sf_out(p, 1);
  const bool write_sf = !precomputed && p.sf != 0;

  for (uint64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const uint8_t* xr = x + row * x_stride;
    float inv;
    if (precomputed) {
      inv = div_rn(1.0f, load_scale(p.x_sf, p.x_sf_kind, p.x_sf_stride0, p.x_sf_stride1, row, 0));
    } else {
      float amax = 0.0f;
      for (uint32_t c0 = threadIdx.x; c0 < chunks; c0 += kU * blockDim.x) {
        uint32_t w[kU][kWords];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const uint32_t c = c0 + u * blockDim.x;
#pragma unroll
          for (int i = 0; i < kWords; ++i) w[u][i] = 0;
          if (c < chunks)
            load_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes, false>(xr + c * kVecBytes, w[u], x_aligned);
        }
#pragma unroll
        for (int u = 0; u < kU; ++u)
#pragma unroll
          for (int i = 0; i < kVec; ++i) amax = max_num(amax, abs_f(element<kIn>(w[u], i)));
      }
      amax = block_max(amax, red);
      const ScaleAndInv si = sf_and_inv(amax, p.amax_clamp, kQmaxOf<kOut>, p.flags);
      if (write_sf && threadIdx.x == 0) sf_out.store(row, 0, si.stored);
      inv = si.inv;
    }
    if (write_data) {
#pragma unroll 1
      for (uint32_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        uint32_t w[kWords];
        load_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes>(xr + c * kVecBytes, w, x_aligned);
        float v[kVec];
#pragma unroll
        for (int i = 0; i < kVec; ++i) v[i] = mul_rn(element<kIn>(w, i), inv);
        uint32_t o[(kOutBytes + 3) / 4];
        if constexpr (kSr) {
          encode_chunk_sr<kOut, kVec>(v, o, c * kVec);
        } else {
          encode_chunk<kOut, kVec>(v, o);
        }
        store_chunk<kOutBytes>(data + out_offset<kOut>(row, hidden, c * kVec), o, data_aligned);
      }
    }
  }
  if (write_sf) sf_out.zero_padding_rows(rows, p.sf_rows);
}

}  // namespace
}  // namespace tk

#ifndef TK_PTC_NO_KERNELS
#define TK_PER_TOKEN_CAST_GROUP_AS(in, IN, out, OUT, n, sr, SR)                                        \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::IN>)     \
      tk_per_token_cast__##in##_##out##_g##n##sr(const __grid_constant__ PerTokenCastParams p) {      \
    tk::GroupCast<tk::Fmt::IN, tk::Fmt::OUT, n, SR>(p).run();                                              \
  }
#define TK_PER_TOKEN_CAST_GROUP(in, IN, out, OUT, n)          \
  TK_PER_TOKEN_CAST_GROUP_AS(in, IN, out, OUT, n, , false) \
  TK_PER_TOKEN_CAST_GROUP_AS(in, IN, out, OUT, n, _sr, true)
#define TK_PER_TOKEN_CAST_GROUPS(in, IN, out, OUT) \
  TK_PER_TOKEN_CAST_GROUP(in, IN, out, OUT, 16)    \
  TK_PER_TOKEN_CAST_GROUP(in, IN, out, OUT, 32)    \
  TK_PER_TOKEN_CAST_GROUP(in, IN, out, OUT, 64)    \
  TK_PER_TOKEN_CAST_GROUP(in, IN, out, OUT, 128)
// bf16 → e2m1 with 4 chunks (32 values) per thread and unit: the per-unit work (row / unit bookkeeping, staging
// addresses, amax shuffles, the group's scale, the sf store) spread over twice the values
#define TK_PER_TOKEN_CAST_BF16_E2M1_U4(n)                                                                 \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::kBf16>)     \
      tk_per_token_cast__bf16_e2m1_g##n##_u4(const __grid_constant__ PerTokenCastParams p) {              \
    tk::GroupCast<tk::Fmt::kBf16, tk::Fmt::kE2m1, n, false, 4>(p).run();                                  \
  }
// the _u4 kernel with the round-7 e2m1 encoders and amax (perTokenCast with roundSf)
#define TK_PER_TOKEN_CAST_BF16_E2M1_U4SCA(n)                                                               \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::kBf16>)     \
      tk_per_token_cast__bf16_e2m1_g##n##_u4sca(const __grid_constant__ PerTokenCastParams p) {           \
    tk::GroupCast<tk::Fmt::kBf16, tk::Fmt::kE2m1, n, false, 4, tk::kFormE2m1Sca>(p).run();                \
  }
// sf-only kernels (perTokenCastWithSfOnly from fp32 / bf16 to e4m3 scales, groups of 32 or 128): register units of
// 4 chunks, next unit loaded before the current one is reduced, 4 blocks per SM
#define TK_PER_TOKEN_CAST_SF_ONLY(in, IN, out, OUT, n)                                           \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)                             \
      tk_per_token_cast__##in##_##out##_g##n##_sor4(const __grid_constant__ PerTokenCastParams p) { \
    tk::GroupCast<tk::Fmt::IN, tk::Fmt::OUT, n, false, 4, tk::kFormSfRegs>(p).run();             \
  }
// the PDL forms of bf16 → e4m3 with groups of 128 (perTokenCast while config.pdl is set): _g128 and _g128_pkl with
// the griddepcontrol prologue
#define TK_PER_TOKEN_CAST_PDL(in, IN, out, OUT, n, form, FORM)                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::IN>)          \
      tk_per_token_cast__##in##_##out##_g##n##form##_pdl(const __grid_constant__ PerTokenCastParams p) {     \
    tk::GroupCast<tk::Fmt::IN, tk::Fmt::OUT, n, false, 0, FORM, false, true>(p).run();                       \
  }
// packed-sf kernels (perTokenCast with usePackedUe8m0, no stochasticCast): byte stores with an L2 evict_last policy
#define TK_PER_TOKEN_CAST_PACKED_EVICT_LAST(in, IN, out, OUT, n)                                            \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::IN>)          \
      tk_per_token_cast__##in##_##out##_g##n##_pkl(const __grid_constant__ PerTokenCastParams p) {           \
    tk::GroupCast<tk::Fmt::IN, tk::Fmt::OUT, n, false, 0, tk::kFormPackedEvictLast>(p).run();              \
  }
#define TK_PER_TOKEN_CAST_ROW_AS(in, IN, out, OUT, sr, SR)                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::IN>)     \
      tk_per_token_cast__##in##_##out##_row##sr(const __grid_constant__ PerTokenCastParams p) {       \
    tk::cast_rows<tk::Fmt::IN, tk::Fmt::OUT, SR>(p);                                                   \
  }
#define TK_PER_TOKEN_CAST_ROW(in, IN, out, OUT)          \
  TK_PER_TOKEN_CAST_ROW_AS(in, IN, out, OUT, , false) \
  TK_PER_TOKEN_CAST_ROW_AS(in, IN, out, OUT, _sr, true)

TK_PER_TOKEN_CAST_GROUPS(fp32, kFp32, e4m3, kE4m3)
TK_PER_TOKEN_CAST_GROUPS(fp32, kFp32, e2m1, kE2m1)
TK_PER_TOKEN_CAST_GROUPS(bf16, kBf16, e4m3, kE4m3)
TK_PER_TOKEN_CAST_GROUP_AS(bf16, kBf16, e2m1, kE2m1, 16, _sr, true)  // RN: the _u4 kernels below
TK_PER_TOKEN_CAST_GROUP_AS(bf16, kBf16, e2m1, kE2m1, 32, _sr, true)
TK_PER_TOKEN_CAST_GROUP_AS(bf16, kBf16, e2m1, kE2m1, 64, _sr, true)
TK_PER_TOKEN_CAST_GROUP_AS(bf16, kBf16, e2m1, kE2m1, 128, _sr, true)
TK_PER_TOKEN_CAST_GROUPS(e4m3, kE4m3, e4m3, kE4m3)
TK_PER_TOKEN_CAST_GROUPS(e4m3, kE4m3, e2m1, kE2m1)
TK_PER_TOKEN_CAST_GROUPS(e2m1, kE2m1, e4m3, kE4m3)
TK_PER_TOKEN_CAST_GROUPS(e2m1, kE2m1, e2m1, kE2m1)
TK_PER_TOKEN_CAST_BF16_E2M1_U4(16)
TK_PER_TOKEN_CAST_BF16_E2M1_U4(32)
TK_PER_TOKEN_CAST_BF16_E2M1_U4(64)
TK_PER_TOKEN_CAST_BF16_E2M1_U4(128)
TK_PER_TOKEN_CAST_BF16_E2M1_U4SCA(32)
TK_PER_TOKEN_CAST_SF_ONLY(fp32, kFp32, e4m3, kE4m3, 32)
TK_PER_TOKEN_CAST_SF_ONLY(fp32, kFp32, e4m3, kE4m3, 128)
TK_PER_TOKEN_CAST_SF_ONLY(bf16, kBf16, e4m3, kE4m3, 32)
TK_PER_TOKEN_CAST_SF_ONLY(bf16, kBf16, e4m3, kE4m3, 128)
TK_PER_TOKEN_CAST_PACKED_EVICT_LAST(fp32, kFp32, e4m3, kE4m3, 32)
TK_PER_TOKEN_CAST_PACKED_EVICT_LAST(fp32, kFp32, e4m3, kE4m3, 128)
TK_PER_TOKEN_CAST_PACKED_EVICT_LAST(bf16, kBf16, e4m3, kE4m3, 32)
TK_PER_TOKEN_CAST_PACKED_EVICT_LAST(bf16, kBf16, e4m3, kE4m3, 128)
// perTokenCastWithSfOnly bf16 → e4m3, groups of 128, x 16-byte aligned: _sor4 without the element-wide fallback of
// load_chunk, which ptxas if-converts there (8 predicated-off LDG.U16 + 4 PRMT beside every 16-byte load)
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_per_token_cast__bf16_e4m3_g128_sor4_a(const __grid_constant__ PerTokenCastParams p) {
  tk::GroupCast<tk::Fmt::kBf16, tk::Fmt::kE4m3, 128, false, 4, tk::kFormSfRegs, true>(p).run();
}
TK_PER_TOKEN_CAST_PDL(bf16, kBf16, e4m3, kE4m3, 128, , tk::kFormAnyMode)
// (The warp-units form of the stochastic cast, GroupCast<kBf16, kE4m3, 128, true, 4, kFormSrWarpUnits, true, true>,
// is instantiated by per_token_cast_sr12.cu only, as `_g128_sr_wu12`; round 10's `_g128_sr_wu` with this file's
// encoder left the package in trim24, docs/branches/trim24-removed.patch.)
TK_PER_TOKEN_CAST_PDL(bf16, kBf16, e4m3, kE4m3, 128, _pkl, tk::kFormPackedEvictLast)
TK_PER_TOKEN_CAST_ROW(fp32, kFp32, e4m3, kE4m3)
TK_PER_TOKEN_CAST_ROW(fp32, kFp32, e2m1, kE2m1)
TK_PER_TOKEN_CAST_ROW(bf16, kBf16, e4m3, kE4m3)
TK_PER_TOKEN_CAST_ROW(bf16, kBf16, e2m1, kE2m1)
#endif  // TK_PTC_NO_KERNELS

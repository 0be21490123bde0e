// swigluBackwardAndPerTokenCast, e4m3 x (fp32 x scales, groups of 128), bf16 dy → bf16 xGrad + e4m3 groups of
// 128 + weightGrad (spec/quant.md §8.5, the cast of §2.3): the 16-lane team form (round 11,
// docs/perf-notes/perf11-sbc.md): its design, constants and staged step T16Step, which swiglu_bwd_t16w.cuh includes;
// `_t16w` keeps `_t16`'s compute phase line for line and replaces its stores. Round 11's kernel (backward_t16) and its
// entry tk_swiglu_backward__e4m3_bf16_g128_t16 ("team16", the default until round 17) left the package in trim20;
// docs/branches/trim20-removed.patch plus this file's history restore them.
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

}  // namespace
}  // namespace tk

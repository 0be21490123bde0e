// swigluBackwardAndPerTokenCast, e4m3 x (fp32 x scales, groups of 128), bf16 dy → bf16 xGrad + e4m3 groups of
// 128 + weightGrad (spec/quant.md §8.5, the cast of §2.3): the shared-memory park of the 16-lane team form with whole
// 16-byte output stores (round 17, docs/perf-notes/perf17-sbc.md). No entry: swiglu_bwd_t16x.cu (`_t16x`, the
// default since round 28) includes this file for T16wTeam. Round 17's own kernel, backward_t16w and its entry
// tk_swiglu_backward__e4m3_bf16_g128_t16w (swigluLaunchTuning.backwardCastForm "team16w", the default from round 17
// to round 28), left the package in trim32: docs/branches/trim32-removed.patch restores them.
//
// Why the park: round 11's `_t16` (backward_t16, removed from swiglu_bwd_t16.cuh with its entry in trim20; Nsight
// Compute on the H200, 16384 × 7168: issue-bound, SM 79%, issue active 82%) stores its outputs from the compute phase's
// lane mapping (lane r: columns 64s + 4r … + 3 of slot s): per lane-step 4 bf16 stores of 8 bytes and 4 e4m3 stores of
// 4 bytes, 4.6 M store warp instructions at 5.2 sectors each. Here the compute phase is `_t16`'s, line for line, except
// that the gx / gu values only go to the park (no bf16 store there), into a swizzled per-team layout; after the group's
// sf_and_inv a lane reads back 16 consecutive columns of one half (lanes r < 8 the gate half, whose group's inv they
// computed, lanes r ≥ 8 the up half: so the shuffle that exchanged the other group's inv is gone too) and writes them
// as 2 16-byte bf16 stores and 1 16-byte e4m3 store (`_t16w`, and `_t16x` after it). Per element the operations are the
// same: encode_bf16x2 of the binary32 value, and the e4m3 encode of fl(v · inv) with the group's inv. Padding rows park
// zeros and get inv 0, so they are written +0 / 0x00 as before; the sf entries and weightGrad are `_t16`'s.
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

}  // namespace
}  // namespace tk

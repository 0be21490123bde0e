// RMSNorm backward (spec/norm-rope-rand.md §A.5, D.2, D.3): normBackward.
//
// Symbols
//   tk_norm_backward__fp32          xGrad, and the weight-gradient partial sums of each token slot (bf16: _b4 below)
//   tk_norm_backward__<in>_unit     the same for outScale = 1 (no g = dy ⊗ outScale multiplications; same bits)
//   tk_norm_backward__bf16_b4[_unit]  the bf16 rows kernels in their four-blocks-per-SM form (kFour; host default
//                                     where norm_backward_sw.cu's _b4swc_unit does not apply)
//   (round 8's _b4swx_unit, _b4 compiled for a weight, no residualOutGrad, aligned views, 4096 < H ≤ 8192 and
//   outScale = 1 with the thread's first weight chunk in registers (perf8-nbw.md), was replaced by _b4swc_unit in
//   round 11 and left the package in trim24: docs/branches/trim24-removed.patch)
//   tk_norm_backward_weight_grad    the fixed-order fold of the 512 slots per column, + the accumulated gradient
//
// Launch geometry (the host follows this table; both kernels read everything they need from NormBackwardParams):
//
//   kernel                   block.x  grid.x                         work
//   tk_norm_backward__<in>[_b4][_unit]
//                            256      ceilDiv(min(T, 512), 256 / P)  team σ (P threads, P = max(1, N/2) as in
//                                                                    norm_forward.cu) = slot σ: rows σ, σ + 512, …
//   ..._weight_grad          256      H / 32                         32 columns per block, 8 warps × 64 slots each
//   The fold may be launched with programmatic dependent launch (PDL): the rows kernels trigger their dependents at
//   their start, the fold waits (griddepcontrol.wait) for the rows grid's completion before any read.
//
//   Static shared memory: 1 KiB each (the tree's cross-warp step, the fold's subtrees; _b4 2 KiB: two alternating
//   tree buffers); the bf16 rows kernel also
//   33 KiB of staging slots (x and gradOut chunks, rstd: the slot's next row, copied by cp.async), the _b4 form
//   16 KiB (the current row's gradOut chunks).
//   Dynamic shared memory: the bf16 rows kernels take 32 KiB (kAccBytes: the weight-gradient partials), launched
//   with that many bytes after the host raised their MAX_DYNAMIC_SHARED_SIZE_BYTES to it (66 / 50 KiB in all, above
//   48 KiB); the fp32 rows kernels and the fold take none.
//   Occupancy: bf16 rows (_b4) 64 registers → 4 blocks per SM (4 × 50 KiB of shared
//   memory; 528 resident blocks ≥ the 512 slots on 132 SMs); fp32 rows 1 block per SM.
//   _b4 L2 prefetch (flags kBwdPrefetchBulk / kBwdPrefetchThread, host normLaunchTuning.backwardPrefetch): at the
//   top of row t the slot's row t + 512 of x and gradOut (bulk: residualOutGrad too) is sent toward L2 (one bulk
//   prefetch per input by team threads 0, 32, 64, or a per-thread prefetch of each live chunk), aligned views only,
//   and its rstd word by team thread 0; a hint, no bits change.
//   Rows (x, gradOut, residualOutGrad, xGrad, the workspace row) move in whole 32-byte sectors (kBwdFullSectors):
//   for P ≥ 2 lanes 2m, 2m + 1 copy, load and store their two chunks' pieces together (common/rms_tree.cuh), the
//   chunk ownership (and so every sum) unchanged.
//
// Determinism (D.3): slot σ's partial sum A_σ,j starts at +0 and adds c_t,j = xh ⊗ g for t = σ, σ + 512, …
// ascending, in the team thread that owns column j (in its registers, or for bf16 in its own shared-memory words:
// the same additions in the same order); the slot's team is the only writer of row σ
// of the fp32 workspace [min(T, 512), H]. The second kernel folds the slots of a column by halving (distance 256
// first): warp w computes the subtree of slots ≡ w (mod S) recursively (distances 256 … S), then warp 0 combines
// the S = 8 subtrees with distances S/2 … 1. Slots ≥ T are +0 leaves, as in the
// reference. Nothing depends on the grid or the SM count.
//
// The row gradient: the row dot product Σ xh ⊗ gw by TREE (common/rms_tree.cuh), then
// xGrad = RNx(((gw ⊖ xh ⊗ (dot ⊘ H)) ⊗ rstd) (⊕ residualOutGrad)). x and gradOut stay in registers between the two
// passes; xh, g and gw are recomputed in the second (same operations, same bits). bf16 outputs are rounded two at a
// time by the hardware conversion (RowChunk::set_all: the same bits as encode_bf16).
#include "../common/chunk.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/rms_tree.cuh"
#include "../generated/norm_params.h"
#include "norm_backward_rows.cuh"

namespace tk {
namespace {

// NORM_BWD_FLAG of ops/norm/norm_backward.params.ts
enum NormBwdFlag : uint32_t {
  kBwdWeight = 1,
  kBwdResidualOutGrad = 2,
  kBwdAccumulate = 4,
  kBwdWeightGradBf16 = 8,
  kBwdPrefetchBulk = 16,    // _b4: the slot's next x and gradOut rows toward L2 by one bulk prefetch each (TMA)
  kBwdPrefetchThread = 32,  // _b4: the same by per-thread prefetch.global.L2 of the thread's own chunks
};

// L2 prefetch hints (no data enters the SM, nothing completes, no bits can change; volatile so that they stay under
// their guards, like ldst.cuh's loads). `bytes`: a multiple of 16 at a 16-byte aligned address, inside the tensor.
TK_DEV void prefetch_l2_bulk(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}
TK_DEV void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p) : "memory"); }

// Token slots of the weight-gradient reduction (spec D.3): a constant of the algorithm.
constexpr uint32_t kSlots = 512;
// Slot subtrees of the fold kernel: one per warp.
constexpr uint32_t kSubtrees = kRmsBlockThreads / kWarpSize;

// Resident blocks per SM the register budget is sized for: a thread keeps 32 fp32 weight-gradient partials and its
// row's x and gradOut words. fp32 rows hold twice the words and spill at 128, so their budget is one block and the
// kernel uses what it needs (~170–190 registers). bf16, whose next row waits in shared memory rather than in
// registers, fitted two blocks with the partials in registers (128 registers, 16 warps per SM); it now keeps them
// in shared memory instead (kAccShared: 32 KiB of dynamic shared memory per block, next to the 34 KiB
// of static), which takes it to 80 registers and three blocks (24 warps) per SM: 3 × 66 KiB of the 227 KiB.
// kAccShared = false restores the two-block register form (and the host must then launch without the 32 KiB).
template <Fmt kIn>
constexpr bool kAccShared = kIn == Fmt::kBf16;
template <Fmt kIn>
constexpr int kBwdMinBlocks = kIn == Fmt::kBf16 ? (kAccShared<kIn> ? 3 : 2) : 1;
// Dynamic shared memory of the rows kernel (the host passes the same: ops/norm/norm_backward.ts BF16_ACC_SMEM).
template <Fmt kIn>
constexpr uint32_t kAccBytes = kAccShared<kIn> ? kRmsChunksPerThread * kRmsChunk * 4 * kRmsBlockThreads : 0;
// bf16 rows are staged through shared memory (cp.async): the slot's next row (x, gradOut, rstd) is copied while the
// current one is reduced and written, without holding it in registers as the previous register prefetch did. fp32
// slots (64 KiB for H = 8192) would not fit the static 48 KiB; fp32 rows load at the top of each row.
template <Fmt kIn>
constexpr bool kStage = kIn == Fmt::kBf16;
// Rows read and written in whole 32-byte sectors by lane pairs (RowChunk::stage_pair, load_split, store_split)
// instead of half a sector per 16-byte access (each sector requested twice). Measured on the H200 (2026-11-30, four
// builds in one device command, 16384 × 7168 bf16): paired 48.6% of copy, per-thread 59.2%: the pairing's extra
// shuffles and selects cost more in this register-bound kernel than the duplicate sector requests, which L1 serves.
// So false: per-thread accesses (the forward kernels keep the pairing, which measured neutral to better there).
constexpr bool kBwdFullSectors = false;

// kOne: the launch has outScale = 1 (the default; the host picks the _unit symbol), and g = dy ⊗ outScale is dy:
// v ⊗ 1 = v for every non-NaN v (no flush to zero), and a NaN stays a NaN whose payload no output keeps (xGrad is
// rounded by RNx, the weight gradient by canonical_nan / encode_bf16 after the fold), so the bits are the same with
// two multiplications fewer per element. A separate kernel rather than a branch: two row loops in one kernel spilled
// at the 128-register budget.
//
// kFour (bf16 only, the _b4 symbols): four blocks per SM (64 registers, 32 warps; 512 slot blocks fit one round on
// 132 SMs, where three blocks per SM leave 116 of them for a second round alone). No next-row staging (4 × 66 KiB
// would not fit): each row's x and rstd load into registers at its top, and its gradOut is copied into this
// thread's shared slots (16 KiB) and read from there in each pass instead of being held in registers.
// (Its launches with a weight, no residualOutGrad, aligned views, 4096 < H ≤ 8192 and outScale = 1 run
// norm_backward_sw.cu's _b4swc_unit.)
template <Fmt kIn, bool kOne, bool kFour = false>
TK_DEV void norm_backward_rows(const NormBackwardParams& p) {
  static_assert(!kFour || (kIn == Fmt::kBf16 && kAccShared<kIn>), "the four-block form is bf16 with shared partials");
  constexpr bool kStageNext = kStage<kIn> && !kFour;  // the slot's next row staged while this one is computed
  using Chunk = RowChunk<kIn>;
  constexpr int kL = kRmsChunksPerThread;
  constexpr int kEb = FmtTraits<kIn>::kBits / 8;
  // The fold (launched with programmatic dependent launch when the host asks) may be scheduled once every block of
  // this grid has started: it waits for this grid's completion and memory (griddepcontrol.wait) before reading the
  // workspace, so only its launch latency overlaps this kernel. A no-op without a dependent launch.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  // The tree's cross-warp step; _b4 alternates two buffers by row and skips reduce's closing barrier (one
  // bar.sync per row instead of two).
  __shared__ float smem[(kFour ? 2 : 1) * kRmsBlockThreads];

  const uint32_t H = p.hidden, K = H / kRmsChunk;
  const uint32_t T = p.num_tokens;
  const uint32_t slots = T < kSlots ? T : kSlots;
  RmsTeam team(p.team_threads, K);
  const bool has_w = p.flags & kBwdWeight, has_ro = p.flags & kBwdResidualOutGrad;
  const bool x_al = view_aligned(p.x, 0, p.x_row_stride * kEb);
  const bool dy_al = view_aligned(p.grad_out, 0, p.grad_out_row_stride * kEb);
  const bool ro_al = view_aligned(p.residual_out_grad, 0, p.residual_out_grad_row_stride * kEb);
  const bool dx_al = view_aligned(p.x_grad, 0, 0), w_al = view_aligned(p.weight, 0, 0);
  const float os = p.out_scale;

  uint32_t c[kL];
  bool live[kL];
#pragma unroll
  for (int i = 0; i < kL; ++i) {
    c[i] = team.p + i * team.threads;
    live[i] = c[i] < K;
  }
  // Teams of P ≥ 2 move rows by lane pairs: the pair of chunk i is (c[i] & ~1, c[i] | 1), one team, one row.
  const bool paired = kBwdFullSectors && team.threads >= 2;
  uint32_t c0[kL];
  bool live0[kL], live1[kL];
#pragma unroll
  for (int i = 0; i < kL; ++i) {
    c0[i] = c[i] & ~1u;
    live0[i] = c0[i] < K;
    live1[i] = c0[i] + 1 < K;
  }
  // Chunk i of a row at row_p (element size of v's format): by lane pairs in whole sectors, or by its owner (P = 1).
  // Warp-uniform control flow only (pairs shuffle).
  auto access = [&](uint32_t bytes, const uint8_t* row_p, int i, bool active) {
    return paired ? ChunkAccess::pair(row_p + static_cast<uint64_t>(c0[i]) * bytes, bytes, active && live0[i], active && live1[i])
                  : ChunkAccess::own(row_p + static_cast<uint64_t>(c[i]) * bytes, active && live[i]);
  };
  auto get = [&](auto& v, const uint8_t* row_p, int i, bool active, bool al) { v.load_split(access(v.kBytes, row_p, i, active), al); };
  auto put = [&](auto v, uint8_t* row_p, int i, bool active, bool al) {  // a copy: store_split destroys it
    v.store_split(access(v.kBytes, row_p, i, active), al);
  };
  const uint32_t sigma = blockIdx.x * team.teams + team.team;
  const uint32_t sigma_first = blockIdx.x * team.teams + team.warp_first_team();  // warp-uniform loop bound
  const bool slot_live = sigma < slots;

  // The slot's weight-gradient partials A_σ,j of this thread's columns (spec D.3): in registers (fp32 rows), or in
  // this thread's words of the dynamic shared memory (bf16, kAccShared: [chunk][quad][thread] float4, conflict free,
  // read and written by this thread only), the same additions in the same order either way.
  float acc[kL][kRmsChunk];
#pragma unroll
  for (int i = 0; i < kL; ++i)
#pragma unroll
    for (int j = 0; j < kRmsChunk; ++j) acc[i][j] = 0.0f;
  extern __shared__ float4 acc_smem[];  // kAccBytes<kIn> of dynamic shared memory
  auto acc_at = [&](int i, int q) -> float4& {
    return acc_smem[(i * (kRmsChunk / 4) + q) * kRmsBlockThreads + threadIdx.x];
  };
  if constexpr (kAccShared<kIn>) {
#pragma unroll
    for (int i = 0; i < kL; ++i)
#pragma unroll
      for (int q = 0; q < kRmsChunk / 4; ++q) acc_at(i, q) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  // Row t's x and gradOut chunks and rstd (zeros for an inactive team or a dead chunk), loaded directly.
  auto fetch = [&](uint64_t t, bool active, Chunk (&xc)[kL], Chunk (&dyc)[kL], float& rs) {
    const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + t * p.x_row_stride * kEb;
    const uint8_t* dyr = reinterpret_cast<const uint8_t*>(p.grad_out) + t * p.grad_out_row_stride * kEb;
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      get(xc[i], xr, i, active, x_al);
      get(dyc[i], dyr, i, active, dy_al);
    }
    rs = 0.0f;
    if (active) rs = u2f(ld_u32(reinterpret_cast<const float*>(p.rstd) + t));  // t < T only
  };
  // Staged kernels: the shared slot of piece s of thread u's chunk i of input `in` (0 x, 1 gradOut),
  // [input][chunk][piece][thread] with odd pieces at column u ^ 1 (pair copies and owner reads both free of bank
  // conflicts, as in norm_forward.cu); and this thread's rstd slot.
  constexpr int kPieces = Chunk::kPieces;
  constexpr int kStagedInputs = kStageNext ? 2 : kFour ? 1 : 0;  // x and gradOut, gradOut only (as input 1), none
  __shared__ __align__(16) uint8_t stage_buf[kStagedInputs ? kStagedInputs * kL * kPieces * kRmsBlockThreads * kVecBytes : kVecBytes];
  __shared__ __align__(16) float stage_rs[kStageNext ? kRmsBlockThreads : 1];
  auto slot = [&](int in, int i, int s, uint32_t u) {
    if constexpr (kFour) in = 0;  // gradOut alone
    return smem_addr(stage_buf) + (((in * kL + i) * kPieces + s) * kRmsBlockThreads + (u ^ (s & 1))) * kVecBytes;
  };
  const uint32_t rs_slot = smem_addr(stage_rs + (kStageNext ? threadIdx.x : 0));
  // Issue the copies of row t into the slots (nothing for an inactive row or a dead chunk).
  auto stage_row = [&](uint64_t t, bool active) {
    if constexpr (kStageNext) {
      if (active) {
        const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + t * p.x_row_stride * kEb;
        const uint8_t* dyr = reinterpret_cast<const uint8_t*>(p.grad_out) + t * p.grad_out_row_stride * kEb;
        auto stage_input = [&](int in, const uint8_t* src, bool al) {
#pragma unroll
          for (int i = 0; i < kL; ++i) {
            if (paired) {
              const auto pair_slot = [&](int s, uint32_t k) { return slot(in, i, s, (threadIdx.x & ~1u) | k); };
              Chunk::stage_pair(pair_slot, src + static_cast<uint64_t>(c0[i]) * Chunk::kBytes, live0[i], live1[i], al);
            } else if (live[i]) {
              Chunk::stage([&](int s) { return slot(in, i, s, threadIdx.x); }, src + static_cast<uint64_t>(c[i]) * Chunk::kBytes, al);
            }
          }
        };
        stage_input(0, xr, x_al);
        stage_input(1, dyr, dy_al);
        cp_async<4>(rs_slot, reinterpret_cast<const float*>(p.rstd) + t, true);  // t < T only
      }
      cp_async_commit();
    }
  };
  // Row indices in 32 bits: t + 512 cannot wrap (T ≤ 2^32 − 1 and xGrad holds T · H ≥ 32 · T elements, so T is far
  // below 2^32 − 512); addresses are formed in 64 bits.
  const uint32_t off = sigma - sigma_first;
  stage_row(sigma_first + off, slot_live && sigma_first + off < T);
  for (uint32_t base = sigma_first; base < T; base += kSlots) {
    const uint32_t t = base + off;
    const bool active = slot_live && t < T;
    Chunk xc[kL], dyc[kL];
    float rs;
    if constexpr (kFour) {
      // gradOut into the slots (by lane pairs, as stage_row), x and rstd into registers; every lane of the pair has
      // read its slots in the previous row (__syncwarp at its end)
      const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + static_cast<uint64_t>(t) * p.x_row_stride * kEb;
      const uint8_t* dyr = reinterpret_cast<const uint8_t*>(p.grad_out) + static_cast<uint64_t>(t) * p.grad_out_row_stride * kEb;
      if (active) {
#pragma unroll
        for (int i = 0; i < kL; ++i) {
          if (paired) {
            const auto pair_slot = [&](int s, uint32_t k) { return slot(1, i, s, (threadIdx.x & ~1u) | k); };
            Chunk::stage_pair(pair_slot, dyr + static_cast<uint64_t>(c0[i]) * Chunk::kBytes, live0[i], live1[i], dy_al);
          } else if (live[i]) {
            Chunk::stage([&](int s) { return slot(1, i, s, threadIdx.x); }, dyr + static_cast<uint64_t>(c[i]) * Chunk::kBytes, dy_al);
          }
        }
      }
      cp_async_commit();
#pragma unroll
      for (int i = 0; i < kL; ++i) get(xc[i], xr, i, active, x_al);
      rs = 0.0f;
      if (active) rs = u2f(ld_u32(reinterpret_cast<const float*>(p.rstd) + t));
      // The slot's next row (t + 512) toward L2 while this one is waited for, reduced and written (flags, host
      // normLaunchTuning.backwardPrefetch): its loads at the top of the next row then hit L2. Aligned views only
      // (the bulk form needs 16-byte aligned rows; a hint may be skipped).
      const uint32_t tn = t + kSlots;
      if (slot_live && tn < T && (p.flags & (kBwdPrefetchBulk | kBwdPrefetchThread))) {
        const uint8_t* xn = reinterpret_cast<const uint8_t*>(p.x) + static_cast<uint64_t>(tn) * p.x_row_stride * kEb;
        const uint8_t* dyn = reinterpret_cast<const uint8_t*>(p.grad_out) + static_cast<uint64_t>(tn) * p.grad_out_row_stride * kEb;
        // rstd[t + 512] too (4 bytes; 32 slots share its line, and the row's first pass needs it before anything):
        // without it the loads that hit L2 would still wait for this line from HBM
        if (team.p == 0) prefetch_l2(reinterpret_cast<const float*>(p.rstd) + tn);
        if (p.flags & kBwdPrefetchBulk) {
          // one thread per input: team thread 0 the x row, thread 32 (another warp, where the team has one)
          // gradOut, thread 64 residualOutGrad
          const uint32_t dy_p = team.threads > kWarpSize ? kWarpSize : 0;
          const uint32_t ro_p = team.threads > 2 * kWarpSize ? 2 * kWarpSize : 0;
          if (team.p == 0 && x_al) prefetch_l2_bulk(xn, H * kEb);
          if (team.p == dy_p && dy_al) prefetch_l2_bulk(dyn, H * kEb);
          if (has_ro && team.p == ro_p && ro_al) {
            prefetch_l2_bulk(reinterpret_cast<const uint8_t*>(p.residual_out_grad) + static_cast<uint64_t>(tn) * p.residual_out_grad_row_stride * kEb, H * kEb);
          }
        } else if (x_al && dy_al) {
#pragma unroll
          for (int i = 0; i < kL; ++i) {
            if (live[i]) {
              prefetch_l2(xn + static_cast<uint64_t>(c[i]) * Chunk::kBytes);
              prefetch_l2(dyn + static_cast<uint64_t>(c[i]) * Chunk::kBytes);
            }
          }
        }
      }
      cp_async_wait<0>();
      __syncwarp();  // the pair lane's copies into this thread's slots have landed too
    } else if constexpr (kStageNext) {
      // this row from the slots, then the slot's next row is in flight while this one is reduced and written (the
      // slots were read into registers first, by this same thread)
      cp_async_wait<0>();
      __syncwarp();  // the pair lane's copies into this thread's slots have landed too
#pragma unroll
      for (int i = 0; i < kL; ++i) {
        xc[i].zero();
        dyc[i].zero();
        if (active && live[i]) {
          xc[i].load_shared([&](int s) { return slot(0, i, s, threadIdx.x); });
          dyc[i].load_shared([&](int s) { return slot(1, i, s, threadIdx.x); });
        }
      }
      rs = 0.0f;
      if (active) {
        uint32_t r[1];
        ld_shared(rs_slot, r);
        rs = u2f(r[0]);
      }
      __syncwarp();  // every lane has read its slots before the pair lanes refill them
      stage_row(t + kSlots, slot_live && t + kSlots < T);
    } else {
      fetch(t, active, xc, dyc, rs);
    }

    // gradOut's chunk i: from the registers, or (kFour) read from this thread's slots in each pass
    auto dy_of = [&](int i) {
      if constexpr (kFour) {
        Chunk v;
        v.zero();
        if (active && live[i]) v.load_shared([&](int s) { return slot(1, i, s, threadIdx.x); });
        return v;
      } else {
        return dyc[i];
      }
    };
    // dot = TREE(xh ⊗ gw), xh = x ⊗ rstd, g = dy ⊗ outScale, gw = g ⊗ w (or g)
    float cs[kL];
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      Chunk wc;
      wc.zero();
      if (has_w && live[i]) wc.template load<false>(reinterpret_cast<const uint8_t*>(p.weight) + static_cast<uint64_t>(c[i]) * Chunk::kBytes, w_al);
      const Chunk dy = dy_of(i);
      float q[kRmsChunk];
#pragma unroll
      for (int j = 0; j < kRmsChunk; ++j) {
        const float xh = mul_rn(xc[i].at(j), rs);
        const float g = kOne ? dy.at(j) : mul_rn(dy.at(j), os);
        const float gw = has_w ? mul_rn(g, wc.at(j)) : g;
        q[j] = mul_rn(xh, gw);
      }
      cs[i] = live[i] ? chunk_tree(q) : 0.0f;  // +0 pad (a dead chunk's products could be −0)
    }
    float dot;
    if constexpr (kFour) {
      dot = team.template reduce<false>(cs[0], cs[1], smem + ((base / kSlots) & 1) * kRmsBlockThreads);
    } else {
      dot = team.reduce(cs[0], cs[1], smem);
    }
    const float m = div_rn(dot, static_cast<float>(H));
    // Recompute xh, g, gw below instead of keeping 3 × 32 values alive across the reduction: hide the words and
    // the weight address from the optimizer so it cannot reuse the first pass's values.
    const uint8_t* wp = reinterpret_cast<const uint8_t*>(p.weight);
    asm volatile("" : "+l"(wp));
#pragma unroll
    for (int i = 0; i < kL; ++i)
#pragma unroll
      for (int k = 0; k < Chunk::kWords; ++k) {
        asm volatile("" : "+r"(xc[i].w[k]));
        if constexpr (!kFour) asm volatile("" : "+r"(dyc[i].w[k]));
      }

    // d = (gw ⊖ xh ⊗ m) ⊗ rstd (⊕ ro); acc ⊕= xh ⊗ g
    uint8_t* dxr = reinterpret_cast<uint8_t*>(p.x_grad) + static_cast<uint64_t>(t) * H * kEb;
    const uint8_t* ror = reinterpret_cast<const uint8_t*>(p.residual_out_grad) + t * p.residual_out_grad_row_stride * kEb;
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      Chunk roc;
      roc.zero();
      if (has_ro) get(roc, ror, i, active, ro_al);
      const bool w_live = active && live[i] && has_w;
      const uint8_t* wchunk = wp + static_cast<uint64_t>(c[i]) * Chunk::kBytes;
      const Chunk dy = dy_of(i);
      float d[kRmsChunk];
#pragma unroll
      for (int hq = 0; hq < kRmsChunk / 8; ++hq) {
        float a[8];
        // the weight's 8 elements of this half chunk (its 16-byte pieces, loaded here rather than the whole chunk
        // ahead: fewer live registers; same addresses and conditions)
        constexpr int kGroupPieces = 8 * kEb / kVecBytes;
        uint32_t wg[4 * kGroupPieces] = {};
        if (w_live) {
#pragma unroll
          for (int u = 0; u < kGroupPieces; ++u) {
            uint32_t q[4];
            Chunk::template load_piece<false>(wchunk + kVecBytes * (hq * kGroupPieces + u), q, w_al);
#pragma unroll
            for (int k = 0; k < 4; ++k) wg[4 * u + k] = q[k];
          }
        }
        if constexpr (kAccShared<kIn>) {
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const float4 v = acc_at(i, 2 * hq + u);
            a[4 * u] = v.x, a[4 * u + 1] = v.y, a[4 * u + 2] = v.z, a[4 * u + 3] = v.w;
          }
        } else {
#pragma unroll
          for (int k = 0; k < 8; ++k) a[k] = acc[i][8 * hq + k];
        }
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int j = 8 * hq + k;
          const float xh = mul_rn(xc[i].at(j), rs);
          const float g = kOne ? dy.at(j) : mul_rn(dy.at(j), os);
          const float gw = has_w ? mul_rn(g, element<kIn>(wg, k)) : g;
          d[j] = mul_rn(sub_rn(gw, mul_rn(xh, m)), rs);
          if (has_ro) d[j] = add_rn(d[j], roc.at(j));
          a[k] = add_rn(a[k], mul_rn(xh, g));
        }
        if (active) {
          if constexpr (kAccShared<kIn>) {
#pragma unroll
            for (int u = 0; u < 2; ++u) {
              acc_at(i, 2 * hq + u) = make_float4(a[4 * u], a[4 * u + 1], a[4 * u + 2], a[4 * u + 3]);
            }
          } else {
#pragma unroll
            for (int k = 0; k < 8; ++k) acc[i][8 * hq + k] = a[k];
          }
        }
      }
      Chunk dc;
      dc.set_all(d);
      put(dc, dxr, i, active, dx_al);
    }
    if constexpr (kFour) __syncwarp();  // every lane has read its slots before the pair lanes refill them
  }

  if (has_w) {
    uint8_t* ws = reinterpret_cast<uint8_t*>(p.workspace) + static_cast<uint64_t>(sigma) * H * 4;
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      RowChunk<Fmt::kFp32> a;
#pragma unroll
      for (int q = 0; q < kRmsChunk / 4; ++q) {
        float4 v = make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
        if constexpr (kAccShared<kIn>) v = acc_at(i, q);
        a.w[4 * q] = f2u(v.x), a.w[4 * q + 1] = f2u(v.y), a.w[4 * q + 2] = f2u(v.z), a.w[4 * q + 3] = f2u(v.w);
      }
      put(a, ws, i, slot_live, true);
    }
  }
}

// Node (σ, kD) of the slot fold: the sum over slots σ + kD·i folded by halving; leaves (kD = 512) are A_σ,j.
template <uint32_t kD>
TK_DEV float slot_node(const float* ws, uint32_t sigma, uint32_t slots, uint64_t H, uint32_t j) {
  if constexpr (kD == kSlots) {
    float v = 0.0f;
    if (sigma < slots) v = u2f(ld_u32(ws + sigma * H + j));  // the workspace has min(T, 512) rows
    return v;
  } else {
    return add_rn(slot_node<2 * kD>(ws, sigma, slots, H, j), slot_node<2 * kD>(ws, sigma + kD, slots, H, j));
  }
}

// kS = 8 subtrees (warps; the block has 256 threads): warp w folds the slots ≡ w (mod kS) down to node (w, kS)
// (distances 256 … kS), then warp 0 folds the kS nodes (distances kS/2 … 1). (A 16-warp form, `_w16`: 512 threads,
// the subtree's 32 leaves loaded at once, then folded by halving; the same tree and bits. It measured level with this
// one (round 3, 58.3–59.2% of copy in every setting of normBackward's knobs) and left the package in trim24,
// docs/branches/trim24-removed.patch.)
TK_DEV void norm_backward_weight_grad(const NormBackwardParams& p) {
  constexpr uint32_t kS = kSubtrees;
  // Launched as a programmatic dependent of the rows kernel (host normLaunchTuning.backwardFoldPdl): wait until
  // that grid has completed and its workspace writes are visible. Returns at once for a plain launch.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  __shared__ float sub[kS][kWarpSize];
  const uint32_t T = p.num_tokens, slots = T < kSlots ? T : kSlots;
  const uint32_t warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const uint32_t j = blockIdx.x * kWarpSize + lane;  // H % 32 == 0: every lane has a column
  const float* ws = reinterpret_cast<const float*>(p.workspace);
  sub[warp][lane] = slot_node<kS>(ws, warp, slots, p.hidden, j);
  __syncthreads();
  if (warp != 0) return;
  float a[kS];
#pragma unroll
  for (uint32_t i = 0; i < kS; ++i) a[i] = sub[i][lane];
#pragma unroll
  for (uint32_t h = kS / 2; h >= 1; h /= 2)
#pragma unroll
    for (uint32_t i = 0; i < h; ++i) a[i] = add_rn(a[i], a[i + h]);
  float g = a[0];
  const bool bf16 = p.flags & kBwdWeightGradBf16;
  if (bf16) {
    uint16_t* wg = reinterpret_cast<uint16_t*>(p.weight_grad) + j;
    if (p.flags & kBwdAccumulate) g = add_rn(g, decode_bf16(*wg));
    *wg = static_cast<uint16_t>(encode_bf16(g));
  } else {
    float* wg = reinterpret_cast<float*>(p.weight_grad) + j;
    if (p.flags & kBwdAccumulate) g = add_rn(g, *wg);
    *wg = canonical_nan(g);
  }
}

}  // namespace
}  // namespace tk

#define TK_NORM_BACKWARD(in, IN)                                                                   \
  extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, tk::kBwdMinBlocks<tk::Fmt::IN>)                \
      tk_norm_backward__##in(const __grid_constant__ NormBackwardParams p) {                      \
    tk::norm_backward_rows<tk::Fmt::IN, false>(p);                                                 \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, tk::kBwdMinBlocks<tk::Fmt::IN>)                \
      tk_norm_backward__##in##_unit(const __grid_constant__ NormBackwardParams p) {               \
    tk::norm_backward_rows<tk::Fmt::IN, true>(p);                                                  \
  }

TK_NORM_BACKWARD(fp32, kFp32)

// The bf16 rows kernels run four blocks per SM (kFour) where _b4swc does not apply (the three-block bf16 form,
// 37% of copy against 49% on the H200, was removed on 2026-12-01 to keep the package small).
extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, 4)
    tk_norm_backward__bf16_b4(const __grid_constant__ NormBackwardParams p) {
  tk::norm_backward_rows<tk::Fmt::kBf16, false, true>(p);
}
extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, 4)
    tk_norm_backward__bf16_b4_unit(const __grid_constant__ NormBackwardParams p) {
  tk::norm_backward_rows<tk::Fmt::kBf16, true, true>(p);
}

extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads)
    tk_norm_backward_weight_grad(const __grid_constant__ NormBackwardParams p) {
  tk::norm_backward_weight_grad(p);
}

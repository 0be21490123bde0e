// RMSNorm backward (spec/norm-rope-rand.md §A.5, D.2, D.3), the bf16 rows kernel that moves rows in whole 32-byte
// sectors and 128-byte lines (round 11, docs/perf-notes/perf11-nbw.md). The default for the launches of
// round 8's _b4swx_unit (a weight, no residualOutGrad, 16-byte aligned x, gradOut, xGrad and weight, 4096 < H ≤ 8192,
// outScale = 1). _b4swx_unit (norm_backward.cu's norm_backward_rows_wreg, the reference of the comparisons below) was
// kept for A/B behind normLaunchTuning.backwardForm "swx" until trim24 removed it with the knob; its source:
// docs/branches/trim24-removed.patch. The fold (tk_norm_backward_weight_grad) is norm_backward.cu's.
//
// Symbol
//   tk_norm_backward__bf16_b4swc_unit   _b4swx with gradOut's cp.async copies, x's loads and xGrad's stores in whole
//                                       sectors and lines, x and xGrad crossing between lanes by shuffles (two a word)
//
// Launch geometry: _b4swx's (norm_backward.cu): 256 threads, grid min(T, 512), block σ = slot σ, one team of P = 256,
// 18 KiB static + 32 KiB dynamic shared memory (the weight-gradient partials), four blocks per SM (64 registers).
//
// Why (Nsight Compute of _b4swx_unit, H200, 16384 × 7168, base clock: L2 84.6% busy, DRAM 55.5%, no L2 re-reads):
// a thread owns 16-element chunks (32 bytes, one sector) and moves each by two 16-byte pieces, so a warp's 16-byte
// instruction touches 32 sectors and uses half of each, and the next instruction asks for the other halves: every
// sector of x, gradOut and xGrad is requested from L2 twice. Here a warp's instruction moves 16 whole sectors that
// fill 4 whole 128-byte lines (below). Round 11 also measured gradOut alone so (_b4swd) and the three by lane pairs
// (_b4swcp: every other sector of 8 lines); both lost to this form (perf11-nbw.md, Measured) and were removed.
//
// Bits: every thread computes the same elements of the same chunks, with _b4swx's operations in _b4swx's order
// (xh = x ⊗ rstd, g = dy, gw = g ⊗ w, q = xh ⊗ gw, chunk_tree with its first step as the second half arrives, the
// team tree with two alternating buffers, m = dot ⊘ H, d = (gw ⊖ xh ⊗ m) ⊗ rstd rounded by encode_bf16x2_words,
// A ⊕= xh ⊗ g for the slot's rows ascending in the column's one thread, spec D.3); only which lane issues which
// 16-byte access changes, so the bytes are _b4swx's (and the CPU reference's).
#include "../common/chunk.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/rms_tree.cuh"
#include "../generated/norm_params.h"
#include "norm_backward_rows.cuh"

namespace tk {
namespace {

// Token slots of the weight-gradient reduction (spec D.3; norm_backward.cu kSlots).
constexpr uint32_t kSwSlots = 512;

// How a warp moves the 32 chunks (sectors) of its threads, 1 KiB of a row, in two 16-byte instructions: main's
// _b4swx has each thread move its own chunk, piece s in instruction s, so every instruction touches 32 sectors (8
// lines) and uses half of each. Here the warp's 1 KiB goes in order: in instruction k lane l moves piece l & 1 of
// chunk 16k + l / 2, i.e. bytes 512k + 16l: 16 whole sectors per instruction that fill 4 whole 128-byte lines.
// gradOut lands in its owner's shared slot (a cp.async to any address: no exchange); x and xGrad cross between lanes
// by shuffles in registers (8 a chunk, two per word), so that every thread computes its own chunks' elements exactly
// as _b4swx does. x is read past L1 (.L1::no_allocate: each sector is read once by one instruction, nothing to hit
// later, and chunk 1's weight keeps L1 to itself).
TK_DEV void norm_backward_rows_sw(const NormBackwardParams& p) {
  using Chunk = RowChunk<Fmt::kBf16>;
  constexpr int kL = kRmsChunksPerThread;
  constexpr int kPieces = Chunk::kPieces;  // 2 pieces of 8 elements per chunk
  static_assert(kPieces == 2, "a bf16 chunk is one sector: two 16-byte pieces");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __shared__ float smem[2 * kRmsBlockThreads];  // the tree's cross-warp step, two buffers alternating by row
  // gradOut slots [chunk][piece][thread] (16 KiB), piece 1 of thread v at column v ^ 4:
  // the copies (an 8-lane phase writes pieces 0 and 1 of 4 threads) and the owner reads are both conflict free
  __shared__ __align__(16) uint8_t stage_buf[kL * kPieces * kRmsBlockThreads * kVecBytes];
  extern __shared__ float4 acc_smem[];  // the partials: [chunk][quad][thread] float4, 32 KiB

  const uint32_t H = p.hidden, K = H / kRmsChunk;
  const uint32_t T = p.num_tokens;
  const uint32_t slots = T < kSwSlots ? T : kSwSlots;
  RmsTeam team(kRmsBlockThreads, K);
  team.threads = kRmsBlockThreads, team.p = threadIdx.x, team.team = 0, team.teams = 1, team.nodes = 2 * kRmsBlockThreads;
  const uint32_t u = threadIdx.x, lane = u % kWarpSize, h = u & 1, hi = (lane >> 4) & 1;
  // The exchanges are made by every lane of the warp at once (full mask: they sit outside every branch, and the
  // loop and the early return are block-uniform). A pair-only mask (3 << (lane & ~1)), which ptxas cannot prove
  // warp-uniform, cost 264 more SASS instructions in a first build of round 11's lane-pair form (sm_90a .text
  // 23,424 B against 19,200 B).
  constexpr uint32_t kMask = kFullWarpMask;
  uint32_t c[kL];
  bool live[kL];
#pragma unroll
  for (int i = 0; i < kL; ++i) {
    c[i] = u + i * kRmsBlockThreads;
    live[i] = i == 0 || c[i] < K;  // chunk 0 is always live (K > 256)
  }
  // The thread whose chunk this lane moves in instruction k; the lane moves piece h of it. Chunk i of that thread is
  // mover(k) + 256 i, live where that is < K (its owner's condition).
  auto mover = [&](uint32_t k) -> uint32_t { return (u - lane) + 16 * k + (lane >> 1); };
  const uint32_t sigma = blockIdx.x;
  if (sigma >= slots) return;  // the whole block leaves together
  const uint32_t stage_base = smem_addr(stage_buf);
  // piece s of thread v's gradOut chunk i
  auto slot = [&](int i, uint32_t s, uint32_t v) {
    const uint32_t col = v ^ (4 * s);
    return stage_base + ((i * kPieces + s) * kRmsBlockThreads + col) * kVecBytes;
  };
  auto acc_at = [&](int i, int q) -> float4& { return acc_smem[(i * (kRmsChunk / 4) + q) * kRmsBlockThreads + u]; };
  bwd_rows_zero_partials<kL>(acc_at);

  // chunk 0's weight once, in registers; chunk 1's by piece through L1 where it is used (as _b4swx)
  const uint8_t* wp = reinterpret_cast<const uint8_t*>(p.weight);
  Chunk wc;
  wc.template load<false>(wp + static_cast<uint64_t>(c[0]) * Chunk::kBytes, true);
  auto w_piece = [&](int i, int s, uint32_t (&q)[4]) {
    if (i == 0) {
#pragma unroll
      for (int k = 0; k < 4; ++k) q[k] = wc.w[4 * s + k];
    } else {
      q[0] = q[1] = q[2] = q[3] = 0;
      if (live[i]) ld_cached(wp + static_cast<uint64_t>(c[i]) * Chunk::kBytes + kVecBytes * s, q);
    }
  };

  for (uint32_t t = sigma; t < T; t += kSwSlots) {
    const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + static_cast<uint64_t>(t) * p.x_row_stride * 2;
    const uint8_t* dyr = reinterpret_cast<const uint8_t*>(p.grad_out) + static_cast<uint64_t>(t) * p.grad_out_row_stride * 2;
    // gradOut: in copy k this lane copies piece h of thread mover(k)'s chunk i into that thread's slot
#pragma unroll
    for (int i = 0; i < kL; ++i)
#pragma unroll
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t v = mover(k), ci = v + i * kRmsBlockThreads;
        if (i == 0 || ci < K) cp_async<kVecBytes>(slot(i, h, v), dyr + static_cast<uint64_t>(ci) * Chunk::kBytes + kVecBytes * h, true);
      }
    cp_async_commit();
    Chunk xc[kL];
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      // r[k]: piece h of thread mover(k)'s chunk i (zeros for a dead chunk), one whole sector per instruction
      uint32_t r[2][4];
#pragma unroll
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t ci = mover(k) + i * kRmsBlockThreads;
        r[k][0] = r[k][1] = r[k][2] = r[k][3] = 0;
        if (i == 0 || ci < K) ld_stream(xr + static_cast<uint64_t>(ci) * Chunk::kBytes + kVecBytes * h, r[k]);
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        // lane q holds piece q & 1 of chunk q / 2 (r[0]) and of chunk 16 + q / 2 (r[1]) of the warp. Round A: even
        // lanes offer r[0], odd lanes r[1]; lane l < 16 takes its piece 0 from lane 2l, lane l ≥ 16 its piece 1 from
        // lane 2l − 31. Round B: even lanes offer r[1], odd lanes r[0]; lane l < 16 takes its piece 1 from lane
        // 2l + 1, lane l ≥ 16 its piece 0 from lane 2l − 32.
        const uint32_t a = __shfl_sync(kMask, h ? r[1][k] : r[0][k], (2 * lane + hi) % kWarpSize);
        const uint32_t b = __shfl_sync(kMask, h ? r[0][k] : r[1][k], (2 * lane + 1 - hi) % kWarpSize);
        xc[i].w[k] = hi ? b : a;
        xc[i].w[4 + k] = hi ? a : b;
      }
    }
    const float rs = u2f(ld_u32(reinterpret_cast<const float*>(p.rstd) + t));
    cp_async_wait<0>();
    __syncwarp();  // the other lanes' copies into this thread's slots have landed too

    auto dy_piece = [&](int i, int s, uint32_t (&q)[4]) {
      q[0] = q[1] = q[2] = q[3] = 0;
      if (live[i]) ld_shared(slot(i, s, u), q);
    };
    // pass 1: dot = TREE(xh ⊗ gw); chunk_tree's first step (q_k ⊕ q_k+8) as the second half's products arrive
    float cs[kL];
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      float q[kRmsChunk / 2];
#pragma unroll
      for (int s = 0; s < kPieces; ++s) {
        uint32_t dw[4], ww[4];
        dy_piece(i, s, dw);
        w_piece(i, s, ww);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int j = 8 * s + k;
          const float xh = mul_rn(xc[i].at(j), rs);
          const float gw = mul_rn(element<Fmt::kBf16>(dw, k), element<Fmt::kBf16>(ww, k));
          const float v = mul_rn(xh, gw);
          q[k] = s == 0 ? v : add_rn(q[k], v);
        }
      }
#pragma unroll
      for (int hh = kRmsChunk / 4; hh >= 1; hh /= 2)  // chunk_tree's steps 4, 2, 1
#pragma unroll
        for (int k = 0; k < hh; ++k) q[k] = add_rn(q[k], q[k + hh]);
      cs[i] = live[i] ? q[0] : 0.0f;  // +0 pad
    }
    const float dot = team.template reduce<false, true>(cs[0], cs[1], smem + ((t / kSwSlots) & 1) * kRmsBlockThreads);
    const float m = div_rn(dot, static_cast<float>(H));
    // recompute xh and gw in pass 2 (hide x's words from the optimizer, as _b4swx)
    bwd_rows_hide(xc);

    // pass 2: d = (gw ⊖ xh ⊗ m) ⊗ rstd, RNx by pairs; A ⊕= xh ⊗ g
    uint8_t* dxr = reinterpret_cast<uint8_t*>(p.x_grad) + static_cast<uint64_t>(t) * H * 2;
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      uint32_t o[kPieces][4];
#pragma unroll
      for (int s = 0; s < kPieces; ++s) {
        uint32_t dw[4], ww[4];
        dy_piece(i, s, dw);
        w_piece(i, s, ww);
#pragma unroll
        for (int hq = 0; hq < 2; ++hq) {  // by quarter chunk: one float4 of partials, two packed xGrad words
          const float4 v = acc_at(i, 2 * s + hq);
          float a[4] = {v.x, v.y, v.z, v.w};
          float d[4];
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const int e = 4 * hq + k, j = 8 * s + e;
            const float xh = mul_rn(xc[i].at(j), rs);
            const float g = element<Fmt::kBf16>(dw, e);
            const float gw = mul_rn(g, element<Fmt::kBf16>(ww, e));
            d[k] = mul_rn(sub_rn(gw, mul_rn(xh, m)), rs);
            a[k] = add_rn(a[k], mul_rn(xh, g));
          }
          acc_at(i, 2 * s + hq) = make_float4(a[0], a[1], a[2], a[3]);
          encode_bf16x2_words<2>(d, o[s] + 2 * hq);
        }
      }
      // o[k] becomes piece h of thread mover(k)'s chunk i (the exchange of the loads, reversed), one whole sector per
      // store instruction
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        // round A: lanes < 16 offer their piece 0, lanes ≥ 16 their piece 1; lane q takes piece h of chunk q / 2
        // (q even: for the first store) or of chunk 16 + q / 2 (q odd: the second) from lane q / 2 + 16h. Round B:
        // the other pieces; lane q takes from lane q / 2 + 16(1 − h) the piece h of the chunk of its other store.
        const uint32_t a = __shfl_sync(kMask, hi ? o[1][k] : o[0][k], (lane >> 1) + 16 * h);
        const uint32_t b = __shfl_sync(kMask, hi ? o[0][k] : o[1][k], (lane >> 1) + 16 * (1 - h));
        o[0][k] = h ? b : a;
        o[1][k] = h ? a : b;
      }
#pragma unroll
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t ci = mover(k) + i * kRmsBlockThreads;
        if (i == 0 || ci < K) st_v4(dxr + static_cast<uint64_t>(ci) * Chunk::kBytes + kVecBytes * h, o[k][0], o[k][1], o[k][2], o[k][3]);
      }
    }
    __syncwarp();  // every lane has read its slots before the next row's copies refill them
  }

  uint8_t* ws = reinterpret_cast<uint8_t*>(p.workspace) + static_cast<uint64_t>(sigma) * H * 4;
  bwd_rows_store_partials(ws, c, live, acc_at);
}

}  // namespace
}  // namespace tk

#ifndef TK_NORM_BACKWARD_SW_NO_ENTRIES  // (norm_backward_sw7.cu includes this file for kSwSlots, not this entry)
extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, 4)
    tk_norm_backward__bf16_b4swc_unit(const __grid_constant__ NormBackwardParams p) {
  tk::norm_backward_rows_sw(p);
}
#endif  // TK_NORM_BACKWARD_SW_NO_ENTRIES

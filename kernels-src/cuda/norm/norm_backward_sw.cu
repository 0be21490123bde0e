// RMSNorm backward (spec/norm-rope-rand.md §A.5, D.2, D.3), bf16 rows kernels that move rows in whole 32-byte sectors
// (round 11, docs/perf-notes/perf11-nbw.md). Reached only through normLaunchTuning.backwardForm ("swd" / "swc") for
// the launches of norm_backward.cu's _b4swx_unit (a weight, no residualOutGrad, 16-byte aligned x, gradOut, xGrad
// and weight, 4096 < H ≤ 8192, outScale = 1); the fold (tk_norm_backward_weight_grad[_w16]) is norm_backward.cu's.
//
// Symbols
//   tk_norm_backward__bf16_b4swd_unit  _b4swx with gradOut's cp.async copies made by lane pairs in whole sectors
//   tk_norm_backward__bf16_b4swc_unit  _b4swd with x loaded and xGrad stored by lane pairs in whole sectors too, the
//                                      elements crossing between the pair's lanes by shuffles
//
// Launch geometry: _b4swx's (norm_backward.cu): 256 threads, grid min(T, 512), block σ = slot σ, one team of P = 256,
// 18 KiB static + 32 KiB dynamic shared memory (the weight-gradient partials), four blocks per SM (64 registers).
//
// Why (Nsight Compute of _b4swx_unit, H200, 16384 × 7168, base clock: L2 84.6% busy, DRAM 55.5%, no L2 re-reads):
// a thread owns 16-element chunks (32 bytes, one sector) and moves each by two 16-byte pieces, so a warp's 16-byte
// instruction touches 32 sectors and uses half of each, and the next instruction asks for the other halves: every
// sector of x, gradOut and xGrad is requested from L2 twice. Here the two lanes of a pair (2m, 2m + 1) move together:
// in one instruction lane h = lane & 1 moves piece h of chunk 2m + k's sector, so a warp instruction covers 16 whole
// sectors and each sector is requested once.
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

namespace tk {
namespace {

// Token slots of the weight-gradient reduction (spec D.3; norm_backward.cu kSlots).
constexpr uint32_t kSwSlots = 512;

// kPairX false (_b4swd): gradOut by pairs; x by the thread alone through L1 (as _b4swx: piece 1 can hit the sector
// piece 0 brought), xGrad by the thread alone.
// kPairX true (_b4swc): gradOut, x and xGrad by pairs; x past L1 (.L1::no_allocate: each sector is read once by one
// instruction, nothing to hit later, and chunk 1's weight keeps L1 to itself).
template <bool kPairX>
TK_DEV void norm_backward_rows_sw(const NormBackwardParams& p) {
  using Chunk = RowChunk<Fmt::kBf16>;
  constexpr int kL = kRmsChunksPerThread;
  constexpr int kPieces = Chunk::kPieces;  // 2 pieces of 8 elements per chunk
  static_assert(kPieces == 2, "a bf16 chunk is one sector: two 16-byte pieces");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __shared__ float smem[2 * kRmsBlockThreads];  // the tree's cross-warp step, two buffers alternating by row
  // gradOut slots [chunk][piece][thread] (16 KiB), piece 1 of thread u at column u ^ 1: the pair copies (lanes of
  // one 8-lane phase write pieces 0 and 1 of neighbouring threads) and the owner reads are both conflict free
  __shared__ __align__(16) uint8_t stage_buf[kL * kPieces * kRmsBlockThreads * kVecBytes];
  extern __shared__ float4 acc_smem[];  // the partials: [chunk][quad][thread] float4, 32 KiB

  const uint32_t H = p.hidden, K = H / kRmsChunk;  // K even (H % 32 == 0): a pair's chunks are live together
  const uint32_t T = p.num_tokens;
  const uint32_t slots = T < kSwSlots ? T : kSwSlots;
  RmsTeam team(kRmsBlockThreads, K);
  team.threads = kRmsBlockThreads, team.p = threadIdx.x, team.team = 0, team.teams = 1, team.nodes = 2 * kRmsBlockThreads;
  const uint32_t u = threadIdx.x, h = u & 1, u0 = u & ~1u;
  // The pair exchanges are made by every lane of the warp at once (full mask: they sit outside every branch, and
  // the loop and the early return are block-uniform). A pair-only mask (3 << (lane & ~1)), which ptxas cannot prove
  // warp-uniform, cost 264 more SASS instructions in _b4swc (sm_90a .text 23,424 against 19,200 bytes).
  constexpr uint32_t pmask = kFullWarpMask;
  uint32_t c[kL];
  bool live[kL], plive[kL];  // own chunk i; the pair's chunks i (both live or both dead: u0 even, K even)
#pragma unroll
  for (int i = 0; i < kL; ++i) {
    c[i] = u + i * kRmsBlockThreads;
    live[i] = i == 0 || c[i] < K;
    plive[i] = i == 0 || u0 + i * kRmsBlockThreads < K;
  }
  const uint32_t sigma = blockIdx.x;
  if (sigma >= slots) return;  // the whole block leaves together
  const uint32_t stage_base = smem_addr(stage_buf);
  // piece s of thread v's gradOut chunk i
  auto slot = [&](int i, uint32_t s, uint32_t v) {
    return stage_base + ((i * kPieces + s) * kRmsBlockThreads + (v ^ s)) * kVecBytes;
  };
  auto acc_at = [&](int i, int q) -> float4& { return acc_smem[(i * (kRmsChunk / 4) + q) * kRmsBlockThreads + u]; };
#pragma unroll
  for (int i = 0; i < kL; ++i)
#pragma unroll
    for (int q = 0; q < kRmsChunk / 4; ++q) acc_at(i, q) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

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
    // gradOut by pairs: in copy k lane h copies piece h of chunk u0 + k (+ 256 i) into thread u0 + k's slot
#pragma unroll
    for (int i = 0; i < kL; ++i)
      if (plive[i])
#pragma unroll
        for (uint32_t k = 0; k < 2; ++k)
          cp_async<kVecBytes>(slot(i, h, u0 + k), dyr + static_cast<uint64_t>(u0 + k + i * kRmsBlockThreads) * Chunk::kBytes + kVecBytes * h, true);
    cp_async_commit();
    Chunk xc[kL];
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      if constexpr (kPairX) {
        // r0: piece h of the pair's even chunk, r1: of its odd chunk (one whole sector per instruction); the even
        // lane keeps r0 (its piece 0) and gets its piece 1 from the odd lane's r0; the odd lane keeps r1 (its
        // piece 1) and gets its piece 0 from the even lane's r1
        uint32_t r0[4] = {0, 0, 0, 0}, r1[4] = {0, 0, 0, 0};
        if (plive[i]) {
          const uint8_t* a = xr + static_cast<uint64_t>(u0 + i * kRmsBlockThreads) * Chunk::kBytes + kVecBytes * h;
          ld_stream(a, r0);
          ld_stream(a + Chunk::kBytes, r1);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const uint32_t v = __shfl_xor_sync(pmask, h ? r0[k] : r1[k], 1);
          xc[i].w[k] = h ? v : r0[k];
          xc[i].w[4 + k] = h ? r1[k] : v;
        }
      } else {
        xc[i].zero();
        if (live[i]) {
#pragma unroll
          for (int s = 0; s < kPieces; ++s) {
            uint32_t q[4];
            ld_cached(xr + static_cast<uint64_t>(c[i]) * Chunk::kBytes + kVecBytes * s, q);
#pragma unroll
            for (int k = 0; k < 4; ++k) xc[i].w[4 * s + k] = q[k];
          }
        }
      }
    }
    const float rs = u2f(ld_u32(reinterpret_cast<const float*>(p.rstd) + t));
    cp_async_wait<0>();
    __syncwarp();  // the pair lane's copies into this thread's slots have landed too

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
#pragma unroll
    for (int i = 0; i < kL; ++i)
#pragma unroll
      for (int k = 0; k < Chunk::kWords; ++k) asm volatile("" : "+r"(xc[i].w[k]));

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
        if constexpr (!kPairX) {
          if (live[i]) st_v4(dxr + static_cast<uint64_t>(c[i]) * Chunk::kBytes + kVecBytes * s, o[s][0], o[s][1], o[s][2], o[s][3]);
        }
      }
      if constexpr (kPairX) {
        // the even lane sends its piece 1 and receives the odd lane's piece 0: then it holds piece 0 of the pair's
        // two chunks, the odd lane piece 1 of both; one whole sector per store instruction
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const uint32_t v = __shfl_xor_sync(pmask, h ? o[0][k] : o[1][k], 1);
          if (h) {
            o[0][k] = v;
          } else {
            o[1][k] = v;
          }
        }
        if (plive[i]) {
          uint8_t* a = dxr + static_cast<uint64_t>(u0 + i * kRmsBlockThreads) * Chunk::kBytes + kVecBytes * h;
          st_v4(a, o[0][0], o[0][1], o[0][2], o[0][3]);
          st_v4(a + Chunk::kBytes, o[1][0], o[1][1], o[1][2], o[1][3]);
        }
      }
    }
    __syncwarp();  // the pair lane has read its slots before this thread's next copies refill them
  }

  uint8_t* ws = reinterpret_cast<uint8_t*>(p.workspace) + static_cast<uint64_t>(sigma) * H * 4;
#pragma unroll
  for (int i = 0; i < kL; ++i) {
    if (live[i]) {
#pragma unroll
      for (int q = 0; q < kRmsChunk / 4; ++q) {
        const float4 v = acc_at(i, q);
        st_v4(ws + static_cast<uint64_t>(c[i]) * kRmsChunk * 4 + kVecBytes * q, f2u(v.x), f2u(v.y), f2u(v.z), f2u(v.w));
      }
    }
  }
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, 4)
    tk_norm_backward__bf16_b4swd_unit(const __grid_constant__ NormBackwardParams p) {
  tk::norm_backward_rows_sw<false>(p);
}
extern "C" __global__ void __launch_bounds__(tk::kRmsBlockThreads, 4)
    tk_norm_backward__bf16_b4swc_unit(const __grid_constant__ NormBackwardParams p) {
  tk::norm_backward_rows_sw<true>(p);
}

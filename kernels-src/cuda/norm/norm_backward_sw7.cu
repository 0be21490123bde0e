// RMSNorm backward (spec/norm-rope-rand.md §A.5, D.2, D.3), bf16, H = 7168: _b4swc (norm_backward_sw.cu) in seven
// warps instead of eight (round 32, docs/perf-notes/perf32-nbw.md). The fold (tk_norm_backward_weight_grad) is
// norm_backward.cu's.
//
// Symbol
//   tk_norm_backward__bf16_b4sw7_unit   _b4swc's rows loop for K = 448 chunks on 224 threads, every chunk live;
//                                       both chunks' weight in registers
//
// Launch geometry: 224 threads, grid min(T, 512), block σ = slot σ, 16 KiB static + 28 KiB dynamic shared memory
// (the weight-gradient partials of 448 chunks), four blocks per SM (72 registers: 4 · 224 · 72 ≤ 64 Ki).
//
// Why: _b4swc gives thread u the chunks u and u + 256 of the row. At H = 7168 (K = 448) chunk u + 256 is dead for
// u ≥ 192, but warps 6 and 7 still run its exchanges and both passes on zeros (the dead chunk's loads and stores are
// skipped, its arithmetic is not): 2 of the block's 16 warp-chunks, 1/8 of the rows' issued instructions, on an SM
// that Nsight finds issue-contended (not_selected 2.1 cycles per issue, 59% issue). Here warp 6 does the live chunks
// of _b4swc's warps 6 and 7 (lane l: chunks 192 + l and 224 + l), so every warp-chunk is live and a block has 7
// warps. The 7-warp block also lowers the register cap from 64 to 72, which holds chunk 1's weight in registers like
// chunk 0's (_b4swc reads it through L1 in both passes), and the smaller stage and partials (224 threads) leave
// 4 · 45 of 228 KiB of shared memory in use.
//
// Bits: every chunk is computed as in _b4swc (same operations, operands and order: xh = x ⊗ rstd, g = dy, gw = g ⊗ w,
// q = xh ⊗ gw, chunk_tree with its first step as the second half arrives, m = dot ⊘ H, d = (gw ⊖ xh ⊗ m) ⊗ rstd
// rounded by encode_bf16x2_words, A ⊕= xh ⊗ g for the slot's rows ascending in the column's one thread, spec D.3),
// only by another thread for the chunks 224 … 255. The team tree is the same: node n < 256 is chunk n ⊕ chunk
// n + 256, with the +0 pad for n ≥ 192 (warp 6 adds it to both its chunks, as _b4swc's warps 6 and 7 added their dead
// chunk's +0), then the same cross-warp halving (D = 128, 64, 32) over the same 256 nodes in shared memory and the
// same xor steps D = 16 … 1. So xGrad and the workspace rows are _b4swc's bytes (and the CPU reference's).
#define TK_NORM_BACKWARD_SW_NO_ENTRIES
#include "norm_backward_sw.cu"

namespace tk {
namespace {

// The one hidden size of this form: K = 448 chunks, two per thread of 224.
constexpr uint32_t kSw7Hidden = 7168;
constexpr uint32_t kSw7Chunks = kSw7Hidden / kRmsChunk;
constexpr uint32_t kSw7Threads = kSw7Chunks / kRmsChunksPerThread;
// The threads whose chunks are u and u + 256 (_b4swc's live pairs); warp 6 (u ≥ 192) has u and u + 32.
constexpr uint32_t kSw7PairThreads = kSw7Chunks - kRmsBlockThreads;
static_assert(kSw7Threads % kWarpSize == 0 && kSw7PairThreads % kWarpSize == 0, "whole warps");
static_assert(kSw7Threads - kSw7PairThreads == kWarpSize, "one warp holds the chunks 192 … 255");

// TREE's last steps (RmsTeam::reduce<false, true> of the 256-thread team, rms_tree.cuh) from this thread's two chunk
// sums: node u = c0 ⊕ c1 (D = 256) for u < 192; warp 6 holds nodes u = c0 ⊕ +0 and u + 32 = c1 ⊕ +0 (the pad of
// the dead chunks u + 256 ≥ 448). Then D = 128, 64, 32 through `smem` (256 floats, the block's one barrier; the
// caller alternates two buffers by row, as _b4swc) and D = 16 … 1 by xor shuffles, after which every lane holds
// node 0 (⊕ is commutative: both lanes of an xor pair compute the same bits).
TK_DEV float sw7_reduce(float c0, float c1, float* smem) {
  const uint32_t u = threadIdx.x, lane = u % kWarpSize;
  if (u < kSw7PairThreads) {
    smem[u] = add_rn(c0, c1);
  } else {
    smem[u] = add_rn(c0, 0.0f);
    smem[u + kWarpSize] = add_rn(c1, 0.0f);
  }
  asm volatile("bar.sync 0;" ::: "memory");
  constexpr int kNodeWarps = kRmsBlockThreads / kWarpSize;
  float a[kNodeWarps];
#pragma unroll
  for (int i = 0; i < kNodeWarps; ++i) a[i] = smem[lane + kWarpSize * i];
#pragma unroll
  for (int h = kNodeWarps / 2; h >= 1; h /= 2)
#pragma unroll
    for (int i = 0; i < h; ++i) a[i] = add_rn(a[i], a[i + h]);
  float v = a[0];
#pragma unroll
  for (uint32_t h = kWarpSize / 2; h >= 1; h /= 2) v = add_rn(v, __shfl_xor_sync(kFullWarpMask, v, h));
  return v;
}

// _b4swc's rows loop (norm_backward_rows_sw: the line-order moves and their exchanges, the gradOut slots with piece 1
// at column v ^ 4, the partials [chunk][quad][thread]) over 224 threads; chunk i of thread v is v + i · plane, plane
// = 256 (warps 0–5) or 32 (warp 6), uniform over a warp, so the exchanges pair the same lanes as _b4swc's.
TK_DEV void norm_backward_rows_sw7(const NormBackwardParams& p) {
  using Chunk = RowChunk<Fmt::kBf16>;
  constexpr int kL = kRmsChunksPerThread;
  constexpr int kPieces = Chunk::kPieces;
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __shared__ float smem[2 * kRmsBlockThreads];  // the tree's cross-warp step, two buffers alternating by row
  __shared__ __align__(16) uint8_t stage_buf[kL * kPieces * kSw7Threads * kVecBytes];  // gradOut, 14 KiB
  extern __shared__ float4 acc_smem[];  // the partials: [chunk][quad][thread] float4, 28 KiB

  const uint32_t T = p.num_tokens;
  const uint32_t slots = T < kSwSlots ? T : kSwSlots;
  const uint32_t u = threadIdx.x, lane = u % kWarpSize, h = u & 1, hi = (lane >> 4) & 1;
  const uint32_t plane = u < kSw7PairThreads ? kRmsBlockThreads : kWarpSize;
  uint32_t c[kL];
  bool live[kL];
#pragma unroll
  for (int i = 0; i < kL; ++i) {
    c[i] = u + i * plane;
    live[i] = true;
  }
  auto mover = [&](uint32_t k) -> uint32_t { return (u - lane) + 16 * k + (lane >> 1); };
  const uint32_t sigma = blockIdx.x;
  if (sigma >= slots) return;  // the whole block leaves together
  const uint32_t stage_base = smem_addr(stage_buf);
  auto slot = [&](int i, uint32_t s, uint32_t v) {
    const uint32_t col = v ^ (4 * s);
    return stage_base + ((i * kPieces + s) * kSw7Threads + col) * kVecBytes;
  };
  auto acc_at = [&](int i, int q) -> float4& { return acc_smem[(i * (kRmsChunk / 4) + q) * kSw7Threads + u]; };
  bwd_rows_zero_partials<kL>(acc_at);

  // both chunks' weight once, in registers
  const uint8_t* wp = reinterpret_cast<const uint8_t*>(p.weight);
  Chunk wc[kL];
#pragma unroll
  for (int i = 0; i < kL; ++i) wc[i].template load<false>(wp + static_cast<uint64_t>(c[i]) * Chunk::kBytes, true);

  for (uint32_t t = sigma; t < T; t += kSwSlots) {
    const uint8_t* xr = reinterpret_cast<const uint8_t*>(p.x) + static_cast<uint64_t>(t) * p.x_row_stride * 2;
    const uint8_t* dyr = reinterpret_cast<const uint8_t*>(p.grad_out) + static_cast<uint64_t>(t) * p.grad_out_row_stride * 2;
    // gradOut: in copy k this lane copies piece h of thread mover(k)'s chunk i into that thread's slot
#pragma unroll
    for (int i = 0; i < kL; ++i)
#pragma unroll
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t v = mover(k), ci = v + i * plane;
        cp_async<kVecBytes>(slot(i, h, v), dyr + static_cast<uint64_t>(ci) * Chunk::kBytes + kVecBytes * h, true);
      }
    cp_async_commit();
    Chunk xc[kL];
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      uint32_t r[2][4];
#pragma unroll
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t ci = mover(k) + i * plane;
        ld_stream(xr + static_cast<uint64_t>(ci) * Chunk::kBytes + kVecBytes * h, r[k]);
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {  // _b4swc's exchange (norm_backward_sw.cu: rounds A and B)
        const uint32_t a = __shfl_sync(kFullWarpMask, h ? r[1][k] : r[0][k], (2 * lane + hi) % kWarpSize);
        const uint32_t b = __shfl_sync(kFullWarpMask, h ? r[0][k] : r[1][k], (2 * lane + 1 - hi) % kWarpSize);
        xc[i].w[k] = hi ? b : a;
        xc[i].w[4 + k] = hi ? a : b;
      }
    }
    const float rs = u2f(ld_u32(reinterpret_cast<const float*>(p.rstd) + t));
    cp_async_wait<0>();
    __syncwarp();  // the other lanes' copies into this thread's slots have landed too

    // pass 1: dot = TREE(xh ⊗ gw); chunk_tree's first step (q_k ⊕ q_k+8) as the second half's products arrive
    float cs[kL];
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      float q[kRmsChunk / 2];
#pragma unroll
      for (int s = 0; s < kPieces; ++s) {
        uint32_t dw[4];
        ld_shared(slot(i, s, u), dw);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int j = 8 * s + k;
          const float xh = mul_rn(xc[i].at(j), rs);
          const float gw = mul_rn(element<Fmt::kBf16>(dw, k), wc[i].at(j));
          const float v = mul_rn(xh, gw);
          q[k] = s == 0 ? v : add_rn(q[k], v);
        }
      }
#pragma unroll
      for (int hh = kRmsChunk / 4; hh >= 1; hh /= 2)  // chunk_tree's steps 4, 2, 1
#pragma unroll
        for (int k = 0; k < hh; ++k) q[k] = add_rn(q[k], q[k + hh]);
      cs[i] = q[0];
    }
    const float dot = sw7_reduce(cs[0], cs[1], smem + ((t / kSwSlots) & 1) * kRmsBlockThreads);
    const float m = div_rn(dot, static_cast<float>(kSw7Hidden));
    bwd_rows_hide(xc);  // recompute xh and gw in pass 2 (as _b4swc)

    // pass 2: d = (gw ⊖ xh ⊗ m) ⊗ rstd, RNx by pairs; A ⊕= xh ⊗ g
    uint8_t* dxr = reinterpret_cast<uint8_t*>(p.x_grad) + static_cast<uint64_t>(t) * kSw7Hidden * 2;
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      uint32_t o[kPieces][4];
#pragma unroll
      for (int s = 0; s < kPieces; ++s) {
        uint32_t dw[4];
        ld_shared(slot(i, s, u), dw);
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
            const float gw = mul_rn(g, wc[i].at(j));
            d[k] = mul_rn(sub_rn(gw, mul_rn(xh, m)), rs);
            a[k] = add_rn(a[k], mul_rn(xh, g));
          }
          acc_at(i, 2 * s + hq) = make_float4(a[0], a[1], a[2], a[3]);
          encode_bf16x2_words<2>(d, o[s] + 2 * hq);
        }
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {  // _b4swc's exchange of the stores (the loads' reversed)
        const uint32_t a = __shfl_sync(kFullWarpMask, hi ? o[1][k] : o[0][k], (lane >> 1) + 16 * h);
        const uint32_t b = __shfl_sync(kFullWarpMask, hi ? o[0][k] : o[1][k], (lane >> 1) + 16 * (1 - h));
        o[0][k] = h ? b : a;
        o[1][k] = h ? a : b;
      }
#pragma unroll
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t ci = mover(k) + i * plane;
        st_v4(dxr + static_cast<uint64_t>(ci) * Chunk::kBytes + kVecBytes * h, o[k][0], o[k][1], o[k][2], o[k][3]);
      }
    }
    __syncwarp();  // every lane has read its slots before the next row's copies refill them
  }

  uint8_t* ws = reinterpret_cast<uint8_t*>(p.workspace) + static_cast<uint64_t>(sigma) * kSw7Hidden * 4;
  bwd_rows_store_partials(ws, c, live, acc_at);
}

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kSw7Threads, 4)
    tk_norm_backward__bf16_b4sw7_unit(const __grid_constant__ NormBackwardParams p) {
  tk::norm_backward_rows_sw7(p);
}

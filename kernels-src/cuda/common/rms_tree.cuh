// The fixed reduction tree of spec/norm-rope-rand.md D.2 (RMSNorm sum of squares, backward row dot product) as a
// team of P threads per row realizes it, and the 16-element row chunks the norm kernels move.
//
// TREE(q): chunks of 16 summed by the halving tree 8/4/2/1; the K = H/16 chunk sums padded with +0 to N =
// nextPow2(K) and folded by halving, distance N/2 first. A team of P threads (a power of two) owns chunks
// p, p + P (thread p, two chunks: P ≥ N/2). Every fold step is "node k ⊕= node k + D" for a distance D < N, in
// decreasing D: D = P inside a thread (its two chunks), then D = P/2 … 32 across warps through shared memory, then
// D = 16 … 1 across lanes by xor shuffles. ⊕ is commutative, so the lane on the upper side of an xor pair computes
// the same bits as the lower one, and after the last step every lane holds node 0 of its group. Steps with D ≥ N
// (a team wider than the tree) are skipped; the threads beyond the tree then hold only +0 chunks and the result
// is taken from the team's thread 0. Hence the bits do not depend on P.
#pragma once
#include <stdint.h>
#include "chunk.cuh"
#include "codec.cuh"
#include "fp.cuh"
#include "hw.cuh"
#include "ldst.cuh"

namespace tk {

// Elements of one row chunk: the leaf block of the tree.
constexpr int kRmsChunk = 16;
// Chunks a team thread owns (p and p + P): P ≥ N/2, so two always cover the row.
constexpr int kRmsChunksPerThread = 2;
// Threads of every norm kernel block; a team (one row) is at most one block.
constexpr int kRmsBlockThreads = 256;

TK_DEV float sub_rn(float a, float b) { return __fsub_rn(a, b); }

// The halving steps h, h/2, …, 1 of a chunk: v[j] ⊕= v[j + h] for j < h. (Recursion rather than nested loops, so
// that every index is a compile-time constant and v stays in registers.)
template <int kH>
TK_DEV void halving_steps(float (&v)[kRmsChunk]) {
  if constexpr (kH >= 1) {
#pragma unroll
    for (int j = 0; j < kH; ++j) v[j] = add_rn(v[j], v[j + kH]);
    halving_steps<kH / 2>(v);
  }
}

// The chunk's halving tree 8/4/2/1. Destroys v.
TK_DEV float chunk_tree(float (&v)[kRmsChunk]) {
  halving_steps<kRmsChunk / 2>(v);
  return v[0];
}

// A row's team of P threads inside a 256-thread block: P a power of two in [1, 256]. Teams of fewer than 32 threads
// share a warp; wider ones are whole warps and synchronise on a named barrier (id 1 + team; at most 4 such teams).
struct RmsTeam {
  uint32_t threads;  // P
  uint32_t p;        // this thread's index in the team
  uint32_t team;     // the team's index in the block
  uint32_t teams;    // teams per block (256 / P)
  uint32_t nodes;    // N = nextPow2(K), the tree's width in chunks

  TK_DEV RmsTeam(uint32_t team_threads, uint32_t chunks) {
    threads = team_threads;
    p = threadIdx.x & (threads - 1);
    team = threadIdx.x / threads;
    teams = kRmsBlockThreads / threads;
    nodes = 1;
    while (nodes < chunks) nodes *= 2;
  }

  // The first team index of this thread's warp, for loops whose bound must be warp-uniform (teams < 32 threads
  // share a warp and its full-mask shuffles).
  TK_DEV uint32_t warp_first_team() const {
    return threads >= kWarpSize ? team : (threadIdx.x & ~(kWarpSize - 1)) / threads;
  }

  // Finish TREE from this thread's two chunk sums. `smem`: kRmsBlockThreads floats; every thread of the team
  // must call (all lanes of its warp too). Returns node 0 in every thread of the team.
  TK_DEV float reduce(float c0, float c1, float* smem) const {
    float v = threads < nodes ? add_rn(c0, c1) : c0;  // D = P
    const uint32_t lane = threadIdx.x % kWarpSize;
    if (threads > kWarpSize) {
      // D = P/2 … 32: lane l of every warp of the team folds nodes l + 32·i (i < P/32) by halving over i
      const uint32_t warps = threads / kWarpSize;
      const uint32_t base = team * threads;
      smem[threadIdx.x] = v;
      asm volatile("bar.sync %0, %1;" ::"r"(1 + team), "r"(threads) : "memory");
      constexpr int kMaxWarps = kRmsBlockThreads / kWarpSize;
      float a[kMaxWarps];
#pragma unroll
      for (int i = 0; i < kMaxWarps; ++i) a[i] = static_cast<uint32_t>(i) < warps ? smem[base + lane + kWarpSize * i] : 0.0f;
#pragma unroll
      for (int h = kMaxWarps / 2; h >= 1; h /= 2)
        if (static_cast<uint32_t>(h) < warps && static_cast<uint32_t>(kWarpSize * h) < nodes)
#pragma unroll
          for (int i = 0; i < h; ++i) a[i] = add_rn(a[i], a[i + h]);
      v = a[0];
      asm volatile("bar.sync %0, %1;" ::"r"(1 + team), "r"(threads) : "memory");  // smem is reused by the next row
    }
    // D = min(P, 32)/2 … 1 inside the warp
    const uint32_t span = threads < kWarpSize ? threads : kWarpSize;
#pragma unroll
    for (uint32_t h = kWarpSize / 2; h >= 1; h /= 2)
      if (h < span && h < nodes) v = add_rn(v, __shfl_xor_sync(kFullWarpMask, v, h));
    return __shfl_sync(kFullWarpMask, v, lane & ~(span - 1));
  }
};

// ---- row chunks ---------------------------------------------------------------------------------------------------
// A chunk of 16 fp32 / bf16 elements as 32-bit words (little-endian pairs for bf16).
template <Fmt kIn>
struct RowChunk {
  static constexpr int kBytes = kRmsChunk * FmtTraits<kIn>::kBits / 8;  // 64 or 32
  static constexpr int kWords = kBytes / 4;
  uint32_t w[kWords];

  TK_DEV float at(int i) const { return element<kIn>(w, i); }

  // 16-byte loads when `aligned` (the view's base and strides allow them), element loads otherwise. `kStream`:
  // read-once data skips L1; data read again by the same SM (weights) is cached. Every call sits under a condition
  // (a live chunk, an active row, a tensor that is present); the loads of ldst.cuh are volatile, so they stay there.
  template <bool kStream = true>
  TK_DEV void load(const uint8_t* p, bool aligned) {
#pragma unroll
    for (int s = 0; s < kWords / 4; ++s) {
      uint32_t q[4];
      if (aligned) {
        if constexpr (kStream) ld_stream(p + 16 * s, q);
        else ld_cached(p + 16 * s, q);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if constexpr (FmtTraits<kIn>::kAccessBytes == 4) {
            q[i] = ld_u32(p + 16 * s + 4 * i);
          } else {
            q[i] = ld_u16(p + 16 * s + 4 * i) | (ld_u16(p + 16 * s + 4 * i + 2) << 16);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) w[4 * s + i] = q[i];
    }
  }
  TK_DEV void zero() {
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = 0;
  }

  // Staged rows: the chunk's 16-byte pieces s sit in the thread's shared-memory slots at slot + s·stride.
  // stage() copies them there (cp.async when `aligned`, common/ldst.cuh stage_chunk), load_shared() reads them
  // back once the thread's copies have landed (cp_async_wait). Both under the same live-chunk condition.
  static TK_DEV void stage(uint32_t slot, uint32_t stride, const uint8_t* p, bool aligned) {
#pragma unroll
    for (int s = 0; s < kWords / 4; ++s) {
      stage_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes>(slot + s * stride, p + kVecBytes * s, true, aligned);
    }
  }
  TK_DEV void load_shared(uint32_t slot, uint32_t stride) {
#pragma unroll
    for (int s = 0; s < kWords / 4; ++s) {
      uint32_t q[4];
      ld_shared(slot + s * stride, q);
#pragma unroll
      for (int i = 0; i < 4; ++i) w[4 * s + i] = q[i];
    }
  }

  // Element j ← RNx(v[j]) for the whole chunk: bf16 RNE with NaN → 0x7FC0, fp32 as is with NaN as the canonical
  // 0x7FC00000 (common/codec.cuh). bf16 pairs go through the hardware conversion; its NaN halves are fixed only when
  // an input was a NaN (one unordered compare per pair decides, instead of ~4 integer operations per element).
  TK_DEV void set_all(const float (&v)[kRmsChunk]) {
    if constexpr (kIn == Fmt::kFp32) {
#pragma unroll
      for (int j = 0; j < kRmsChunk; ++j) w[j] = f2u(canonical_nan(v[j]));
    } else {
      bool any_nan = false;
#pragma unroll
      for (int k = 0; k < kWords; ++k) {
        w[k] = encode_bf16x2_nan_unfixed(v[2 * k], v[2 * k + 1]);
        any_nan |= (v[2 * k] != v[2 * k]) | (v[2 * k + 1] != v[2 * k + 1]);
      }
      if (any_nan) {
#pragma unroll
        for (int k = 0; k < kWords; ++k) w[k] = bf16x2_fix_nan(w[k]);
      }
    }
  }

  // 16-byte stores when `aligned`, byte stores otherwise.
  TK_DEV void store(uint8_t* p, bool aligned) const { store_chunk<kBytes>(p, w, aligned); }
};

// Whether a (base, batch stride, row stride) view allows 16-byte accesses on every row (strides in bytes).
TK_DEV bool view_aligned(uint64_t base, uint64_t batch_stride_bytes, uint64_t row_stride_bytes) {
  return ((base | batch_stride_bytes | row_stride_bytes) & (kVecBytes - 1)) == 0;
}

}  // namespace tk

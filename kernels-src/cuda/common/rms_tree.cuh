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

  // The team's barrier: named barrier 1 + team over the team's threads, or (kBlock) barrier 0 over the whole block.
  template <bool kBlock>
  TK_DEV void sync() const {
    if constexpr (kBlock) {
      asm volatile("bar.sync 0;" ::: "memory");
    } else {
      asm volatile("bar.sync %0, %1;" ::"r"(1 + team), "r"(threads) : "memory");
    }
  }

  // Finish TREE from this thread's two chunk sums. `smem`: kRmsBlockThreads floats; every thread of the team
  // must call (all lanes of its warp too). Returns node 0 in every thread of the team. kClose = false skips the
  // closing barrier that lets the next call reuse `smem`: the caller then alternates two buffers (a thread writes
  // buffer b again only after the next call's barrier, which every reader of b has passed). kBlockBarrier: the team
  // is the whole block and syncs on barrier 0 (an immediate id: ptxas then reserves one barrier, not all 16, which
  // would cap the block at 4 per SM).
  template <bool kClose = true, bool kBlockBarrier = false>
  TK_DEV float reduce(float c0, float c1, float* smem) const {
    float v = threads < nodes ? add_rn(c0, c1) : c0;  // D = P
    const uint32_t lane = threadIdx.x % kWarpSize;
    if (threads > kWarpSize) {
      // D = P/2 … 32: lane l of every warp of the team folds nodes l + 32·i (i < P/32) by halving over i
      const uint32_t warps = threads / kWarpSize;
      const uint32_t base = team * threads;
      smem[threadIdx.x] = v;
      sync<kBlockBarrier>();
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
      if constexpr (kClose) sync<kBlockBarrier>();  // smem is reused by the next row
    }
    // D = min(P, 32)/2 … 1 inside the warp
    const uint32_t span = threads < kWarpSize ? threads : kWarpSize;
#pragma unroll
    for (uint32_t h = kWarpSize / 2; h >= 1; h /= 2)
      if (h < span && h < nodes) v = add_rn(v, __shfl_xor_sync(kFullWarpMask, v, h));
    return __shfl_sync(kFullWarpMask, v, lane & ~(span - 1));
  }
};

// Where a thread's register loads and stores of a row chunk go, as two 16-byte streams: for each sector of the chunk
// (pieces s, s + 1, s even), piece s at q0 + 16·s and piece s + 1 at q1 + 16·s, under g0 / g1. A thread alone
// (own) has q0 = its chunk, q1 = q0 + 16; a lane pair (pair, see RowChunk's "whole sectors") has q0 = the even
// chunk + 16·h, q1 = q0 + the chunk's bytes, and swaps words with the other lane by shuffles (both must call).
struct ChunkAccess {
  uint64_t q0, q1;  // addresses
  bool g0, g1;      // conditions
  bool exchange;    // lane pairs (uniform over the warp)

  static TK_DEV uint32_t half() { return threadIdx.x & 1; }
  // Thread-alone access of the chunk at p under g.
  static TK_DEV ChunkAccess own(const uint8_t* p, bool g) {
    return {reinterpret_cast<uint64_t>(p), reinterpret_cast<uint64_t>(p) + kVecBytes, g, g, false};
  }
  // Lane-pair access of the pair of chunks of `bytes` whose even chunk is at `pair`, under the owners' conditions.
  static TK_DEV ChunkAccess pair(const uint8_t* pair, uint32_t bytes, bool g0, bool g1) {
    const uint64_t q0 = reinterpret_cast<uint64_t>(pair) + kVecBytes * half();
    return {q0, q0 + bytes, g0, g1, true};
  }
};

// ---- row chunks ---------------------------------------------------------------------------------------------------
// A chunk of 16 fp32 / bf16 elements as 32-bit words (little-endian pairs for bf16).
template <Fmt kIn>
struct RowChunk {
  static constexpr int kBytes = kRmsChunk * FmtTraits<kIn>::kBits / 8;  // 64 or 32
  static constexpr int kWords = kBytes / 4;
  static constexpr int kPieces = kBytes / kVecBytes;  // 16-byte pieces; two of them fill a 32-byte sector
  uint32_t w[kWords];

  TK_DEV float at(int i) const { return element<kIn>(w, i); }

  // One 16-byte piece: a vector load when `aligned` (the view's base and strides allow it), element loads
  // otherwise. `kStream`: read-once data skips L1; data read again by the same SM (weights) is cached. Every call
  // sits under a condition (a live chunk, an active row, a tensor that is present); the loads of ldst.cuh are
  // volatile, so they stay there.
  template <bool kStream = true>
  static TK_DEV void load_piece(const uint8_t* p, uint32_t (&q)[4], bool aligned) {
    if (aligned) {
      if constexpr (kStream) ld_stream(p, q);
      else ld_cached(p, q);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (FmtTraits<kIn>::kAccessBytes == 4) {
          q[i] = ld_u32(p + 4 * i);
        } else {
          q[i] = ld_u16(p + 4 * i) | (ld_u16(p + 4 * i + 2) << 16);
        }
      }
    }
  }
  // The chunk at p, by this thread alone (the weight: cached, so the other half of each sector hits L1).
  template <bool kStream = true>
  TK_DEV void load(const uint8_t* p, bool aligned) {
#pragma unroll
    for (int s = 0; s < kPieces; ++s) {
      uint32_t q[4];
      load_piece<kStream>(p + kVecBytes * s, q, aligned);
#pragma unroll
      for (int i = 0; i < 4; ++i) w[4 * s + i] = q[i];
    }
  }
  TK_DEV void zero() {
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = 0;
  }

  // Staged rows: the chunk's 16-byte pieces s sit in shared-memory slots, slot(s) (common/ldst.cuh stage_chunk:
  // cp.async when `aligned`). stage() copies this thread's own chunk there, load_shared() reads it back once the
  // copies have landed (cp_async_wait, and __syncwarp when a pair lane copied them: stage_pair). Both under the
  // same live-chunk condition.
  template <class Slot>
  static TK_DEV void stage(const Slot& slot, const uint8_t* p, bool aligned) {
#pragma unroll
    for (int s = 0; s < kPieces; ++s) stage_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes>(slot(s), p + kVecBytes * s, true, aligned);
  }
  template <class Slot>
  TK_DEV void load_shared(const Slot& slot) {
#pragma unroll
    for (int s = 0; s < kPieces; ++s) {
      uint32_t q[4];
      ld_shared(slot(s), q);
#pragma unroll
      for (int i = 0; i < 4; ++i) w[4 * s + i] = q[i];
    }
  }

  // ---- whole sectors by lane pairs -------------------------------------------------------------------------------
  // A thread's chunk is 32 (bf16) or 64 (fp32) contiguous bytes. When every lane moves its own chunk, each 16-byte
  // instruction of a warp touches 32 sectors and uses half of each, and the next instruction requests the same
  // sectors again: twice the L1↔L2 sector traffic (and twice the partial-sector writes) for the same bytes. Here
  // the two lanes of a pair (lanes 2m, 2m + 1: in one team when P ≥ 2, so on one row, owning chunks c and c ^ 1)
  // move together: lane h = lane & 1 moves piece 2σ + h of the pair's even chunk in one instruction and of its odd
  // chunk in the next, so that every instruction reads or writes whole sectors. `pair` is the even chunk's address;
  // `live0`, `live1` are the two owners' conditions (a copy / load / store of a chunk happens under its owner's
  // condition, as before). The data crosses between the lanes by shuffles (load_split, store_split with
  // ChunkAccess::pair; both lanes of the pair must call them) or lands in the owner's shared slot (stage_pair).
  static TK_DEV uint32_t pair_half() { return ChunkAccess::half(); }
  static TK_DEV uint32_t pair_mask() { return 3u << (threadIdx.x & (kWarpSize - 2)); }

  // slot(s, k): the shared address of piece s of the pair's thread k (0 even, 1 odd).
  template <class Slot>
  static TK_DEV void stage_pair(const Slot& slot, const uint8_t* pair, bool live0, bool live1, bool aligned) {
    const uint32_t h = pair_half();
#pragma unroll
    for (int s = 0; s < kPieces; s += 2) {
      const uint32_t off = kVecBytes * (s + h);
      if (live0) stage_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes>(slot(s + h, 0), pair + off, true, aligned);
      if (live1) stage_chunk<kVecBytes, FmtTraits<kIn>::kAccessBytes>(slot(s + h, 1), pair + kBytes + off, true, aligned);
    }
  }
  // Register loads and stores by ChunkAccess: one code path for a thread alone and for lane pairs (the plain
  // forward keeps its 64 registers that way). load_split: the chunk, zeros where the owner's condition is false.
  TK_DEV void load_split(const ChunkAccess& a, bool aligned) {
    const uint32_t h = pair_half(), mask = pair_mask();
#pragma unroll
    for (int s = 0; s < kPieces; s += 2) {
      uint32_t r0[4] = {}, r1[4] = {};
      if (a.g0) load_piece(reinterpret_cast<const uint8_t*>(a.q0) + kVecBytes * s, r0, aligned);
      if (a.g1) load_piece(reinterpret_cast<const uint8_t*>(a.q1) + kVecBytes * s, r1, aligned);
      // pairs: the even lane holds its piece s (r0) and the odd lane's piece s (r1), the odd lane the even lane's
      // piece s + 1 (r0) and its own (r1)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (a.exchange) {
          const uint32_t x = __shfl_xor_sync(mask, h ? r0[i] : r1[i], 1);
          if (h) {
            r0[i] = x;
          } else {
            r1[i] = x;
          }
        }
        w[4 * s + i] = r0[i];
        w[4 * s + 4 + i] = r1[i];
      }
    }
  }
  // Destroys w (pairs exchange it word by word in place: no second copy of the chunk in registers).
  TK_DEV void store_split(const ChunkAccess& a, bool aligned) {
    const uint32_t h = pair_half(), mask = pair_mask();
#pragma unroll
    for (int s = 0; s < kPieces; s += 2) {
      uint32_t* o0 = w + 4 * s;      // piece s; for pairs then the even chunk's piece s + h
      uint32_t* o1 = w + 4 * s + 4;  // piece s + 1; for pairs then the odd chunk's piece s + h
      if (a.exchange) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t x = __shfl_xor_sync(mask, h ? o0[i] : o1[i], 1);
          if (h) {
            o0[i] = x;
          } else {
            o1[i] = x;
          }
        }
      }
      if (a.g0) store_chunk<kVecBytes>(reinterpret_cast<uint8_t*>(a.q0) + kVecBytes * s, o0, aligned);
      if (a.g1) store_chunk<kVecBytes>(reinterpret_cast<uint8_t*>(a.q1) + kVecBytes * s, o1, aligned);
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

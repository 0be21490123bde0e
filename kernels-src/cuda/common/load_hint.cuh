// L2 hints on the streamed input of two memory-bound casts (docs/perf-notes/perf5-hint.md): castBack /
// perTokenCastBack's segmented kernels' code loads (quant/cast_back.cu: ldst.cuh's 8- and 4-byte streamed loads) and
// the bf16 per-block kernels' 16-byte cp.async of the next tile (quant/per_block_cast.cu), chosen at run time by
// bits 8-10 of the op's `flags` parameter (CastBackParams / PerBlockCastParams). A hint changes how the bytes travel
// through L2, never which bytes are read or what is computed from them: every result is the same bit for bit with
// any combination of the bits.
//   kHintL2Line     .L2::128B  prefetch size: an L2 miss fetches the whole aligned 128-byte line
//   kHintL2Line256  .L2::256B  the aligned 256 bytes (two lines) instead; takes precedence over kHintL2Line
//   kHintEvictFirst .L2::cache_hint with an L2::evict_first policy (createpolicy.fractional, fraction 1.0)
// The hosts set one bit each, the forms that won on the H200 (perf5-hint.md, "Measured"): ops/quant/cast_back.ts
// kHintL2Line256 for e4m3 -> bf16, ops/quant/per_block_cast.ts kHintL2Line for perBlockCastWithSfOnly; no bit
// otherwise. The kernels keep the decoding of all three bits as measured.
// The bits are uniform over a launch: a kernel tests `hint != 0` once per load and otherwise issues exactly the
// unhinted instruction of ldst.cuh. The policy is created right before each hinted load (one instruction) rather
// than held in a 64-bit register across the loop, so the unhinted path keeps its registers.
// Every load is `asm volatile` (ldst.cuh: a non-volatile asm load was once hoisted out of its guard).
#pragma once
#include <stdint.h>
#include "hw.cuh"
#include "ldst.cuh"

namespace tk {

// Bits 8–10 of CastBackParams.flags / PerBlockCastParams.flags (the SF flag bits stay below 8): CAST_BACK_L2_256B of
// ops/quant/cast_back.ts is kHintL2Line256, PER_BLOCK_SF_ONLY_L2_128B of ops/quant/per_block_cast.ts kHintL2Line.
enum LoadHintFlag : uint32_t { kHintL2Line = 1u << 8, kHintL2Line256 = 1u << 9, kHintEvictFirst = 1u << 10 };
constexpr uint32_t kHintMask = kHintL2Line | kHintL2Line256 | kHintEvictFirst;

TK_DEV uint32_t load_hint_of(uint32_t flags) { return flags & kHintMask; }

TK_DEV uint64_t l2_policy_evict_first() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}

// cp_async<16> (ldst.cuh) with the hints of `hint` (nonzero). `live` false writes zeros and reads nothing.
TK_DEV void cp_async16_hinted(uint32_t dst, const void* src, bool live, uint32_t hint) {
  const uint32_t n = live ? 16 : 0;
  if (hint & kHintEvictFirst) {
    const uint64_t pol = l2_policy_evict_first();
    if (hint & kHintL2Line256) {
      asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2, %3;" ::"r"(dst), "l"(src), "r"(n), "l"(pol) : "memory");
    } else if (hint & kHintL2Line) {
      asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::128B [%0], [%1], 16, %2, %3;" ::"r"(dst), "l"(src), "r"(n), "l"(pol) : "memory");
    } else {
      asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(dst), "l"(src), "r"(n), "l"(pol) : "memory");
    }
  } else if (hint & kHintL2Line256) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n) : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n) : "memory");
  }
}

// ld_stream (ldst.cuh: ld.global.nc.L1::no_allocate) with the hints of `hint` (nonzero), 8 or 4 bytes.
TK_DEV void ld_stream_hinted(const void* p, uint32_t (&w)[2], uint32_t hint) {
  if (hint & kHintEvictFirst) {
    const uint64_t pol = l2_policy_evict_first();
    if (hint & kHintL2Line256) {
      asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v2.u32 {%0, %1}, [%2], %3;" : "=r"(w[0]), "=r"(w[1]) : "l"(p), "l"(pol));
    } else if (hint & kHintL2Line) {
      asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::128B.v2.u32 {%0, %1}, [%2], %3;" : "=r"(w[0]), "=r"(w[1]) : "l"(p), "l"(pol));
    } else {
      asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(w[0]), "=r"(w[1]) : "l"(p), "l"(pol));
    }
  } else if (hint & kHintL2Line256) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
  } else {
    asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
  }
}

TK_DEV void ld_stream_hinted(const void* p, uint32_t (&w)[1], uint32_t hint) {
  if (hint & kHintEvictFirst) {
    const uint64_t pol = l2_policy_evict_first();
    if (hint & kHintL2Line256) {
      asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.u32 %0, [%1], %2;" : "=r"(w[0]) : "l"(p), "l"(pol));
    } else if (hint & kHintL2Line) {
      asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::128B.u32 %0, [%1], %2;" : "=r"(w[0]) : "l"(p), "l"(pol));
    } else {
      asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(w[0]) : "l"(p), "l"(pol));
    }
  } else if (hint & kHintL2Line256) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(w[0]) : "l"(p));
  } else {
    asm volatile("ld.global.nc.L1::no_allocate.L2::128B.u32 %0, [%1];" : "=r"(w[0]) : "l"(p));
  }
}

// ldst.cuh's load_chunk<kBytes, kElemBytes> (streamed: L1::no_allocate) with the hints on the aligned vector load.
template <int kBytes, int kElemBytes>
TK_DEV void load_chunk_hinted(const uint8_t* p, uint32_t (&w)[kBytes / 4], bool aligned, uint32_t hint) {
  if (aligned && hint != 0) {
    ld_stream_hinted(p, w, hint);
  } else {
    load_chunk<kBytes, kElemBytes>(p, w, aligned);
  }
}

// ldst.cuh's stage_chunk<16, kElemBytes> with the hints: the aligned path's cp.async carries them when `hint` is
// nonzero; the element-wide fallback of unaligned views is unchanged.
template <int kElemBytes>
TK_DEV void stage_chunk16_hinted(uint32_t dst, const uint8_t* src, bool live, bool aligned, uint32_t hint) {
  if (aligned && hint != 0) {
    cp_async16_hinted(dst, src, live, hint);
  } else {
    stage_chunk<16, kElemBytes>(dst, src, live, aligned);
  }
}

}  // namespace tk

// Global-memory access of the memory-bound kernels: one thin wrapper per instruction form, and a chunk loader
// that falls back to element-wide accesses when a view's base or row stride is not a multiple of the vector width.
// Every load is `asm volatile`: a plain `asm` counts as side-effect free, and the compiler then hoists it out of
// the branch that guards it (an absent optional tensor's null pointer was read that way); volatile loads run
// exactly where the source puts them.
#pragma once
#include <stdint.h>
#include "fp.cuh"
#include "hw.cuh"

namespace tk {

// Streamed input: read once, through the non-coherent path, without allocating in L1 (the data is not reused by
// this SM, and keeping L1 free leaves room for the scale tables that are). DeepGEMM's ld_nc pattern.
TK_DEV void ld_stream(const void* p, uint32_t (&w)[4]) {
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(p));
}
TK_DEV void ld_stream(const void* p, uint32_t (&w)[2]) {
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
}
TK_DEV void ld_stream(const void* p, uint32_t (&w)[1]) {
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(w[0]) : "l"(p));
}

// Input that is read twice by the same CTA (the one-scale-per-row cast): allocate in L1 so the second pass hits.
TK_DEV void ld_cached(const void* p, uint32_t (&w)[4]) {
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(p));
}
TK_DEV void ld_cached(const void* p, uint32_t (&w)[2]) {
  asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
}
TK_DEV void ld_cached(const void* p, uint32_t (&w)[1]) {
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(w[0]) : "l"(p));
}

// Read-only scalars (scales, indices): plain non-coherent loads, cached, since neighbouring lanes share them.
TK_DEV uint32_t ld_u8(const void* p) {
  uint32_t v;
  asm volatile("ld.global.nc.u8 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
TK_DEV uint32_t ld_u16(const void* p) {
  uint16_t v;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
TK_DEV uint32_t ld_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Stores of a thread's output chunk, 1 to 16 bytes (the address is aligned to the size by construction).
TK_DEV void st_u8(void* p, uint32_t v) { asm volatile("st.global.u8 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }
TK_DEV void st_u16(void* p, uint32_t v) {
  asm volatile("st.global.u16 [%0], %1;" ::"l"(p), "h"(static_cast<uint16_t>(v)) : "memory");
}
TK_DEV void st_u32(void* p, uint32_t v) { asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }
TK_DEV void st_v2(void* p, uint32_t a, uint32_t b) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(a), "r"(b) : "memory");
}
TK_DEV void st_v4(void* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// Store kBytes (2, 4, 8, 16, 32, ...) held little-endian in w[] at a kBytes-aligned address (wider than 16: several
// 16-byte stores), or byte by byte when `aligned` is false.
template <int kBytes>
TK_DEV void store_chunk(uint8_t* p, const uint32_t* w, bool aligned) {
  if (aligned) {
    if constexpr (kBytes == 2) {
      st_u16(p, w[0]);
    } else if constexpr (kBytes == 4) {
      st_u32(p, w[0]);
    } else if constexpr (kBytes == 8) {
      st_v2(p, w[0], w[1]);
    } else {
      static_assert(kBytes % 16 == 0, "store_chunk: 2, 4, 8 or a multiple of 16 bytes");
#pragma unroll
      for (int i = 0; i < kBytes / 16; ++i) st_v4(p + 16 * i, w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kBytes; ++i) st_u8(p + i, (w[i / 4] >> (8 * (i % 4))) & 0xffu);
  }
}

// Load one thread's chunk of kBytes (4, 8 or 16) from the input. Fast path: one vector load (the caller has
// checked that the base and the row stride are multiples of kBytes; the flag is uniform over the launch, so the
// branch costs nothing). Otherwise element-wide loads of kElemBytes (4 fp32, 2 bf16, 1 for codes), which any
// valid view of the dtype satisfies.
template <int kBytes, int kElemBytes, bool kStream = true>
TK_DEV void load_chunk(const uint8_t* p, uint32_t (&w)[kBytes / 4], bool aligned) {
  if (aligned) {
    if constexpr (kStream) {
      ld_stream(p, w);
    } else {
      ld_cached(p, w);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kBytes / 4; ++i) {
      if constexpr (kElemBytes == 4) {
        w[i] = ld_u32(p + 4 * i);
      } else if constexpr (kElemBytes == 2) {
        w[i] = ld_u16(p + 4 * i) | (ld_u16(p + 4 * i + 2) << 16);
      } else {
        w[i] = ld_u8(p + 4 * i) | (ld_u8(p + 4 * i + 1) << 8) | (ld_u8(p + 4 * i + 2) << 16) |
               (ld_u8(p + 4 * i + 3) << 24);
      }
    }
  }
}

// ---- asynchronous global → shared copies (cp.async, sm_80+) ------------------------------------------------------
// A thread copies its next chunks into its own shared-memory slots while it computes on the current ones: the
// bytes in flight then cost no registers and never wait for the arithmetic, which is what keeps HBM busy. Each
// slot is written and read by the same thread only, so cp.async.wait_group alone orders them (no barrier).

TK_DEV uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// Copy kBytes (4, 8 or 16) to shared memory; `live` false writes zeros and reads nothing (src-size 0).
template <int kBytes>
TK_DEV void cp_async(uint32_t dst, const void* src, bool live) {
  const uint32_t n = live ? kBytes : 0;
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(dst), "l"(src), "n"(kBytes), "r"(n) : "memory");
  }
}
// 16 bytes through L1 (.ca): for data that the other threads of the CTA read too (cp_async<16> bypasses L1).
TK_DEV void cp_async_ca16(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
// cp_async<16> with the L2 prefetch-size hint: a miss makes the L2 fetch the whole aligned 128-byte line, so that a
// second 16-byte request into the same line (a thread's other vector, or a neighbour's) finds it there or in flight.
TK_DEV void cp_async_l2_128(uint32_t dst, const void* src, bool live) {
  const uint32_t n = live ? 16 : 0;
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
TK_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Wait until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
TK_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

TK_DEV void st_shared(uint32_t a, const uint32_t (&w)[4]) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
}
TK_DEV void st_shared(uint32_t a, const uint32_t (&w)[2]) {
  asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(a), "r"(w[0]), "r"(w[1]) : "memory");
}
TK_DEV void st_shared(uint32_t a, const uint32_t (&w)[1]) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(a), "r"(w[0]) : "memory");
}
TK_DEV void ld_shared(uint32_t a, uint32_t (&w)[4]) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "r"(a) : "memory");
}
TK_DEV void ld_shared(uint32_t a, uint32_t (&w)[2]) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "r"(a) : "memory");
}
TK_DEV void ld_shared(uint32_t a, uint32_t (&w)[1]) {
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w[0]) : "r"(a) : "memory");
}

// Stage one chunk of kBytes into shared memory: asynchronously when the view allows kBytes-aligned accesses,
// otherwise through registers with element-wide loads (correct for any element-aligned view, not overlapped).
template <int kBytes, int kElemBytes>
TK_DEV void stage_chunk(uint32_t dst, const uint8_t* src, bool live, bool aligned) {
  if (aligned) {
    cp_async<kBytes>(dst, src, live);
  } else {
    uint32_t w[kBytes / 4] = {};
    if (live) load_chunk<kBytes, kElemBytes>(src, w, false);
    st_shared(dst, w);
  }
}

// Whether a (pointer, row stride in bytes) view allows kBytes-wide accesses on every row.
TK_DEV bool rows_aligned(uint64_t base, uint64_t row_stride_bytes, uint32_t bytes) {
  return ((base | row_stride_bytes) & (bytes - 1)) == 0;
}

}  // namespace tk

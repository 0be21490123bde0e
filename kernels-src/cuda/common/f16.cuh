// Half-precision storage of the rope and randn kernels, and global accesses for data a kernel rewrites in place.
// fp16 follows IEEE binary16 with the CPU reference's rules (core/dtype.ts): RNE with subnormals and overflow to
// ±Inf, NaN → 0x7E00 with the binary32 sign.
#pragma once
#include <stdint.h>
#include "fp.cuh"

namespace tk {

#if defined(__CUDACC__)
// binary16 bits → binary32, exact (cvt.f32.f16 keeps subnormals; no .ftz).
TK_DEV float decode_fp16(uint32_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<uint16_t>(h)));
  return f;
}
TK_DEV float fp16_lo(uint32_t w) { return decode_fp16(w & 0xffffu); }
TK_DEV float fp16_hi(uint32_t w) { return decode_fp16(w >> 16); }

// binary32 → binary16 bits: cvt.rn.f16.f32 is the IEEE conversion (RNE, subnormal results, ±Inf beyond 65520);
// only its NaN (0x7FFF) differs from the reference's 0x7E00 | sign.
TK_DEV uint32_t encode_fp16(float v) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  const uint32_t u = f2u(v);
  return is_nan_bits(u) ? (0x7e00u | ((u >> 16) & 0x8000u)) : static_cast<uint32_t>(h);
}

// ---- in-place data -------------------------------------------------------------------------------------------
// A tensor rewritten by the same launch must not be read through the non-coherent path (ld.global.nc requires
// the data to be read-only for the whole kernel). These loads are coherent, skip L1 allocation (each byte is
// read once), and are volatile so that a thread's loads of several items stay in front of its stores of them:
// the compiler cannot prove two strided addresses distinct, and would otherwise serialise load/store pairs.
TK_DEV void ld_inplace(const void* p, uint32_t (&w)[4]) {
  asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(p));
}
TK_DEV uint32_t ld_inplace_u16(const void* p) {
  uint16_t v;
  asm volatile("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
TK_DEV uint32_t ld_inplace_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Read-only 64-bit scalar (int64 positions).
TK_DEV uint64_t ld_u64(const void* p) {
  uint64_t v;
  asm volatile("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}
#endif

}  // namespace tk

// Exact binary32 building blocks (spec/quant.md §1.1). Every arithmetic step of a cast is spelled with these so
// that a reader sees the one rounding the spec asks for: RN multiply/divide, never a contracted FMA, never an
// approximate reciprocal, and max with maximumNumber semantics. They also compile for the host, so the codecs
// can be checked exhaustively against the spec's pseudo-code on a CPU.
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define TK_HD __host__ __device__ __forceinline__
#define TK_DEV __device__ __forceinline__
#else
#define TK_HD inline
#define TK_DEV inline
#endif

#if !defined(__CUDA_ARCH__)
#include <cmath>
#include <cstring>
#endif

namespace tk {

TK_HD uint32_t f2u(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
#endif
}

TK_HD float u2f(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float v;
  std::memcpy(&v, &u, 4);
  return v;
#endif
}

// fl(a·b), fl(a+b), fl(a/b): one IEEE operation each, round to nearest even. The explicit intrinsics keep the
// compiler from fusing a product into a later add even if someone builds without -fmad=false.
TK_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

TK_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

TK_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// IEEE maximumNumber: a NaN operand is ignored (fmaxf/FMNMX behave so on the GPU; std::fmax on the host).
TK_HD float max_num(float a, float b) {
#if defined(__CUDA_ARCH__)
  return fmaxf(a, b);
#else
  return std::fmax(a, b);
#endif
}

TK_HD float abs_f(float v) { return u2f(f2u(v) & 0x7fffffffu); }

TK_HD bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

#if defined(__CUDACC__)
// c ? a : b, opaque to the optimizer: a chain of these picking one element of a register array by a runtime index
// stays a chain of selects, where the plain ternary is folded into an indexed load from local memory.
TK_DEV uint32_t select_u32(bool c, uint32_t a, uint32_t b) {
  uint32_t r;
  asm("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %3, 0;\n\tselp.b32 %0, %1, %2, q;\n\t}"
      : "=r"(r)
      : "r"(a), "r"(b), "r"(static_cast<uint32_t>(c)));
  return r;
}
TK_DEV float select_f32(bool c, float a, float b) { return u2f(select_u32(c, f2u(a), f2u(b))); }
#endif

}  // namespace tk

// Element formats as they sit in a thread's chunk of 32-bit words (little-endian: element 0 in the low bits of
// word 0), and the per-chunk encoders of the cast outputs. Shared by every kernel that reads or writes
// fp32 / bf16 / e4m3 / e2m1x2 rows (and fp16 rows of the generic cast's per-token form, decode_chunk only).
#pragma once
#include <stdint.h>
#include "codec.cuh"

namespace tk {

// kFp16 comes last so that the other values (template arguments of every kernel) keep their numbers.
enum class Fmt { kFp32, kBf16, kE4m3, kE2m1, kFp16 };

template <Fmt kFmt>
struct FmtTraits;
template <>
struct FmtTraits<Fmt::kFp32> {
  static constexpr int kBits = 32;
  static constexpr int kAccessBytes = 4;  // narrowest access a valid (element-aligned) view allows
  static constexpr bool kCode = false;    // a quantized code (needs a scale) or a value
};
template <>
struct FmtTraits<Fmt::kBf16> {
  static constexpr int kBits = 16;
  static constexpr int kAccessBytes = 2;
  static constexpr bool kCode = false;
};
template <>
struct FmtTraits<Fmt::kFp16> {
  static constexpr int kBits = 16;
  static constexpr int kAccessBytes = 2;
  static constexpr bool kCode = false;
};
template <>
struct FmtTraits<Fmt::kE4m3> {
  static constexpr int kBits = 8;
  static constexpr int kAccessBytes = 1;
  static constexpr bool kCode = true;
  static constexpr float kQmax = kE4m3Max;
};
template <>
struct FmtTraits<Fmt::kE2m1> {
  static constexpr int kBits = 4;
  static constexpr int kAccessBytes = 1;  // e2m1x2: rows are counted in bytes
  static constexpr bool kCode = true;
  static constexpr float kQmax = kE2m1Max;
};

// Element i of a chunk, widened exactly to binary32 (codes decoded, not scaled).
// fp16 widens in decode_chunk only (the hardware conversion; this header cannot include f16.cuh, whose encode_fp16
// collides with stochastic.cuh's in the files that include both).
template <Fmt kFmt>
TK_HD float element(const uint32_t* w, int i) {
  static_assert(kFmt != Fmt::kFp16, "fp16 chunks: decode_chunk");
  if constexpr (kFmt == Fmt::kFp32) {
    return u2f(w[i]);
  } else if constexpr (kFmt == Fmt::kBf16) {
    return (i & 1) ? bf16_hi(w[i / 2]) : bf16_lo(w[i / 2]);
  } else if constexpr (kFmt == Fmt::kE4m3) {
    return decode_e4m3((w[i / 4] >> (8 * (i % 4))) & 0xffu);
  } else {
    return decode_e2m1((w[i / 8] >> (4 * (i % 8))) & 0xfu);
  }
}

#if defined(__CUDACC__)
// Widen kVec elements of a chunk to binary32 (codes decoded, not scaled); e4m3 two at a time in hardware, fp16 by
// cvt.f32.f16 (exact, subnormals kept: f16.cuh's decode_fp16).
template <Fmt kFmt, int kVec>
TK_DEV void decode_chunk(const uint32_t* w, float* v) {
  if constexpr (kFmt == Fmt::kE4m3) {
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i) decode_e4m3x2(w[i / 2] >> (16 * (i % 2)), v[2 * i], v[2 * i + 1]);
  } else if constexpr (kFmt == Fmt::kFp16) {
#pragma unroll
    for (int i = 0; i < kVec; ++i) asm("cvt.f32.f16 %0, %1;" : "=f"(v[i]) : "h"(static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2)))));
  } else {
#pragma unroll
    for (int i = 0; i < kVec; ++i) v[i] = element<kFmt>(w, i);
  }
}
#endif

// Encode kVec binary32 values (RN, §1.2/§1.3) into the output format's packed words: e4m3 one byte each, e2m1
// one nibble each (element 2i in the low nibble of byte i).
template <Fmt kOut, int kVec>
TK_DEV void encode_chunk(const float* v, uint32_t* out) {
  if constexpr (kOut == Fmt::kE4m3) {
    static_assert(kVec % 4 == 0, "encode_chunk<e4m3>: whole words");
#pragma unroll
    for (int i = 0; i < kVec / 4; ++i) out[i] = encode_e4m3x4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
  } else {
    static_assert(kOut == Fmt::kE2m1 && kVec % 4 == 0, "encode_chunk<e2m1>: whole half-words");
#pragma unroll
    for (int i = 0; i < (kVec + 7) / 8; ++i) out[i] = 0;
#pragma unroll
    for (int i = 0; i < kVec; ++i) out[i / 8] |= encode_e2m1(v[i]) << (4 * (i % 8));
  }
}

}  // namespace tk

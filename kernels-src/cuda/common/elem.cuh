// Element types of the generic cast (spec/quant.md §7.1) as they sit in a thread's chunk of 32-bit words
// (little-endian: element 0 in the low bits of word 0), their exact widening to binary32 and their RN encoders.
#pragma once
#include <stdint.h>
#include "codec.cuh"
#include "fp.cuh"
#include "ldst.cuh"
#include "stochastic.cuh"

namespace tk {

enum class Elem { kFp32, kBf16, kFp16, kE4m3 };

template <Elem kT>
constexpr int kElemBytes = kT == Elem::kFp32 ? 4 : (kT == Elem::kE4m3 ? 1 : 2);

// Raw storage element i of a chunk.
template <Elem kT>
TK_DEV uint32_t raw_element(const uint32_t* w, int i) {
  constexpr int kBits = 8 * kElemBytes<kT>;
  if constexpr (kBits == 32) {
    return w[i];
  } else {
    constexpr int kPer = 32 / kBits;
    return (w[i / kPer] >> (kBits * (i % kPer))) & ((1u << kBits) - 1u);
  }
}

// Place raw storage element i into a chunk of output words (the words start zeroed).
template <Elem kT>
TK_DEV void put_element(uint32_t* w, int i, uint32_t raw) {
  constexpr int kBits = 8 * kElemBytes<kT>;
  if constexpr (kBits == 32) {
    w[i] = raw;
  } else {
    constexpr int kPer = 32 / kBits;
    w[i / kPer] |= raw << (kBits * (i % kPer));
  }
}

// The binary32 pattern of a source element, widened exactly. `kHashed`: the widening the stochastic hash sees
// (stochastic.ref.ts widenBits: an fp16 NaN keeps its sign and payload, quieted). Otherwise the RN cast's
// (cast.ref.ts: an fp16 or e4m3 NaN becomes the one quiet NaN 0x7FC00000, as the CPU reference's decoders give;
// a bf16 element is its pattern shifted, NaN payloads included).
template <Elem kT, bool kHashed>
TK_DEV uint32_t widen_bits(uint32_t raw) {
  if constexpr (kT == Elem::kFp32) {
    return raw;
  } else if constexpr (kT == Elem::kBf16) {
    return raw << 16;
  } else if constexpr (kT == Elem::kFp16) {
    const uint32_t b = widen_fp16_bits(raw);
    return (!kHashed && is_nan_bits(b)) ? 0x7fc00000u : b;
  } else {
    return f2u(decode_e4m3(raw));
  }
}

// RN encode of a binary32 pattern into the target (§1.2, §1.5); fp32 keeps the pattern.
template <Elem kT>
TK_DEV uint32_t encode_rn(uint32_t bits) {
  if constexpr (kT == Elem::kFp32) {
    return bits;
  } else if constexpr (kT == Elem::kBf16) {
    return encode_bf16(u2f(bits));
  } else if constexpr (kT == Elem::kFp16) {
    return encode_fp16(u2f(bits));
  } else {
    return encode_e4m3(u2f(bits));
  }
}

// Load kBytes (a multiple of 4, up to 64) of one thread's chunk: 16-byte (or 8-byte) vector loads when
// `aligned`, element-wide loads of kAccess bytes otherwise.
template <int kBytes, int kAccess>
TK_DEV void load_span(const uint8_t* p, uint32_t (&w)[kBytes / 4], bool aligned) {
  if constexpr (kBytes <= 16) {
    load_chunk<kBytes, kAccess>(p, w, aligned);
  } else {
    static_assert(kBytes % 16 == 0, "load_span: up to 16 bytes, or a multiple of 16");
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) {
      uint32_t part[4];
      load_chunk<16, kAccess>(p + 16 * i, part, aligned);
#pragma unroll
      for (int j = 0; j < 4; ++j) w[4 * i + j] = part[j];
    }
  }
}

}  // namespace tk

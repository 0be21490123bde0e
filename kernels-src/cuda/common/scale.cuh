// Scale factors: the one sfAndInv of spec/quant.md §2.3 shared by every cast (per-token, per-block, per-channel,
// SwiGLU+cast, RMSNorm+cast, cast-and-cast-back), and the storage layouts of §4 for reading and writing them.
#pragma once
#include <stdint.h>
#include "codec.cuh"
#include "hw.cuh"
#if defined(__CUDACC__)
#include "ldst.cuh"
#endif

namespace tk {

// Storage of a scale tensor (the SF_KIND of ops/quant/per_token_cast.params.ts).
enum SfKind : uint32_t {
  kSfFp32 = 0,           // binary32 values
  kSfE4m3 = 1,           // e4m3 bytes (§4.3)
  kSfPackedChannel = 2,  // ue8m0 bytes, 4 consecutive column blocks per int32 word, first in the low byte (§4.2-1/2)
  kSfPackedToken = 3,    // ue8m0 bytes, 4 consecutive row blocks per int32 word (§4.2-3)
};

// Options of a cast that shape its scale (PER_TOKEN_FLAG).
enum SfFlag : uint32_t { kSfRound = 1, kSfPackedUe8m0 = 2, kSfE4m3Out = 4 };

struct ScaleAndInv {
  uint32_t stored;  // what goes into the sf tensor: binary32 bits, an e4m3 byte, or a ue8m0 byte
  float scale;      // the binary32 scale s that dequantizes (decode(q)·s): 2^e, sfRaw or decodeE4m3(c)
  float inv;        // the factor the cast multiplies by
};

// §2.3, literally. `amax` is the maximumNumber of the group's |x| (NaN already ignored); `clamp_min` is the
// configured lower bound (§2.2), which keeps sfRaw a positive normal number for finite amax.
TK_HD ScaleAndInv sf_and_inv(float amax, float clamp_min, float qmax, uint32_t flags) {
  const float a = max_num(amax, clamp_min);  // an all-NaN group (amax NaN) becomes clamp_min
  const float sf_raw = div_rn(a, qmax);
  ScaleAndInv r;
  if (flags & kSfRound) {
    // 127 + ceil(log2 sfRaw) for a positive normal sfRaw: subtracting 1 turns an exact power of two into the
    // largest value of the binade below, so the +1 lands on it again. uint32 wrap is part of the definition
    // (a = +Inf gives e = 128: sf = +Inf, byte 0xFF, inv = f32(0xFF800000) = -Inf).
    const uint32_t biased = ((f2u(sf_raw) - 1u) >> 23) + 1u;
    const uint32_t sf_bits = biased << 23;
    r.stored = (flags & kSfPackedUe8m0) ? (biased & 0xffu) : sf_bits;
    r.scale = u2f(sf_bits);
    r.inv = u2f((254u - biased) << 23);  // (127 - e) << 23, uint32 wrap
  } else if (flags & kSfE4m3Out) {
    const uint32_t c = encode_e4m3(sf_raw);
    r.stored = c;
    r.scale = decode_e4m3(c);
    r.inv = div_rn(1.0f, r.scale);
  } else {
    r.stored = f2u(sf_raw);
    r.scale = sf_raw;
    r.inv = div_rn(qmax, a);  // its own division: fl(1/sf) differs in the last bit for many a
  }
  return r;
}

#if defined(__CUDACC__)  // device-side layouts; sf_and_inv above also builds on the host for exhaustive checks
// The storage element of S[m][k] (binary32 bits, or the e4m3 / ue8m0 byte) of a scale tensor. Strides are in
// storage elements (binary32, byte or int32 word), so row-major and column-major tensors are the same code; packed
// kinds address the byte inside the little-endian word directly. Split from the decode so that a kernel can issue
// the load early (with its data) and decode when it needs the value.
TK_DEV uint32_t scale_storage(uint64_t sf, uint32_t kind, uint64_t s0, uint64_t s1, uint64_t m, uint64_t k) {
  const uint8_t* base = reinterpret_cast<const uint8_t*>(sf);
  switch (kind) {
    case kSfFp32:
      return ld_u32(base + 4 * (m * s0 + k * s1));
    case kSfE4m3:
      return ld_u8(base + m * s0 + k * s1);
    case kSfPackedChannel:
      return ld_u8(base + 4 * (m * s0 + (k / kUe8m0PerWord) * s1) + k % kUe8m0PerWord);
    default:  // kSfPackedToken
      return ld_u8(base + 4 * ((m / kUe8m0PerWord) * s0 + k * s1) + m % kUe8m0PerWord);
  }
}

TK_DEV float decode_scale(uint32_t kind, uint32_t raw) {
  return kind == kSfFp32 ? u2f(raw) : kind == kSfE4m3 ? decode_e4m3(raw) : decode_ue8m0(raw);
}

// Decoded scale S[m][k].
TK_DEV float load_scale(uint64_t sf, uint32_t kind, uint64_t s0, uint64_t s1, uint64_t m, uint64_t k) {
  return decode_scale(kind, scale_storage(sf, kind, s0, s1, m, k));
}

// Output scale tensor of a per-token or per-block cast: fp32 / e4m3 / channel-packed ue8m0, any strides.
struct SfOut {
  uint8_t* base;
  uint64_t s0, s1;  // storage elements
  uint32_t flags;   // SfFlag bits: which storage
  uint32_t nbk;     // scale columns (logical)

  // Write S[m][k]. For packed storage the word's unused bytes (columns ≥ nbk in the last word) are written 0 by
  // the writer of the last column, so every byte of the tensor is defined (§4 padding rule); bytes of one word
  // written by different threads are distinct bytes, which stores never tear.
  TK_DEV void store(uint64_t m, uint32_t k, uint32_t stored) const {
    if (flags & kSfPackedUe8m0) {
      uint8_t* word = base + 4 * (m * s0 + (k / kUe8m0PerWord) * s1);
      st_u8(word + k % kUe8m0PerWord, stored);
      if (k == nbk - 1)
        for (uint32_t b = k % kUe8m0PerWord + 1; b < kUe8m0PerWord; ++b) st_u8(word + b, 0);
    } else if (flags & kSfE4m3Out) {
      st_u8(base + m * s0 + k * s1, stored);
    } else {
      st_u32(base + 4 * (m * s0 + k * s1), stored);
    }
  }

  // Zero the alignment rows [rows, padded_rows) of a column-major layout (every storage element of them).
  // Grid-stride over all threads of the launch; row-major layouts have padded_rows == rows and do nothing.
  TK_DEV void zero_padding_rows(uint32_t rows, uint32_t padded_rows) const {
    if (padded_rows <= rows) return;
    const bool packed = flags & kSfPackedUe8m0;
    const uint32_t units = packed ? (nbk + kUe8m0PerWord - 1) / kUe8m0PerWord : nbk;  // storage elements per row
    const uint64_t total = static_cast<uint64_t>(padded_rows - rows) * units;
    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += threads) {
      const uint64_t m = rows + i / units, u = i % units;
      const uint64_t off = m * s0 + u * s1;
      if (packed || !(flags & kSfE4m3Out)) {
        st_u32(base + 4 * off, 0);
      } else {
        st_u8(base + off, 0);
      }
    }
  }
};
#endif  // __CUDACC__

}  // namespace tk

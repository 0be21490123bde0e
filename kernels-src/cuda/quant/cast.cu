// The generic element conversion of `cast` (spec/quant.md §7.1, round to nearest) and its stochastic-rounding
// form (`stochasticCast`, `cast` with stochasticRounding: §7.2–§7.4, software rounding on every architecture).
//
// Symbols
//   tk_cast__<in>_<out>      in, out ∈ {fp32, bf16, fp16, e4m3}: RN (in == out copies the bytes)
//   tk_cast__<in>_<out>_sr   (fp32 → bf16 | fp16 | e4m3), (bf16 | fp16 → e4m3): stochastic rounding
//   tk_cast__bf16_e4m3_a     the aligned-only form of bf16 → e4m3 RN (SR: `_sr_a12` of cast_sr12.cu, ElemCast<…,
//                            true, true> with another encoder): the same kernel with the unaligned fallback compiled
//                            out (x and out on a chunk boundary, 8 elements of each dtype: the host
//                            (ops/quant/elem_launch.ts) takes them whenever that holds; they trap otherwise).
//                            ptxas if-converts the fallback into predicated 2-byte loads that issue beside every
//                            16-byte load: +0.2–0.7 points RN, +3.0–3.6 points SR on an H200. fp32 → e4m3 and
//                            fp32 → bf16 had such forms too and tied, so they were not kept (docs/perf-notes/
//                            perf9-cast.md).
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, the kernel is grid-stride):
//
//   kernel      block.x  dynamic smem  grid.x
//   tk_cast__*  256      0             max(1, min(ceilDiv(ceilDiv(numel, 8), 256 · U), 4 · SMs))
//
//   A thread chunk is 8 consecutive elements (two stochastic quads): 8–32 bytes in and out. A thread loads U chunks
//   (U = 2 for fp32 sources, 4 otherwise: 32–64 bytes in flight per thread) before it converts and stores them;
//   consecutive threads take consecutive chunks, so every warp access is contiguous. Sources or outputs whose
//   address is not a multiple of the chunk size (views with an element offset) take element-wide loads / byte
//   stores: same kernel (for bf16 → e4m3 the plain symbol, not `_a`), slower, correct. The last numel % 8 elements
//   are converted one element (RN) or one quad (SR) per thread by the first threads of the grid. No shared memory.
#include "../common/elem.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/stochastic.cuh"
#include "../generated/elem_params.h"

// A file that includes this one may swap the e4m3 quad encoder of the stochastic chunks (same signature as
// sr_encode_e4m3_quads) and keep the kernels below out of its image (cast_sr12.cu)
#ifndef TK_CAST_SR_E4M3_QUADS
#define TK_CAST_SR_E4M3_QUADS sr_encode_e4m3_quads
#endif

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr int kChunk = 8;  // elements per thread chunk

template <Elem kT>
constexpr SrTarget kSrTargetOf = kT == Elem::kBf16 ? SrTarget::kBf16 : kT == Elem::kFp16 ? SrTarget::kFp16 : SrTarget::kE4m3;

// Convert one stochastic quad (source patterns b[0..3], flat quad index q) into raw target elements o[0..3].
template <Elem kIn, Elem kOut>
TK_DEV void sr_quad(const uint32_t (&b)[4], uint64_t q, uint32_t idx_base, uint32_t (&o)[4]) {
  const SrBits r = sr_mix(b[0], b[1], b[2], b[3], idx_base + static_cast<uint32_t>(q));
  constexpr SrTarget kT = kSrTargetOf<kOut>;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // 8-bit targets: byte i of r0; 16-bit targets: halves of r0 (elements 0, 1) then of r1 (2, 3)
    const uint32_t R = SrRule<kT>::kN == 8 ? (r.r0 >> (8 * i)) & 0xffu : ((i < 2 ? r.r0 : r.r1) >> (16 * (i & 1))) & 0xffffu;
    o[i] = sr_encode<kT>(b[i], R);
  }
}

template <Elem kIn, Elem kOut, bool kSr, bool kAligned = false>
struct ElemCast {
  static constexpr int kInBytes = kChunk * kElemBytes<kIn>;
  static constexpr int kOutBytes = kChunk * kElemBytes<kOut>;
  static constexpr int kInWords = kInBytes / 4;
  static constexpr int kOutWords = kOutBytes / 4;
  static constexpr int kU = kElemBytes<kIn> == 4 ? 2 : 4;

  // Chunk conversion: raw source words → raw output words; `first` is the chunk's first flat element.
  TK_DEV static void convert(const uint32_t (&w)[kInWords], uint32_t (&o)[kOutWords], uint64_t first, uint32_t idx_base) {
    if constexpr (kIn == kOut && !kSr) {
#pragma unroll
      for (int i = 0; i < kOutWords; ++i) o[i] = w[i];
    } else {
#pragma unroll
      for (int i = 0; i < kOutWords; ++i) o[i] = 0;
      if constexpr (kSr && kOut == Elem::kE4m3) {
        uint32_t b[kChunk], r0[kChunk / 4];
#pragma unroll
        for (int i = 0; i < kChunk; ++i) b[i] = widen_bits<kIn, true>(raw_element<kIn>(w, i));
#pragma unroll
        for (int h = 0; h < kChunk / 4; ++h)
          r0[h] = sr_mix(b[4 * h], b[4 * h + 1], b[4 * h + 2], b[4 * h + 3], idx_base + static_cast<uint32_t>(first / 4 + h)).r0;
        TK_CAST_SR_E4M3_QUADS<kChunk / 4>(b, r0, o);
      } else if constexpr (kSr) {
#pragma unroll
        for (int h = 0; h < kChunk / 4; ++h) {
          uint32_t b[4], r[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) b[i] = widen_bits<kIn, true>(raw_element<kIn>(w, 4 * h + i));
          sr_quad<kIn, kOut>(b, first / 4 + h, idx_base, r);
#pragma unroll
          for (int i = 0; i < 4; ++i) put_element<kOut>(o, 4 * h + i, r[i]);
        }
      } else if constexpr (kOut == Elem::kE4m3) {
        // the hardware RN satfinite conversion with the NaN fix-up (codec.cuh: checked equal to encode_e4m3)
#pragma unroll
        for (int i = 0; i < kChunk / 4; ++i) {
          float v[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) v[j] = u2f(widen_bits<kIn, false>(raw_element<kIn>(w, 4 * i + j)));
          o[i] = encode_e4m3x4(v[0], v[1], v[2], v[3]);
        }
      } else {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) put_element<kOut>(o, i, encode_rn<kOut>(widen_bits<kIn, false>(raw_element<kIn>(w, i))));
      }
    }
  }

  // Elements [first, numel) that do not fill a chunk (fewer than 8): one element (RN) or one quad (SR) per thread.
  TK_DEV static void tail(const CastParams& p, uint64_t first, uint64_t gtid) {
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    uint8_t* out = reinterpret_cast<uint8_t*>(p.out);
    constexpr int kOb = kElemBytes<kOut>;
    if constexpr (kSr) {
      const uint64_t e = first + 4 * gtid;
      if (e >= p.numel) return;  // numel % 4 == 0: whole quads
      uint32_t b[4], r[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) b[i] = widen_bits<kIn, true>(load_element(x + (e + i) * kElemBytes<kIn>));
      sr_quad<kIn, kOut>(b, e / 4, p.idx_base, r);
#pragma unroll
      for (int i = 0; i < 4; ++i) store_element(out + (e + i) * kOb, r[i]);
    } else {
      const uint64_t e = first + gtid;
      if (e >= p.numel) return;
      const uint32_t raw = load_element(x + e * kElemBytes<kIn>);
      store_element(out + e * kOb, kIn == kOut ? raw : encode_rn<kOut>(widen_bits<kIn, false>(raw)));
    }
  }

  TK_DEV static uint32_t load_element(const uint8_t* p) {
    if constexpr (kElemBytes<kIn> == 4) return ld_u32(p);
    if constexpr (kElemBytes<kIn> == 2) return ld_u16(p);
    return ld_u8(p);
  }
  TK_DEV static void store_element(uint8_t* p, uint32_t v) {
    if constexpr (kElemBytes<kOut> == 4) {
      st_u32(p, v);
    } else if constexpr (kElemBytes<kOut> == 2) {
      st_u16(p, v);
    } else {
      st_u8(p, v);
    }
  }

  TK_DEV static void run(const CastParams& p) {
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    uint8_t* out = reinterpret_cast<uint8_t*>(p.out);
    const uint64_t chunks = p.numel / kChunk;
    if constexpr (kAligned) {
      if (((p.x % kInBytes) | (p.out % kOutBytes)) != 0) __trap();  // the host launches the _a forms only aligned
    }
    const bool in_aligned = kAligned || (p.x % kInBytes) == 0;
    const bool out_aligned = kAligned || (p.out % kOutBytes) == 0;
    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    const uint64_t gtid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (uint64_t base = gtid; base < chunks; base += kU * threads) {
      uint32_t w[kU][kInWords];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint64_t c = base + u * threads;
#pragma unroll
        for (int i = 0; i < kInWords; ++i) w[u][i] = 0;
        if (c < chunks) load_span<kInBytes, kElemBytes<kIn>>(x + c * kInBytes, w[u], in_aligned);
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint64_t c = base + u * threads;
        if (c < chunks) {
          uint32_t o[kOutWords];
          convert(w[u], o, c * kChunk, p.idx_base);
          store_chunk<kOutBytes>(out + c * kOutBytes, o, out_aligned);
        }
      }
    }
    tail(p, chunks * kChunk, gtid);
  }
};

}  // namespace
}  // namespace tk

#ifndef TK_CAST_NO_KERNELS
#define TK_CAST(in, IN, out, OUT)                                                                               \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)                                              \
      tk_cast__##in##_##out(const __grid_constant__ CastParams p) {                                             \
    tk::ElemCast<tk::Elem::IN, tk::Elem::OUT, false>::run(p);                                                    \
  }
#define TK_CAST_SR(in, IN, out, OUT)                                                                            \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)                                              \
      tk_cast__##in##_##out##_sr(const __grid_constant__ CastParams p) {                                        \
    tk::ElemCast<tk::Elem::IN, tk::Elem::OUT, true>::run(p);                                                     \
  }
#define TK_CAST_A(in, IN, out, OUT)                                                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)                                              \
      tk_cast__##in##_##out##_a(const __grid_constant__ CastParams p) {                                         \
    tk::ElemCast<tk::Elem::IN, tk::Elem::OUT, false, true>::run(p);                                              \
  }
#define TK_CAST_FROM(in, IN)        \
  TK_CAST(in, IN, fp32, kFp32)      \
  TK_CAST(in, IN, bf16, kBf16)      \
  TK_CAST(in, IN, fp16, kFp16)      \
  TK_CAST(in, IN, e4m3, kE4m3)

TK_CAST_FROM(fp32, kFp32)
TK_CAST_FROM(bf16, kBf16)
TK_CAST_FROM(fp16, kFp16)
TK_CAST_FROM(e4m3, kE4m3)
TK_CAST_SR(fp32, kFp32, bf16, kBf16)
TK_CAST_SR(fp32, kFp32, fp16, kFp16)
TK_CAST_SR(fp32, kFp32, e4m3, kE4m3)
TK_CAST_SR(bf16, kBf16, e4m3, kE4m3)
TK_CAST_SR(fp16, kFp16, e4m3, kE4m3)
TK_CAST_A(bf16, kBf16, e4m3, kE4m3)
// (The aligned SR form runs with the scaled-domain encoder of cast_sr12.cu, `_sr_a12`; this file's `_sr_a` left the
// package in trim24, docs/branches/trim24-removed.patch.)
#endif  // TK_CAST_NO_KERNELS

// perTokenCastAndCastBack (spec/quant.md §2.5): simulated per-token quantization, in place. Per group of N
// columns of a row: (sf, inv) = sfAndInv(amax) (§2.3, the shared sf_and_inv), q = RN code of fl(x·inv) (§2.4), then
// x ← convert(fl(decode(q)·s)) (§2.6) with s the binary32 scale (2^e, sfRaw or decodeE4m3(c)). Data is read once
// and written once; no scale is stored.
//
// Symbols: tk_per_token_cast_and_cast_back__<in>_<fmt>_g<N>, in ∈ {fp32, bf16}, fmt ∈ {e4m3, e2m1},
//          N ∈ {16, 32, 64, 128}.
//          tk_per_token_cast_and_cast_back__bf16_e4m3_g128_r1: one row per 512-thread block held in registers
//          (CastAndCastBackR1 below; docs/perf-notes/perf10-pcb.md), for bf16 x whose base and row stride are
//          multiples of 16 bytes, H ≤ 8192, groups of 128 (any flags); the host (usesRowForm,
//          ops/quant/per_token_cast_and_cast_back.ts) sends every such launch to it, every other view to _g<N>.
//
// Launch geometry (any grid.x ≥ 1 is correct: grid-stride over rows):
//
//   kernel   block.x  dynamic smem  grid.x
//   _g<N>    256      0             ceilDiv(G, n), G = ceilDiv(T, R), n = ceilDiv(G, 6 · SMs)  (one balanced wave)
//            R = 8 / w, w = min(8, nextPow2(ceilDiv(H / V, 32)))
//   _r1      512      0             T (one row per block); launched with the PDL attribute while config.pdl is set.
//            No shared memory; 32 registers on sm_90a, 31 on sm_100a (launch bound 4 blocks per SM: 64 warps), no
//            spills. Thread t holds chunks t and t + 512 of its row (16 bytes each).
//
//   V = elements per 16-byte thread chunk (fp32 4, bf16 8); w warps share a row (common/work.cuh); a group of N
//   columns is N / V adjacent lanes, so its amax is an xor-shuffle butterfly (bf16: both items of a unit in one
//   u16x2 shuffle). Static shared memory 16 KiB: each thread stages its next unit (2 chunks) with cp.async while it
//   computes the current one (as per_token_cast.cu). A group's (scale, inv) for the unit's two items is computed
//   once, by the group's lanes 0 and 1 in the same sfAndInv, and shuffled to the others. 40 registers (launch bound 6 blocks per SM, sm_90a and sm_100a, no spills) and
//   6 × 16 KiB of shared memory: the whole 6 · SMs grid is resident, 48 warps per SM. At 4 · SMs (32 warps) the
//   kernel measured 72–74% of memcpy on an H200, bound by instruction latency (bf16: about 31 PTX instructions per
//   element then, about 23 with the packed bf16 amax and hardware bf16 pairs, about 20 with the bf16 NaN fix-up run
//   only when a half is NaN), so more warps and fewer
//   instructions per element both count (docs/perf-notes/perf-quant.md).
//   In place: a chunk is read and written by the same thread, the read staged before the write, and no other
//   thread touches it. Rows whose base or stride is not 16-byte aligned stage element-wide (plain coherent loads,
//   not the .nc path: x is written by this kernel) and store byte-wide.
#include "../common/chunk.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/ldst_rw.cuh"
#include "../common/reduce.cuh"
#include "../common/scale.cuh"
#include "../common/work.cuh"
#include "../generated/elem_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr int kStages = 2;
constexpr int kU = 2;  // chunks per thread per unit

template <Fmt kIn, Fmt kFmt, int kN>
struct CastAndCastBack {
  static constexpr int kVec = kVecBytes * 8 / FmtTraits<kIn>::kBits;  // 4 fp32, 8 bf16
  static constexpr int kWords = kVecBytes / 4;
  static constexpr int kLanes = kN / kVec;
  static constexpr float kQmax = kFmt == Fmt::kE4m3 ? kE4m3Max : kE2m1Max;
  static_assert(kLanes >= 1 && kLanes <= kWarpSize, "a group spans at most one warp");

  const CastAndCastBackParams& p;
  uint32_t chunks;

  TK_DEV explicit CastAndCastBack(const CastAndCastBackParams& params) : p(params), chunks(params.hidden / kVec) {}

  // decode(RN code of v), exact: e4m3 through the hardware conversion pair (both checked equal to the spec's codec
  // for every input), e2m1 through the software codec.
  TK_DEV static void quantize_dequantize(float (&v)[kVec]) {
    if constexpr (kFmt == Fmt::kE4m3) {
#pragma unroll
      for (int i = 0; i < kVec / 4; ++i) {
        const uint32_t c = encode_e4m3x4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
        decode_e4m3x2(c, v[4 * i], v[4 * i + 1]);
        decode_e4m3x2(c >> 16, v[4 * i + 2], v[4 * i + 3]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kVec; ++i) v[i] = decode_e2m1(encode_e2m1(v[i]));
    }
  }

  // A chunk of an unaligned row, one element at a time (fp32 rows are 4-byte aligned, bf16 rows 2-byte aligned).
  TK_DEV static void load_elements(const uint8_t* p, uint32_t (&w)[kWords]) {
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      if constexpr (kIn == Fmt::kFp32) {
        w[i] = *reinterpret_cast<const uint32_t*>(p + 4 * i);
      } else {
        const uint16_t* h = reinterpret_cast<const uint16_t*>(p + 4 * i);
        w[i] = h[0] | (static_cast<uint32_t>(h[1]) << 16);
      }
    }
  }

  TK_DEV void step(uint8_t* xr, uint32_t base, uint32_t threads, bool aligned, const uint32_t (&w)[kU][kWords]) const {
    const uint32_t lane = threadIdx.x % kWarpSize;
    // Group amax of both items; every lane takes part in the shuffles, and a dead chunk (c ≥ chunks, staged as
    // zeros) is a whole dead group (H % N == 0). bf16: |x| and maximumNumber on packed pairs and both items in
    // one shuffle (as per_token_cast.cu), the same value as the binary32 maximumNumber of the widened elements.
    float amax[kU];
    if constexpr (kIn == Fmt::kBf16) {
      static_assert(kU == 2, "two items per u16x2 shuffle");
      const uint32_t both = group_max_u16x2<kLanes>(abs_max_bf16<kWords>(w[0]) | (abs_max_bf16<kWords>(w[1]) << 16));
      amax[0] = decode_bf16(both & 0xffffu);
      amax[1] = decode_bf16(both >> 16);
    } else {
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        float m = 0.0f;
#pragma unroll
        for (int i = 0; i < kVec; ++i) m = max_num(m, abs_f(u2f(w[u][i])));
        amax[u] = group_max<kLanes>(m);
      }
    }
    // (scale, inv) of item u, computed once per group: lane u of the group computes it (a group has kLanes ≥ kU
    // lanes) and the group's lanes read it by shuffle, instead of every lane running sfAndInv (two IEEE divisions)
    // for every item. Same function, same amax: the same bits.
    static_assert(kLanes >= kU, "one lane of the group per item");
    const uint32_t glane = lane % kLanes;
    float mine = amax[0];
#pragma unroll
    for (int u = 1; u < kU; ++u) mine = select_f32(glane == static_cast<uint32_t>(u), amax[u], mine);
    const ScaleAndInv own = sf_and_inv(mine, p.amax_clamp, kQmax, p.flags);
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const uint32_t c = base + u * threads + lane;
      const uint32_t src = lane - glane + u;
      const float scale = __shfl_sync(kFullWarpMask, own.scale, src), inv = __shfl_sync(kFullWarpMask, own.inv, src);
      if (c < chunks) {
        float x[kVec];
        decode_chunk<kIn, kVec>(w[u], x);
#pragma unroll
        for (int i = 0; i < kVec; ++i) x[i] = mul_rn(x[i], inv);
        quantize_dequantize(x);
        uint32_t o[kWords];
        if constexpr (kIn == Fmt::kFp32) {
          // one NaN pattern, as the CPU reference writes it (a NaN code decodes to NaN; 0·Inf with an Inf scale)
#pragma unroll
          for (int i = 0; i < kVec; ++i) o[i] = f2u(canonical_nan(mul_rn(x[i], scale)));
        } else {
          // the products first, then the pairs converted with the NaN fix only when a half is NaN
          // (encode_bf16x2_words: the same words as encode_bf16x2 per pair, 3 instead of 9 operations per word)
          float y[kVec];
#pragma unroll
          for (int i = 0; i < kVec; ++i) y[i] = mul_rn(x[i], scale);
          encode_bf16x2_words<kWords>(y, o);
        }
        store_chunk<kVecBytes>(xr + static_cast<uint64_t>(c) * kVecBytes, o, aligned);
      }
    }
  }

  TK_DEV void run() const {
    __shared__ __align__(16) uint8_t stage_buf[kStages][kU][kBlockThreads][kVecBytes];
    const uint32_t lane = threadIdx.x % kWarpSize;
    const uint64_t stride = p.x_row_stride * (FmtTraits<kIn>::kBits / 8);
    const bool aligned = rows_aligned(p.x, stride, kVecBytes);
    uint8_t* x = reinterpret_cast<uint8_t*>(p.x);
    const RowTeam team(chunks);
    auto prefetch = [&](auto st, uint64_t row, uint32_t base) {
      const uint8_t* xr = x + row * stride;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t c = base + u * team.threads + lane;
        const bool live = c < chunks;
        const uint32_t dst = smem_addr(stage_buf[st][u][threadIdx.x]);
        if (aligned) {
          cp_async<kVecBytes>(dst, live ? xr + static_cast<uint64_t>(c) * kVecBytes : xr, live);
        } else {
          // element-wide coherent loads: x is written by this kernel, so not the read-only (.nc) path of ldst.cuh
          uint32_t w[kWords] = {};
          if (live) load_elements(xr + static_cast<uint64_t>(c) * kVecBytes, w);
          st_shared(dst, w);
        }
      }
    };
    pipelined_units<kU, false>(team, p.num_tokens, chunks, prefetch, [&](int st, uint64_t row, uint32_t base) {
      uint32_t w[kU][kWords];
#pragma unroll
      for (int u = 0; u < kU; ++u) ld_shared(smem_addr(stage_buf[st][u][threadIdx.x]), w[u]);
      step(x + row * stride, base, team.threads, aligned, w);
    });
  }
};

// One row per block of 512 threads, the row held in registers (tk_per_token_cast_and_cast_back__bf16_e4m3_g128_r1):
// thread t loads chunks t and t + 512 of its block's row straight into registers (ld.global.cg: coherent, L2 only;
// a dead chunk loads nothing and stays zero), then runs CastAndCastBack::step on them (the same amax, sfAndInv,
// quantize / dequantize and bf16 encode, code for code) and stores them with 16-byte stores: the alignment of x (base
// and row stride multiples of 16 bytes) is compiled in, so there is no byte-wise fallback to branch around. No
// staging, no shared memory, no pipeline: a block reads its row once, computes, writes it and leaves; the grid is
// the rows (normForward's _tp16hr layout). The host sends only aligned bf16 rows of H ≤ 8192 (≤ 1024 chunks) with
// groups of 128. In place: each chunk is read, then written, by the one thread that owns it.
// PDL: griddepcontrol.launch_dependents first (the next PDL grid in the stream may be scheduled once every block of
// this grid has issued it), then griddepcontrol.wait before the first global access (the previous grid in the
// stream has completed and its writes are visible: x is read here after the previous kernel wrote it). Both are
// no-ops in a launch without the PDL attribute.
constexpr uint32_t kR1Threads = 512;
constexpr int kR1MinBlocks = 4;  // 4 × 512 threads: 64 warps per SM (32 registers)

struct CastAndCastBackR1 {
  using Row = CastAndCastBack<Fmt::kBf16, Fmt::kE4m3, 128>;
  const Row op;
  const CastAndCastBackParams& p;

  TK_DEV explicit CastAndCastBackR1(const CastAndCastBackParams& params) : op(params), p(params) {}

  TK_DEV void run() const {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const uint32_t tid = threadIdx.x;
    const uint32_t warp_base = tid & ~(kWarpSize - 1u);  // step's base: chunk of the warp's lane 0
    const bool live0 = tid < op.chunks, live1 = tid + kR1Threads < op.chunks;
    const uint64_t stride = p.x_row_stride * 2;  // bf16 bytes
    uint8_t* const x = reinterpret_cast<uint8_t*>(p.x);
    const uint8_t* const mine = x + static_cast<uint64_t>(tid) * kVecBytes;
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (uint64_t row = blockIdx.x; row < p.num_tokens; row += gridDim.x) {
      const uint8_t* const src = mine + row * stride;
      uint32_t w[2][4] = {};
      if (live0) ld_global_cg(src, w[0]);
      if (live1) ld_global_cg(src + kVecBytes * kR1Threads, w[1]);
      op.step(x + row * stride, warp_base, kR1Threads, true, w);
    }
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kR1Threads, tk::kR1MinBlocks)
    tk_per_token_cast_and_cast_back__bf16_e4m3_g128_r1(const __grid_constant__ CastAndCastBackParams p) {
  tk::CastAndCastBackR1(p).run();
}

#define TK_CAST_AND_CAST_BACK(in, IN, fmt, FMT, n)                                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 6)                                              \
      tk_per_token_cast_and_cast_back__##in##_##fmt##_g##n(const __grid_constant__ CastAndCastBackParams p) {  \
    tk::CastAndCastBack<tk::Fmt::IN, tk::Fmt::FMT, n>(p).run();                                                   \
  }
#define TK_CAST_AND_CAST_BACK_GROUPS(in, IN, fmt, FMT) \
  TK_CAST_AND_CAST_BACK(in, IN, fmt, FMT, 16)          \
  TK_CAST_AND_CAST_BACK(in, IN, fmt, FMT, 32)          \
  TK_CAST_AND_CAST_BACK(in, IN, fmt, FMT, 64)          \
  TK_CAST_AND_CAST_BACK(in, IN, fmt, FMT, 128)

TK_CAST_AND_CAST_BACK_GROUPS(fp32, kFp32, e4m3, kE4m3)
TK_CAST_AND_CAST_BACK_GROUPS(fp32, kFp32, e2m1, kE2m1)
TK_CAST_AND_CAST_BACK_GROUPS(bf16, kBf16, e4m3, kE4m3)
TK_CAST_AND_CAST_BACK_GROUPS(bf16, kBf16, e2m1, kE2m1)

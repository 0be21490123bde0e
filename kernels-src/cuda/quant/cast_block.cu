// The block-scaled `cast` for the block shapes and forms no dedicated kernel covers (spec/quant.md §7.1 with §2.3,
// §4, §4.4, §5.1): any block [r, c] (partial edge blocks), fp32 / bf16 / fp16 values or e4m3 / e2m1x2 codes with
// their scales, every output sf layout (fp32 / e4m3 / channel-packed UE8M0, row- or column-major), or a
// precomputed fp32 sf. ops/quant/cast.ts routes [32|128]² blocks, [1, 16..128] groups and [32|128, 1] columns to
// per_block_cast.cu, per_token_cast.cu and per_channel_cast.cu; everything else comes here.
//
// Symbols
//   tk_cast_block_single__<in>_e4m3 in ∈ {fp32, bf16, fp16}: one pass (sf and data) for e4m3 output when the
//                                   effective block width c and H are multiples of kSingleVec (4 fp32, 8 bf16 /
//                                   fp16), x is 16-byte and data kSingleVec-byte aligned (ops/quant/
//                                   cast_block_launch.ts `singlePass`); blocks of ≤ 128 chunks (one sweep) take
//   tk_cast_block_staged__<in>_e4m3 the same pass with the warp's next block staged through shared memory
//                                   (cast_block_launch.ts `STAGED`);
//   tk_cast_block_staged__<in>_e4m3_r<R>c<C>_a  the staged pass with the block shape [R, C] compiled in, whole
//                                   blocks only (T % R = 0, H % C = 0; traps otherwise): bf16 [16, 64], taken by
//                                   the host (cast_block_launch.ts `shapedForm`) whenever a staged launch has that
//                                   shape and whole blocks (fp16 [1, 128]'s `_r1c128_a`, superseded in round 23 by
//                                   per_token_cast_gc23.cu, left in trim32: docs/branches/trim32-removed.patch);
//                                   every other form runs the two passes:
//   tk_cast_block_sf__<in>          in ∈ {fp32, bf16, fp16, e4m3, e2m1}: scale pass (amax → sf and inverse)
//   tk_cast_block_data__<in>_<out>  out ∈ {e4m3, e2m1}: data pass (data = encode(v · inv))
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, every kernel is grid-stride):
//
//   kernel                   block.x  dynamic smem  grid.x
//   tk_cast_block_single__*  256      0             max(1, min(ceilDiv(nbm · nbk, 8), 8 · SMs))  teams of g lanes
//   tk_cast_block_staged__*  256      0             ceilDiv(ceilDiv(U, n), 8), n = ceilDiv(U, 5 · 8 · SMs),
//                                                   U = ceilDiv(nbm · nbk, 32 / g): one wave, equal warps
//                                                   (the `_r<R>c<C>_a` forms the same)
//   tk_cast_block_sf__*      256      0             max(1, min(ceilDiv(nbm · nbk, 8), 8 · SMs))  one warp per block
//   tk_cast_block_data_*     256      0             max(1, min(ceilDiv(ceilDiv(bytes, 4), 256), 8 · SMs))
//
//   nbm · nbk = scale blocks, bytes = data bytes (T · H e4m3, T · H / 2 e2m1x2). No shared memory but the staged
//   pass's 32 KiB static. Registers are bounded for 4 resident CTAs per SM (single pass: 60–64 registers, sm_90a /
//   sm_100a), 5 for the staged pass (48 registers, no spills; bound 6 = 40 registers spills 12 bytes on sm_90a). The single pass's team
//   size g (a power of two ≤ 32: the fewest lanes that hold a full block's 16-byte chunks at 4 per lane) is
//   derived in the kernel from r and c; with g < 32 a warp holds 32 / g blocks, so the grid above is generous.
//
// Two passes because a block's inverse is needed by elements the block does not own: with an odd c, one
// e2m1x2 byte holds the last column of one block and the first of the next, and a byte is written by one
// thread only. The scale pass gives each block to one warp: the lanes walk its real elements row-major, 32
// apart (four loads in flight per lane), reduce |x| (or fl(|q|·s_in) for codes, §4.4 / §5.1) with a
// maximumNumber butterfly, and lane 0 stores sf (layout through SfOut, packed words' unused bytes zeroed by the
// last column's writer) and the binary32 inverse into the fp32 scratch `inv` [nbm · nbk]. Column-major padding
// rows are zeroed grid-stride by the same launch. The data pass gives each thread 4 consecutive data bytes (4
// e4m3 or 8 e2m1 elements of the flat [T, H]); it reads the inverse of each element's block (or fl(1/s) of the
// precomputed sf), scales in the spec's order and stores one 32-bit word (bytes when the output's base is not
// 4-aligned or at the tail). Element loads are scalar; the two passes favour generality over speed
// (docs/DECISIONS.md). The single pass (below) reads the input once with 16-byte loads and needs no scratch: no
// e4m3 byte straddles two blocks, so a team that owns whole blocks writes all of their bytes.
#include "../common/chunk.cuh"
#include "../common/codec.cuh"
#include "../common/f16.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/reduce.cuh"
#include "../common/scale.cuh"
#include "../generated/cast_block_params.h"

namespace tk {
namespace {

// CAST_BLOCK_MODE of ops/quant/cast_block.params.ts
enum CastBlockMode : uint32_t { kCastBlockModeCast = 0, kCastBlockModePrecomputedSf = 1 };

// Input formats of the generic block cast (fp16 is a value input here, unlike the per-token / per-block kernels).
enum class BlockIn { kFp32, kBf16, kFp16, kE4m3, kE2m1 };

constexpr int kBlockThreads = 256;
// Resident CTAs per SM the registers are sized for (≤ 64 registers). Also what keeps ptxas from spilling around the
// slow-path call of the IEEE division (without a bound it settles on 32 registers and spills on sm_90a).
constexpr int kMinBlocksPerSm = 4;
constexpr int kWarpsPerBlock = kBlockThreads / kWarpSize;
constexpr int kLoadsInFlight = 4;  // scale pass: element loads a lane issues before it reduces them
constexpr int kItemBytes = 4;      // data pass: output bytes per thread item (one 32-bit store)

template <BlockIn kIn>
constexpr bool kCodeIn = kIn == BlockIn::kE4m3 || kIn == BlockIn::kE2m1;

// Element f = t·H + j of the contiguous input, widened exactly to binary32 (codes decoded, not scaled).
template <BlockIn kIn>
TK_DEV float load_element(uint64_t x, uint64_t f) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(x);
  if constexpr (kIn == BlockIn::kFp32) {
    return u2f(ld_u32(p + 4 * f));
  } else if constexpr (kIn == BlockIn::kBf16) {
    return decode_bf16(ld_u16(p + 2 * f));
  } else if constexpr (kIn == BlockIn::kFp16) {
    return decode_fp16(ld_u16(p + 2 * f));
  } else if constexpr (kIn == BlockIn::kE4m3) {
    return decode_e4m3(ld_u8(p + f));
  } else {
    return decode_e2m1(ld_u8(p + f / 2) >> (4 * (f & 1)));
  }
}

// The decoded input scale of element (t, j) of a quantized input (§4.4: any input layout of §4.1 / §4.2).
TK_DEV float input_scale(const CastBlockParams& p, uint32_t t, uint32_t j) {
  return load_scale(p.x_sf, p.x_sf_kind, p.x_sf_stride0, p.x_sf_stride1, t / p.x_block_rows, j / p.x_block_cols);
}

TK_DEV uint32_t ceil_div(uint32_t a, uint32_t b) {
  return static_cast<uint32_t>((static_cast<uint64_t>(a) + b - 1) / b);
}

// n / d and n % d by restoring division on 32-bit halves (no 64-bit division routine, whose call spills). Exact
// when the quotient fits 32 bits (n < d · 2^32); otherwise the results are unspecified, and the callers' grid-stride
// arithmetic never uses them (such an n is past the last item: n ≥ d · 2^32 > T · H).
// An n below 2^32 (every grid-stride start and stride of the test and bench shapes) takes one 32-bit division
// instead of the 32 loop steps: each kernel's threads run this twice before their first load, ~500 instructions
// per thread that kept every warp of a new CTA off the memory system for ~2 µs (estimate: 32 warps × 512 / 4
// schedulers per SM).
TK_DEV void divmod_u64_u32(uint64_t n, uint32_t d, uint32_t& q, uint32_t& rem) {
  const uint32_t lo = static_cast<uint32_t>(n);
  if ((n >> 32) == 0) {
    q = lo / d;
    rem = lo - q * d;
    return;
  }
  uint64_t r = n >> 32;
  q = 0;
#pragma unroll 1
  for (int i = 31; i >= 0; --i) {
    r = (r << 1) | ((lo >> i) & 1u);
    q <<= 1;
    if (r >= d) {
      r -= d;
      q |= 1u;
    }
  }
  rem = static_cast<uint32_t>(r);
}

// (q, r) = (n / d, n % d) of a linear index n, advanced by a fixed stride without a division in the loop: the
// grid-stride walks over blocks (m, k) with d = nbk and over elements (row, column) with d = H.
struct GridWalk {
  uint32_t q, r, dq, dr, d;
  TK_DEV GridWalk(uint64_t first, uint64_t stride, uint32_t divisor) : d(divisor) {
    divmod_u64_u32(first, d, q, r);
    divmod_u64_u32(stride, d, dq, dr);
  }
  TK_DEV void next() {
    q += dq;
    r += dr;
    if (r >= d) {
      r -= d;
      ++q;
    }
  }
};

TK_DEV float warp_max(float v) {
#pragma unroll
  for (int b = kWarpSize / 2; b >= 1; b >>= 1) v = max_num(v, __shfl_xor_sync(kFullWarpMask, v, b));
  return v;
}

// ---- scale pass ---------------------------------------------------------------------------------------------------
template <BlockIn kIn>
TK_DEV void block_scales(const CastBlockParams& p) {
  const uint32_t T = p.num_tokens, H = p.hidden, r = p.block_rows, c = p.block_cols;
  const uint32_t nbm = ceil_div(T, r), nbk = ceil_div(H, c);
  const uint64_t blocks = static_cast<uint64_t>(nbm) * nbk;
  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint64_t warps = static_cast<uint64_t>(gridDim.x) * kWarpsPerBlock;
  const SfOut sf_out{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, nbk};
  uint8_t* inv_out = reinterpret_cast<uint8_t*>(p.inv);

  // (m, k) of block b, advanced by the grid stride without a division in the loop
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  GridWalk mk(first, warps, nbk);
  for (uint64_t b = first; b < blocks; b += warps, mk.next()) {
    const uint32_t m = mk.q, k = mk.r;
    const uint32_t t0 = m * r, j0 = k * c;  // < T, < H
    const uint32_t rows = min(r, T - t0), cols = min(c, H - j0);
    // element e = i·cols + j of the block; a lane starts at e = lane and steps by 32 = dr·cols + dc
    const uint32_t dr = kWarpSize / cols, dc = kWarpSize % cols;
    uint32_t i = lane / cols, j = lane % cols;
    float a = 0.0f;
    while (i < rows) {
      float v[kLoadsInFlight];
#pragma unroll
      for (int u = 0; u < kLoadsInFlight; ++u) {
        v[u] = 0.0f;  // neutral: the clamp makes every amax positive
        if (i < rows) {
          const uint32_t t = t0 + i;
          v[u] = abs_f(load_element<kIn>(p.x, static_cast<uint64_t>(t) * H + j0 + j));
          // §4.4 / §5.1: the dequantized magnitude fl(|q|·s_in) (= |fl(q·s_in)|)
          if constexpr (kCodeIn<kIn>) v[u] = mul_rn(v[u], input_scale(p, t, j0 + j));
        }
        j += dc;
        i += dr;
        if (j >= cols) {
          j -= cols;
          ++i;
        }
      }
#pragma unroll
      for (int u = 0; u < kLoadsInFlight; ++u) a = max_num(a, v[u]);
    }
    a = warp_max(a);
    if (lane == 0) {
      const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, p.qmax, p.flags);
      sf_out.store(m, k, si.stored);
      st_u32(inv_out + 4 * b, f2u(si.inv));
    }
  }
  sf_out.zero_padding_rows(nbm, p.sf_rows);
}

// ---- data pass ----------------------------------------------------------------------------------------------------
template <BlockIn kIn, Fmt kOut>
TK_DEV void block_data(const CastBlockParams& p) {
  constexpr uint32_t kPerByte = kOut == Fmt::kE4m3 ? 1 : 2;  // elements per output byte
  constexpr int kElems = kItemBytes * kPerByte;               // elements per item
  const uint32_t H = p.hidden, r = p.block_rows, c = p.block_cols;
  const uint32_t nbk = ceil_div(H, c);
  const uint64_t elems = static_cast<uint64_t>(p.num_tokens) * H;
  const uint64_t bytes = elems / kPerByte;  // H is even for e2m1x2
  const uint64_t items = (bytes + kItemBytes - 1) / kItemBytes;
  const bool precomputed = p.mode == kCastBlockModePrecomputedSf;
  const bool aligned = (p.data % kItemBytes) == 0;
  const uint8_t* inv_in = reinterpret_cast<const uint8_t*>(p.inv);
  uint8_t* data = reinterpret_cast<uint8_t*>(p.data);
  const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  // (row, column) of an item's first element, advanced by the grid stride without a division in the loop; rows
  // fit 32 bits (T does)
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  GridWalk rc(first * kElems, threads * kElems, H);

  for (uint64_t it = first; it < items; it += threads, rc.next()) {
    const uint64_t f0 = it * kElems;
    uint32_t t = rc.q, j = rc.r;
    uint32_t m = t / r;
    uint32_t k = j / c, jr = j - k * c;  // block column of j and j's column inside it
    float v[kElems];  // scaled values; 0 past the end (encoded, never stored)
#pragma unroll
    for (int e = 0; e < kElems; ++e) {
      v[e] = 0.0f;
      if (f0 + e < elems) {
        float inv;
        if (precomputed) {
          inv = div_rn(1.0f, load_scale(p.x_sf, kSfFp32, p.x_sf_stride0, p.x_sf_stride1, m, k));
        } else {
          inv = u2f(ld_u32(inv_in + 4 * (static_cast<uint64_t>(m) * nbk + k)));
        }
        const float x = load_element<kIn>(p.x, f0 + e);
        if constexpr (kCodeIn<kIn>) {
          const float s_in = input_scale(p, t, j);
          // [r, 1] blocks dequantize first (§5.1); every other block multiplies the scales first (§4.4)
          v[e] = p.dequantize_first ? mul_rn(mul_rn(x, s_in), inv) : mul_rn(x, mul_rn(s_in, inv));
        } else {
          v[e] = mul_rn(x, inv);
        }
      }
      ++j;
      if (++jr == c) {
        jr = 0;
        ++k;
      }
      if (j == H) {
        j = 0;
        jr = 0;
        k = 0;
        ++t;
        m = t / r;
      }
    }
    uint32_t o;
    encode_chunk<kOut, kElems>(v, &o);  // e4m3: the hardware RN conversion checked equal to §1.2 (common/codec.cuh)
    uint8_t* dst = data + it * kItemBytes;
    if (aligned && (it + 1) * kItemBytes <= bytes) {
      st_u32(dst, o);
    } else {
#pragma unroll
      for (int i = 0; i < kItemBytes; ++i)
        if (it * kItemBytes + i < bytes) st_u8(dst + i, (o >> (8 * i)) & 0xffu);
    }
  }
}

// ---- single pass (e4m3 output, value input, block width a multiple of the chunk) ----------------------------------
// A team of g lanes (a power of two ≤ 32, aligned inside the warp) owns whole blocks. Every lane reads chunks of
// 16 input bytes (kVec = 4 fp32 or 8 bf16 / fp16 elements of one row, never straddling a block: c and H are
// multiples of kVec), keeps up to kSingleChunks of them in registers, reduces |x| to the team's amax with a
// maximumNumber butterfly over g lanes, and every lane then computes sf_and_inv itself and writes its chunks'
// codes (kVec bytes, one store). Same elements, same max (order independent, §1.1.5), same sf_and_inv, same
// fl(x · inv) and encoder as the two passes, so the same bytes. A block of more than 32 · kSingleChunks chunks is
// read twice by its warp (amax sweep, then encode sweep; the second read mostly hits L2).
template <BlockIn kIn>
constexpr int kSingleVec = kIn == BlockIn::kFp32 ? 4 : 8;  // elements per 16-byte chunk
// Chunks a lane holds per sweep: 64 bytes in flight, 16 registers (8 chunks of fp32 spilled on sm_100a).
constexpr int kSingleChunks = 4;

template <BlockIn kIn>
TK_DEV float chunk_value(const uint32_t (&w)[4], int e) {
  if constexpr (kIn == BlockIn::kFp32) {
    return u2f(w[e]);
  } else if constexpr (kIn == BlockIn::kBf16) {
    return (e & 1) ? bf16_hi(w[e / 2]) : bf16_lo(w[e / 2]);
  } else {
    return (e & 1) ? fp16_hi(w[e / 2]) : fp16_lo(w[e / 2]);
  }
}

// maximumNumber of |x| over a 16-byte chunk, folded into `a`. bf16 / fp16 pairs are compared packed (abs by
// clearing the sign bits, max.bf16x2 / max.f16x2: IEEE maxNum, a NaN operand loses, subnormals kept), then the
// running packed maximum is widened once per block (chunk_absmax_finish): binary32 widening is exact and monotone,
// so the maximum is the same value the scalar max_num over widened elements gives (§1.1.5: order independent).
// Accumulator: binary32 bits for fp32 input, a packed pair (starting at +0, +0) otherwise.
template <BlockIn kIn>
TK_DEV uint32_t chunk_absmax(uint32_t acc, const uint32_t (&w)[4]) {
  if constexpr (kIn == BlockIn::kFp32) {
    float a = u2f(acc);
#pragma unroll
    for (int e = 0; e < 4; ++e) a = max_num(a, abs_f(u2f(w[e])));
    return f2u(a);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (kIn == BlockIn::kBf16) {
        acc = max_bf16x2(acc, w[e] & 0x7fff7fffu);  // as abs_max_bf16 (common/reduce.cuh, per-token casts)
      } else {
        asm("max.f16x2 %0, %0, %1;" : "+r"(acc) : "r"(w[e] & 0x7fff7fffu));
      }
    }
    return acc;
  }
}

template <BlockIn kIn>
TK_DEV float chunk_absmax_finish(uint32_t acc) {
  if constexpr (kIn == BlockIn::kFp32) {
    return u2f(acc);
  } else if constexpr (kIn == BlockIn::kBf16) {
    return max_num(bf16_lo(acc), bf16_hi(acc));
  } else {
    return max_num(fp16_lo(acc), fp16_hi(acc));
  }
}

// A lane's position in its block: row i and chunk column jc (in chunks of kVec elements).
struct ChunkCursor {
  uint32_t i, jc;
};

// Lanes per team for blocks of `chunks` chunks (the full, clamped block): the fewest that hold them in one sweep.
TK_DEV uint32_t team_lanes(uint64_t chunks, uint32_t per_lane) {
  uint32_t g = 1;
  while (g < kWarpSize && static_cast<uint64_t>(g) * per_lane < chunks) g <<= 1;
  return g;
}

// A team's walk over one block of `rows` rows of `cpr` chunks: the lane's first chunk (q = tl) and the cursor
// step of g chunks, i.e. di rows and djc chunk columns (no division in the loop: q < rows · cpr ⟺ i < rows).
struct BlockWalk {
  uint32_t rows, cpr, di, djc;
  ChunkCursor start;
  TK_DEV static BlockWalk of(uint32_t rows, uint32_t cpr, uint32_t g, uint32_t tl) {
    BlockWalk wk;
    wk.rows = rows;
    wk.cpr = cpr;
    wk.di = g / cpr;
    wk.djc = g - wk.di * cpr;
    wk.start.i = tl / cpr;
    wk.start.jc = tl - wk.start.i * cpr;
    return wk;
  }
  TK_DEV void advance(ChunkCursor& cu) const {
    cu.i += di;
    cu.jc += djc;
    if (cu.jc >= cpr) {
      cu.jc -= cpr;
      ++cu.i;
    }
  }
};

// What both single-pass kernels derive from the parameters: the block grid, the team of g lanes that owns a block
// (the fewest that hold a full block in kChunks chunks each), the warp's first block and the teams' stride.
template <BlockIn kIn>
struct SingleTeams {
  static constexpr int kVec = kSingleVec<kIn>;
  static constexpr uint32_t kInBytes = kIn == BlockIn::kFp32 ? 4 : 2;
  uint32_t T, H, r, c, nbm, nbk;
  uint64_t blocks;
  uint32_t g, lane, tl, teams_per_warp;
  uint64_t warp, stride;
  SfOut sf_out;
  const uint8_t* x;
  uint8_t* data;
  TK_DEV explicit SingleTeams(const CastBlockParams& p)
      : T(p.num_tokens), H(p.hidden), r(p.block_rows), c(p.block_cols), nbm(ceil_div(T, r)), nbk(ceil_div(H, c)),
        blocks(static_cast<uint64_t>(nbm) * nbk), g(team_lanes(static_cast<uint64_t>(r) * (c / kVec), kSingleChunks)),
        lane(threadIdx.x % kWarpSize), tl(lane % g), teams_per_warp(kWarpSize / g),
        warp(static_cast<uint64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize),
        stride(static_cast<uint64_t>(gridDim.x) * kWarpsPerBlock * teams_per_warp),
        sf_out{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, nbk},
        x(reinterpret_cast<const uint8_t*>(p.x)), data(reinterpret_cast<uint8_t*>(p.data)) {}
  // The walk of block (m, k) for a team whose block exists (live), or of no rows; `full` when the block is whole.
  TK_DEV BlockWalk walk_here(bool live, uint32_t m, uint32_t k, const BlockWalk& full) const {
    const uint32_t rows_here = live ? min(r, T - m * r) : 0, cpr_here = live ? min(c, H - k * c) / kVec : 1;
    return rows_here == full.rows && cpr_here == full.cpr ? full : BlockWalk::of(rows_here, cpr_here, g, tl);
  }
};

template <BlockIn kIn>
TK_DEV void block_single(const CastBlockParams& p) {
  constexpr int kVec = kSingleVec<kIn>, kChunks = kSingleChunks;
  const SingleTeams<kIn> tm(p);
  const uint32_t H = tm.H, r = tm.r, c = tm.c, g = tm.g, lane = tm.lane, tl = tm.tl;
  const uint64_t blocks = tm.blocks, stride = tm.stride;
  const SfOut& sf_out = tm.sf_out;
  const uint8_t* x = tm.x;
  uint8_t* data = tm.data;
  constexpr uint32_t kInBytes = SingleTeams<kIn>::kInBytes;

  // The team's block (m, k) advances without a division in the loop. The loop bound is warp-uniform so that every
  // lane reaches the shuffles; a team past the end stores nothing.
  GridWalk mk(tm.warp * tm.teams_per_warp + lane / g, stride, tm.nbk);
  // The lane's chunks are q = tl + n·g (n = 0, 1, …) of its block, row-major: row i = q / cpr, chunk column
  // jc = q % cpr (cpr = chunks per row). The divisions that set a block's walk up depend only on its shape:
  // computed once for the full r × c block and again only for edge and dead blocks (they were ~3 divisions per
  // block and lane, ~2 instructions per element).
  const BlockWalk full = BlockWalk::of(r, c / kVec, g, tl);
  for (uint64_t base = tm.warp * tm.teams_per_warp; base < blocks; base += stride, mk.next()) {
    const bool live = base + lane / g < blocks;
    const uint32_t m = mk.q, k = mk.r;
    const uint32_t t0 = m * r, j0 = k * c;
    const BlockWalk wk = tm.walk_here(live, m, k, full);
    const uint32_t rows = wk.rows;
    // 1 unless g = 32 (team-uniform); no division when one sweep holds the block
    const uint32_t chunks = rows * wk.cpr;
    const uint32_t sweeps = chunks <= g * kChunks ? (chunks != 0 ? 1u : 0u) : ceil_div(chunks, g * kChunks);
    const ChunkCursor start = wk.start;
    auto advance = [&](ChunkCursor& cu) { wk.advance(cu); };
    // element index of the cursor's first element in the flat [T, H]
    auto offset = [&](const ChunkCursor& cu) { return static_cast<uint64_t>(t0 + cu.i) * H + j0 + cu.jc * kVec; };
    uint32_t w[kChunks][4];
    float a = 0.0f;  // neutral: the clamp makes every amax positive
    ChunkCursor cur = start;
    for (uint32_t s = 0; s < sweeps; ++s) {
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        w[u][0] = w[u][1] = w[u][2] = w[u][3] = 0;
        if (cur.i < rows) ld_stream(x + kInBytes * offset(cur), w[u]);
        advance(cur);
      }
#pragma unroll
      for (int u = 0; u < kChunks; ++u)
#pragma unroll
        for (int e = 0; e < kVec; ++e) a = max_num(a, abs_f(chunk_value<kIn>(w[u], e)));
    }
    for (uint32_t b = g / 2; b >= 1; b >>= 1) a = max_num(a, __shfl_xor_sync(kFullWarpMask, a, b));
    const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, p.qmax, p.flags);
    if (live && tl == 0) sf_out.store(m, k, si.stored);
    cur = start;
    for (uint32_t s = 0; s < sweeps; ++s) {
      if (sweeps > 1) {  // the registers hold the last sweep only: read this sweep's chunks again
        ChunkCursor re = cur;
#pragma unroll
        for (int u = 0; u < kChunks; ++u) {
          if (re.i < rows) ld_cached(x + kInBytes * offset(re), w[u]);
          advance(re);
        }
      }
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        if (cur.i < rows) {
          float v[kVec];
#pragma unroll
          for (int e = 0; e < kVec; ++e) v[e] = mul_rn(chunk_value<kIn>(w[u], e), si.inv);
          uint32_t o[kVec / 4];
          encode_chunk<Fmt::kE4m3, kVec>(v, o);  // the hardware RN conversion checked equal to §1.2 (common/codec.cuh)
          store_chunk<kVec>(data + offset(cur), o, true);
        }
        advance(cur);
      }
    }
  }
  sf_out.zero_padding_rows(tm.nbm, p.sf_rows);
}

// ---- staged single pass (blocks of at most kSingleChunks · 32 chunks: one sweep) --------------------------------
// The single pass above issues a block's loads only when the warp is done with the previous block: a warp has no
// reads in flight through its amax, butterfly, sf_and_inv, encode and stores. Here a warp's next block is copied
// with cp.async into thread-private shared-memory slots (the same chunks of the same lanes, 16 bytes each; dead
// chunks are written as zeros and read nothing) while the current one is reduced and encoded, as perBlockCast's
// double buffer does. The chunks are read from the slots twice (amax, then encode) instead of being held in
// registers. Same team, cursor, elements, maximum (bf16 / fp16 pairs compared packed, chunk_absmax), sf_and_inv,
// multiplication and encoder as block_single: the same bytes.
// Slots: [stage][chunk][thread] × 16 bytes = 32 KiB per CTA; a stage is rewritten one iteration after its last
// ld.shared, whose values the thread's stores have consumed (thread-private slots: no barrier, as in
// pipelined_units).
constexpr int kStagedMinBlocksPerSm = 5;

template <BlockIn kIn>
TK_DEV void block_single_staged(const CastBlockParams& p) {
  constexpr int kVec = kSingleVec<kIn>, kChunks = kSingleChunks;
  constexpr uint32_t kInBytes = SingleTeams<kIn>::kInBytes;
  __shared__ __align__(16) uint32_t slots[2][kChunks][kBlockThreads][4];
  const SingleTeams<kIn> tm(p);
  const uint32_t H = tm.H, r = tm.r, c = tm.c, g = tm.g, lane = tm.lane, tl = tm.tl;
  const uint64_t blocks = tm.blocks, stride = tm.stride, warp = tm.warp, teams_per_warp = tm.teams_per_warp;
  const SfOut& sf_out = tm.sf_out;
  const uint8_t* x = tm.x;
  uint8_t* data = tm.data;
  const uint32_t team = lane / g;
  GridWalk mk(warp * teams_per_warp + team, stride, tm.nbk);
  // A block's walk (no rows for a team past the last block); the full r × c block's is computed once.
  using Shape = BlockWalk;
  const Shape full = BlockWalk::of(r, c / kVec, g, tl);
  auto shape_here = [&](uint64_t base, uint32_t m, uint32_t k) { return tm.walk_here(base + team < blocks, m, k, full); };
  auto advance = [](const Shape& sh, ChunkCursor& cu) { sh.advance(cu); };
  auto offset = [&](uint32_t m, uint32_t k, const ChunkCursor& cu) {
    return static_cast<uint64_t>(m * r + cu.i) * H + k * c + cu.jc * kVec;
  };
  auto prefetch = [&](int st, uint64_t base, uint32_t m, uint32_t k) {
    const Shape sh = shape_here(base, m, k);
    ChunkCursor cur = sh.start;
#pragma unroll
    for (int u = 0; u < kChunks; ++u) {
      const bool live = cur.i < sh.rows;
      cp_async<16>(smem_addr(slots[st][u][threadIdx.x]), live ? x + kInBytes * offset(m, k, cur) : x, live);
      advance(sh, cur);
    }
  };

  // The loop bound is warp-uniform so that every lane reaches the shuffles; a team past the end stores nothing.
  uint64_t base = warp * teams_per_warp;
  uint32_t m = mk.q, k = mk.r;
  if (base < blocks) prefetch(0, base, m, k);
  cp_async_commit();
  for (int st = 0; base < blocks; st ^= 1) {
    mk.next();
    const uint64_t next = base + stride;
    if (next < blocks) prefetch(st ^ 1, next, mk.q, mk.r);
    cp_async_commit();
    cp_async_wait<1>();  // this block's copies
    const bool live = base + team < blocks;
    const Shape sh = shape_here(base, m, k);
    uint32_t acc = 0u;
#pragma unroll
    for (int u = 0; u < kChunks; ++u) {
      uint32_t w[4];
      ld_shared(smem_addr(slots[st][u][threadIdx.x]), w);
      acc = chunk_absmax<kIn>(acc, w);
    }
    float a = chunk_absmax_finish<kIn>(acc);
    for (uint32_t b = g / 2; b >= 1; b >>= 1) a = max_num(a, __shfl_xor_sync(kFullWarpMask, a, b));
    const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, p.qmax, p.flags);
    if (live && tl == 0) sf_out.store(m, k, si.stored);
    ChunkCursor cur = sh.start;
#pragma unroll
    for (int u = 0; u < kChunks; ++u) {
      if (cur.i < sh.rows) {
        uint32_t w[4];
        ld_shared(smem_addr(slots[st][u][threadIdx.x]), w);
        float v[kVec];
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[e] = mul_rn(chunk_value<kIn>(w, e), si.inv);
        uint32_t o[kVec / 4];
        encode_chunk<Fmt::kE4m3, kVec>(v, o);  // the hardware RN conversion checked equal to §1.2 (common/codec.cuh)
        store_chunk<kVec>(data + offset(m, k, cur), o, true);
      }
      advance(sh, cur);
    }
    base = next;
    m = mk.q;
    k = mk.r;
  }
  sf_out.zero_padding_rows(tm.nbm, p.sf_rows);
}

// ---- staged single pass with the block shape compiled in (`_r<R>c<C>_a`) --------------------------------------------
// block_single_staged for one block shape [kR, kC] and whole blocks only (T % kR = 0, H % kC = 0: the host takes it
// whenever that holds on a staged launch, with x 16-byte and data kVec-byte aligned; it traps otherwise).
// The team size g, the chunks per row and every lane's chunk offsets are constants: no block walk (walk_here, the
// cursor's compare-and-step, the per-chunk `i < rows` guards) and one 64-bit block address per block instead of
// one per chunk (docs/perf-notes/perf9-cast.md). Every lane of a live team has exactly kSingleChunks live chunks.
// Same teams, chunks, slots, pipeline, packed amax, butterfly, sf_and_inv, multiplication and encoder as
// block_single_staged: the same bytes.
template <BlockIn kIn, uint32_t kR, uint32_t kC>
struct ShapedBlock {
  static constexpr uint32_t kVec = kSingleVec<kIn>;
  static constexpr uint32_t kCpr = kC / kVec;         // chunks per block row
  static constexpr uint32_t kChunks = kR * kCpr;      // chunks per block
  static constexpr uint32_t kG = kChunks / kSingleChunks;  // team lanes (team_lanes(kChunks, 4) when a power of two)
  static_assert(kC % kVec == 0 && kChunks == kG * kSingleChunks, "whole chunks, 4 per lane");
  static_assert(kG >= 1 && kG <= kWarpSize && (kG & (kG - 1)) == 0, "a power-of-two team");
  // Lane chunk u of team lane tl is q = tl + u·g: row q / cpr, chunk column q % cpr. Either a team step is whole
  // rows (g % cpr = 0: every chunk of the lane in the same column, g / cpr rows apart) or a block is one row.
  static_assert(kG % kCpr == 0 || kR == 1, "team steps of whole rows, or one-row blocks");
  static constexpr uint32_t kRowsPerStep = kG % kCpr == 0 ? kG / kCpr : 0;
};

template <BlockIn kIn, uint32_t kR, uint32_t kC>
TK_DEV void block_single_staged_shaped(const CastBlockParams& p) {
  using S = ShapedBlock<kIn, kR, kC>;
  constexpr int kChunks = kSingleChunks;
  constexpr uint32_t kVec = S::kVec, kG = S::kG, kCpr = S::kCpr;
  constexpr uint32_t kInBytes = SingleTeams<kIn>::kInBytes;
  __shared__ __align__(16) uint32_t slots[2][kChunks][kBlockThreads][4];
  const uint32_t T = p.num_tokens, H = p.hidden;
  if (p.block_rows != kR || p.block_cols != kC || T % kR != 0 || H % kC != 0 || (p.x % 16) != 0 || (p.data % kVec) != 0)
    __trap();  // the host launches the shaped form only under these conditions
  const uint32_t nbm = T / kR, nbk = H / kC;
  const uint64_t blocks = static_cast<uint64_t>(nbm) * nbk;
  const uint32_t lane = threadIdx.x % kWarpSize, tl = lane % kG, team = lane / kG;
  constexpr uint32_t kTeamsPerWarp = kWarpSize / kG;
  const uint64_t warp = static_cast<uint64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kWarpsPerBlock * kTeamsPerWarp;
  const SfOut sf_out{reinterpret_cast<uint8_t*>(p.sf), p.sf_stride0, p.sf_stride1, p.flags, nbk};
  const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
  uint8_t* data = reinterpret_cast<uint8_t*>(p.data);
  // element offset of the lane's chunk 0 inside its block, and of chunk u from chunk 0 (in elements)
  const uint64_t lane_off = static_cast<uint64_t>(tl / kCpr) * H + (tl % kCpr) * kVec;
  const uint64_t step = S::kRowsPerStep != 0 ? static_cast<uint64_t>(S::kRowsPerStep) * H : kG * kVec;
  GridWalk mk(warp * kTeamsPerWarp + team, stride, nbk);
  // first element of block (m, k) plus the lane's offset
  auto first = [&](uint32_t m, uint32_t k) { return static_cast<uint64_t>(m) * kR * H + static_cast<uint64_t>(k) * kC + lane_off; };
  auto prefetch = [&](int st, uint64_t base, uint32_t m, uint32_t k) {
    const bool live = base + team < blocks;
    const uint8_t* src = x + kInBytes * first(m, k);
#pragma unroll
    for (int u = 0; u < kChunks; ++u) cp_async<16>(smem_addr(slots[st][u][threadIdx.x]), live ? src + kInBytes * (u * step) : x, live);
  };

  // The loop bound is warp-uniform so that every lane reaches the shuffles; a team past the end stores nothing.
  uint64_t base = warp * kTeamsPerWarp;
  uint32_t m = mk.q, k = mk.r;
  if (base < blocks) prefetch(0, base, m, k);
  cp_async_commit();
  for (int st = 0; base < blocks; st ^= 1) {
    mk.next();
    const uint64_t next = base + stride;
    if (next < blocks) prefetch(st ^ 1, next, mk.q, mk.r);
    cp_async_commit();
    cp_async_wait<1>();  // this block's copies
    const bool live = base + team < blocks;
    uint32_t acc = 0u;
#pragma unroll
    for (int u = 0; u < kChunks; ++u) {
      uint32_t w[4];
      ld_shared(smem_addr(slots[st][u][threadIdx.x]), w);
      acc = chunk_absmax<kIn>(acc, w);
    }
    float a = chunk_absmax_finish<kIn>(acc);
#pragma unroll
    for (uint32_t b = kG / 2; b >= 1; b >>= 1) a = max_num(a, __shfl_xor_sync(kFullWarpMask, a, b));
    const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, p.qmax, p.flags);
    if (live) {
      if (tl == 0) sf_out.store(m, k, si.stored);
      uint8_t* dst = data + first(m, k);
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        uint32_t w[4];
        ld_shared(smem_addr(slots[st][u][threadIdx.x]), w);
        float v[kVec];
#pragma unroll
        for (int e = 0; e < static_cast<int>(kVec); ++e) v[e] = mul_rn(chunk_value<kIn>(w, e), si.inv);
        uint32_t o[kVec / 4];
        encode_chunk<Fmt::kE4m3, kVec>(v, o);  // the hardware RN conversion checked equal to §1.2 (common/codec.cuh)
        store_chunk<kVec>(dst + u * step, o, true);
      }
    }
    base = next;
    m = mk.q;
    k = mk.r;
  }
  sf_out.zero_padding_rows(nbm, p.sf_rows);
}

}  // namespace
}  // namespace tk

#define TK_CAST_BLOCK_STAGED_SHAPED(in, IN, R, C)                                                \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kStagedMinBlocksPerSm)     \
      tk_cast_block_staged__##in##_e4m3_r##R##c##C##_a(const __grid_constant__ CastBlockParams p) { \
    tk::block_single_staged_shaped<tk::BlockIn::IN, R, C>(p);                                     \
  }

#define TK_CAST_BLOCK_STAGED(in, IN)                                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kStagedMinBlocksPerSm)     \
      tk_cast_block_staged__##in##_e4m3(const __grid_constant__ CastBlockParams p) {             \
    tk::block_single_staged<tk::BlockIn::IN>(p);                                                  \
  }

#define TK_CAST_BLOCK_SF(in, IN)                                                                 \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm)                              \
      tk_cast_block_sf__##in(const __grid_constant__ CastBlockParams p) {                        \
    tk::block_scales<tk::BlockIn::IN>(p);                                                         \
  }
#define TK_CAST_BLOCK_DATA(in, IN, out, OUT)                                                     \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm)                              \
      tk_cast_block_data__##in##_##out(const __grid_constant__ CastBlockParams p) {              \
    tk::block_data<tk::BlockIn::IN, tk::Fmt::OUT>(p);                                             \
  }
#define TK_CAST_BLOCK_SINGLE(in, IN)                                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm)                              \
      tk_cast_block_single__##in##_e4m3(const __grid_constant__ CastBlockParams p) {             \
    tk::block_single<tk::BlockIn::IN>(p);                                                         \
  }
#define TK_CAST_BLOCK(in, IN)                \
  TK_CAST_BLOCK_SF(in, IN)                   \
  TK_CAST_BLOCK_DATA(in, IN, e4m3, kE4m3)    \
  TK_CAST_BLOCK_DATA(in, IN, e2m1, kE2m1)

TK_CAST_BLOCK(fp32, kFp32)
TK_CAST_BLOCK(bf16, kBf16)
TK_CAST_BLOCK(fp16, kFp16)
TK_CAST_BLOCK(e4m3, kE4m3)
TK_CAST_BLOCK(e2m1, kE2m1)
TK_CAST_BLOCK_SINGLE(fp32, kFp32)
TK_CAST_BLOCK_SINGLE(bf16, kBf16)
TK_CAST_BLOCK_SINGLE(fp16, kFp16)
TK_CAST_BLOCK_STAGED(fp32, kFp32)
TK_CAST_BLOCK_STAGED(bf16, kBf16)
TK_CAST_BLOCK_STAGED(fp16, kFp16)
TK_CAST_BLOCK_STAGED_SHAPED(bf16, kBf16, 16, 64)

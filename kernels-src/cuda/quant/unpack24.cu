// The FP4 dequantizers with codes and output on a 16-byte boundary, fed by a warp's cp.async ring in shared memory,
// one 16-byte copy of codes a lane a step (round 24, docs/perf-notes/perf24-unp.md): unpackFromE2m1fnX2 (unpack.cu's
// conversion; host ops/quant/unpack.ts, unpackLaunchTuning.ring) and castBack / perTokenCastBack e2m1 → bf16 with
// fp32 block scales of c ≥ 32 columns (cast_back.cu's CastBack::process; host ops/quant/cast_back.ts,
// castBackLaunchTuning.e2m1Ring). Both knobs on by default since the twentieth run. One file, so one cubin per arch for the three.
//
// Symbols
//   tk_unpack_e2m1x2__bf16_w    a step: 16 code bytes a lane → 4 16-byte stores (64 output bytes)
//   tk_unpack_e2m1x2__fp32_w    a step: 16 code bytes a lane → 8 16-byte stores (128 output bytes)
//   tk_cast_back__e2m1_bf16_w   a step: 16 code bytes (one 32-value block) and one scale a lane → 4 16-byte stores
//
// Why: the kernels they replace load 2–4 code bytes a lane an instruction. unpack.cu's warp step loads 256 code
// bytes (8 KiB a SM at 32 warps) and waits for them before its 2 / 4 stores, so reads are in flight for only part of
// each step; cast_back.cu's row-team kernel stages 4-byte pieces, 4 copies a lane a unit (H200, % of copy at 8192 /
// 16384 × 7168: unpack → bf16 78.6 / 82.3, → fp32 81.7 / 83.5; castBack e2m1 [1,32] fp32 sf → bf16 76.6 / 80.7).
// Here a step is a warp unit of 32 chunks of 16 code bytes (512 B in, 2 or 4 KiB out): a lane issues 1 copy (and,
// for castBack, 1 scale load), 1 commit, 1 wait, 4 / 8 ld.shared, 4 / 8 conversions and 4 / 8 16-byte stores, with
// the step overhead paid once — fewer, wider instructions, the form that won for perBlockCastLossless `__tile_cg`
// (perf20-lsl.md) and stochasticCast `_sr_a12w2` (cast_sr23.cu) — and the next unit (512 B a warp, 16 KiB a SM) is
// in flight through the whole step.
//
// Layout (warp_ring): lane t copies chunk t of a unit to its 16 bytes at 16 t (512 contiguous bytes an instruction,
// whole sectors). In store round r lane t converts the kPiece = 4 (bf16 out) / 2 (fp32 out) code bytes at
// kPiece · (32 r + t) of the unit, which other lanes copied, into one 16-byte store, so every store instruction of the
// warp writes 512 contiguous bytes (whole sectors; unpack.cu's order); the reads are kPiece consecutive bytes a lane
// (one wavefront). A __syncwarp after the wait makes the copies visible, a second one after the reads keeps the
// next step's refill behind every lane's reads (no CTA barrier; each warp owns its 512 B of a stage).
//
// Same bytes by construction (each form's own comment says how): every output value goes through the old kernel's
// conversion of its own codes (and scale) and lands at the old kernel's output bytes; nothing depends on the grid,
// the unit, the lane or the order. A launch outside a form's conditions (misaligned, strided, other scales) traps;
// the hosts take these forms only inside them.
//
// Launch: max(1, min(⌈units / 8⌉, G · SMs)) blocks of 256 — one warp per unit of 512 code bytes, G = 4 by default
// (the tuning objects' ringGridPerSm; any grid.x ≥ 1 is correct: units are warp-grid-stride); static shared memory
// 2 stages × 8 warps × 512 B = 8 KiB. Unit and chunk indices in 32 bits: the hosts take these forms for fewer than
// 2^35 code bytes (chunks < 2^31; the loop forms at most units + 2 warp-grids, a warp-grid < 2^15).
#define TK_UNPACK_NO_ENTRIES
#include "unpack.cu"
#define TK_CAST_BACK_NO_ENTRIES
#include "cast_back.cu"

namespace tk {
namespace {

constexpr int kRingThreads = 256;
constexpr uint32_t kRingWarps = kRingThreads / kWarpSize;
constexpr uint32_t kRingChunk = 16;                       // code bytes a lane copies a step
constexpr uint32_t kRingUnit = kWarpSize * kRingChunk;    // code bytes a warp converts a step
constexpr uint32_t kRingStage = kRingWarps * kRingUnit;   // a stage of the CTA: each warp's unit

// The ring of both forms, two stages: step v copies unit v into one stage (copy(v, stage) issues the lane's copy and
// returns a word that travels with the unit: castBack's block scale) and converts unit v − warps from the other
// (convert(u, stage, word)), which the previous step copied. The first step only copies: the prologue folded into the
// loop, so that the copy code exists once. v is the same for the whole warp, so the loop, the __syncwarp and any
// shuffle inside convert are warp-uniform. Every copy past the end (a zero fill or nothing) has landed on return.
template <class Copy, class Convert>
TK_DEV void warp_ring(uint32_t units, uint8_t (&ring)[2][kRingStage], Copy copy, Convert convert) {
  const uint32_t warps = gridDim.x * kRingWarps;
  const uint32_t gwarp = blockIdx.x * kRingWarps + threadIdx.x / kWarpSize;
  uint32_t next_stage = smem_addr(&ring[0][threadIdx.x / kWarpSize * kRingUnit]);
  uint32_t cur_stage = next_stage + kRingStage;
  uint32_t word = 0;
#pragma unroll 1
  for (uint32_t v = gwarp; v < units + warps; v += warps) {
    // into the stage read in the previous step (every lane's reads of it were done before that step's second
    // __syncwarp), or the empty one; `stage` then holds unit v − warps
    const uint32_t next_word = copy(v, next_stage);
    cp_async_commit();
    const uint32_t stage = cur_stage;
    cur_stage = next_stage;
    next_stage = stage;
    if (v >= warps) {
      cp_async_wait<1>();  // every group but the one just committed: unit v − warps
      __syncwarp();        // the other lanes' copies of it are visible from here
      convert(v - warps, stage, word);
    }
    word = next_word;
  }
  cp_async_wait<0>();  // zero fills land before the CTA's shared memory is released
}

TK_DEV uint32_t ld_shared_u16(uint32_t a) {
  uint16_t v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(a) : "memory");
  return v;
}

// unpackFromE2m1fnX2 over contiguous codes (the host's condition: col_stride 1 and rows·K contiguous, x and out on a
// 16-byte boundary). Same bytes as unpack.cu: every piece converts as unpack.cu's contiguous path converts it
// (e2m1x8_to_bf16 for bf16, Unpack::value per nibble for fp32) into the same output bytes (2 · kOutElemBytes per code
// byte). The ring takes the n / 512 whole units; the last n % 512 code bytes go through Unpack::store_byte, unpack.cu's
// tail.
template <bool kBf16>
struct UnpackRing {
  using Conv = Unpack<kBf16>;
  static constexpr uint32_t kPiece = Conv::kPiece;                 // code bytes of one 16-byte store: 4 or 2
  static constexpr int kStores = kRingChunk / kPiece;              // stores a lane a step: 4 or 8
  static constexpr uint32_t kOutPerCode = 2 * Conv::kOutElemBytes;  // output bytes a code byte: 4 or 8
  static_assert(kPiece * kOutPerCode == kVecBytes, "a piece is one 16-byte store");

  // The kPiece code bytes at shared address a, first in the low byte.
  TK_DEV static uint32_t ld_piece(uint32_t a) {
    if constexpr (kPiece == 4) {
      uint32_t w[1];
      ld_shared(a, w);
      return w[0];
    } else {
      return ld_shared_u16(a);
    }
  }

  TK_DEV static void run(const UnpackParams& p) {
    __shared__ __align__(16) uint8_t ring[2][kRingStage];
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    uint8_t* out = reinterpret_cast<uint8_t*>(p.out);
    if (((p.x | p.out) % kVecBytes) != 0 || p.col_stride != 1 || (p.rows > 1 && p.row_stride != static_cast<int64_t>(p.cols))) {
      __trap();  // the host launches it only aligned and contiguous
    }
    const uint64_t n = p.rows * p.cols;
    const uint32_t units = static_cast<uint32_t>(n / kRingUnit);  // whole units; the rest by bytes below
    const uint32_t lane = threadIdx.x % kWarpSize;
    warp_ring(
        units, ring,
        [&](uint32_t u, uint32_t stage) {
          if (u < units) cp_async<16>(stage + kRingChunk * lane, x + static_cast<uint64_t>(u) * kRingUnit + kRingChunk * lane, true);
          return 0u;
        },
        [&](uint32_t u, uint32_t stage, uint32_t) {
          uint32_t c[kStores];
#pragma unroll
          for (int r = 0; r < kStores; ++r) c[r] = ld_piece(stage + kPiece * (kWarpSize * r + lane));
          __syncwarp();  // every lane has read this stage: the next step may refill it
          uint8_t* const dst = out + (static_cast<uint64_t>(u) * kRingUnit + kPiece * lane) * kOutPerCode;
#pragma unroll
          for (int r = 0; r < kStores; ++r) {
            uint32_t o[4];
            if constexpr (kBf16) {
              e2m1x8_to_bf16(c[r], o);
            } else {
#pragma unroll
              for (int i = 0; i < 4; ++i) o[i] = Conv::value((c[r] >> (4 * i)) & 0xfu);
            }
            st_v4(dst + kPiece * kWarpSize * kOutPerCode * r, o[0], o[1], o[2], o[3]);
          }
        });
    // the last n % 512 code bytes, one per thread step (at most 2 steps: a launch has at least 256 threads)
    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
#pragma unroll 1
    for (uint64_t e = static_cast<uint64_t>(units) * kRingUnit + blockIdx.x * blockDim.x + threadIdx.x; e < n; e += threads) {
      Conv::store_byte(out, e, ld_u8(x + e));
    }
  }
};

// castBack e2m1 → bf16 over the flat [T, H / 2] codes (castBack takes contiguous codes and output only; the host's
// conditions: fp32 scales, c ≥ 32, data and out on a 16-byte boundary): H % 64 == 0 keeps a chunk (32 values) inside a
// row, c ≥ 32 inside one scale block. Lane t loads the scale of the chunk it copies (scale_storage at (t' >> log2 r,
// col >> log2 c), the block cast_back.cu's piece_scale selects for every piece of the chunk); piece r of lane t is in
// chunk 8 r + t / 4, whose scale comes by shuffle. Same bytes as cast_back.cu: each piece goes through
// CastBack<e2m1, bf16>::process<kBlockOnly> (the path cast_back.cu's process takes for every piece when c ≥ 16) with its
// own 4 code bytes and that scale's storage, and process stores it at the output bytes cast_back.cu's piece has (4
// per code byte: out_row + col · 2 there, the flat offset here, with row 0 and col 0 passed, which that path uses
// for nothing else). Chunks past the end copy and store nothing.
struct CastBackRing {
  using Conv = CastBack<Fmt::kE2m1, Fmt::kBf16>;
  static constexpr uint32_t kPiece = Conv::kInBytes;                             // 4: 8 codes, one 16-byte store
  static constexpr int kStores = kRingChunk / kPiece;                            // 4 stores a lane a step
  static constexpr uint32_t kOutPerCode = Conv::kVec / kPiece * Conv::kOutElemBytes;  // 4 output bytes a code byte
  static_assert(Conv::kInWords == 1 && Conv::kOutBytes == kVecBytes, "a piece is 4 code bytes → one 16-byte store");

  TK_DEV static void run(const CastBackParams& p) {
    __shared__ __align__(16) uint8_t ring[2][kRingStage];
    // the kind a known constant to every scale lookup and decode, process's included: no kind dispatch
    CastBackParams fp = p;
    fp.sf_kind = kSfFp32;
    const Conv cv(fp);
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.data);
    uint8_t* out = reinterpret_cast<uint8_t*>(p.out);
    if (((p.data | p.out) % kVecBytes) != 0 || p.data_row_stride * 2 != p.hidden || p.out_row_stride != p.hidden ||
        p.block_cols < 2 * kRingChunk || p.sf_kind != kSfFp32) {
      __trap();  // the host launches it only aligned, contiguous, with c ≥ 32 and fp32 scales
    }
    const uint32_t row_chunks = p.hidden / (2 * kRingChunk);
    const uint32_t chunks = p.num_tokens * row_chunks;
    const uint32_t lane = threadIdx.x % kWarpSize;
    warp_ring(
        (chunks + kWarpSize - 1) / kWarpSize, ring,
        [&](uint32_t u, uint32_t stage) {
          // chunk c of unit u (past the end: its slot becomes zeros, never stored) and the storage of its scale
          const uint32_t c = u * kWarpSize + lane;
          const bool live = c < chunks;
          cp_async<16>(stage + kRingChunk * lane, x + static_cast<uint64_t>(live ? c : 0) * kRingChunk, live);
          if (!live) return 0u;
          const uint32_t t = c / row_chunks, col = (c - t * row_chunks) * 2 * kRingChunk;
          return scale_storage(fp.sf, fp.sf_kind, fp.sf_stride0, fp.sf_stride1, t >> cv.row_shift, col >> cv.col_shift);
        },
        [&](uint32_t u, uint32_t stage, uint32_t raw) {
          uint32_t w[kStores][1];
#pragma unroll
          for (int r = 0; r < kStores; ++r) ld_shared(stage + kPiece * (kWarpSize * r + lane), w[r]);
          __syncwarp();  // every lane has read this stage: the next step may refill it
          uint8_t* const dst = out + (static_cast<uint64_t>(u) * kRingUnit + kPiece * lane) * kOutPerCode;
          const uint32_t live = chunks - u * kWarpSize;  // chunks of unit u that exist (32 or more: all)
          // A rolled loop over the 4 pieces, one copy of process (as cast_back.cu's rolled piece loop: an unrolled
          // exact-scale path beside it cost 2.9 KiB of cubin a arch); piece r is at the front of w in iteration r
          // (a shift, not a dynamic index: no local memory)
#pragma unroll 1
          for (int r = 0; r < kStores; ++r) {
            const uint32_t q = kWarpSize / kStores * r + lane / kStores;  // the piece's chunk in the unit
            const uint32_t rs = __shfl_sync(kFullWarpMask, raw, q);
            if (q < live) cv.process<true>(w[0], rs, 0, 0, dst + kPiece * kWarpSize * kOutPerCode * r);
#pragma unroll
            for (int i = 0; i + 1 < kStores; ++i) w[i][0] = w[i + 1][0];
          }
        });
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kRingThreads, 4) tk_unpack_e2m1x2__fp32_w(const __grid_constant__ UnpackParams p) {
  tk::UnpackRing<false>::run(p);
}
extern "C" __global__ void __launch_bounds__(tk::kRingThreads, 4) tk_unpack_e2m1x2__bf16_w(const __grid_constant__ UnpackParams p) {
  tk::UnpackRing<true>::run(p);
}
extern "C" __global__ void __launch_bounds__(tk::kRingThreads, 4) tk_cast_back__e2m1_bf16_w(const __grid_constant__ CastBackParams p) {
  tk::CastBackRing::run(p);
}

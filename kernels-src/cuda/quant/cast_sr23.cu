// stochasticCast bf16 → e4m3, x and out on a 16-byte boundary: `_sr_a12`'s chunk conversion (cast_sr12.cu) fed by a
// warp's cp.async ring in shared memory, two consecutive chunks a lane a step and one 16-byte store for both (round
// 23, docs/perf-notes/perf23-csr.md; host ops/quant/elem_launch.ts, castLaunchTuning.srRing "w2", the default for
// 5120 … 14336 rows, `_sr_a12` elsewhere).
//
// Symbol
//   tk_cast__bf16_e4m3_sr_a12w2   ring of 2 stages: 1 unit (32 B a lane) in flight, 16 KiB a CTA
//
// Why: round 21's c5 (a thread-private 5-stage ring of one chunk a step; git history, docs/perf-notes/
// perf21-csr.md) kept 64 B a thread in flight through every conversion and won 4.8 points of copy over `_sr_a12` at
// 8192 × 7168, but its added laps run slower than `_sr_a12`'s (round 21, H200: 89.9% at 8192, 86.7% at
// 16384, where `_sr_a12` reaches 88.9%), and deeper rings (c9, c13) were slower still. A c5 step is one chunk:
// one 16-byte copy, a commit, a wait, one ld.shared, the conversion of 2 quads and one 8-byte store, plus the
// loop's index, address and slot arithmetic, with only the 2 quads' hash chains to overlap. Here a step is a warp
// unit of 64 consecutive chunks (1024 B in, 512 B out): per pair of chunks a lane issues 2 copies, 1 commit, 1
// wait, 2 ld.shared, 4 independent quad chains and 1 16-byte store, with the step overhead paid once — fewer, wider
// instructions, the form that took perBlockCastLossless's `__tile_cg` past `__tile_cp` (docs/perf-notes/
// perf20-lsl.md). w2 keeps half of c5's bytes in flight, for the depth trend c13 < c9 < c5 at 16384; a 3-stage w3
// (c5's bytes) measured below w2 from 10240 rows on and left with c5 (perf23-csr.md, Measured).
//
// Layout: the copies stay coalesced (lane t copies the unit's chunks t and 32 + t: 512 contiguous bytes an
// instruction, whole sectors) and a lane then reads its chunks 2t and 2t + 1, which other lanes copied: a
// __syncwarp after the wait makes them visible, a second one after the reads keeps the next step's refill behind
// every lane's reads (no CTA barrier; each warp owns its 1 KiB of a stage). Chunk j of a unit sits at 16 · σ(j),
// σ(j) = j ^ ((j >> 3) & 1): the copies (8 consecutive j a quarter warp) and the reads (8 even or 8 odd j) each touch
// 8 distinct 16-byte bank groups, so every access is the minimum 4 wavefronts (without σ the reads conflict 2-way).
//
// Same bytes as `_sr_a12` by construction: chunk c = 64 u + 2 t (+ 1) goes through the same ElemCast::convert(w, o,
// 8 · c, idx_base) on the 16 bytes of chunk c (the slot holds exactly them) and its 8 bytes land at out + 8c, the
// two chunks' side by side in the 16-byte store (the second alone, when it is past the end, is not stored: an
// 8-byte store of the first). A chunk's bytes depend only on its values and its flat index, never on the grid, the
// unit, the lane or the order; the last numel % 8 elements go through the same ElemCast::tail. Misaligned x or out
// traps (the host takes these forms only with out on a 16-byte boundary, else `_sr_a12`).
//
// Launch: `_sr_a12`'s grid, max(1, min(⌈⌈numel/8⌉ / 1024⌉, 4 · SMs)) blocks of 256 (any grid.x ≥ 1 is correct: units
// are warp-grid-stride), dynamic shared memory kStages · 8 KiB (the host's table in elem_launch.ts), carveout 50.
#define TK_CAST_SR12_NO_ENTRIES
#include "cast_sr12.cu"

namespace tk {
namespace {

template <int kStages>
struct ElemCastSrWideRing {
  using Cast = ElemCast<Elem::kBf16, Elem::kE4m3, true, true>;
  static constexpr uint32_t kInBytes = Cast::kInBytes;    // 16: a chunk of 8 bf16
  static constexpr uint32_t kOutBytes = Cast::kOutBytes;  // 8: a chunk of 8 e4m3
  static_assert(kInBytes == 16 && kOutBytes == 8, "bf16 → e4m3 chunks");
  static constexpr uint32_t kUnitChunks = 64;  // a warp's step: 2 chunks a lane
  static constexpr uint32_t kUnitBytes = kUnitChunks * kInBytes;
  static constexpr uint32_t kStageBytes = (kBlockThreads / 32) * kUnitBytes;  // [warp][σ(j)] 16 bytes
  static constexpr uint32_t kRingBytes = kStages * kStageBytes;
  // 4 CTAs per SM: their rings and the 1 KiB the driver reserves each, in an SM's 228 KiB (sm_90, sm_100)
  static_assert(4 * (kRingBytes + 1024) <= 228 * 1024, "4 CTAs per SM");

  TK_DEV static uint32_t slot(uint32_t j) { return kInBytes * (j ^ ((j >> 3) & 1)); }

  // Chunks c and c + 1 (w0, w1) → their 16 codes: ElemCast::convert's SR e4m3 steps for each chunk (the same widening,
  // sr_mix per quad with idx_base + flat quad index mod 2^32, NaN probe and fallback, encoder), but both chunks' 4
  // hash chains first, in one basic block: two converts in a row would leave the second chunk's chains behind the
  // first chunk's probe branch. Every step is a pure function of the chunk's values and index, so the order does
  // not change a byte. (One probe over both chunks would be byte-identical too, but sr_encode_e4m3_quads<4> keeps its
  // probe array in local memory on sm_90a.)
  TK_DEV static void convert_pair(const uint32_t (&w0)[4], const uint32_t (&w1)[4], uint32_t (&o)[4], uint32_t c,
                                  uint32_t idx_base) {
    uint32_t b0[kChunk], b1[kChunk], r0[kChunk / 4], r1[kChunk / 4], o0[kChunk / 4], o1[kChunk / 4];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      b0[i] = widen_bits<Elem::kBf16, true>(raw_element<Elem::kBf16>(w0, i));
      b1[i] = widen_bits<Elem::kBf16, true>(raw_element<Elem::kBf16>(w1, i));
    }
    // chunk c's quads are flat quads 2c and 2c + 1, chunk c + 1's 2c + 2 and 2c + 3
#pragma unroll
    for (int h = 0; h < kChunk / 4; ++h) {
      r0[h] = sr_mix(b0[4 * h], b0[4 * h + 1], b0[4 * h + 2], b0[4 * h + 3], idx_base + 2 * c + h).r0;
      r1[h] = sr_mix(b1[4 * h], b1[4 * h + 1], b1[4 * h + 2], b1[4 * h + 3], idx_base + 2 * c + 2 + h).r0;
    }
    TK_CAST_SR_E4M3_QUADS<kChunk / 4>(b0, r0, o0);
    TK_CAST_SR_E4M3_QUADS<kChunk / 4>(b1, r1, o1);
    o[0] = o0[0], o[1] = o0[1], o[2] = o1[0], o[3] = o1[1];
  }

  // Unit u's 64 chunks into `stage`, lane t copying chunks t and 32 + t (a chunk past the end reads nothing: its slot
  // becomes zeros, converted but never stored); one commit group.
  TK_DEV static void copy_unit(const uint8_t* x, uint32_t chunks, uint32_t u, uint32_t stage, uint32_t dst_lo,
                               uint32_t dst_hi, uint32_t lane) {
    const uint32_t lo = u * kUnitChunks + lane, hi = lo + 32;
    cp_async<16>(stage + dst_lo, x + static_cast<uint64_t>(lo < chunks ? lo : 0) * kInBytes, lo < chunks);
    cp_async<16>(stage + dst_hi, x + static_cast<uint64_t>(hi < chunks ? hi : 0) * kInBytes, hi < chunks);
    cp_async_commit();
  }

  // Chunk indices in 32 bits, as c5: the host takes these forms only for numel < 2^34 (chunks < 2^31), so 64 times
  // any unit index the loop forms (at most ⌈chunks / 64⌉ + kStages warp-grids, a warp-grid < 2^15) stays below 2^32.
  TK_DEV static void run(const CastParams& p) {
    extern __shared__ __align__(16) uint8_t ring_smem[];
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    uint8_t* out = reinterpret_cast<uint8_t*>(p.out);
    const uint32_t chunks = static_cast<uint32_t>(p.numel / kChunk);
    if (((p.x % kInBytes) | (p.out % (2 * kOutBytes))) != 0) __trap();  // the host launches it only aligned
    const uint32_t lane = threadIdx.x % 32;
    const uint32_t warps = gridDim.x * (blockDim.x / 32);
    const uint32_t units = (chunks + kUnitChunks - 1) / kUnitChunks;
    const uint32_t first_stage = smem_addr(ring_smem) + (threadIdx.x / 32) * kUnitBytes;
    const uint32_t last_stage = first_stage + (kStages - 1) * kStageBytes;
    const uint32_t dst_lo = slot(lane), dst_hi = slot(32 + lane), src_even = slot(2 * lane), src_odd = slot(2 * lane + 1);
    // prologue: the warp's first kStages − 1 units into stages 0 … kStages − 2
    const uint32_t gwarp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    uint32_t ahead = gwarp;
#pragma unroll 1
    for (int s = 0; s < kStages - 1; ++s, ahead += warps) copy_unit(x, chunks, ahead, first_stage + s * kStageBytes, dst_lo, dst_hi, lane);
    uint32_t stage = first_stage, free_stage = last_stage;
    // u is the same for the whole warp, so the loop and its __syncwarp are warp-uniform
    for (uint32_t u = gwarp; u < units; u += warps, ahead += warps) {
      // the unit kStages − 1 steps on, into the stage read in the previous step (every lane's reads of it were done
      // before that step's second __syncwarp) or, in the first step, the stage the prologue left empty
      copy_unit(x, chunks, ahead, free_stage, dst_lo, dst_hi, lane);
      cp_async_wait<kStages - 1>();  // every group but the last kStages − 1: this unit's
      __syncwarp();                  // the other lanes' copies of this unit are visible from here
      uint32_t w0[4], w1[4];
      ld_shared(stage + src_even, w0);
      ld_shared(stage + src_odd, w1);
      __syncwarp();  // every lane has read this stage: the next step may refill it
      const uint32_t c = u * kUnitChunks + 2 * lane;
      uint32_t o[4];
      convert_pair(w0, w1, o, c, p.idx_base);
      uint8_t* dst = out + static_cast<uint64_t>(c) * kOutBytes;
      if (c + 1 < chunks) {
        st_v4(dst, o[0], o[1], o[2], o[3]);
      } else if (c < chunks) {
        st_v2(dst, o[0], o[1]);
      }
      free_stage = stage;
      stage = stage == last_stage ? first_stage : stage + kStageBytes;
    }
    cp_async_wait<0>();  // copies past the end (zero fills) land before the CTA's shared memory is released
    Cast::tail(p, static_cast<uint64_t>(chunks) * kChunk, blockIdx.x * blockDim.x + threadIdx.x);
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_cast__bf16_e4m3_sr_a12w2(const __grid_constant__ CastParams p) {
  tk::ElemCastSrWideRing<2>::run(p);
}

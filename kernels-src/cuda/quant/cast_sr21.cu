// stochasticCast bf16 → e4m3, x and out on a chunk boundary: `_sr_a12`'s chunk conversion (cast_sr12.cu: cast.cu's
// aligned ElemCast with the scaled-domain e4m3 rounding) fed by a cp.async ring in shared memory (round 20's form,
// made shallower; docs/perf-notes/perf21-csr.md; host ops/quant/elem_launch.ts, castLaunchTuning.srRing and
// srRingMaxRows: the default up to 12288 rows since round 21).
//
// Symbols
//   tk_cast__bf16_e4m3_sr_a12c5   ring of 5 stages: 4 chunks (64 B) a thread in flight, 20 KiB a CTA
//
// Why: `_sr_a12` loads 4 chunks into registers, then converts and stores them: at most 64 B a thread (64 KiB an SM)
// are in flight, and none while a warp converts. Here each thread copies its own upcoming chunks with 16-byte
// cp.async.cg into its own slots of a ring of kStages slots: the copies hold no registers and depend on nothing the
// thread computes, so kStages − 1 chunks stay in flight through every conversion. Slot [s][t] is written and read by
// thread t only: cp.async.wait_group orders it, no barrier; a warp's slots of a stage are 512 contiguous bytes, so its
// copies and its ld.shared.v4 are conflict-free.
//
// Depth: measured in round 20 (H200), c9 won 3.8 points of copy at 8192 × 7168 and lost 3.5 at 16384, and the
// 13-stage ring did worse than c9 at both sizes. At c9 the grid keeps 528 · 256 · 128 B = 16.5 MiB of reads in
// flight, several times what the HBM needs to stay busy, so the extra depth only lengthens the memory queues (see
// the note). c5 keeps exactly `_sr_a12`'s most bytes in flight (64 B a thread), but all the time rather than only
// between a load burst and its first use. Round 21 measured c5 above c9 at every size from 2048 to 16384 rows × 7168
// (c9 left the package), and above `_sr_a12` at 2048 and 6144 … 12288 rows, below it at 4096 and from 14336 on.
//
// Same bytes as `_sr_a12` by construction: thread t converts chunks gtid, gtid + G, gtid + 2G, … (G = grid threads),
// each with the same ElemCast::convert(w, o, 8 · c, idx_base) (widen, sr_mix per quad with idx_base + flat quad
// index, NaN probe and fallback, sr12_encode_e4m3_quads) and the same 8-byte store; a chunk's bytes depend only on
// its values and its flat index, never on the grid or the order. The last numel % 8 elements go through the same
// ElemCast::tail. Misaligned x or out traps, as `_sr_a12` (the host takes these forms only on a chunk boundary).
//
// Launch: `_sr_a12`'s grid, max(1, min(⌈⌈numel/8⌉ / 1024⌉, 4 · SMs)) blocks of 256 (any grid.x ≥ 1 is correct),
// dynamic shared memory kStages · 4 KiB (the host's table in elem_launch.ts), carveout 100 so 4 CTAs fit per SM.
#define TK_CAST_SR12_NO_ENTRIES
#include "cast_sr12.cu"

namespace tk {
namespace {

template <int kStages>
struct ElemCastSrAsyncRing {
  using Cast = ElemCast<Elem::kBf16, Elem::kE4m3, true, true>;
  static constexpr int kInBytes = Cast::kInBytes;    // 16: a chunk of 8 bf16
  static constexpr int kOutBytes = Cast::kOutBytes;  // 8: a chunk of 8 e4m3
  static_assert(kInBytes == 16 && kOutBytes == 8, "bf16 → e4m3 chunks");
  static constexpr uint32_t kStageBytes = kBlockThreads * kInBytes;  // [t] 16 bytes
  static constexpr uint32_t kRingBytes = kStages * kStageBytes;
  // 4 CTAs per SM: their rings and the 1 KiB the driver reserves each, in an SM's 228 KiB (sm_90, sm_100)
  static_assert(4 * (kRingBytes + 1024) <= 228 * 1024, "4 CTAs per SM");

  // Chunk indices in 32 bits: the host takes these forms only for numel < 2^34, so every chunk index, and the index
  // kStages − 1 rounds of the grid past the last one, stays below 2^32 (a grid has at most 4 · SMs · 256 < 2^20
  // threads); the §7.4 index idx_base + first / 4 is mod 2^32 anyway.
  TK_DEV static void run(const CastParams& p) {
    extern __shared__ __align__(16) uint8_t ring_smem[];
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    uint8_t* out = reinterpret_cast<uint8_t*>(p.out);
    const uint32_t chunks = static_cast<uint32_t>(p.numel / kChunk);
    if (((p.x % kInBytes) | (p.out % kOutBytes)) != 0) __trap();  // the host launches it only aligned
    const uint32_t threads = gridDim.x * blockDim.x;
    const uint32_t gtid = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t first_slot = smem_addr(ring_smem) + kInBytes * threadIdx.x;
    const uint32_t last_slot = first_slot + (kStages - 1) * kStageBytes;
    // prologue: the thread's first kStages − 1 chunks into slots 0 … kStages − 2, one commit group each (a chunk past
    // the end reads nothing: its slot becomes zeros and is never read)
    uint32_t ahead = gtid;
#pragma unroll 1
    for (int s = 0; s < kStages - 1; ++s, ahead += threads) {
      const bool live = ahead < chunks;
      cp_async<kInBytes>(first_slot + s * kStageBytes, x + static_cast<uint64_t>(live ? ahead : 0) * kInBytes, live);
      cp_async_commit();
    }
    uint32_t slot = first_slot, free_slot = last_slot;
    for (uint32_t c = gtid; c < chunks; c += threads, ahead += threads) {
      // the chunk kStages − 1 steps on, into the slot read in the previous step (its values fed that step's store,
      // so the read had completed) or, in the first step, the slot the prologue left empty
      const bool live = ahead < chunks;
      cp_async<kInBytes>(free_slot, x + static_cast<uint64_t>(live ? ahead : 0) * kInBytes, live);
      cp_async_commit();
      cp_async_wait<kStages - 1>();  // every group but the last kStages − 1: this chunk's
      uint32_t w[4], o[2];
      ld_shared(slot, w);
      Cast::convert(w, o, static_cast<uint64_t>(c) * kChunk, p.idx_base);
      st_v2(out + static_cast<uint64_t>(c) * kOutBytes, o[0], o[1]);
      free_slot = slot;
      slot = slot == last_slot ? first_slot : slot + kStageBytes;
    }
    cp_async_wait<0>();  // copies past the end (zero fills) land before the CTA's shared memory is released
    Cast::tail(p, static_cast<uint64_t>(chunks) * kChunk, gtid);
  }
};

}  // namespace
}  // namespace tk

// cast_sr23.cu includes this file (and through it cast_sr12.cu's chunk conversion and tail) and keeps this entry out
#ifndef TK_CAST_SR21_NO_ENTRIES
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_cast__bf16_e4m3_sr_a12c5(const __grid_constant__ CastParams p) {
  tk::ElemCastSrAsyncRing<5>::run(p);
}
#endif  // TK_CAST_SR21_NO_ENTRIES

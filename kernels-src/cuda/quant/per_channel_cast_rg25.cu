// perChannelCastFused of bf16, R = 128: the base kernel's tile (128 rows × 128 columns, thread (rg, cg) owning rows
// 8rg … 8rg + 7 × columns 8cg … 8cg + 7) in a persistent grid whose threads keep their next two tiles' rows in flight
// through a thread-private 3-stage cp.async ring (round 25, docs/perf-notes/perf25-pcfb.md). Numerics:
// per_channel_cast.cu, spec/quant.md §5.1-5.2.
//
// Symbol (the host runs it only for perChannelCastFused of a bf16 input with 16-byte aligned x and data and
// H % 8 == 0, under perChannelLaunchTuning.pipelinedBf16 "_rg", the default since the twentieth run)
//   tk_per_channel_cast__bf16_r128_rg
//
// Launch geometry: block.x = 256, dynamic shared memory kSmemBytes (107,008 B: 3 stages × 32 KiB of bf16, 8 KiB of
// partial maxima, 512 B of inverses; carveout 100%), 2 CTAs per SM, grid.x = min(tiles, 2 · SMs) with tiles =
// ceilDiv(T_out, 128) · ceilDiv(H, 128); any grid.x ≥ 1 is correct. CTA b takes tiles b, b + grid.x, … (column
// tiles fastest): at any time the resident CTAs read the whole 14 KiB gathered rows of a few row blocks, as the base
// kernel's one-tile CTAs (launched in tile order) do.
//
// Why: the base kernel (4 CTAs of 256 per SM, one tile each) loads a tile's posToToken entries, waits for them, loads
// its 8 rows into registers, waits, and then runs its amax, 3 barriers, cast and stores with nothing of its own in
// flight; its gathered-row loads go through per-row 64-bit address math and branches and its amax widens every
// element. Measured (H200): 84.2% of copy at 16384 × 7168, ≈ 80% at 8192, against 88.6% for perChannelCast `_pa`
// (same tile, no gather, packed amax); Nsight Compute (round 18) of it: 70% of issue slots used, ALU 69%, ≈ 1000
// warp instructions per thread per tile. Here the indices of tile k + 3 and the rows of tiles k + 1 and k + 2 are in
// flight while tile k is reduced and cast (2 × 32 KiB per CTA, 128 KiB per SM, no registers), and the amax runs on
// packed bf16 pairs (`_pa`'s column_amax_packed).
//
// The ring is thread-private: thread t copies exactly the 16-byte pieces it later reads (rows 8rg + i, columns
// 8cg … 8cg + 7), at stage s, row i: byte s · 32 KiB + i · 4 KiB + 16t (a warp's copy or read of row i is 512
// contiguous bytes of shared memory: conflict-free; in global memory 2 gathered rows × 256 B, as the base kernel's
// loads). So cp.async.wait_group alone orders a thread's copies before its reads, and a stage is refilled only by
// the thread that read it two tiles before (those reads were consumed before that tile's barriers): no barrier for
// the ring. Per tile k (stage k % 3):
//   1. wait for this thread's copies of tile k (cp.async.wait_group 1); issue tile k + 2 into stage (k + 2) % 3 with
//      the indices loaded one tile earlier; load tile k + 3's posToToken entries into registers;
//   2. 8 × ld.shared.v4 of the thread's rows; column maxima on packed bf16 pairs; partials to shared memory; barrier;
//      one thread per column reduces the 16 partials, sf_and_inv, stores sf, publishes inv; barrier;
//   3. fl(x · inv), encoded, 8-byte stores of the live rows (the base kernel's row stores).
// 2 barriers per tile (the base kernel: 3): the partials are rewritten only after the barrier that follows their
// reads, and the inverses only after the next tile's first barrier, which every reader of them has passed.
//
// Same bytes as the base kernel by construction: thread (rg, cg) holds the same 8 × 16 bytes in w (the copies read
// the bytes the base kernel's load_row loaded; a dead row (≥ T_out), a negative or bad index, or a piece at
// columns ≥ H is zero-filled, as load_row returns zeros there); the column maxima of |x| on packed pairs equal the
// base form's fmaxf chain of widened |x| (per_channel_cast.cu, column_amax_packed; every value ≥ +0, NaN dropped,
// so the reduction order does not matter); the partials sit at the base positions and are reduced by the same code
// (column_of, sf_and_inv, store_sf); the cast is the base form's values / mul_rn / encode_chunk on w and inv, stored
// to the same 8 bytes for live rows and columns < H. Bad indices: the same test, reported by the same thread (cg 0 of
// column tile 0, which owns the row) from the one issue of that tile: the error word counts each bad entry once.
#define TK_PER_CHANNEL_CAST_NO_ENTRIES
#include "per_channel_cast.cu"

extern __shared__ __align__(16) uint8_t tk_per_channel_rg_smem[];

namespace tk {
namespace {

struct PerChannelGatherRing {
  using Pa = PerChannel<Fmt::kBf16, 128, false, kFormPa>;
  static constexpr int kR = 128, kCols = Pa::kCols, kV = Pa::kV;                 // 128 columns, 8 per thread
  static constexpr int kRows = Pa::kRowsPerThread, kColGroups = Pa::kColGroups;  // 8 rows, 16 column groups
  static constexpr int kRowGroups = Pa::kRowGroups;                              // 16
  // 3 stages: the tile being cast and two in flight. 2 CTAs (16 warps) per SM fit 228 KiB of shared memory.
  static constexpr int kStages = 3, kCtasPerSm = 2;
  static constexpr uint32_t kRowSlotBytes = 16 * kBlockThreads;  // row i of every thread of a stage: 4 KiB
  static constexpr uint32_t kStageBytes = kRows * kRowSlotBytes;  // 32 KiB
  static constexpr uint32_t kRedOffset = kStages * kStageBytes;
  static constexpr uint32_t kInvOffset = kRedOffset + 4 * kRowGroups * kCols;
  static constexpr uint32_t kSmemBytes = kInvOffset + 4 * kCols;
  static_assert(kRows * kRowGroups == kR && kV * kColGroups == kCols && kV == 8, "tile shape");
  static_assert(kCtasPerSm * (kSmemBytes + 1024) <= 228 * 1024, "resident CTAs fit in shared memory");

  const PerChannelCastParams& p;
  Pa pa;  // nbm, col_tiles, column_amax_packed, values, store_sf, column_of
  uint32_t rg, cg, slot;  // the thread's row group, column group, and its slot (stage 0, row 0)
  uint32_t m_step, ct_step;

  TK_DEV explicit PerChannelGatherRing(const PerChannelCastParams& params) : p(params), pa(params) {
    rg = threadIdx.x / kColGroups;
    cg = threadIdx.x % kColGroups;
    slot = smem_addr(tk_per_channel_rg_smem) + 16 * threadIdx.x;
    m_step = gridDim.x / pa.col_tiles;
    ct_step = gridDim.x % pa.col_tiles;
  }

  // A tile as (row block, column tile), advanced by gridDim.x tiles without a division per tile.
  struct Pos {
    uint32_t m, ct;
  };

  TK_DEV void advance(Pos& t) const {
    t.m += m_step;
    t.ct += ct_step;
    if (t.ct >= pa.col_tiles) {
      t.ct -= pa.col_tiles;
      ++t.m;
    }
  }

  // posToToken entries of the thread's rows of row block m (0 without a gather or for rows ≥ T_out).
  TK_DEV void load_indices(uint32_t m, uint32_t (&raw)[kRows]) const {
    const uint64_t row0 = static_cast<uint64_t>(m) * kR + kRows * rg;
    const uint8_t* pos = reinterpret_cast<const uint8_t*>(p.pos_to_token) + 4 * row0;
#pragma unroll
    for (int i = 0; i < kRows; ++i) raw[i] = p.pos_to_token != 0 && row0 + i < p.out_tokens ? ld_u32(pos + 4 * i) : 0u;
  }

  // Step 1's copies: the thread's 8 pieces of tile `t` into `stage`, zero-filled for a dead, zero or bad row and
  // for columns ≥ H (H % 8 == 0: a piece is all in or all out).
  TK_DEV void issue(Pos t, uint32_t stage, const uint32_t (&raw)[kRows]) const {
    const uint64_t row0 = static_cast<uint64_t>(t.m) * kR + kRows * rg;
    const uint32_t col = t.ct * kCols + kV * cg;
    const bool col_live = col < p.hidden;
    const bool reporter = cg == 0 && t.ct == 0;
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x) + 2 * static_cast<uint64_t>(col_live ? col : 0);
    const uint64_t row_bytes = 2ull * p.hidden;
    const uint32_t dst = slot + stage * kStageBytes;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const bool live = row0 + i < p.out_tokens;
      int64_t src = live ? static_cast<int64_t>(row0 + i) : -1;
      if (p.pos_to_token != 0) {
        const int32_t s = static_cast<int32_t>(raw[i]);
        const bool bad = live && s >= 0 && static_cast<uint32_t>(s) >= p.num_tokens;
        report_fault_warp(p.error_word, p.op_id, kCondPosOutOfRange, bad && reporter);
        src = (!live || s < 0 || bad) ? -1 : s;
      }
      const bool copy = src >= 0 && col_live;
      cp_async<16>(dst + i * kRowSlotBytes, copy ? x + static_cast<uint64_t>(src) * row_bytes : x, copy);
    }
  }

  // Steps 2 and 3 of tile `t`, staged in `stage`.
  TK_DEV void cast(Pos t, uint32_t stage) const {
    const uint32_t col0 = t.ct * kCols;
    const uint32_t col = col0 + kV * cg;
    const uint32_t red = smem_addr(tk_per_channel_rg_smem) + kRedOffset;
    const uint32_t invs = smem_addr(tk_per_channel_rg_smem) + kInvOffset;

    uint32_t w[kRows][4];
#pragma unroll
    for (int i = 0; i < kRows; ++i) ld_shared(slot + stage * kStageBytes + i * kRowSlotBytes, w[i]);
    float cm[kV];
    pa.column_amax_packed(w, cm);
#pragma unroll
    for (int q = 0; q < kV / 4; ++q) {
      const uint32_t pos = rg * kCols + q * Pa::kPieceStride + cg * 4;
      const uint32_t pw[4] = {f2u(cm[4 * q]), f2u(cm[4 * q + 1]), f2u(cm[4 * q + 2]), f2u(cm[4 * q + 3])};
      st_shared(red + 4 * pos, pw);
    }
    __syncthreads();
    if (threadIdx.x < static_cast<uint32_t>(kCols)) {
      const uint32_t q = threadIdx.x;
      const float* part = reinterpret_cast<const float*>(tk_per_channel_rg_smem + kRedOffset) + q;
      float a = 0.0f;
#pragma unroll 8
      for (int g = 0; g < kRowGroups; ++g) a = max_num(a, part[g * kCols]);
      const uint32_t c = col0 + Pa::column_of(q);
      float inv = 0.0f;
      if (c < p.hidden) {
        const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, kE4m3Max, p.flags);
        pa.store_sf(t.m, c, si.stored);
        inv = si.inv;
      }
      reinterpret_cast<float*>(tk_per_channel_rg_smem + kInvOffset)[q] = inv;
    }
    __syncthreads();

    // 3. live rows (T_out % 16 == 0: whole warps) and columns < H
    const uint64_t row0 = static_cast<uint64_t>(t.m) * kR + kRows * rg;
    if (col >= p.hidden || row0 >= p.out_tokens) return;
    float inv[kV];
#pragma unroll
    for (int q = 0; q < kV / 4; ++q) {
      uint32_t iw[4];
      ld_shared(invs + 4 * (q * Pa::kPieceStride + cg * 4), iw);
#pragma unroll
      for (int e = 0; e < 4; ++e) inv[4 * q + e] = u2f(iw[e]);
    }
    const uint32_t n_live = p.out_tokens - row0 < kRows ? static_cast<uint32_t>(p.out_tokens - row0) : kRows;
    uint8_t* dst = reinterpret_cast<uint8_t*>(p.data) + row0 * p.hidden + col;
#pragma unroll
    for (int i = 0; i < kRows; ++i, dst += p.hidden) {
      if (static_cast<uint32_t>(i) >= n_live) break;
      float v[kV];
      pa.values(w[i], 0.0f, v);  // bf16: no input scale
#pragma unroll
      for (int e = 0; e < kV; ++e) v[e] = mul_rn(v[e], inv[e]);
      uint32_t o[kV / 4];
      encode_chunk<Fmt::kE4m3, kV>(v, o);
      st_v2(dst, o[0], o[1]);
    }
  }

  TK_DEV void run() const {
    // tile indices fit 32 bits: a tile holds ≥ 16 rows × 8 columns of the output
    const uint32_t tiles = pa.nbm * pa.col_tiles;
    if (blockIdx.x >= tiles) return;
    const uint32_t n = (tiles - 1 - blockIdx.x) / gridDim.x + 1;
    Pos next = {blockIdx.x / pa.col_tiles, blockIdx.x % pa.col_tiles};  // the next tile to issue
    Pos cur = next;                                                       // the tile to cast

    // One loop for prologue and steady state: pass j issues tile j and casts tile j − 2, so that the issue and the
    // cast are each inlined once. Tile j's indices are loaded in pass j − 1 (exposed only before the first cast).
    uint32_t ahead[kRows];  // posToToken entries of tile `next`
    load_indices(next.m, ahead);
    uint32_t stage = 0;  // stage of tile j; tile j − 2 sits in the one after it
    for (uint32_t j = 0; j < n + kStages - 1; ++j) {
      const uint32_t cast_stage = stage == kStages - 1 ? 0 : stage + 1;
      if (j >= kStages - 1) cp_async_wait<kStages - 2>();  // this thread's copies of tile j − 2 landed
      if (j < n) issue(next, stage, ahead);
      cp_async_commit();  // one group per pass, empty past the end, so that wait_group counts tiles
      advance(next);
      if (j + 1 < n) load_indices(next.m, ahead);
      if (j >= kStages - 1) {
        cast(cur, cast_stage);
        advance(cur);
      }
      stage = cast_stage;
    }
  }
};

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::PerChannelGatherRing::kCtasPerSm)
    tk_per_channel_cast__bf16_r128_rg(const __grid_constant__ PerChannelCastParams p) {
  tk::PerChannelGatherRing(p).run();
}

// perChannelCastFused of an e4m3 input with [1, 128] fp32 scales, R = 128: a persistent grid whose CTAs keep the
// next tiles' reads in flight through a 3-stage shared-memory ring (branch perf19-pcf, docs/perf-notes/perf19-pcf.md).
// Numerics: per_channel_cast.cu, spec/quant.md §5.1-5.2.
//
// No entry: the ring (PerChannelPipelined) is instantiated by per_channel_cast_pr20.cu as `_pr` = <4, true>. The
// design below is round 19's `tk_per_channel_cast__e4m3_r128_pw` = <2, false> (tile 128 rows × 256 columns: 256
// contiguous bytes of each gathered row, 512 threads, 2 CTAs per SM; perChannelLaunchTuning.pipelinedE4m3 "_pw", the
// default in round 19), which round 20's `_pr` replaced as the default and trim24 removed with the knob value (its
// source: docs/branches/trim24-removed.patch).
//
// `_pw`'s launch geometry: block.x = kThreads (512), dynamic shared memory kSmemBytes (110,592 B, carveout 100%),
// grid.x = min(tiles, kCtasPerSm · SMs) with tiles = ceilDiv(T_out, 128) · ceilDiv(H, kCols); any grid.x ≥ 1 is
// correct. CTA b takes tiles b, b + grid.x, … (column tiles fastest, as the one-tile-per-CTA kernels).
//
// Why: round 16's `_r128_sm` (per_channel_cast_sm16.cu; removed in trim20, docs/branches/trim20-removed.patch) stages
// one 128 × 128 tile per CTA and then has nothing of its own in flight during its amax, barriers, reduction and cast;
// every tile also pays two dependent round trips (posToToken, then the rows) before any arithmetic. Here a CTA works on
// tile k while tiles k + 1 and k + 2 are being copied into the other two stages (2 × 32 KiB per CTA: 128 KiB of reads
// in flight per SM), and the posToToken entries of tile k + 3 are loaded into registers during tile k, so that neither
// round trip is exposed after the first tiles. Measured on the H200 (2026-12-03): `_sm` 50.8 / 53.9% of copy at 8192 /
// 16384 × 7168, the same ring with 128 × 128 tiles (`_pl`, dropped) 53.2 / 55.4%, this form 55.2 / 56.7%: 256
// contiguous bytes per gathered row gain more than the latency hiding.
//
// Per tile k (stage k % 3):
//   1. wait for this thread's copies of tile k (cp.async.wait_group 1: tile k + 1's group may still be in flight),
//      barrier (every thread's copies landed; every reader of tile k − 1's stage is done);
//   2. issue tile k + 2 into the stage tile k − 1 used: thread t copies 16-byte piece t % P (P = kCols / 16) of
//      rows t / P + 32 j (j < 4), zero-filled for a dead or zero row; the threads with piece % 8 == 0 copy the
//      rows' input scales of their 128-column half (4-byte cp.async, 0 for a dead or zero row). Then tile
//      k + 3's posToToken entries are loaded into registers (consumed at the next tile's step 2);
//   3. column maxima: warp w (half h = w / 8, group g = w % 8) reads rows 16g … 16g + 15, lane l columns
//      128h + 4l … 128h + 4l + 3; d = fl(q · s_in); maximumNumber of |d|; partials to shared memory; barrier;
//      one thread per column reduces the 8 partials, computes (sf, inv), stores sf, publishes inv; barrier;
//   4. cast: the same mapping re-reads the codes, fl(fl(q · s_in) · inv), encodes, 4-byte stores (a warp: 128
//      contiguous bytes of an output row). Rows ≥ T_out are warp-uniform: skipped.
//
// Same bytes as the base kernel (and round 16's `_r128_sm`) by construction: the same helpers on the same values
// (decode_e4m3x2, mul_rn by s_in, abs_f / max_num over the same set from +0, sf_and_inv, mul_rn by inv, encode_e4m3x4);
// a maximumNumber reduction over a set of non-NaN values is independent of its order; a dead or zero row contributes
// codes 0 and s_in = +0 as there. Bad indices: the same test and report (one reporter per row: piece 0 of the first
// column tile, each tile issued once), so the error word counts each bad entry once. Tails: rows ≥ T_out read nothing;
// an odd H / 128 leaves a last column tile whose upper half lies beyond H: it reads nothing there (zero-fill), stores
// no sf and no data for it.
//
// The template's kHalves (128-column halves per tile) and kWalk (tile order) are there for round 20's 128 × 512
// form `_pr` = <4, true> (per_channel_cast_pr20.cu): kWalk = false is the order above (`_pw` = <2, false>); kWalk =
// true gives CTA b the contiguous run of tiles [⌊b · tiles / grid⌋,
// ⌊(b + 1) · tiles / grid⌋), so that it walks a row block's column tiles one after the other, and it loads the
// posToToken entries only when a tile's row block differs from the previous tile's.
//
// x_sf is fp32 (perChannelCastFused accepts only fp32 input scales for an e4m3 input), any strides.
#pragma once
#define TK_PER_CHANNEL_CAST_NO_ENTRIES
#include "per_channel_cast.cu"

extern __shared__ __align__(16) uint8_t tk_per_channel_pl_smem[];

namespace tk {
namespace {

template <int kHalves, bool kWalk>
struct PerChannelPipelined {
  static constexpr int kR = 128, kHalfCols = 128;                    // one scale block × one input-scale column
  static constexpr int kCols = kHalves * kHalfCols;                  // tile columns: 256 (`_pw`), 512 (`_pr`)
  static constexpr int kThreads = kBlockThreads * kHalves;           // 8 warps per 128-column half: 512 / 1024
  static constexpr int kGroups = kBlockThreads / kWarpSize;          // row groups of a half: 8
  static constexpr int kRowsPerWarp = kR / kGroups;                  // 16
  static constexpr int kRowWords = kCols / 4;                        // code words per staged row
  static constexpr int kPieces = kCols / 16;                         // 16-byte pieces per row: 16 / 32
  static constexpr int kLoadRowStride = kThreads / kPieces;          // 32
  static constexpr int kLoadRows = kR / kLoadRowStride;              // rows a thread copies: 4
  // 3 stages: the tile being reduced and cast plus two in flight. Per SM, 2 CTAs of 16 warps (1 CTA of 32 warps
  // with 512 columns) fit 228 KiB of shared memory and hold 2 × 32 KiB (2 × 64 KiB) of reads in flight each:
  // 128 KiB.
  static constexpr int kStages = 3;
  static constexpr int kCtasPerSm = 4 / kHalves;
  // Dynamic shared memory: kStages × {codes [kR][kCols], s_in [half][kR]}, then the partial maxima
  // [half][group][128] and the inverses [kCols] (one copy: the barriers of a tile order their reuse).
  static constexpr uint32_t kCodeBytes = kR * kCols;
  static constexpr uint32_t kStageBytes = kCodeBytes + 4 * kHalves * kR;
  static constexpr uint32_t kRedOffset = kStages * kStageBytes;
  static constexpr uint32_t kInvOffset = kRedOffset + 4 * kHalves * kGroups * kHalfCols;
  static constexpr uint32_t kSmemBytes = kInvOffset + 4 * kCols;
  static_assert(kLoadRows * kLoadRowStride == kR && kRowsPerWarp * kGroups == kR && kHalfCols / 4 == kWarpSize,
                "tile shape");
  static_assert(kCtasPerSm * (kSmemBytes + 1024) <= 228 * 1024, "resident CTAs fit in shared memory");

  const PerChannelCastParams& p;
  PerChannel<Fmt::kE4m3, 128, false> base;  // store_sf, nbm
  uint32_t col_tiles;
  uint32_t piece, lrow;  // this thread's copy slot

  TK_DEV explicit PerChannelPipelined(const PerChannelCastParams& params) : p(params), base(params) {
    col_tiles = (p.hidden + kCols - 1) / kCols;
    piece = threadIdx.x % kPieces;
    lrow = threadIdx.x / kPieces;
  }

  // posToToken entries of the thread's copy rows of `tile` (0 without a gather or for rows ≥ T_out). Tile
  // indices fit 32 bits: a tile covers ≥ 16 KiB of the output whenever it holds 128 rows, ≥ 2 KiB otherwise.
  TK_DEV void load_indices(uint32_t tile, uint32_t (&raw)[kLoadRows]) const {
    const uint64_t row0 = static_cast<uint64_t>(tile / col_tiles) * kR + lrow;
#pragma unroll
    for (int j = 0; j < kLoadRows; ++j) {
      raw[j] = 0u;
      if (p.pos_to_token != 0 && row0 + kLoadRowStride * j < p.out_tokens)
        raw[j] = ld_u32(reinterpret_cast<const uint8_t*>(p.pos_to_token) + 4 * (row0 + kLoadRowStride * j));
    }
  }

  // Step 2: the thread's pieces of `tile` and, for piece % 8 == 0, the rows' input scales into stage `stage`.
  TK_DEV void issue(uint32_t tile, uint32_t stage, const uint32_t (&raw)[kLoadRows]) const {
    const uint32_t m = tile / col_tiles;
    const uint32_t col0 = (tile % col_tiles) * kCols;
    const uint64_t row0 = static_cast<uint64_t>(m) * kR;
    const uint32_t col = col0 + 16 * piece;
    const bool col_live = col < p.hidden;  // H % 128 == 0: a 128-column half is all in or all out
    const bool reporter = piece == 0 && col0 == 0;
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    const uint8_t* x_sf = reinterpret_cast<const uint8_t*>(p.x_sf);
    const uint32_t st = smem_addr(tk_per_channel_pl_smem) + stage * kStageBytes;
#pragma unroll
    for (int j = 0; j < kLoadRows; ++j) {
      const uint32_t r = lrow + kLoadRowStride * j;
      const bool live = row0 + r < p.out_tokens;
      int64_t src = live ? static_cast<int64_t>(row0 + r) : -1;
      if (p.pos_to_token != 0) {
        const int32_t si = static_cast<int32_t>(raw[j]);
        const bool bad = live && si >= 0 && static_cast<uint32_t>(si) >= p.num_tokens;
        report_fault_warp(p.error_word, p.op_id, kCondPosOutOfRange, bad && reporter);
        src = (!live || si < 0 || bad) ? -1 : si;
      }
      const bool copy = src >= 0 && col_live;
      cp_async<16>(st + r * kCols + 16 * piece, copy ? x + static_cast<uint64_t>(src) * p.hidden + col : x, copy);
      if (piece % 8 == 0) {
        const uint32_t k_in = col / p.num_per_channels;
        const uint8_t* a = copy ? x_sf + 4 * (static_cast<uint64_t>(src) * p.x_sf_stride0 + k_in * p.x_sf_stride1) : x_sf;
        cp_async<4>(st + kCodeBytes + 4 * ((piece / 8) * kR + r), a, copy);
      }
    }
  }

  // Steps 3 and 4 of `tile`, staged in `stage`.
  TK_DEV void cast(uint32_t tile, uint32_t stage) const {
    const uint32_t m = tile / col_tiles;
    const uint32_t col0 = (tile % col_tiles) * kCols;
    const uint32_t lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const uint32_t h = warp / kGroups, g = warp % kGroups;
    const uint8_t* st = tk_per_channel_pl_smem + stage * kStageBytes;
    const uint32_t* codes = reinterpret_cast<const uint32_t*>(st) + h * (kHalfCols / 4) + lane;
    const float* s_in = reinterpret_cast<const float*>(st + kCodeBytes) + h * kR;
    float* red = reinterpret_cast<float*>(tk_per_channel_pl_smem + kRedOffset);
    float* invs = reinterpret_cast<float*>(tk_per_channel_pl_smem + kInvOffset);

    // 3. column maxima of |fl(q · s_in)| (maximumNumber: NaN ignored, §1.1-5)
    float cm[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 8
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const uint32_t r = g * kRowsPerWarp + i;
      const uint32_t w = codes[r * kRowWords];
      const float sc = s_in[r];
      float v[4];
      decode_chunk<Fmt::kE4m3, 4>(&w, v);
#pragma unroll
      for (int e = 0; e < 4; ++e) cm[e] = max_num(cm[e], abs_f(mul_rn(v[e], sc)));
    }
    *reinterpret_cast<float4*>(&red[warp * kHalfCols + 4 * lane]) = make_float4(cm[0], cm[1], cm[2], cm[3]);
    __syncthreads();
    if (threadIdx.x < static_cast<uint32_t>(kCols)) {
      const uint32_t q = threadIdx.x;
      const float* part = red + (q / kHalfCols) * kGroups * kHalfCols + q % kHalfCols;
      float a = 0.0f;
#pragma unroll
      for (int k = 0; k < kGroups; ++k) a = max_num(a, part[k * kHalfCols]);
      const uint32_t c = col0 + q;
      float inv = 0.0f;
      if (c < p.hidden) {
        const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, kE4m3Max, p.flags);
        base.store_sf(m, c, si.stored);
        inv = si.inv;
      }
      invs[q] = inv;
    }
    __syncthreads();

    // 4. cast: fl(fl(q · s_in) · inv), encoded; live rows and columns only (warp-uniform)
    if (col0 + h * kHalfCols >= p.hidden) return;
    const float4 iv = *reinterpret_cast<const float4*>(&invs[h * kHalfCols + 4 * lane]);
    const float inv[4] = {iv.x, iv.y, iv.z, iv.w};
    const uint64_t wrow0 = static_cast<uint64_t>(m) * kR + g * kRowsPerWarp;  // the warp's first row
    const uint32_t n_live = wrow0 < p.out_tokens ? static_cast<uint32_t>(p.out_tokens - wrow0) : 0u;
    uint8_t* out = reinterpret_cast<uint8_t*>(p.data) + wrow0 * p.hidden + col0 + h * kHalfCols + 4 * lane;
#pragma unroll 8
    for (int i = 0; i < kRowsPerWarp; ++i, out += p.hidden) {
      if (static_cast<uint32_t>(i) >= n_live) break;
      const uint32_t r = g * kRowsPerWarp + i;
      const uint32_t w = codes[r * kRowWords];
      const float sc = s_in[r];
      float v[4];
      decode_chunk<Fmt::kE4m3, 4>(&w, v);
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = mul_rn(mul_rn(v[e], sc), inv[e]);
      uint32_t o;
      encode_chunk<Fmt::kE4m3, 4>(v, &o);
      *reinterpret_cast<uint32_t*>(out) = o;
    }
  }

  TK_DEV void run() const {
    const uint32_t tiles = base.nbm * col_tiles;
    uint32_t first = 0, n;  // kWalk: this CTA's first tile; its number of tiles
    if constexpr (kWalk) {
      first = static_cast<uint32_t>(static_cast<uint64_t>(blockIdx.x) * tiles / gridDim.x);
      n = static_cast<uint32_t>(static_cast<uint64_t>(blockIdx.x + 1) * tiles / gridDim.x) - first;
      if (n == 0) return;
    } else {
      if (blockIdx.x >= tiles) return;
      n = (tiles - 1 - blockIdx.x) / gridDim.x + 1;
    }
    const auto tile_of = [first](uint32_t k) -> uint32_t {
      if constexpr (kWalk) return first + k;
      else return blockIdx.x + k * gridDim.x;
    };

    // prologue: the indices of the first kStages − 1 tiles (all loaded before any is used), their copies, and the
    // indices of the next one
    uint32_t raw[kStages - 1][kLoadRows];
#pragma unroll
    for (int k = 0; k < kStages - 1; ++k)
      if (static_cast<uint32_t>(k) < n) load_indices(tile_of(k), raw[k]);
#pragma unroll
    for (int k = 0; k < kStages - 1; ++k) {
      if (static_cast<uint32_t>(k) < n) issue(tile_of(k), k, raw[k]);
      cp_async_commit();  // one group per tile, empty past the end, so that wait_group counts tiles
    }
    uint32_t next[kLoadRows];
    if (kStages - 1 < n) load_indices(tile_of(kStages - 1), next);

    uint32_t stage = 0;
    for (uint32_t k = 0; k < n; ++k) {
      cp_async_wait<kStages - 2>();
      __syncthreads();  // tile k landed for every thread; every reader of tile k − 1 (stage (k + 2) % 3) is done
      const uint32_t ahead = k + kStages - 1;
      const uint32_t ahead_stage = stage == 0 ? kStages - 1 : stage - 1;
      if (ahead < n) issue(tile_of(ahead), ahead_stage, next);
      cp_async_commit();
      // kWalk: `next` still holds tile `ahead`'s entries; tile ahead + 1 needs others only in a new row block
      if (ahead + 1 < n && !(kWalk && tile_of(ahead + 1) % col_tiles != 0)) load_indices(tile_of(ahead + 1), next);
      cast(tile_of(k), stage);
      stage = stage == kStages - 1 ? 0 : stage + 1;
    }
  }
};

}  // namespace
}  // namespace tk

// Per-channel casts to e4m3 (spec/quant.md §5): perChannelCast (§5.1, plain or re-quantized input, fp32 or
// token-packed UE8M0 scales), perChannelCastFused (§5.2, row gather) and perChannelCastAndTranspose (§5.3).
// One scale per column and block of r = numPerTokens rows: amax down the column, (sf, inv) = sfAndInv (§2.3),
// data = encodeE4m3(fl(x · inv)); a re-quantized input is dequantized first, d = fl(q · s_in) (§5.1).
//
// Symbols
//   tk_per_channel_cast__<in>_r<R>               in ∈ {fp32, bf16, e4m3}, R ∈ {32, 128}: data [T_out, H]
//                                                (bf16 R = 128: perChannelCastFused only)
//   tk_per_channel_cast__bf16_r128_pa            perChannelCast of bf16, R = 128 (no gather; "Forms" below)
//   tk_per_channel_cast_and_transpose__bf16_r32  data [H, T]
//   tk_per_channel_cast_and_transpose__bf16_r128_rt   data [H, T], transposed in registers ("Forms" below)
//
// Launch geometry (the host follows this table; any grid.x ≥ 1 is correct, the kernels are grid-stride):
//
//   kernel   block.x  dynamic smem  grid.x
//   all      256      0             ceilDiv(T_out, R) · ceilDiv(H, C)        (one CTA per tile)
//
//   A tile is R rows (one scale block) × C columns. A thread owns N consecutive rows × V columns, V = one
//   16-byte load of the input (fp32 4, bf16 8, e4m3 16), N = 8 (fp32, bf16) or 4 (e4m3); the block is R/N row
//   groups × 256·N/R column groups, so C = V · 256 · N / R: fp32 64 / 256, bf16 128 / 512, e4m3 128 / 512 for
//   R = 128 / 32. Resident CTAs per SM: 4 for fp32, bf16 and the transposed cast; e4m3 4 on sm_90a, 2 on
//   sm_100a. Static shared memory: the column-amax exchange (1 KiB · V), the tile's inverses (4 · C bytes) and,
//   transposed, the tile's codes (R · C bytes = 16 KiB).
//
// Data stays in registers between the amax and the quantization (one 16-byte chunk per row, N rows per thread:
// 128 bytes in flight per thread for value inputs, 32 KiB per CTA, 4 CTAs per SM). The column amax crosses row
// groups through shared memory: each thread writes its V column maxima, then one thread per column reduces the R/N
// partials, computes (sf, inv), stores sf and publishes inv.
//
// Tails: rows ≥ T_out (the partial last block of a gather) read nothing, contribute 0 to the amax (neutral: the
// clamp makes every amax positive) and store nothing; columns ≥ H likewise. Views whose base or row length is
// not a multiple of 16 bytes use element-wide loads and byte stores (same kernel, slower, correct).
//
// Gather (pos_to_token ≠ 0): output row p is input row pos[p]; a negative entry is an all-zero row (codes 0,
// scale 0: d = +0). An entry ≥ T breaks the caller contract (§11.2): the kernel reads nothing for it, treats the
// row as zero and reports PER_CHANNEL_COND.posOutOfRange in the error word (DESIGN §6). A thread loads the indices
// of all its rows before it uses any, then the rows and their input scales: two round trips per tile, not N + 1.
#include "../common/chunk.cuh"
#include "../common/error_word.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../common/reduce.cuh"
#include "../common/scale.cuh"
#include "../generated/per_channel_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
// Rows per thread: 8 for value inputs (a CTA loads 32 KiB at once; a warp load is 2 rows × 256 bytes), 4 for e4m3
// codes, which decode 16 values per row chunk. Value inputs had 4 (16 KiB per CTA, 4 rows × 128 bytes per warp
// load): with every read issued in the CTA's first phase and none during its barriers and stores, 4 resident CTAs
// kept too few bytes in flight (78-83% of memcpy on an H200, 71-74% transposed).
template <Fmt kIn>
constexpr int kRowsPerThreadOf = FmtTraits<kIn>::kCode ? 4 : 8;
// Resident CTAs per SM the register budget is sized for: 4 (≤ 64 registers, 4 × 32 KiB of loads in flight per SM)
// for value inputs. e4m3 codes decode 16 values per row chunk: 4 as well on sm_90a (64 registers, no spill; with
// the bound at 2 ptxas used 72 registers, i.e. 3 resident CTAs = 24 warps and 48 KiB of loads per SM, which measured
// 41-44% of memcpy on an H200 re-quantizing 7168 gathered columns), 2 elsewhere (sm_100a spills at 64 and at 80).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
constexpr int kCodeMinBlocksPerSm = 4;
#else
constexpr int kCodeMinBlocksPerSm = 2;
#endif
template <Fmt kIn>
constexpr int kMinBlocksPerSm = FmtTraits<kIn>::kCode ? kCodeMinBlocksPerSm : 4;
// The transposed cast gets 4 as well (32 warps, 4 × 32 KiB of loads in flight per SM; it had 3, ≤ 85 registers,
// and measured 76-82% of memcpy on an H200 against 83-88% for the plain cast at 4). It fits 64 registers without
// spilling only because a thread writes its codes to the shared tile under `col < H` (unconditional stores spilled
// 64 bytes on sm_90a).
constexpr int kTransposeMinBlocksPerSm = 4;
constexpr uint32_t kCondPosOutOfRange = 1;  // PER_CHANNEL_COND.posOutOfRange

// Forms (docs/perf-notes/perf6-chan.md; % of memcpy on an H200, bf16 → e4m3, 8192 / 16384 × 7168, R = 128, two
// runs):
//   kFormBase  fp32 and e4m3 inputs, bf16 with R = 32 or a gather (perChannelCastFused: row indices, partial last
//              blocks), the transposed cast with R = 32. As the transposed cast with R = 128 it measured
//              79.2-79.3 / 82.9-83.6% (Nsight: ALU pipe 71%), as perChannelCast of bf16 83.2-83.6 / 88.9-89.2%.
//   kFormPa    `_pa`, perChannelCast of bf16 with R = 128 (85.2 / 89.1-89.8%): less integer work per element: the
//              column amax on packed bf16 pairs (abs by a mask, max.bf16x2: 1 op per element instead of 2.5) and
//              the thread's 8 row loads from one base address; the base form's row stores.
//   kFormRt    `_rt`, the transposed cast with R = 128 (82.2-82.3 / 85.0-85.1%): `_pa`'s amax and loads, one `col < H`
//              branch around the whole quantize-and-store, and the transpose done in registers. A thread's 8 rows ×
//              8 columns of codes become 8 column words of 8 tokens by byte permutes (the pair packing of the
//              hardware encode plus 16 permutes per thread), stored into a column-major tile [C][R bytes]; the
//              write-out copies 16-byte pieces of it (no permutes, 4 shared reads instead of 16).
constexpr int kFormBase = 0;
constexpr int kFormPa = 1;
constexpr int kFormRt = 2;

template <Fmt kIn, int kR, bool kTranspose, int kForm = kFormBase>
struct PerChannel {
  static constexpr int kElemBytes = FmtTraits<kIn>::kBits / 8;
  static constexpr int kV = kVecBytes / kElemBytes;             // columns per thread
  static constexpr int kRowsPerThread = kRowsPerThreadOf<kIn>;
  static constexpr int kRowGroups = kR / kRowsPerThread;        // 16 or 4 (e4m3: 32 or 8)
  static constexpr int kColGroups = kBlockThreads / kRowGroups;  // 16 or 64 (e4m3: 8 or 32)
  static constexpr int kCols = kColGroups * kV;                  // tile columns C
  static constexpr int kPieceStride = kColGroups * 4;           // words between a thread's 4-column pieces
  static constexpr bool kRequant = FmtTraits<kIn>::kCode;
  // Transposed tile: codes row-major, kWordsPerRow words a row; the word index is XOR-swizzled by the row's
  // 16-row segment so that the column-quad reads of the write-out hit distinct banks (see transpose_out).
  static constexpr int kWordsPerRow = kCols / 4;
  static_assert(kV % 4 == 0 && kBlockThreads % kRowGroups == 0, "tile shape");
  static_assert(!kTranspose || kIn == Fmt::kBf16, "the transposed cast takes bf16 (spec/quant.md §5.3)");
  static_assert(kForm == kFormBase || (kIn == Fmt::kBf16 && kV == 8 && 16 % kRowsPerThread == 0), "forms: bf16");
  static_assert(kForm != kFormPa || !kTranspose, "_pa: perChannelCast");
  static_assert(kForm != kFormRt || kTranspose, "_rt: the transposed cast");
  static_assert(kForm != kFormRt || (kR == 128 && kRowsPerThread == 8 && kColGroups == 16), "_rt: R = 128");

  struct Smem {
    float red[kRowGroups * kCols];  // partial column maxima, [row group][piece-major column position]
    float inv[kCols];               // inverse scale per column position
    uint32_t tile[kTranspose ? kR * kWordsPerRow : 1];
  };

  const PerChannelCastParams& p;
  uint32_t nbm, col_tiles;
  bool x_rows_aligned, out_aligned;

  TK_DEV explicit PerChannel(const PerChannelCastParams& params) : p(params) {
    nbm = (p.out_tokens + kR - 1) / kR;
    col_tiles = (p.hidden + kCols - 1) / kCols;
    x_rows_aligned = rows_aligned(p.x, static_cast<uint64_t>(p.hidden) * kElemBytes, kVecBytes);
    out_aligned = kTranspose ? rows_aligned(p.data, p.out_tokens, kVecBytes) : rows_aligned(p.data, p.hidden, kV);
  }

  // Column (inside the tile) of column position q: positions are piece-major so that the exchange through
  // shared memory is conflict-free (a quarter-warp writes 8 consecutive 16-byte pieces).
  static TK_DEV uint32_t column_of(uint32_t q) {
    return (q % kPieceStride) / 4 * kV + (q / kPieceStride) * 4 + q % 4;
  }

  // The input rows of the thread's output rows row0 + i (i < n_live; the others get -1, a zero row), or -1 for a
  // zero row. With a gather every index is loaded before any is used, so the thread waits for one round trip to
  // posToToken rather than one per row (the loads are volatile: a load placed after a use of the previous one is
  // issued only once that one has arrived). Every thread that loads a row reads its index; only the `reporter`
  // (first column group of the first column tile) counts a bad one, so the error word counts bad entries, not
  // their readers.
  TK_DEV void source_rows(uint64_t row0, uint32_t n_live, bool reporter, int64_t (&src)[kRowsPerThread]) const {
    if (p.pos_to_token == 0) {
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i)
        src[i] = static_cast<uint32_t>(i) < n_live ? static_cast<int64_t>(row0 + i) : -1;
      return;
    }
    const uint8_t* pos = reinterpret_cast<const uint8_t*>(p.pos_to_token) + 4 * row0;
    uint32_t raw[kRowsPerThread];
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) raw[i] = static_cast<uint32_t>(i) < n_live ? ld_u32(pos + 4 * i) : 0u;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const bool live = static_cast<uint32_t>(i) < n_live;
      const int32_t s = static_cast<int32_t>(raw[i]);
      const bool bad = live && s >= 0 && static_cast<uint32_t>(s) >= p.num_tokens;
      report_fault_warp(p.error_word, p.op_id, kCondPosOutOfRange, bad && reporter);
      src[i] = (!live || s < 0 || bad) ? -1 : s;
    }
  }

  // The thread's V columns of input row `src`: one 16-byte load, or element loads of the columns < H.
  TK_DEV void load_row(int64_t src, uint32_t col, uint32_t (&w)[4]) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = 0;
    if (src < 0 || col >= p.hidden) return;
    const uint8_t* a = reinterpret_cast<const uint8_t*>(p.x) + (static_cast<uint64_t>(src) * p.hidden + col) * kElemBytes;
    if (x_rows_aligned && col + kV <= p.hidden) {
      ld_stream(a, w);
      return;
    }
    const uint32_t n = p.hidden - col < static_cast<uint32_t>(kV) ? p.hidden - col : kV;
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      if (static_cast<uint32_t>(e) < n) {
        const uint32_t v = kElemBytes == 4 ? ld_u32(a + 4 * e) : kElemBytes == 2 ? ld_u16(a + 2 * e) : ld_u8(a + e);
        w[e * kElemBytes / 4] |= v << (8 * ((e * kElemBytes) % 4));
      }
    }
  }

  // Values of one row chunk, widened to binary32; e4m3 codes dequantized first, d = fl(q · s_in) (§5.1).
  TK_DEV void values(const uint32_t (&w)[4], float s_in, float (&v)[kV]) const {
    if constexpr (kRequant) {
      decode_chunk<kIn, kV>(w, v);
#pragma unroll
      for (int e = 0; e < kV; ++e) v[e] = mul_rn(v[e], s_in);
    } else {
#pragma unroll
      for (int e = 0; e < kV; ++e) v[e] = element<kIn>(w, e);
    }
  }

  // S[m][col] (§5.1 fp32 row-major, or §4.2-3 token-packed: byte m % 4 of word (m / 4, col), with the unused
  // bytes of the last word written 0 by the writer of the last block).
  TK_DEV void store_sf(uint32_t m, uint32_t col, uint32_t stored) const {
    uint8_t* base = reinterpret_cast<uint8_t*>(p.sf);
    if (p.flags & kSfPackedUe8m0) {
      uint8_t* word = base + 4 * ((m / kUe8m0PerWord) * p.sf_stride0 + col);
      st_u8(word + m % kUe8m0PerWord, stored);
      if (m == nbm - 1)
        for (uint32_t b = m % kUe8m0PerWord + 1; b < kUe8m0PerWord; ++b) st_u8(word + b, 0);
    } else {
      st_u32(base + 4 * (m * p.sf_stride0 + col), stored);
    }
  }

  // Transposed write-out: unit (column quad cq, 16-row segment rs) reads the 16 rows × 4 codes of its quad,
  // transposes them 4 × 4 at a time with byte permutes, and stores 16 consecutive tokens of each of its 4 columns.
  TK_DEV void transpose_out(const Smem& s, uint32_t m, uint32_t col0) const {
    constexpr int kRowSegs = kR / 16;
    for (uint32_t u = threadIdx.x; u < static_cast<uint32_t>(kWordsPerRow * kRowSegs); u += kBlockThreads) {
      const uint32_t rs = u % kRowSegs, cq = u / kRowSegs;
      uint32_t o[4][4];
#pragma unroll
      for (int g = 0; g < 4; ++g) {
        uint32_t a[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const uint32_t row = 16 * rs + 4 * g + j;
          a[j] = s.tile[row * kWordsPerRow + (cq ^ swizzle(row))];
        }
        const uint32_t t0 = __byte_perm(a[0], a[1], 0x5140), t1 = __byte_perm(a[0], a[1], 0x7362);
        const uint32_t t2 = __byte_perm(a[2], a[3], 0x5140), t3 = __byte_perm(a[2], a[3], 0x7362);
        o[0][g] = __byte_perm(t0, t2, 0x5410);
        o[1][g] = __byte_perm(t0, t2, 0x7632);
        o[2][g] = __byte_perm(t1, t3, 0x5410);
        o[3][g] = __byte_perm(t1, t3, 0x7632);
      }
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const uint32_t col = col0 + 4 * cq + b;
        if (col < p.hidden) {
          uint8_t* dst = reinterpret_cast<uint8_t*>(p.data) + static_cast<uint64_t>(col) * p.out_tokens +
                         static_cast<uint64_t>(m) * kR + 16 * rs;
          store_chunk<16>(dst, o[b], out_aligned);
        }
      }
    }
  }

  // Form ≥ kFormPa: the thread's rows row0 … row0 + N − 1 at columns col … col + V − 1. All live and a whole
  // aligned chunk (the transposed cast's T % R == 0 and H % 64 == 0 make this every thread with col < H): one base
  // address, then one add per row. Otherwise load_row per row, as the base form.
  TK_DEV void load_rows(uint64_t row0, uint32_t n_live, uint32_t col, uint32_t (&w)[kRowsPerThread][4]) const {
    if (x_rows_aligned && n_live >= static_cast<uint32_t>(kRowsPerThread) && col + kV <= p.hidden) {
      const uint64_t stride = static_cast<uint64_t>(p.hidden) * kElemBytes;
      const uint8_t* a = reinterpret_cast<const uint8_t*>(p.x) + (row0 * p.hidden + col) * kElemBytes;
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) ld_stream(a + i * stride, w[i]);
    } else {
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i)
        load_row(static_cast<uint32_t>(i) < n_live ? static_cast<int64_t>(row0 + i) : -1, col, w[i]);
    }
  }

  // Form ≥ kFormPa: column maxima of |x| over the thread's rows on packed bf16 pairs. |x| of a bf16 is its bit
  // pattern with the sign cleared; max.bf16x2 is maximumNumber (a NaN operand loses, subnormals kept) and returns
  // one of its operands, so the pair maxima widened to binary32 are exactly the base form's fmaxf chain of the
  // widened |x| (both start at +0 and are never NaN; widening is exact and monotone).
  TK_DEV void column_amax_packed(const uint32_t (&w)[kRowsPerThread][4], float (&cm)[kV]) const {
    uint32_t m[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
      for (int k = 0; k < 4; ++k) m[k] = max_bf16x2(m[k], w[i][k] & 0x7fff7fffu);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      cm[2 * k] = bf16_lo(m[k]);
      cm[2 * k + 1] = bf16_hi(m[k]);
    }
  }

  // Form kFormRt: the column-major tile. Column j of the tile (128 token bytes) is tile row j; its 16-byte piece k
  // (tokens 16k … 16k + 15) sits at piece k ^ ((j / 8) % 8). The thread (rg, cg) writes 8 bytes (tokens 8rg …
  // 8rg + 7) of its columns 8cg … 8cg + 7: a warp (rg = 2h, 2h + 1; cg 0 … 15) stores 256 bytes per column
  // index and hits each of the 16 8-byte bank pairs (piece h ^ (cg % 8), half rg % 2) twice: 2 wavefronts, the
  // minimum. The write-out reads piece k of column j: 8 lanes cover one 128-byte row, conflict-free.
  // (tools/per_channel_rt_check.py simulates the mapping and counts the wavefronts.)
  static TK_DEV uint32_t rt_byte(uint32_t j, uint32_t piece) { return j * kR + ((piece ^ ((j / 8) % 8)) * 16); }

  // Form kFormRt: rows 4q … 4q + 3 (q = 0, 1) of the thread's 8 columns quantized and encoded; wt[c][q] is column
  // c's 4 codes of those rows, token 4q in the low byte. The hardware encode packs 4 codes (rows i, i + 1 ×
  // columns 2p, 2p + 1: bytes c2p·ri, c2p+1·ri, c2p·ri+1, c2p+1·ri+1); two such words (rows 4q, 4q + 1 and
  // 4q + 2, 4q + 3) give columns 2p and 2p + 1 by one permute each.
  TK_DEV void encode_columns(const uint32_t (&w)[kRowsPerThread][4], const float (&inv)[kV], int q,
                             uint32_t (&wt)[kV][2]) const {
    uint32_t z[2][kV / 2];
#pragma unroll
    for (int a = 0; a < 2; ++a) {
      float v0[kV], v1[kV];
      values(w[4 * q + 2 * a], 0.0f, v0);  // bf16: no input scale
      values(w[4 * q + 2 * a + 1], 0.0f, v1);
#pragma unroll
      for (int e = 0; e < kV; ++e) {
        v0[e] = mul_rn(v0[e], inv[e]);
        v1[e] = mul_rn(v1[e], inv[e]);
      }
#pragma unroll
      for (int c = 0; c < kV / 2; ++c) z[a][c] = encode_e4m3x4(v0[2 * c], v0[2 * c + 1], v1[2 * c], v1[2 * c + 1]);
    }
#pragma unroll
    for (int c = 0; c < kV / 2; ++c) {
      wt[2 * c][q] = __byte_perm(z[0][c], z[1][c], 0x6420);
      wt[2 * c + 1][q] = __byte_perm(z[0][c], z[1][c], 0x7531);
    }
  }

  // Form kFormRt write-out: 16-byte pieces of the column-major tile to data[col0 + j][m·R + 16k …], columns < H.
  // Pass it of thread t moves piece u = 256·it + t (j = u / 8, k = u % 8): the piece's swizzle (j / 8) % 8 =
  // (4·it + t / 64) % 8, so the passes differ by constants.
  TK_DEV void transpose_out_rt(const Smem& s, uint32_t m, uint32_t col0) const {
    constexpr int kPieces = kR / 16, kPasses = kCols * kPieces / kBlockThreads;
    static_assert(kPasses * kBlockThreads == kCols * kPieces, "_rt: whole passes");
    const uint32_t t = threadIdx.x, k = t % kPieces, j0 = t / kPieces;
    uint8_t* dst = reinterpret_cast<uint8_t*>(p.data) + static_cast<uint64_t>(col0 + j0) * p.out_tokens +
                   static_cast<uint64_t>(m) * kR + 16 * k;
    const uint64_t pass_stride = static_cast<uint64_t>(kBlockThreads / kPieces) * p.out_tokens;
    uint32_t o[kPasses][4];
#pragma unroll
    for (int it = 0; it < kPasses; ++it) ld_shared(smem_addr(&s.tile[0]) + rt_byte(j0 + it * (kBlockThreads / kPieces), k), o[it]);
#pragma unroll
    for (int it = 0; it < kPasses; ++it) {
      if (col0 + j0 + it * (kBlockThreads / kPieces) < p.hidden) store_chunk<16>(dst, o[it], out_aligned);
      dst += pass_stride;
    }
  }

  // Word swizzle of tile row `row`: a multiple of 4 (keeps a thread's 2-word write contiguous and aligned).
  static TK_DEV uint32_t swizzle(uint32_t row) { return ((row / 16) * (kWordsPerRow >= 64 ? 16 : 4)) & (kWordsPerRow - 1); }

  TK_DEV void run() const {
    __shared__ __align__(16) Smem s;
    const uint32_t rg = threadIdx.x / kColGroups, cg = threadIdx.x % kColGroups;
    const uint64_t tiles = static_cast<uint64_t>(nbm) * col_tiles;
    for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const uint32_t m = static_cast<uint32_t>(tile / col_tiles);
      const uint32_t col0 = static_cast<uint32_t>(tile % col_tiles) * kCols;
      const uint32_t col = col0 + cg * kV;
      const uint64_t row0 = static_cast<uint64_t>(m) * kR + kRowsPerThread * rg;

      uint32_t w[kRowsPerThread][4];
      float s_in[kRowsPerThread];
      // the thread's rows below out_tokens (fewer than N only in the partial last block of a gather)
      const uint32_t n_live = row0 < p.out_tokens ? static_cast<uint32_t>(p.out_tokens - row0) : 0u;
      float cm[kV];
      if constexpr (kForm == kFormBase) {
        int64_t src[kRowsPerThread];
        source_rows(row0, n_live, cg == 0 && col0 == 0, src);
        // input scale column of the thread's columns (one division per tile, not per row)
        const uint32_t k_in = kRequant ? col / p.num_per_channels : 0u;
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) {
          load_row(src[i], col, w[i]);
          s_in[i] = 0.0f;
          if constexpr (kRequant) {
            if (src[i] >= 0 && col < p.hidden)
              s_in[i] = load_scale(p.x_sf, p.x_sf_kind, p.x_sf_stride0, p.x_sf_stride1, static_cast<uint64_t>(src[i]),
                                   k_in);
          }
        }

        // column maxima over the thread's rows (maximumNumber: NaN ignored, §1.1-5)
#pragma unroll
        for (int e = 0; e < kV; ++e) cm[e] = 0.0f;
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) {
          float v[kV];
          values(w[i], s_in[i], v);
#pragma unroll
          for (int e = 0; e < kV; ++e) cm[e] = max_num(cm[e], abs_f(v[e]));
        }
      } else {
        // bf16, no gather (the transposed cast, or perChannelCast: the host picks a form only without one): the same
        // rows, the same maxima
        load_rows(row0, n_live, col, w);
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) s_in[i] = 0.0f;
        column_amax_packed(w, cm);
      }

      __syncthreads();  // the previous tile's readers of s are done
#pragma unroll
      for (int q = 0; q < kV / 4; ++q) {
        const uint32_t pos = rg * kCols + q * kPieceStride + cg * 4;
        const uint32_t pw[4] = {f2u(cm[4 * q]), f2u(cm[4 * q + 1]), f2u(cm[4 * q + 2]), f2u(cm[4 * q + 3])};
        st_shared(smem_addr(&s.red[pos]), pw);
      }
      __syncthreads();
      for (uint32_t q = threadIdx.x; q < static_cast<uint32_t>(kCols); q += kBlockThreads) {
        float a = 0.0f;
#pragma unroll 8
        for (int g = 0; g < kRowGroups; ++g) a = max_num(a, s.red[g * kCols + q]);
        const uint32_t c = col0 + column_of(q);
        float inv = 0.0f;
        if (c < p.hidden) {
          const ScaleAndInv si = sf_and_inv(a, p.amax_clamp, kE4m3Max, p.flags);
          store_sf(m, c, si.stored);
          inv = si.inv;
        }
        s.inv[q] = inv;
      }
      __syncthreads();

      float inv[kV];
#pragma unroll
      for (int q = 0; q < kV / 4; ++q) {
        uint32_t iw[4];
        ld_shared(smem_addr(&s.inv[q * kPieceStride + cg * 4]), iw);
#pragma unroll
        for (int e = 0; e < 4; ++e) inv[4 * q + e] = u2f(iw[e]);
      }
      if constexpr (kForm == kFormRt) {
        if (col < p.hidden) {
          uint32_t wt[kV][2];
          encode_columns(w, inv, 0, wt);
          encode_columns(w, inv, 1, wt);
          const uint32_t a0 = smem_addr(&s.tile[0]) + rt_byte(cg * kV, rg / 2) + 8 * (rg % 2);
#pragma unroll
          for (int c = 0; c < kV; ++c) {
            const uint32_t pair[2] = {wt[c][0], wt[c][1]};
            st_shared(a0 + c * kR, pair);
          }
        }
        __syncthreads();
        transpose_out_rt(s, m, col0);
      } else {
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) {
          float v[kV];
          values(w[i], s_in[i], v);
#pragma unroll
          for (int e = 0; e < kV; ++e) v[e] = mul_rn(v[e], inv[e]);
          uint32_t o[kV / 4];
          encode_chunk<Fmt::kE4m3, kV>(v, o);
          if constexpr (kTranspose) {
            // rows are all live (T % R == 0); a thread whose columns are all ≥ H leaves its tile words stale, and the
            // write-out never stores a column ≥ H
            const uint32_t row = kRowsPerThread * rg + i;
            const uint32_t word = row * kWordsPerRow + ((cg * (kV / 4)) ^ swizzle(row));
            if (col < p.hidden) st_shared(smem_addr(&s.tile[word]), o);
          } else if (static_cast<uint32_t>(i) < n_live && col < p.hidden) {
            uint8_t* dst = reinterpret_cast<uint8_t*>(p.data) + (row0 + i) * p.hidden + col;
            if (col + kV <= p.hidden) {
              store_chunk<kV>(dst, o, out_aligned);
            } else {
#pragma unroll
              for (int e = 0; e < kV; ++e)
                if (col + e < p.hidden) st_u8(dst + e, (o[e / 4] >> (8 * (e % 4))) & 0xffu);
            }
          }
        }
        if constexpr (kTranspose) {
          __syncthreads();
          transpose_out(s, m, col0);
        }
      }
    }
  }
};

}  // namespace
}  // namespace tk

// Entries: left out where another source includes this file for its helpers (per_channel_cast_pl19.cuh).
#ifndef TK_PER_CHANNEL_CAST_NO_ENTRIES
#define TK_PER_CHANNEL_CAST(in, IN, r)                                                                   \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::IN>)     \
      tk_per_channel_cast__##in##_r##r(const __grid_constant__ PerChannelCastParams p) {                 \
    tk::PerChannel<tk::Fmt::IN, r, false>(p).run();                                                      \
  }
#define TK_PER_CHANNEL_CAST_AND_TRANSPOSE(r)                                                             \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kTransposeMinBlocksPerSm)          \
      tk_per_channel_cast_and_transpose__bf16_r##r(const __grid_constant__ PerChannelCastParams p) {     \
    tk::PerChannel<tk::Fmt::kBf16, r, true>(p).run();                                                    \
  }

TK_PER_CHANNEL_CAST(fp32, kFp32, 32)
TK_PER_CHANNEL_CAST(fp32, kFp32, 128)
TK_PER_CHANNEL_CAST(bf16, kBf16, 32)
TK_PER_CHANNEL_CAST(bf16, kBf16, 128)
TK_PER_CHANNEL_CAST(e4m3, kE4m3, 32)
TK_PER_CHANNEL_CAST(e4m3, kE4m3, 128)
#define TK_PER_CHANNEL_CAST_FORM(r, suffix, form)                                                        \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::kBf16>)  \
      tk_per_channel_cast__bf16_r##r##suffix(const __grid_constant__ PerChannelCastParams p) {           \
    tk::PerChannel<tk::Fmt::kBf16, r, false, form>(p).run();                                             \
  }
#define TK_PER_CHANNEL_CAST_AND_TRANSPOSE_FORM(r, suffix, form)                                          \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kTransposeMinBlocksPerSm)          \
      tk_per_channel_cast_and_transpose__bf16_r##r##suffix(const __grid_constant__ PerChannelCastParams p) { \
    tk::PerChannel<tk::Fmt::kBf16, r, true, form>(p).run();                                              \
  }

TK_PER_CHANNEL_CAST_AND_TRANSPOSE(32)
TK_PER_CHANNEL_CAST_AND_TRANSPOSE_FORM(128, _rt, tk::kFormRt)
TK_PER_CHANNEL_CAST_FORM(128, _pa, tk::kFormPa)
#endif  // TK_PER_CHANNEL_CAST_NO_ENTRIES

// A tile of e4m3 codes, R rows (tokens) × C columns, staged in shared memory so that a cast can write its output
// transposed ([columns, tokens]). The cast's threads fill rows in word-aligned pieces; the write-out reads 16 rows
// × 4 columns per thread, transposes them 4 × 4 bytes at a time with byte permutes, and stores 16 consecutive
// tokens of each of the 4 columns with one 16-byte store (a warp writes whole sectors of each column's row).
#pragma once
#include <stdint.h>
#include "fp.cuh"
#include "ldst.cuh"

namespace tk {

template <int kR, int kCols, int kThreads>
struct CodeTile {
  static constexpr int kWordsPerRow = kCols / 4;  // word w of a row holds the codes of columns 4w … 4w + 3
  static constexpr int kWords = kR * kWordsPerRow;
  static constexpr int kRowSegs = kR / 16;        // 16-token segments of a transposed column
  static_assert(kR % 16 == 0 && (kWordsPerRow & (kWordsPerRow - 1)) == 0 && kWordsPerRow >= 4, "tile shape");

  // Word swizzle of row `row`: the 16-row segments of one column quad land in different banks when the write-out
  // reads them. A multiple of 4, so words 2k and 2k + 1 (and any aligned group of up to 4) stay adjacent.
  static TK_DEV uint32_t swizzle(uint32_t row) { return ((row / 16) * (kWordsPerRow >= 64 ? 16 : 4)) & (kWordsPerRow - 1); }

  // Shared-memory index of word w of row `row`.
  static TK_DEV uint32_t word(uint32_t row, uint32_t w) { return row * kWordsPerRow + (w ^ swizzle(row)); }

  // Transposed write-out by all kThreads threads (after a barrier that publishes the tile): columns c < valid_cols
  // of the tile are stored as kR consecutive bytes at column_base(c) (16-byte aligned when `aligned`).
  template <class ColumnBase>
  static TK_DEV void store_transposed(const uint32_t* tile, uint32_t valid_cols, ColumnBase&& column_base, bool aligned) {
    for (uint32_t unit = threadIdx.x; unit < static_cast<uint32_t>(kWordsPerRow * kRowSegs); unit += kThreads) {
      const uint32_t rs = unit % kRowSegs, cq = unit / kRowSegs;
      uint32_t o[4][4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        uint32_t a[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) a[j] = tile[word(16 * rs + 4 * q + j, cq)];
        // byte b of a[j] is (row j, column b); o[b][q] gathers byte b of a[0 … 3]
        const uint32_t lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
        const uint32_t lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
        o[0][q] = __byte_perm(lo01, lo23, 0x5410);
        o[1][q] = __byte_perm(lo01, lo23, 0x7632);
        o[2][q] = __byte_perm(hi01, hi23, 0x5410);
        o[3][q] = __byte_perm(hi01, hi23, 0x7632);
      }
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const uint32_t c = 4 * cq + b;
        if (c < valid_cols) store_chunk<16>(column_base(c) + 16 * rs, o[b], aligned);
      }
    }
  }
};

}  // namespace tk

// Work distribution of the row-wise memory-bound kernels. A row of C chunks (one chunk = one thread's vector) is
// handled by a team of w warps, w the smallest power of two with 32·w ≥ C, at most the block's warps; a block
// therefore works on (block warps / w) rows at a time and walks rows grid-stride. Inside a row a team thread takes
// chunks t, t + 32w, t + 64w, … : each warp access is contiguous, a quantization group (adjacent chunks) stays
// inside one warp, and the row base address is computed once per row. Any grid size is correct.
//
// Host side: rows_per_block = (blockDim.x / 32) / w, grid.x = ceilDiv(T, rows_per_block) gives one pass.
#pragma once
#include <stdint.h>
#include "fp.cuh"
#include "hw.cuh"
#include "ldst.cuh"

namespace tk {

// log2 of a power of two (block shapes, team widths): index math by shifts instead of divisions.
TK_DEV uint32_t log2_pow2(uint32_t v) { return 31u - __clz(v); }

struct RowTeam {
  uint32_t threads;      // threads of the team (32·w)
  uint32_t thread;       // this thread's index inside its team
  uint32_t warp_offset;  // chunk offset of this warp inside a team step (a multiple of 32)
  uint64_t first_row;    // this team's first row
  uint64_t row_step;     // rows per grid step

  // The work of a team thread is a sequence of units (row, base): base is the chunk offset of the warp's first
  // lane; a unit covers kU chunks per lane at base + u·threads + lane. next() moves to the following unit.
  template <int kU>
  TK_DEV void next(uint64_t& row, uint32_t& base, uint32_t chunks_per_row) const {
    base += kU * threads;
    if (base >= chunks_per_row) {
      base = warp_offset;
      row += row_step;
    }
  }

  TK_DEV explicit RowTeam(uint32_t chunks_per_row) {
    const uint32_t block_warps = blockDim.x / kWarpSize;
    const uint32_t need = (chunks_per_row + kWarpSize - 1) / kWarpSize;
    uint32_t log_w = 0;  // team width is a power of two: shifts, not divisions
    while ((1u << log_w) < need && (2u << log_w) <= block_warps) ++log_w;
    const uint32_t warp = threadIdx.x / kWarpSize;
    const uint32_t teams = block_warps >> log_w;
    threads = kWarpSize << log_w;
    thread = threadIdx.x & (threads - 1);
    warp_offset = thread & ~(kWarpSize - 1);
    // warps left over when the block's warp count is not a multiple of the team width get no rows
    first_row = warp < (teams << log_w) ? static_cast<uint64_t>(blockIdx.x) * teams + (warp >> log_w) : ~0ull;
    row_step = static_cast<uint64_t>(gridDim.x) * teams;
  }
};

// Software pipeline over a warp's units (two stages): the next unit's chunks are staged with cp.async while the
// current one is computed, so HBM stays busy through the reductions, divisions, encoding and stores.
//   prefetch(stage, row, base): issue the copies of unit (row, base) into `stage` (0 or 1)
//   compute(stage, row, base):  the unit's copies have landed in `stage`; use them
// `stage` is an int, or with kUnrolled a Stage<0|1> (the loop body is then emitted once per stage):
// kernels that keep per-stage values in registers need a compile-time stage to index them, the others keep one
// copy of their (larger) compute. The unit sequence and the loop bound are warp-uniform, so compute may shuffle
// across the warp.
// A compile-time pipeline stage that converts to int on the device (std::integral_constant's conversion is
// host-only for nvcc).
template <int kStage>
struct Stage {
  static constexpr int value = kStage;
  TK_DEV constexpr operator int() const { return kStage; }
};

template <int kU, bool kUnrolled, class Prefetch, class Compute>
TK_DEV void pipelined_units(const RowTeam& team, uint64_t rows, uint32_t chunks_per_row, Prefetch&& prefetch,
                            Compute&& compute) {
  uint64_t row = team.first_row;
  uint32_t base = team.warp_offset;
  if (row < rows) prefetch(Stage<0>{}, row, base);
  cp_async_commit();
  auto unit = [&](auto stage, auto other) {
    uint64_t next_row = row;
    uint32_t next_base = base;
    team.next<kU>(next_row, next_base, chunks_per_row);
    if (next_row < rows) prefetch(other, next_row, next_base);
    cp_async_commit();
    cp_async_wait<1>();  // all but the group just committed: this unit's copies
    compute(stage, row, base);
    row = next_row;
    base = next_base;
  };
  if constexpr (kUnrolled) {
    while (row < rows) {
      unit(Stage<0>{}, Stage<1>{});
      if (row >= rows) break;
      unit(Stage<1>{}, Stage<0>{});
    }
  } else {
    for (int stage = 0; row < rows; stage ^= 1) unit(stage, stage ^ 1);
  }
}

}  // namespace tk

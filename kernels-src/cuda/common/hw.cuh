// Hardware facts the kernels are shaped around (sm_90a and sm_100a). Everything that depends on the width of a
// memory transaction, the warp, or an alignment rule of a layout reads it from here, so a new target changes
// one file.
#pragma once
#include <stdint.h>

namespace tk {

// Threads of a warp; shuffles and ballots below assume all of them take part.
constexpr int kWarpSize = 32;
constexpr uint32_t kFullWarpMask = 0xffffffffu;

// Widest single global load/store of one thread (LDG.128 / STG.128). Memory-bound kernels give each thread
// 16-byte chunks: fewer instructions per byte, and 32 lanes × 16 B = 512 B = four full 128-byte lines per
// warp-wide access. (sm_100 also has 32-byte loads; 16 B already saturates HBM when enough are in flight.)
constexpr int kVecBytes = 16;

// Packed UE8M0 scales store four exponent bytes per int32 word, first in the low byte (spec/quant.md §4.2).
constexpr int kUe8m0PerWord = 4;

}  // namespace tk

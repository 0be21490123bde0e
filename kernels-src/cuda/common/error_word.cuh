// The device error word (DESIGN.md §6). Kernels whose inputs carry device-resident values (indices, counts,
// positions) never access memory out of bounds whatever those values are; when they meet an illegal value they
// record it here and carry on with a defined result (skip, or 0). The host reads and clears the word at the next
// sync point and throws TkError(DEVICE_VALUE) naming the op and the condition.
//
// Layout, 4 × u32 at Params::error_word:
//   [0] op id of the first fault (0 = none): set once, by compare-and-swap from 0
//   [1] condition bits of every fault since the last clear (each op documents its bits)
//   [2] number of faulting elements (saturates only by wrap-around of u32)
//   [3] reserved, 0
#pragma once
#include <stdint.h>
#include "hw.cuh"

namespace tk {

enum ErrorWordSlot : int { kErrOpId = 0, kErrCond = 1, kErrCount = 2 };

// Record `count` faults of condition bits `cond` for op `op_id`. Called rarely (only on bad input), so plain
// device-scope atomics are fine.
__device__ __forceinline__ void report_fault(uint64_t error_word, uint32_t op_id, uint32_t cond, uint32_t count = 1) {
  if (error_word == 0) return;
  uint32_t* w = reinterpret_cast<uint32_t*>(error_word);
  atomicCAS(w + kErrOpId, 0u, op_id);
  atomicOr(w + kErrCond, cond);
  atomicAdd(w + kErrCount, count);
}

// Warp-aggregated form: every active lane passes its own `fault` flag; one lane reports the warp's count, so a bad
// tensor costs one set of atomics per warp instead of one per element. Lanes may have exited or diverged: only
// the lanes active at the call take part.
__device__ __forceinline__ void report_fault_warp(uint64_t error_word, uint32_t op_id, uint32_t cond, bool fault) {
  const uint32_t active = __activemask();
  const uint32_t faults = __ballot_sync(active, fault);
  if (faults == 0) return;
  const uint32_t lane = threadIdx.x % kWarpSize;
  if (lane == static_cast<uint32_t>(__ffs(active) - 1)) report_fault(error_word, op_id, cond, __popc(faults));
}

}  // namespace tk

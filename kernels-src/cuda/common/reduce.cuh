// Warp-level reductions. A quantization group of N values spans kLanes adjacent lanes (N / elements per lane);
// an xor butterfly over those lanes leaves the group's result in every one of them, without shared memory.
#pragma once
#include "fp.cuh"
#include "hw.cuh"

namespace tk {

// maximumNumber over the kLanes-lane aligned group containing this lane (kLanes a power of two ≤ 32). Every lane
// of the warp must call it (the shuffles name the full mask). Max is order independent (§1.1.5), so the butterfly
// gives the same bits as any other order.
template <int kLanes>
TK_DEV float group_max(float v) {
  static_assert(kLanes >= 1 && kLanes <= kWarpSize && (kLanes & (kLanes - 1)) == 0, "group_max: power of two lanes");
#pragma unroll
  for (int m = kLanes / 2; m >= 1; m /= 2) v = max_num(v, __shfl_xor_sync(kFullWarpMask, v, m));
  return v;
}

// Two group maxima at once: two non-negative, non-NaN bf16 values packed in one word (the amaxes of two items of
// a bf16 row). For such values bit order is value order, so an unsigned 16-bit max is exact, and one shuffle
// serves both.
template <int kLanes>
TK_DEV uint32_t group_max_u16x2(uint32_t v) {
  static_assert(kLanes >= 1 && kLanes <= kWarpSize && (kLanes & (kLanes - 1)) == 0, "group_max: power of two lanes");
#pragma unroll
  for (int m = kLanes / 2; m >= 1; m /= 2) {
    const uint32_t o = __shfl_xor_sync(kFullWarpMask, v, m);
    asm("max.u16x2 %0, %0, %1;" : "+r"(v) : "r"(o));
  }
  return v;
}

// maximumNumber of the packed bf16 pairs of a and b (max.bf16x2 ignores a NaN operand, like fmaxf).
TK_DEV uint32_t max_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// maximumNumber of |x| over a chunk of kWords packed bf16 pairs, as a bf16 bit pattern in the low 16 bits: exact
// (the max of bf16 values is one of them), never NaN (the running max starts at +0 and max.bf16x2 ignores a NaN
// operand) and non-negative, so it can go through group_max_u16x2. Half the instructions of widening to binary32.
template <int kWords>
TK_DEV uint32_t abs_max_bf16(const uint32_t* w) {
  uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < kWords; ++i) m = max_bf16x2(m, w[i] & 0x7fff7fffu);
  return max(m & 0xffffu, m >> 16);
}

// maximumNumber over the whole block (blockDim.x a multiple of 32, at most 1024). `smem` holds 32 floats.
// Every thread gets the result. Contains two __syncthreads; the caller must not reuse `smem` before the next one.
TK_DEV float block_max(float v, float* smem) {
  v = group_max<kWarpSize>(v);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarpSize;
  v = lane < warps ? smem[lane] : 0.0f;  // 0 is neutral here: every reduced value is an |x| ≥ 0 or NaN
  v = group_max<kWarpSize>(v);
  __syncthreads();
  return v;
}

}  // namespace tk

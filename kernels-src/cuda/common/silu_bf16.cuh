// silu(g) = fl(g / fl(1 + expf(−g))) of spec/quant.md §8.3 (expf_cr, §1.1-4) for a gate g that is a bf16 value, by
// a table lookup: the forward SwiGLU of bf16 inputs needs no division and no exponential. The table has the window
// of common/expf_bf16.cuh (same index, 8704 binary32 entries, 34 KiB of shared memory, each entry computed with the
// reference's operations (silu_bf16_entry), so the reference value by construction: on the host, into
// common/bf16_gate_tables.h, which each CTA copies). Outside the window the
// result is exact arithmetic on g itself:
//   |g| < 2^-26 (zeros and subnormals included): e^(−g) rounds to 1, so silu(g) = g / 2 = fl(g · 0.5) (exact: the
//     lowest set bit of a bf16 value is ≥ 2^-133, so halving it stays on the binary32 grid);
//   |g| ≥ 256, ±Inf, NaN: e^(−g) is +0 for g > 0 (silu(g) = g / 1 = g) and +Inf for g < 0 (silu(g) = g / +Inf = −0,
//     and −Inf / +Inf = NaN), which is fl(g · 0) for every g that is not > 0 (NaN included).
// tools/expf_bf16_check.cpp checks all 65536 patterns against the division form on the host (a NaN result must be
// a NaN; every kernel output of a NaN leaves canonical).
//
// Why: the division fl(g / d) is a ~8-instruction sequence whose exact-rounding check (FCHK) sends a warp to a
// called slow path (~50 instructions) whenever one lane has d ≥ 2^126 or d = +Inf, i.e. a gate ≤ −87.3; with gates
// spread to |g| ≈ 2^8 that is ~8% of lanes and nearly every warp. The lookup and its fix-ups are ~15 instructions
// without a branch.
#pragma once
#include <stdint.h>
#include "expf_bf16.cuh"
#include "fp.cuh"

namespace tk {

// The reference's operations for any binary32 gate (also what a clamped gate g = c uses, once per thread).
TK_HD float silu_cr(float g) { return div_rn(g, add_rn(1.0f, expf_cr(-g))); }

// Table entry i: silu_cr of the gate pattern the index maps back to (the index of exp_neg_bf16_index).
TK_HD float silu_bf16_entry(uint32_t i) {
  const uint32_t g = ((i & 1u) << 15) | ((i >> 1) + kExpNegBf16MagLo);
  return silu_cr(u2f(g << 16));
}

// Whether the gate pattern b lies outside the table's window (tiny, huge, ±Inf or NaN): the looked-up entry is then
// not silu(g), and silu_bf16_fix must replace it.
TK_HD bool silu_bf16_outside(uint32_t b) { return (b & 0x7fffu) - kExpNegBf16MagLo > kExpNegBf16MagHi - kExpNegBf16MagLo; }

// silu of a bf16 gate g given its looked-up entry and whether it lies outside the window (silu_bf16_outside, or
// exp_neg_bf16x2_offsets' flag): the entry inside; outside, g · k with k = min(|entry| · 2^26, 1). An outside gate
// reads an edge entry of its own sign (its magnitude clamps to the window's first or last pattern): ±2^-27 =
// silu(±2^-26) for a tiny gate, so k = 0.5; silu(255) = 255 for g ≥ 256, +Inf and a NaN with the sign bit clear,
// so k = 1; silu(−255) = −0 for g ≤ −256, −Inf and a NaN with the sign bit set, so k = 0. g · k is then g / 2, g or
// g · 0 (−0, or NaN for −Inf and NaN), the exact results listed at the top; 4 operations and a select, where the
// three-way select on g, g / 2 and g · 0 took ~10.
TK_HD float silu_bf16_fix(float g, float looked_up, bool outside) {
  const float scaled = mul_rn(abs_f(looked_up), 67108864.0f);  // 2^26
  const float k = scaled < 1.0f ? scaled : 1.0f;
#if defined(__CUDA_ARCH__)
  return select_f32(outside, mul_rn(g, k), looked_up);
#else
  return outside ? mul_rn(g, k) : looked_up;
#endif
}

// silu of the gate pattern b (low 16 bits): bit-equal to silu_cr for every non-NaN result, a NaN for a NaN one.
TK_HD float silu_bf16(uint32_t b, const float* table) {
  return silu_bf16_fix(u2f(b << 16), table[exp_neg_bf16_index(b)], silu_bf16_outside(b));
}

}  // namespace tk

// stochasticCast bf16 → e4m3, x and out on a chunk boundary: cast.cu's ElemCast with the unaligned fallback compiled
// out (round 9's `tk_cast__bf16_e4m3_sr_a`, which left the package in trim24) with the e4m3 rounding of §7.3 done in a domain scaled by 2^-120
// (sr12_encode_e4m3_quads, common/stochastic.cuh; the form perTokenCast's `_g128_sr_wu12` measured 75.0 → 90.4% of
// copy with, docs/perf-notes/perf12-sr.md). Same hash (sr_mix of the widened bf16 patterns, §7.4), same NaN probe
// and fallback, same tail (sr_quad), same bytes; only the per-value steps between the hash byte R and the hardware RN
// conversion differ. Host: ops/quant/elem_launch.ts (docs/perf-notes/perf13-csr.md).
#define TK_CAST_SR_E4M3_QUADS sr12_encode_e4m3_quads
#define TK_CAST_NO_KERNELS
#include "cast.cu"

// cast_sr23.cu includes this file for the same chunk conversion and tail in another loop and keeps this entry out
#ifndef TK_CAST_SR12_NO_ENTRIES
extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 4)
    tk_cast__bf16_e4m3_sr_a12(const __grid_constant__ CastParams p) {
  tk::ElemCast<tk::Elem::kBf16, tk::Elem::kE4m3, true, true>::run(p);
}
#endif  // TK_CAST_SR12_NO_ENTRIES

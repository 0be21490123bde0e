// The generic `cast` fp16 → e4m3 with [1, 128] blocks on per_token_cast.cu's group kernel (round 23,
// docs/perf-notes/perf23-gcast.md; knob `castBlockLaunchTuning.perToken16`, ops/quant/cast_block_launch.ts, default
// off). Main runs this shape on cast_block.cu's `tk_cast_block_staged__fp16_e4m3_r1c128_a`; bf16 [1, 128] already
// goes to perTokenCast's `_g128_pdl` (packed UE8M0 sf: `_g128_pkl_pdl`), and this is `_g128_pdl` from fp16.
//
// Symbol
//   tk_per_token_cast__fp16_e4m3_g128_pdl   GroupCast<fp16, e4m3, 128> with the griddepcontrol prologue, every sf
//                                           layout (packed UE8M0 included: a `_pkl_pdl` twin, whose evict_last sf
//                                           stores gave bf16 +0.4 … +2.6 points, would add ~45 KB of cubin; not built)
//
// Accepted (the host checks, and keeps the staged kernel otherwise): a plain contiguous fp16 [T, H] input with
// H % 128 == 0 and T, H > 0 (whole groups), mode 0 (cast); any view alignment (load_chunk / store_chunk keep their
// element-wide fallbacks); every sf layout of the generic cast (fp32, e4m3, packed UE8M0; row- or column-major).
// Launched with the PDL attribute iff config.pdl, as the bf16 forms (without it the griddepcontrol instructions are
// no-ops). Launch geometry: per_token_cast.cu's `_g<N>` row.
//
// fp16 takes GroupCast's widening path (decode_chunk: cvt.f32.f16, exact) for both the amax (max_num of |x| from +0,
// group_max over the 16 lanes of a group) and the products; bf16's packed bf16x2 maximum is not used. Same bytes as
// cast_block.cu: the maximum of a group's |x| widened exactly to binary32 (order independent; the staged kernel's
// packed max.f16x2 gives the same value), the same sf_and_inv(amax, clamp, 448, flags), fl(x · inv), hardware RN e4m3
// encoder, and the same SfOut stores and padding rows.
#define TK_PTC_NO_KERNELS
#include "per_token_cast.cu"

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::kFp16>)
    tk_per_token_cast__fp16_e4m3_g128_pdl(const __grid_constant__ PerTokenCastParams p) {
  tk::GroupCast<tk::Fmt::kFp16, tk::Fmt::kE4m3, 128, false, 0, tk::kFormAnyMode, false, true>(p).run();
}

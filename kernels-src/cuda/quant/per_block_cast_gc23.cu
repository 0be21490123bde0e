// The generic `cast` bf16 → e4m3 with [16, 64] blocks on per_block_cast.cu's tile kernel (round 23,
// docs/perf-notes/perf23-gcast.md; knob `castBlockLaunchTuning.perBlock16x64`, ops/quant/cast_block_launch.ts,
// default off). Main runs this shape on cast_block.cu's `tk_cast_block_staged__bf16_e4m3_r16c64_a`.
//
// Symbol
//   tk_per_block_cast__bf16_e4m3_16x64   BlockCast<bf16, e4m3, 16, 64, kCastOnly>: PerBlockCastParams, mode 0 (cast)
//                                        only, no L2 hint bits, aligned views (it traps otherwise)
//
// Accepted (the host checks, and keeps the staged kernel otherwise): a plain bf16 [T, H] input with T % 16 == 0,
// H % 64 == 0, T, H > 0 (whole blocks), x 16-byte and data 8-byte aligned (kCastOnly: no element-wise staging or
// byte-store fallbacks, no precomputed or sf-only path, no hinted copies), every sf layout of the generic cast: fp32, e4m3 (flags bit kSfE4m3Out, which per_block_cast.cu's
// sf_and_inv and SfOut already honour) or channel-packed UE8M0, row- or column-major.
//
// Launch geometry (per_block_cast.cu's table): block.x 256, 32 KiB + 192 B static shared memory, grid.x =
// min(tiles, 4 · SMs), tiles = (T / 16) · ceilDiv(H, 1024). A tile is 16 rows × 1024 columns = 16 blocks side by
// side (kMaxTileBlocks): thread t owns chunk column t % 128 of rows t / 128 + 2u, u < 8; a warp instruction reads
// 512 contiguous bytes of one row; a block's 8 chunk columns are 8 adjacent lanes (butterfly over lane bits 0–2) in
// two warps (w and w + 4: one shared atomicMax each); the next tile is copied by cp.async into each thread's own
// shared slots while this one is cast. Same tile shape (16384 elements) and pipeline as the 32 × 32 form.
//
// Same bytes as cast_block.cu: per block the maximum of |x| widened exactly to binary32 (max_num from +0; the
// maximum of a set does not depend on the order of the butterfly, the atomicMax of non-negative binary32 patterns
// or the staged kernel's packed bf16x2 maxima), then the same sf_and_inv(amax, clamp, 448, flags), fl(x · inv) and
// hardware RN e4m3 encoder, and the same SfOut stores and column-major padding rows.
#define TK_PER_BLOCK_CAST_NO_ENTRIES
#include "per_block_cast.cu"

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, tk::kMinBlocksPerSm<tk::Fmt::kBf16>)
    tk_per_block_cast__bf16_e4m3_16x64(const __grid_constant__ PerBlockCastParams p) {
  tk::BlockCast<tk::Fmt::kBf16, tk::Fmt::kE4m3, 16, 64, true>(p).run();
}

/**
 * Kernel parameters of the generic block-scaled `cast` (`kernels-src/cuda/quant/cast_block.cu`), generated into
 * `kernels-src/cuda/generated/cast_block_params.h`. One struct serves both launches of a call: the scale pass
 * (`tk_cast_block_sf__…`) and the data pass (`tk_cast_block_data__…`).
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `mode` of the data pass: the inverse of a block comes from the scale pass, or is `fl(1/s)` of a given sf. */
export const CAST_BLOCK_MODE = { cast: 0, precomputedSf: 1 } as const;

export const CastBlockParams = defineParams("CastBlockParams", [
  ["x", "ptr"], // element [0, 0] of the contiguous input: fp32/bf16/fp16 values, or e4m3 / e2m1x2 codes
  ["x_sf", "ptr"], // a quantized input's scales (SF_KIND x_sf_kind), or the precomputed fp32 sf; 0 when absent
  ["data", "ptr"], // output codes, contiguous [T, H] e4m3 or [T, H/2] e2m1x2 (data pass)
  ["sf", "ptr"], // output scales, any strides (scale pass)
  ["inv", "ptr"], // fp32 [nbm · nbk] scratch: the scale pass writes each block's inverse, the data pass reads it
  ["x_sf_stride0", "u64"], // strides of x_sf, in storage elements
  ["x_sf_stride1", "u64"],
  ["sf_stride0", "u64"], // output sf strides, in storage elements
  ["sf_stride1", "u64"],
  ["num_tokens", "u32"], // T
  ["hidden", "u32"], // logical H
  ["block_rows", "u32"], // r (clamped to T: the same blocks)
  ["block_cols", "u32"], // c (clamped to H)
  ["x_block_rows", "u32"], // xBlockSize of a quantized input (1 otherwise)
  ["x_block_cols", "u32"],
  ["x_sf_kind", "u32"], // SF_KIND of x_sf
  ["sf_rows", "u32"], // output sf rows to write: nbm, or the padded P of a column-major layout (rows >= nbm get 0)
  ["mode", "u32"], // CAST_BLOCK_MODE (data pass)
  ["dequantize_first", "u32"], // 1 for [r, 1] blocks of a quantized input: v = fl(fl(q·s_in)·inv) (§5.1), else §4.4
  ["flags", "u32"], // PER_TOKEN_FLAG bits (roundSf, packedUe8m0, e4m3Sf)
  ["amax_clamp", "f32"], // lower bound on amax (config.amaxClamp, spec/quant.md §2.2)
  ["qmax", "f32"], // Qmax of the target: 448 (e4m3) or 6 (e2m1)
] as const);

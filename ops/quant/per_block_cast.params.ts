/**
 * Kernel parameters of the per-block cast family (`kernels-src/cuda/quant/per_block_cast.cu` and
 * `per_block_cast_lossless.cu`). One struct serves `perBlockCast`, `perBlockCastWithSfOnly` and
 * `perBlockCastWithPrecomputedSf` (field `mode`); `perBlockCastLossless` has its own.
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `mode`: what a per-block launch computes. */
export const PER_BLOCK_MODE = { cast: 0, sfOnly: 1, precomputedSf: 2 } as const;

export const PerBlockCastParams = defineParams("PerBlockCastParams", [
  ["x", "ptr"], // element [0, 0] of the contiguous fp32/bf16 input [T, H]
  ["x_sf", "ptr"], // the precomputed fp32 sf [T/r, H/c] (mode precomputedSf); 0 otherwise
  ["data", "ptr"], // output codes, contiguous [T, H] e4m3 or [T, H/2] e2m1x2; 0 for sf-only
  ["sf", "ptr"], // output scales (fp32 or int32 word); 0 for the precomputed-sf mode
  ["x_sf_stride0", "u64"], // precomputed sf strides, in fp32 elements
  ["x_sf_stride1", "u64"],
  ["sf_stride0", "u64"], // output sf strides, in sf storage elements
  ["sf_stride1", "u64"],
  ["num_tokens", "u32"], // T (a multiple of 128)
  ["hidden", "u32"], // H (a multiple of 128)
  ["sf_rows", "u32"], // sf rows to write: T/r, or the padded P of a column-major layout (rows >= T/r get 0)
  ["mode", "u32"], // PER_BLOCK_MODE
  ["flags", "u32"], // PER_TOKEN_FLAG bits (roundSf, packedUe8m0); bit 8: L2 hint of the sf-only mode (per_block_cast.ts)
  ["amax_clamp", "f32"], // lower bound on amax (config.amaxClamp, spec/quant.md §2.2)
] as const);

/** `sf_kind` of the lossless input scales: fp32 (exponent field used) or channel-packed UE8M0 bytes. */
export const LOSSLESS_SF_KIND = { fp32: 0, packedChannel: 2 } as const;

export const PerBlockCastLosslessParams = defineParams("PerBlockCastLosslessParams", [
  ["x", "ptr"], // e2m1x2 codes [T, H/2], contiguous
  ["x_sf", "ptr"], // input scales: fp32 or int32 words (LOSSLESS_SF_KIND)
  ["data", "ptr"], // e4m3 output [T, H], contiguous
  ["sf", "ptr"], // output scales: fp32 or int32 words (packed UE8M0)
  ["error_word", "ptr"], // the device error word (DESIGN §6)
  ["x_sf_stride0", "u64"], // input sf strides, in storage elements
  ["x_sf_stride1", "u64"],
  ["sf_stride0", "u64"], // output sf strides, in storage elements
  ["sf_stride1", "u64"],
  ["num_tokens", "u32"], // T
  ["hidden", "u32"], // logical H (a multiple of 32)
  ["in_block_rows", "u32"], // xBlockSize (powers of two)
  ["in_block_cols", "u32"],
  ["out_block_rows", "u32"], // outBlockSize (multiples of the input block, powers of two)
  ["out_block_cols", "u32"],
  ["x_sf_kind", "u32"], // LOSSLESS_SF_KIND
  ["sf_rows", "u32"], // output sf rows to write: nbm, or the padded P of a column-major layout
  ["flags", "u32"], // PER_TOKEN_FLAG bits: packedUe8m0 selects the output storage
  ["op_id", "u32"], // reported in the error word
] as const);

/**
 * Kernel parameters of the per-token cast family (`kernels-src/cuda/quant/per_token_cast.cu`).
 * One struct serves `perTokenCast`, `perTokenCastWithSfOnly` and `perTokenCastWithPrecomputedSf` (field `mode`).
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `mode`: what the launch computes. */
export const PER_TOKEN_MODE = { cast: 0, sfOnly: 1, precomputedSf: 2 } as const;
/** `flags` bits. */
export const PER_TOKEN_FLAG = { roundSf: 1, packedUe8m0: 2, e4m3Sf: 4 } as const;
/** `x_sf_kind`: the input scale storage of a quantized input (or of a precomputed sf). */
export const SF_KIND = { fp32: 0, e4m3: 1, packedChannel: 2, packedToken: 3 } as const;

export const PerTokenCastParams = defineParams("PerTokenCastParams", [
  ["x", "ptr"], // element [0, 0] of the input: fp32/bf16 values, or e4m3 / e2m1x2 codes
  ["x_sf", "ptr"], // input scales (re-quantization) or the precomputed sf; 0 when absent
  ["data", "ptr"], // output codes, contiguous [T, H] e4m3 or [T, H/2] e2m1x2; 0 for sf-only
  ["sf", "ptr"], // output scales (fp32, e4m3 byte or int32 word); 0 for the precomputed-sf mode
  ["error_word", "ptr"], // the device error word (DESIGN §6)
  ["x_row_stride", "u64"], // in input elements (bytes for e2m1x2 codes)
  ["x_sf_stride0", "u64"], // input sf strides, in sf storage elements (fp32, byte or int32 word)
  ["x_sf_stride1", "u64"],
  ["sf_stride0", "u64"], // output sf strides, in sf storage elements
  ["sf_stride1", "u64"],
  ["num_tokens", "u32"], // T
  ["hidden", "u32"], // logical H (H % 64 == 0)
  ["num_per_channels", "u32"], // group width N (== H for the `row` variants)
  ["sf_rows", "u32"], // sf rows to write: T, or the padded P of a column-major layout (rows >= T get 0)
  ["mode", "u32"], // PER_TOKEN_MODE
  ["flags", "u32"], // PER_TOKEN_FLAG bits
  ["x_sf_kind", "u32"], // SF_KIND of x_sf
  ["x_block_rows", "u32"], // xBlockSize of a quantized input
  ["x_block_cols", "u32"],
  ["amax_clamp", "f32"], // lower bound on amax (config.amaxClamp, spec/quant.md §2.2)
  ["op_id", "u32"], // reported in the error word
] as const);

/**
 * Kernel parameters of the RMSNorm forward family (`kernels-src/cuda/norm/norm_forward.cu`). One struct serves
 * `normForward`, `normForwardAndPerTokenCast` and `addRmsnormForwardAndPerTokenCast`; the cast variants also
 * read the scale fields.
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `flags` bits. `roundSf` / `packedUe8m0` are the values of PER_TOKEN_FLAG (common/scale.cuh `SfFlag`). */
export const NORM_FWD_FLAG = { roundSf: 1, packedUe8m0: 2, weight: 8, residual: 16, outBf16: 32 } as const;

export const NormForwardParams = defineParams("NormForwardParams", [
  ["x", "ptr"], // element [0, 0(, 0)] of x: fp32 / bf16
  ["residual", "ptr"], // added to x first; 0 when absent
  ["residual_out", "ptr"], // receives x + residual (may be residual or x itself); 0 when absent
  ["weight", "ptr"], // [H], x's dtype; 0 = unit weight
  ["out", "ptr"], // normalized output in x's dtype (plain variant only)
  ["rstd", "ptr"], // fp32 [B·T], contiguous
  ["data", "ptr"], // cast variants: e4m3 [B, T, H] contiguous
  ["sf", "ptr"], // cast variants: scales of batch 0 (fp32 or int32 words)
  ["out_bf16", "ptr"], // cast variants with withOutBf16: bf16 [B, T, H] contiguous; else 0
  ["x_batch_stride", "u64"], // strides in elements; batch strides are 0 for 2-D inputs
  ["x_row_stride", "u64"],
  ["residual_batch_stride", "u64"],
  ["residual_row_stride", "u64"],
  ["residual_out_batch_stride", "u64"],
  ["residual_out_row_stride", "u64"],
  ["out_batch_stride", "u64"],
  ["out_row_stride", "u64"],
  ["sf_batch_stride", "u64"], // in sf storage elements (fp32 value or int32 word)
  ["sf_stride0", "u64"],
  ["sf_stride1", "u64"],
  ["num_batches", "u32"], // B (1 for 2-D)
  ["num_tokens", "u32"], // T (rows per batch)
  ["hidden", "u32"], // H, a multiple of 16, at most 8192
  ["team_threads", "u32"], // P: threads per row, a power of two in [max(1, N/2), 256] (N = nextPow2(H/16))
  ["sf_rows", "u32"], // sf rows per batch: T, or the padded rows of a column-major layout (zeroed)
  ["flags", "u32"], // NORM_FWD_FLAG bits
  ["eps", "f32"], // RN32(eps)
  ["out_scale", "f32"], // RN32(outScale)
  ["amax_clamp", "f32"], // cast variants: config.amaxClamp.e4m3
] as const);

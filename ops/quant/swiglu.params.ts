/**
 * Kernel parameters of the SwiGLU family (`kernels-src/cuda/swiglu/swiglu.cu`): one struct serves
 * `swigluForward`, `swigluForwardAndPerTokenCast`, `swigluBackward` and `swigluBackwardAndPerTokenCast`
 * (unused pointers are 0), plus the `tk_swiglu_expf_check` test kernel (x, out, num_tokens = element count).
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `flags` bits: which optional inputs and outputs a launch has. */
export const SWIGLU_FLAG = { weights: 1, scale: 2, clamp: 4, counts: 8, recompute: 16 } as const;

export const SwigluParams = defineParams("SwigluParams", [
  ["x", "ptr"], // [T, 2H] fp32 / bf16 values or e4m3 codes, contiguous
  ["x_sf", "ptr"], // e4m3 input: fp32 row-major [T, 2H/N]; else 0
  ["dy", "ptr"], // backward: actXGrad [T, H] contiguous; else 0
  ["weights", "ptr"], // topkWeights fp32 [T] contiguous, or 0
  ["psum", "ptr"], // int32 [E] contiguous, or 0 (every row real)
  ["out", "ptr"], // forward: out [T, H] (row stride out_row_stride); backward: xGrad [T, 2H] contiguous
  ["data", "ptr"], // e4m3 codes of the cast forms: [T, H] forward, [T, 2H] backward; else 0
  ["sf", "ptr"], // sf of the cast forms (fp32 values or int32 packed words), or 0
  ["act_out", "ptr"], // backward with doRecompute: [T, H] contiguous, or 0
  ["weight_grad", "ptr"], // backward with topkWeights: fp32 [T], or 0
  ["counts", "ptr"], // forward: clampedCount int64 [4] (stride counts_stride), or 0
  ["error_word", "ptr"], // the device error word (DESIGN §6)
  ["out_row_stride", "u64"], // forward out row stride, in elements
  ["sf_stride0", "u64"], // sf strides, in storage elements
  ["sf_stride1", "u64"],
  ["counts_stride", "u64"], // clampedCount stride, in elements
  ["num_tokens", "u32"], // T (element count for tk_swiglu_expf_check)
  ["hidden", "u32"], // H (H % 64 == 0)
  ["num_experts", "u32"], // E (0: no psum)
  ["token_alignment", "u32"], // A ≥ 1
  ["sf_rows", "u32"], // sf rows written: T, or the padded rows of a column-major layout
  ["sf_flags", "u32"], // PER_TOKEN_FLAG bits (roundSf, packedUe8m0)
  ["flags", "u32"], // SWIGLU_FLAG bits
  ["clamp", "f32"], // fl32(clampValue)
  ["scale", "f32"], // fl32(routedScalingFactor)
  ["amax_clamp", "f32"], // e4m3 amax lower bound (config.amaxClamp)
  ["op_id", "u32"], // reported in the error word
] as const);

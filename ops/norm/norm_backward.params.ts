/**
 * Kernel parameters of the RMSNorm backward (`kernels-src/cuda/norm/norm_backward.cu`): one struct for the row
 * kernel and the weight-gradient fold.
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `flags` bits. */
export const NORM_BWD_FLAG = {
  weight: 1,
  residualOutGrad: 2,
  accumulate: 4,
  weightGradBf16: 8,
  /** bf16 `_b4`: the slot's next rows toward L2 by one bulk prefetch per input (normLaunchTuning.backwardPrefetch). */
  prefetchBulk: 16,
  /** bf16 `_b4`: the same by per-thread `prefetch.global.L2` of each thread's chunks. */
  prefetchThread: 32,
} as const;

export const NormBackwardParams = defineParams("NormBackwardParams", [
  ["x", "ptr"], // the forward's normInput, fp32 / bf16 [T, H]
  ["grad_out", "ptr"], // like x
  ["residual_out_grad", "ptr"], // like x; 0 when absent
  ["rstd", "ptr"], // fp32 [T]
  ["weight", "ptr"], // [H], x's dtype; 0 = no weight (and no weight gradient)
  ["x_grad", "ptr"], // x's dtype [T, H], contiguous
  ["workspace", "ptr"], // fp32 [min(T, 512), H]: the per-slot partial sums A (spec D.3)
  ["weight_grad", "ptr"], // fp32 / bf16 [H]
  ["x_row_stride", "u64"], // elements
  ["grad_out_row_stride", "u64"],
  ["residual_out_grad_row_stride", "u64"],
  ["num_tokens", "u32"], // T
  ["hidden", "u32"], // H, a multiple of 32, at most 8192
  ["team_threads", "u32"], // P: threads per row, as NormForwardParams.team_threads
  ["flags", "u32"], // NORM_BWD_FLAG bits
  ["out_scale", "f32"], // RN32(outScale)
] as const);

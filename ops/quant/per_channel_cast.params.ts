/**
 * Kernel parameters of the per-channel casts (`kernels-src/cuda/quant/per_channel_cast.cu`): one struct serves
 * `perChannelCast`, `perChannelCastFused` (gather through `pos_to_token`) and `perChannelCastAndTranspose`.
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `flags` bits (the same bits as PER_TOKEN_FLAG where they mean the same). */
export const PER_CHANNEL_FLAG = { roundSf: 1, packedUe8m0: 2 } as const;

/** Condition bits the per-channel kernels report in the device error word (DESIGN §6). */
export const PER_CHANNEL_COND = { posOutOfRange: 1 } as const;

export const PerChannelCastParams = defineParams("PerChannelCastParams", [
  ["x", "ptr"], // element [0, 0] of the contiguous input: fp32/bf16 values or e4m3 codes, [T, H]
  ["x_sf", "ptr"], // per-token input scales of e4m3 codes (SF_KIND x_sf_kind); 0 for plain inputs
  ["pos_to_token", "ptr"], // int32 [out_tokens] gather (perChannelCastFused); 0 = output row p is input row p
  ["data", "ptr"], // e4m3 codes: [out_tokens, H] contiguous, or [H, out_tokens] for the transposed variant
  ["sf", "ptr"], // fp32 [nbm, H] row-major, or token-packed UE8M0 int32 [⌈nbm/4⌉, H]
  ["error_word", "ptr"], // the device error word
  ["x_sf_stride0", "u64"], // input sf strides, in storage elements (fp32, byte or int32 word)
  ["x_sf_stride1", "u64"],
  ["sf_stride0", "u64"], // output sf row stride, in storage elements (fp32 value or int32 word)
  ["num_tokens", "u32"], // T: input rows
  ["out_tokens", "u32"], // output rows: T, or the gather length
  ["hidden", "u32"], // H
  ["num_per_channels", "u32"], // channels per input scale of e4m3 codes (32 or 128)
  ["x_sf_kind", "u32"], // SF_KIND of x_sf
  ["flags", "u32"], // PER_CHANNEL_FLAG bits
  ["amax_clamp", "f32"], // lower bound on amax (config.amaxClamp["e4m3"], spec/quant.md §2.2)
  ["op_id", "u32"], // reported in the error word
] as const);

export const TransposeWeightSfParams = defineParams("TransposeWeightSfParams", [
  ["sf", "ptr"], // fp32 [G, nS, kS] contiguous (G = 1 for a dense weight)
  ["sf0", "ptr"], // int32 words (g, p, i) at g·P0·n + p·n + i
  ["sf1", "ptr"], // int32 words (g, p, c) at g·P1·k + p·k + c
  ["groups", "u32"], // G
  ["n_blocks", "u32"], // nS
  ["k_blocks", "u32"], // kS
  ["block_size", "u32"], // 32 or 128
] as const);

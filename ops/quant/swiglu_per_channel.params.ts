/**
 * Kernel parameters of `swigluForwardAndPerChannelCastAndTranspose` (`kernels-src/cuda/swiglu/swiglu_per_channel.cu`).
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `flags` bits (rows32 and transposed: read by the `_an` kernel only; the others know R and the layout by symbol). */
export const SWIGLU_PER_CHANNEL_FLAG = { roundSf: 1, clamp: 2, rows32: 4, transposed: 8 } as const;

export const SwigluPerChannelParams = defineParams("SwigluPerChannelParams", [
  ["x", "ptr"], // bf16 [T, 2H] contiguous: gate columns [0, H), up columns [H, 2H)
  ["data", "ptr"], // e4m3 codes, contiguous: [H, T] (transposed kernels) or [T, H]
  ["sf", "ptr"], // fp32 [T / R, H] row-major
  ["num_tokens", "u32"], // T (T % 128 == 0)
  ["hidden", "u32"], // H (H % 64 == 0)
  ["flags", "u32"], // SWIGLU_PER_CHANNEL_FLAG bits
  ["clamp", "f32"], // fl32(clampValue) when flags has clamp
  ["amax_clamp", "f32"], // e4m3 amax lower bound (config.amaxClamp["e4m3"], spec/quant.md §2.2)
] as const);

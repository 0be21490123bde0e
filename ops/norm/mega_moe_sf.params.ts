/**
 * Kernel parameters of the mega-MoE scale scatter (`kernels-src/cuda/norm/mega_moe_sf.cu`) that
 * `normForwardAndPerTokenCast` runs after its cast when `megaMoeSf` is given (spec/norm-rope-rand.md A.1).
 * @module
 */
import { defineParams } from "../../core/params.ts";

export const MegaMoeSfParams = defineParams("MegaMoeSfParams", [
  ["sf", "ptr"], // the cast's scales, element [0, 0]: fp32 power-of-two values, or packed UE8M0 int32 words
  ["out", "ptr"], // megaMoeSf element [0, 0] (int32, M-major: element (ρ, g) at ρ + g · out_stride1)
  ["sf_stride0", "u64"], // token stride of sf, in storage elements (fp32 value or int32 word)
  ["sf_stride1", "u64"], // column stride of sf (fp32: one scale; packed: one word of four)
  ["out_stride1", "u64"], // R, megaMoeSf's row pitch (stride(1)), ≥ ⌈T/m⌉ · align(m, 128)
  ["num_tokens", "u32"], // T
  ["groups", "u32"], // H / 128: words per token
  ["block_m", "u32"], // m ≥ 1
  ["packed", "u32"], // 1: sf holds packed UE8M0 words; 0: fp32 values
] as const);

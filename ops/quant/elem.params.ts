/**
 * Kernel parameters of the element-wise casts (`kernels-src/cuda/quant/cast.cu`,
 * `per_token_cast_and_cast_back.cu`, `unpack.cu`), generated into `kernels-src/cuda/generated/elem_params.h`.
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** The element conversion of `cast` / `stochasticCast` (RN or stochastic rounding: the symbol decides). */
export const CastParams = defineParams("CastParams", [
  ["x", "ptr"], // contiguous source elements
  ["out", "ptr"], // contiguous output elements
  ["numel", "u64"], // elements (a multiple of 4 for stochastic rounding)
  ["idx_base", "u32"], // stochastic rounding: uint32(offset / 4 + seed), added to every quad index (§7.4)
] as const);

/** `perTokenCastAndCastBack`, in place. `flags` are the PER_TOKEN_FLAG bits (roundSf, e4m3Sf). */
export const CastAndCastBackParams = defineParams("CastAndCastBackParams", [
  ["x", "ptr"], // element [0, 0] of x (fp32 / bf16), rewritten in place
  ["x_row_stride", "u64"], // elements
  ["num_tokens", "u32"],
  ["hidden", "u32"],
  ["flags", "u32"],
  ["amax_clamp", "f32"], // config.amaxClamp of the format (spec/quant.md §2.2)
] as const);

/** `unpackFromE2m1fnX2` over a `[rows, K]` view of the codes (any row and column stride, in bytes). */
export const UnpackParams = defineParams("UnpackParams", [
  ["x", "ptr"], // byte [0, 0] of the codes
  ["out", "ptr"], // contiguous [rows, 2K] fp32 / bf16
  ["row_stride", "i64"], // bytes (views may have any strides)
  ["col_stride", "i64"], // bytes
  ["rows", "u64"],
  ["cols", "u64"], // K: bytes per row
] as const);

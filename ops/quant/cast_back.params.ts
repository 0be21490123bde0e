/**
 * Kernel parameters of block dequantization (`kernels-src/cuda/quant/cast_back.cu`), used by `perTokenCastBack`
 * (and by `castBack`).
 * @module
 */
import { defineParams } from "../../core/params.ts";

export const CastBackParams = defineParams("CastBackParams", [
  ["data", "ptr"], // codes: e4m3 [T, H] or e2m1x2 [T, H/2]
  ["sf", "ptr"], // scales: fp32, e4m3 byte or int32 word (SF_KIND)
  ["out", "ptr"], // fp32 or bf16 [T, H]
  ["error_word", "ptr"],
  ["data_row_stride", "u64"], // bytes
  ["out_row_stride", "u64"], // output elements
  ["sf_stride0", "u64"], // sf storage elements
  ["sf_stride1", "u64"],
  ["num_tokens", "u32"],
  ["hidden", "u32"], // logical H
  ["block_rows", "u32"], // xBlockSize
  ["block_cols", "u32"],
  ["sf_kind", "u32"], // SF_KIND
  ["op_id", "u32"],
  ["flags", "u32"], // L2 hint bits 8-10 of the segmented kernels' code loads (common/load_hint.cuh; CAST_BACK_L2_256B)
] as const);

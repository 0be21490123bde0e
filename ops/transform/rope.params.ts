/**
 * Kernel parameters of the rotary embedding (`kernels-src/cuda/transform/rope.cu`), used by `applyRotary`: one
 * launch per rotated tensor (query, then key).
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** `flags` bits. */
export const ROPE_FLAG = { interleaved: 1, conjugate: 2, positionsInt64: 4, l2Line: 8 } as const;

export const RopeParams = defineParams("RopeParams", [
  ["x", "ptr"], // element [0, 0, 0(, 0)] of the rotated view, rewritten in place
  ["cos_sin", "ptr"], // element [0, 0] of the fp32 cache [R, D]: cos in columns [0, D/2), sin in [D/2, D)
  ["positions", "ptr"], // int32/int64 [B, S] (3-D query: [T] as B = 1); 0 without positions
  ["error_word", "ptr"], // the device error word (DESIGN §6); 0: guard without reporting (the key's launch)
  ["x_stride_b", "i64"], // strides of the view in elements: batch (0 for a 3-D query), token, head
  ["x_stride_s", "i64"],
  ["x_stride_h", "i64"],
  ["cos_sin_stride", "i64"], // row stride of the cache, in elements
  ["pos_stride_b", "i64"], // strides of positions in elements (batch stride may be 0)
  ["pos_stride_s", "i64"],
  ["seqlen_offset", "i64"], // added to every position (or to the token index s)
  ["num_rows", "u64"], // R: rows of the cache; a row outside [0, R) is skipped and reported
  ["batch", "u32"], // B (1 for a 3-D query)
  ["seqlen", "u32"], // S (T for a 3-D query)
  ["heads", "u32"],
  ["dim", "u32"], // D: 32, 64, 128 or 256
  ["flags", "u32"], // ROPE_FLAG bits
  ["op_id", "u32"], // reported in the error word
] as const);

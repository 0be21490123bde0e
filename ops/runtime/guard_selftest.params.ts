/**
 * Parameters of the internal guard self-test kernel (`kernels-src/cuda/runtime/guard_selftest.cu`): a gather
 * `out[i] = src[indices[i]]` whose indices live on the device. It exists to exercise DESIGN §6 end to end
 * (clamped access + error word) with the same mechanism every index-taking op uses.
 * @module
 */
import { defineParams } from "../../core/params.ts";

export const GuardSelftestParams = defineParams("GuardSelftestParams", [
  ["indices", "ptr"], // int32 [n]
  ["src", "ptr"], // fp32 [src_len]
  ["out", "ptr"], // fp32 [n]; 0 where the index is out of range
  ["error_word", "ptr"],
  ["n", "u32"],
  ["src_len", "u32"],
  ["op_id", "u32"],
] as const);

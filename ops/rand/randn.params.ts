/**
 * Kernel parameters of the normal generator (`kernels-src/cuda/rand/randn.cu`), used by `randn` and `randnLike`.
 * @module
 */
import { defineParams } from "../../core/params.ts";

/** Most dimensions a strided output may keep after merging (`randn.ts` merges what it can first). */
export const RANDN_MAX_DIMS = 6;

export const RandnParams = defineParams("RandnParams", [
  ["out", "ptr"], // element [0, …, 0] of the output
  ["seed", "u64"], // Philox key (seed mod 2^32, seed / 2^32)
  ["offset", "u64"], // Philox counter words 2 and 3
  ["numel", "u64"], // n: logical elements; element i gets the value of index i (§C.2)
  ["rank", "u32"], // 0: contiguous output (element i at out + i); else dims of size/stride below, row-major
  ["pad", "u32"],
  ["size0", "u64"], // sizes of the merged dims, outermost first (only the first `rank` are read)
  ["size1", "u64"],
  ["size2", "u64"],
  ["size3", "u64"],
  ["size4", "u64"],
  ["size5", "u64"],
  ["stride0", "i64"], // strides in elements of the merged dims
  ["stride1", "i64"],
  ["stride2", "i64"],
  ["stride3", "i64"],
  ["stride4", "i64"],
  ["stride5", "i64"],
] as const);

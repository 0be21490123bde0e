/**
 * The RMSNorm family (`jsr:@tk/kernels/norm`): `normForward`, `normForwardAndPerTokenCast`,
 * `addRmsnormForwardAndPerTokenCast`, `normBackward` and the deprecated alias `rmsnormForwardAndPerTokenCast`, with
 * a bit-exact CPU reference (spec/norm-rope-rand.md Part A and D), and CUDA kernels that give the same bytes
 * (`kernels-src/cuda/norm/`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normForward } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const x = tensor(new Float32Array(2 * 64).fill(3), [2, 64], "fp32");
 * const [out] = normForward(x, null, { eps: 0, outScale: 2 });
 * assert.equal((out as { data: Float32Array }).data[0], 2);
 * ```
 * @module
 */
export { normForward, type NormForwardOptions } from "./norm_forward.ts";
export { normBackward, type NormBackwardOptions } from "./norm_backward.ts";
export {
  addRmsnormForwardAndPerTokenCast,
  type AddRmsnormForwardAndPerTokenCastOptions,
  type NormCastSfOptions,
  normForwardAndPerTokenCast,
  type NormForwardAndPerTokenCastOptions,
  rmsnormForwardAndPerTokenCast,
  type RmsnormForwardAndPerTokenCastOptions,
} from "./norm_forward_and_per_token_cast.ts";
// The types the signatures above refer to, so that this entry point documents on its own.
export type { Backend, OpOptions } from "../../core/backend.ts";
export type { Device, DeviceStorage, DeviceTensor, HostTensor, Quantized, Stream, Tensor, TensorBase } from "../../core/tensor.ts";
export type { DType, TypedArray } from "../../core/dtype.ts";

/**
 * `@tk/kernels`: DeepSeek TileKernels' operators for Deno and Bun — precompiled CUDA kernels behind a tiny
 * launch shim, with a byte-exact CPU reference of every op.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perTokenCast, tensor } from "./mod.ts";
 * const x = tensor(new Float32Array(4 * 128).map(Math.random), [4, 128], "fp32");
 * const [data, sf] = perTokenCast(x, { fmt: "e4m3", numPerChannels: 128 });
 * assert.ok(data.shape[1] === 128 && sf.shape[0] === 4);
 * ```
 * @module
 */
export { TkError, type TkErrorCode } from "./core/errors.ts";
export {
  decodeBf16,
  decodeE2m1,
  decodeE4m3,
  decodeFp16,
  decodeUe8m0,
  type DType,
  encodeBf16,
  encodeE2m1,
  encodeE4m3,
  encodeFp16,
  type TypedArray,
} from "./core/dtype.ts";
export {
  clone,
  type Device,
  DeviceStorage,
  DeviceTensor,
  empty,
  HostTensor,
  type Quantized,
  type Stream,
  type Tensor,
  tensor,
  TensorBase,
  toDevice,
  toHost,
  zeros,
} from "./core/tensor.ts";
export { type AmaxClampKey, AmaxClampTable, Config, config } from "./core/config.ts";
export type { Backend, OpOptions } from "./core/backend.ts";
export { encodeSafetensors, readSafetensors, writeSafetensors } from "./core/safetensors.ts";
export { createStream, releaseCachedMemory, synchronize } from "./ffi/cuda.ts";
export { deviceInfo, type DeviceInfo, devices } from "./ffi/devices.ts";
export { ready } from "./ffi/loader.ts";
export * from "./ops/quant/mod.ts";
export {
  addRmsnormForwardAndPerTokenCast,
  type AddRmsnormForwardAndPerTokenCastOptions,
  normBackward,
  type NormBackwardOptions,
  type NormCastSfOptions,
  normForward,
  normForwardAndPerTokenCast,
  type NormForwardAndPerTokenCastOptions,
  type NormForwardOptions,
  rmsnormForwardAndPerTokenCast,
  type RmsnormForwardAndPerTokenCastOptions,
} from "./ops/norm/mod.ts";
export { randn, type RandnDType, randnLike, type RandnLikeOptions, type RandnOptions, setSeed } from "./ops/rand/mod.ts";
export { applyRotary, type ApplyRotaryOptions } from "./ops/transform/mod.ts";

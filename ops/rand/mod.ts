/**
 * Random numbers (`jsr:@tk/kernels/rand`): `randn`, `randnLike`, `setSeed` — a counter-based generator
 * (Philox4x32-10 + binary64 Box–Muller, spec/norm-rope-rand.md Part C) whose values depend only on
 * `(seed, offset, index)`, bit-identical on every backend (CPU reference and CUDA kernel).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { randn } from "./mod.ts";
 * const x = randn([4], { seed: 67280421310721n, offset: 1n });
 * assert.equal(new Uint32Array((x as { data: Float32Array }).data.buffer)[0], 0x3e180dd6);
 * ```
 * @module
 */
export { randn, type RandnDType, randnLike, type RandnLikeOptions, type RandnOptions, setSeed } from "./randn.ts";
// The types the signatures above refer to, so that this entry point documents on its own.
export type { Backend, OpOptions } from "../../core/backend.ts";
export type { Device, DeviceStorage, DeviceTensor, HostTensor, Stream, Tensor, TensorBase } from "../../core/tensor.ts";
export type { DType, TypedArray } from "../../core/dtype.ts";

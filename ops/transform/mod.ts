/**
 * The transform family (`jsr:@tk/kernels/transform`): `applyRotary`, rotary position embedding in place, with a
 * bit-exact CPU reference (spec/norm-rope-rand.md Part B and D.6) and a CUDA kernel that writes the same bits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { applyRotary } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const q = tensor(new Float32Array(2 * 4 * 64).fill(1), [2, 4, 64], "fp32");
 * const cache = tensor(new Float32Array(8 * 64).map((_, i) => (i % 64 < 32 ? 1 : 0)), [8, 64], "fp32"); // angle 0
 * const [rotated, key] = applyRotary(q, cache, { interleaved: true, seqlenOffset: 3 });
 * assert.ok(rotated === q && key === null && (q as { data: Float32Array }).data.every((v) => v === 1));
 * ```
 * @module
 */
export { applyRotary, type ApplyRotaryOptions } from "./rope.ts";
// The types the signatures above refer to, so that this entry point documents on its own.
export type { Backend, OpOptions } from "../../core/backend.ts";
export type { Device, DeviceStorage, DeviceTensor, HostTensor, Stream, Tensor, TensorBase } from "../../core/tensor.ts";
export type { DType, TypedArray } from "../../core/dtype.ts";

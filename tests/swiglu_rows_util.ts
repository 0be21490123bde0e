/**
 * Inputs and comparisons shared by the GPU tests of SwiGLU's row forms at H = 7168 (tests/swr11_gpu.test.ts and
 * swl17_gpu.test.ts: `_anrs`; tests/swf15_gpu.test.ts and swf18_gpu.test.ts: `_anrps`): bf16 [T, 2H] inputs with special values and the cast's edge groups, the option
 * sets (psum layouts, weights, scaling), their device copies, and the real-row views of outputs the forward leaves
 * unwritten on padding rows.
 * @module
 */
import { encodeBf16 } from "../core/dtype.ts";
import { HostTensor, tensor } from "../mod.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import assert from "node:assert/strict";
import { type DeviceTensor, swigluForward, swigluForwardAndPerTokenCast } from "../mod.ts";
import { swigluLastLaunch } from "../ops/quant/swiglu_launch.ts";
import { assertBytesEqual } from "./harness.ts";
import { dispose, randomInput, randomPsum, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";

/** The one hidden size the row forms are built for. */
export const H = 7168;

/** The function handle of a kernel symbol on device 0. */
export function fnOf(sym: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, sym);
}

/** A bf16 [T, 2H] input: random values with NaN, ±Inf and ±0 (kind 0), gpu_util's row kinds (1), or edge groups (2). */
export function inputX(rand: () => number, T: number, kind: number): HostTensor {
  if (kind === 1) return randomInput(rand, T, 2 * H, "bf16");
  const b = new Uint16Array(T * 2 * H);
  const NAN = 0x7fc0, INF = 0x7f80, TINY = 0x0080, HUGE = 0x7f00;
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      const r = () => {
        const v = rand();
        if (kind === 0 && v < 0.002) return NAN;
        if (kind === 0 && v < 0.004) return INF;
        if (kind === 0 && v < 0.006) return 0xff80;
        return encodeBf16(Math.fround((rand() * 2 - 1) * [1, 4, 20, 300, 1e-3][j % 5]));
      };
      let g = r(), u = r();
      if (kind === 2) {
        const e = (t * (H / 128) + (j >> 7)) % 8;
        if (e === 1) g = NAN; // the whole group NaN: amax 0, the clamp's scale
        else if (e === 2) [g, u] = [0, rand() < 0.5 ? 0x8000 : 0]; // ±0 only
        else if (e === 3 && j % 128 === 37) u = INF; // amax +Inf (the divisions' slow paths)
        else if (e === 4) [g, u] = [0x3f80, TINY ^ (rand() < 0.5 ? 0x8000 : 0)]; // subnormal products
        else if (e === 5) [g, u] = [HUGE, HUGE]; // overflow to +Inf, a gate outside the silu window
        else if (e === 6 && j % 128 === 5) g = NAN; // one NaN among finite values
        else if (e === 7 && j % 128 === 127) u = encodeBf16(-1000); // the amax at the last column, negative
      }
      b[t * 2 * H + j] = g;
      b[t * 2 * H + H + j] = u;
    }
  }
  return tensor(b, [T, 2 * H], "bf16");
}
export interface Opts {
  psum?: boolean | number[];
  weights?: boolean;
  scale?: boolean;
}
export const OPTS: readonly Opts[] = [{}, { psum: true }, { weights: true }, { weights: true, scale: true }, { psum: true, weights: true, scale: true }];

export function options(rand: () => number, T: number, o: Opts, A: number) {
  return {
    psumNumTokensPerExpert: Array.isArray(o.psum)
      ? tensor(Int32Array.from(o.psum), [o.psum.length], "int32")
      : o.psum && T > 0
      ? randomPsum(rand, T, 7, A)
      : undefined,
    tokenAlignment: A,
    topkWeights: o.weights ? tensor(Float32Array.from({ length: T }, () => Math.fround(rand() * 2)), [T], "fp32") : undefined,
    routedScalingFactor: o.scale ? 1.5 : undefined,
  };
}

export function onDevice<T extends Record<string, unknown>>(o: T): T {
  const r: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) r[k] = v instanceof HostTensor ? uploadView(v) : v;
  return r as T;
}

/** The bytes of rows `real` of a [T, rowBytes] allocation, padding rows zeroed (the forward leaves them unwritten). */
export function realRows(b: Uint8Array, real: Uint8Array, rowBytes: number): Uint8Array {
  const c = b.slice();
  for (let t = 0; t < real.length; t++) if (!real[t]) c.fill(0, t * rowBytes, (t + 1) * rowBytes);
  return c;
}

/** The sf storage of rows `real` (4-byte elements, strides of `ref`), other rows zeroed; the padding rows kept. */
export function realSf(b: Uint8Array, ref: HostTensor, real: Uint8Array): Uint8Array {
  const c = b.slice();
  const [s0, s1] = ref.strides;
  for (let t = 0; t < real.length; t++) {
    if (real[t]) continue;
    for (let k = 0; k < ref.shape[1]; k++) c.fill(0, 4 * (t * s0 + k * s1), 4 * (t * s0 + k * s1) + 4);
  }
  return c;
}

export const SF_OPTS = [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }];


/**
 * With a clamp (H = 7168, x = `x` on the host and `dx` on the device) the row forms are not taken: swigluForward runs
 * `_a` and the cast main's kernel, each equal to the CPU reference; their outputs are freed.
 */
export function checkClampFallback(x: HostTensor, dx: DeviceTensor): void {
  const f = swigluForward(dx, { fmt: "bf16", clampValue: 7 }) as DeviceTensor;
  assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16_a"), "clamp: _a");
  assertBytesEqual(readAllocation(f), storageBytes(swigluForward(x, { fmt: "bf16", clampValue: 7 }) as HostTensor), "clamp forward");
  const [c, sf] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, clampValue: 7 });
  assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_e4m3_g128"), "clamp: main's cast kernel");
  const want = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, clampValue: 7 })[0] as HostTensor;
  assertBytesEqual(readAllocation(c as DeviceTensor), storageBytes(want), "clamp cast");
  dispose(f, c, sf);
}

/**
 * Inputs shared by the GPU tests of normBackward's rows forms (tests/nbw11_gpu.test.ts: `_b4swc`,
 * tests/nbw32_gpu.test.ts: `_b4sw7`): moderate bf16 values, rows and a weight with special values, the case shape, and
 * rows tiled from a block.
 * @module
 */
import { encodeBf16 } from "../core/dtype.ts";
import { type HostTensor, tensor } from "../mod.ts";

/** Moderate bf16 values (|v| ≤ 4): weights, gradients. */
export function moderate(rand: () => number, shape: number[]): HostTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return tensor(new Uint16Array(n).map(() => encodeBf16(Math.fround((rand() * 2 - 1) * 4))), shape, "bf16");
}

/** bf16 `[T, H]` rows with NaNs (several payloads), ±Inf, ±0, subnormals and huge values mixed into moderate ones. */
export function specialRows(rand: () => number, T: number, H: number): HostTensor {
  const nans = [0x7fc0, 0xffc1, 0x7f81, 0xffff];
  const specials = [0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x807f, 0x7f7f, 0xff7f];
  const b = new Uint16Array(T * H).map(() => {
    const r = rand();
    if (r < 0.02) return nans[Math.floor(rand() * 4)];
    if (r < 0.06) return specials[Math.floor(rand() * specials.length)];
    return encodeBf16(Math.fround((rand() * 2 - 1) * 4));
  });
  return tensor(b, [T, H], "bf16");
}

/** A moderate weight with a NaN, ±Inf, ±0, a subnormal and a huge value in its first columns. */
export function specialWeight(rand: () => number, H: number): HostTensor {
  const w = moderate(rand, [H]);
  [0x7fc1, 0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x7f7f].forEach((v, k) => ((w.data as Uint16Array)[2 * k + 1] = v));
  return w;
}

/** One shape and gradient option set of a comparison. */
export interface Case {
  T: number;
  H: number;
  stride: number;
  wgDtype: "fp32" | "bf16";
  accumulate: boolean;
}

/** `T` rows made of a bf16 `[R, H]` block's rows, tile k in a rotated order (row r of tile k = row (r + 311k) mod R). */
export function tiled(b: HostTensor, T: number): HostTensor {
  const [R, H] = b.shape;
  const src = b.data as Uint16Array, out = new Uint16Array(T * H);
  for (let t = 0; t < T; t++) {
    const r = (t + 311 * Math.floor(t / R)) % R;
    out.set(src.subarray(r * H, (r + 1) * H), t * H);
  }
  return tensor(out, [T, H], "bf16");
}

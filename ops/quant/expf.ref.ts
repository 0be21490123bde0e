/**
 * The correctly rounded binary32 exponential of spec/quant.md §1.1 rule 4: `Math.fround(Math.exp(x))` (e^x in
 * binary64, one rounding to binary32), plus a table of the inputs where that is not the binary32 value nearest
 * to e^x. The table is proven complete by `tests/expf.test.ts`, which decides every binary32 input with a finite
 * non-zero result in the runtime it runs in (Deno's V8 and Bun's JavaScriptCore each bring their own `Math.exp`).
 * @module
 */

/**
 * Inputs (binary32 bit patterns) where `Math.fround(Math.exp(x))` is not correctly rounded, with the correctly
 * rounded result's bit pattern. Empty: the exhaustive proof found no such input in V8 (Deno) or JSC (Bun).
 */
export const EXPF_PATCHES: ReadonlyMap<number, number> = new Map<number, number>();

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/**
 * The correctly rounded binary32 e^x (ties to even; overflow to +Inf, underflow to subnormals and +0), for a
 * binary32 `x` (spec/quant.md §1.1-4). A non-binary32 `x` is first rounded to binary32.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { expf } from "./expf.ref.ts";
 * assert.equal(expf(0), 1);
 * assert.equal(expf(1), Math.fround(Math.E));
 * assert.equal(expf(89), Infinity);
 * assert.equal(expf(-104), 0);
 * ```
 */
export function expf(x: number): number {
  const xf = Math.fround(x);
  if (EXPF_PATCHES.size !== 0) {
    f32[0] = xf;
    const p = EXPF_PATCHES.get(u32[0]);
    if (p !== undefined) {
      u32[0] = p;
      return f32[0];
    }
  }
  return Math.fround(Math.exp(xf));
}

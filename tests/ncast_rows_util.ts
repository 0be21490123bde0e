/**
 * Inputs and the byte-for-byte comparison shared by the GPU tests of normForwardAndPerTokenCast's bulk-rows forms
 * (tests/ncast14_gpu.test.ts: `_br4w`; tests/ncast15_gpu.test.ts: `_br4x`).
 * @module
 */
import assert from "node:assert/strict";
import { encodeBf16 } from "../core/dtype.ts";
import { config } from "../core/config.ts";
import { HostTensor, tensor } from "../mod.ts";
import { kernelFunction, launchCount } from "../ffi/cuda.ts";
import { normForwardAndPerTokenCast, type NormForwardAndPerTokenCastOptions } from "../ops/norm/mod.ts";
import { normForwardLastLaunch } from "../ops/norm/norm_forward.ts";
import { dispose, randomInput, sameNormCastOutputs, uploadView } from "./gpu_util.ts";

/** The fused cast's options a test varies (eps, outScale and residual are set by {@link compareOn}). */
export type CastOpts = Omit<NormForwardAndPerTokenCastOptions, "eps" | "outScale" | "residual">;

/** `[T, H]` bf16 rows (row stride `stride`), `[B, T, H]` when B > 0; with `special`, rows of NaN / ±Inf / subnormal / huge values by t % 5. */
export function rows(rand: () => number, B: number, T: number, H: number, stride: number, special: boolean): HostTensor {
  const flat = randomInput(rand, Math.max(B, 1) * T, H, "bf16", stride);
  if (special) {
    const d = flat.data as Uint16Array;
    for (let t = 0; t < Math.max(B, 1) * T; t++) {
      for (let j = 0; j < H; j++) {
        const r = rand(), i = t * stride + j;
        if (t % 5 === 1 && r < 0.05) d[i] = [0x7fc0, 0xffc0, 0x7f81, 0xffff][i % 4];
        else if (t % 5 === 2 && r < 0.05) d[i] = r < 0.025 ? 0x7f80 : 0xff80;
        else if (t % 5 === 3) d[i] = encodeBf16(Math.fround((r * 2 - 1) * 1e-40));
        else if (t % 5 === 4) d[i] = encodeBf16(Math.fround((r * 2 - 1) * 3e38));
      }
    }
  }
  if (B === 0) return flat;
  return new HostTensor(flat.data, "bf16", [B, T, H], [T * stride, stride, 1]);
}

/** A bf16 weight `[H]` (|v| ≤ 4). */
export function weightOf(rand: () => number, H: number): HostTensor {
  return tensor(new Uint16Array(H).map(() => encodeBf16(Math.fround((rand() * 2 - 1) * 4))), [H], "bf16");
}

/** CPU vs device normForwardAndPerTokenCast, every output allocation byte for byte; the kernel `sym` and its PDL flag. */
export function compareOn(
  x: HostTensor,
  w: HostTensor | null,
  outScale: number,
  o: CastOpts,
  sym: string,
  label: string,
): void {
  const opts: NormForwardAndPerTokenCastOptions = { ...o, eps: 1e-6, outScale };
  const want = normForwardAndPerTokenCast(x, w, opts);
  const dx = uploadView(x);
  const dw = w ? uploadView(w) : null;
  const n0 = launchCount();
  const got = normForwardAndPerTokenCast(dx, dw, opts);
  const last = normForwardLastLaunch();
  try {
    assert.ok(launchCount() > n0, `${label}: a launch`);
    assert.equal(last.fn, kernelFunction("test", { kind: "cuda", index: 0 }, sym), `${label}: ${sym} ran`);
    assert.equal(last.pdl, config.pdl, `${label}: PDL as config.pdl`);
    sameNormCastOutputs(got, want, false, label);
  } finally {
    dispose(got, dx, dw);
  }
}

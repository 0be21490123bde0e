/**
 * `perTokenCastAndCastBack` — simulated per-token quantization, in place (spec/API.md §3.1; numerics and legal
 * arguments: spec/quant.md §2.5, §11.1). Checks, then dispatch to the CPU reference
 * (`per_token_cast_and_cast_back.ref.ts`). There is no CUDA kernel yet: a call that would run on a device is
 * refused.
 * @module
 */
import { type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkOptions, checkTensor, oneOf, optBool } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, writeBackSpan } from "../../core/stage.ts";
import type { DeviceTensor, HostTensor, Tensor } from "../../core/tensor.ts";
import type { PerTokenArgs } from "./per_token_cast.ref.ts";
import { perTokenCastAndCastBackRef } from "./per_token_cast_and_cast_back.ref.ts";
import { amaxClampFor, type QuantFmt } from "./scale.ref.ts";

/** Options of {@link perTokenCastAndCastBack}. */
export interface PerTokenCastAndCastBackOptions extends OpOptions {
  /** Format of the simulated quantization: FP8 E4M3 or FP4 E2M1. */
  fmt: QuantFmt;
  /** Channels per scale: 16, 32, 64 or 128 (`H` must be a multiple of it). */
  numPerChannels: number;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Use e4m3-rounded scales (NVFP4-style); not with `roundSf`. Default false. */
  useE4m3Sf?: boolean;
}

const KEYS = ["fmt", "numPerChannels", "roundSf", "useE4m3Sf"];

/**
 * Quantizes each row of `x` per group of `numPerChannels` channels exactly as {@link perTokenCast} (RN), then
 * dequantizes (`decode(q) · s` in binary32, then x's dtype) and writes the result back into `x` (spec/quant.md
 * §2.5). `x` is fp32/bf16 `[T, H]` with last stride 1 and any row stride, `H % 64 == 0`, `H % numPerChannels == 0`.
 * Returns `x`.
 *
 * Host inputs run the CPU reference; there is no CUDA kernel yet (device inputs need `backend: "cpu"`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perTokenCastAndCastBack, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(64).map((_, i) => i === 0 ? 448 : 1.03), [1, 64], "fp32");
 * perTokenCastAndCastBack(x, { fmt: "e4m3", numPerChannels: 64 });
 * assert.ok((x.data as Float32Array)[0] === 448 && (x.data as Float32Array)[1] === 1);
 * ```
 */
export function perTokenCastAndCastBack(x: Tensor, options: PerTokenCastAndCastBackOptions): Tensor {
  const op = "perTokenCastAndCastBack";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerChannels are required");
  if ((options as { out?: unknown }).out !== undefined) throw new TkError(op, "out", "VALUE", "the op writes x in place and takes no out");
  const fmt = oneOf(op, "fmt", options.fmt, ["e4m3", "e2m1"] as const);
  const roundSf = optBool(op, "roundSf", options.roundSf);
  const e4m3Sf = optBool(op, "useE4m3Sf", options.useE4m3Sf);
  if (roundSf && e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "cannot be combined with roundSf");
  const t = checkTensor(op, "x", x, ["fp32", "bf16"], 2);
  const [T, H] = t.shape;
  if (H % 64 !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a multiple of 64 (got ${H})`);
  if (T > 0 && H > 1 && t.strides[1] !== 1) throw new TkError(op, "x", "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${t.strides[1]}`);
  if (T > 1 && t.strides[0] < H) throw new TkError(op, "x", "LAYOUT", `row stride must be ≥ ${H}, got ${t.strides[0]}`);
  const N = oneOf(op, "numPerChannels", options.numPerChannels, [16, 32, 64, 128]);
  if (H % N !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a multiple of numPerChannels ${N} (got ${H})`);
  const pl = placeWithoutKernel(op, options.backend, t);
  const args: PerTokenArgs = {
    tokens: T,
    hidden: H,
    numPerChannels: N,
    rule: { fmt, roundSf, packedUe8m0: false, e4m3Sf, clamp: amaxClampFor(fmt, e4m3Sf) },
    layout: { kind: e4m3Sf ? "e4m3" : "fp32", colMajor: false },
  };
  const h = perTokenCastAndCastBackRef(onHost(t) as HostTensor, args);
  if (pl.staged) writeBackSpan(op, t as DeviceTensor, h);
  return t;
}

/**
 * `swigluForwardAndPerChannelCastAndTranspose` (spec/API.md §3.1; numerics spec/quant.md §8.6, 1.0 semantics):
 * checks, then the CPU reference (`swiglu_per_channel.ref.ts`). There is no CUDA kernel yet: a call that would run
 * on a device is refused (`placeWithoutKernel`).
 * @module
 */
import { type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkContiguous, checkOptions, checkTensor, oneOf, optBool } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost } from "../../core/stage.ts";
import type { HostTensor, Quantized, Tensor } from "../../core/tensor.ts";
import { amaxClampFor } from "./scale.ref.ts";
import { optNumber } from "./swiglu.ts";
import { swigluForwardAndPerChannelCastAndTransposeRef } from "./swiglu_per_channel.ref.ts";

/** Options of {@link swigluForwardAndPerChannelCastAndTranspose}. */
export interface SwigluForwardAndPerChannelCastAndTransposeOptions extends OpOptions {
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Rows of one scale block: 32 or 128. */
  numPerTokens: 32 | 128;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Write the data `[T, H]` instead of transposed `[H, T]`. Default false. */
  withoutTranspose?: boolean;
  /** Clamp `c`: gate ≤ c, |up| ≤ c (binary32 of the number). */
  clampValue?: number;
}

const KEYS = ["fmt", "numPerTokens", "roundSf", "withoutTranspose", "clampValue"];

/**
 * SwiGLU forward fused with a per-channel e4m3 cast (spec/quant.md §8.6): `x` bf16 `[T, 2H]` contiguous (gate left,
 * up right; `T % 128 == 0`, `H % 64 == 0`), activation `(g / (1 + expf(−g))) · u` with the optional clamp, rounded
 * to bf16, then cast per block of `numPerTokens` rows × 1 column (amax, scale and codes of §5.1). Returns
 * `[data, sf]`: data e4m3 `[H, T]` (`data[j][t]`), or `[T, H]` with `withoutTranspose`; sf fp32 `[T / r, H]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tensor } from "../../mod.ts";
 * import { swigluForwardAndPerChannelCastAndTranspose } from "./swiglu_per_channel.ts";
 * const x = tensor(new Uint16Array(128 * 128), [128, 128], "bf16"); // g = u = 0
 * const [data, sf] = swigluForwardAndPerChannelCastAndTranspose(x, { fmt: "e4m3", numPerTokens: 32 });
 * assert.deepEqual([data.shape, sf.shape], [[64, 128], [4, 64]]);
 * ```
 */
export function swigluForwardAndPerChannelCastAndTranspose(x: Tensor, options: SwigluForwardAndPerChannelCastAndTransposeOptions): Quantized {
  const op = "swigluForwardAndPerChannelCastAndTranspose";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerTokens are required");
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  if ((options as { out?: unknown }).out !== undefined) throw new TkError(op, "out", "VALUE", "is not supported: the op allocates its outputs");
  const r = oneOf(op, "numPerTokens", options.numPerTokens, [32, 128] as const);
  const roundSf = optBool(op, "roundSf", options.roundSf);
  const withoutTranspose = optBool(op, "withoutTranspose", options.withoutTranspose);
  const clampValue = optNumber(op, "clampValue", options.clampValue);
  const xt = checkTensor(op, "x", x, ["bf16"], 2);
  checkContiguous(op, "x", xt);
  const [T, H2] = xt.shape;
  if (T % 128 !== 0) throw new TkError(op, "x", "SHAPE", `number of tokens must be a multiple of 128 (got ${T})`);
  if (H2 % 128 !== 0) throw new TkError(op, "x", "SHAPE", `last dimension must be 2H with H % 64 == 0 (got ${H2})`);
  const H = H2 / 2;
  const pl = placeWithoutKernel(op, options.backend, xt);
  const cast = { tokens: T, hidden: H, numPerTokens: r, rule: { fmt: "e4m3" as const, roundSf, packedUe8m0: false, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) } };
  const res = swigluForwardAndPerChannelCastAndTransposeRef(op, onHost(xt) as HostTensor, { tokens: T, hidden: H, clampValue, withoutTranspose, cast });
  return [deliverHostResult(op, res.data, null, pl), deliverHostResult(op, res.sf, null, pl)];
}

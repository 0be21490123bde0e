/**
 * CPU reference of `swigluForwardAndPerChannelCastAndTranspose` — spec/quant.md §8.6 (1.0 semantics): the forward
 * value of §8.3 (clamp by selects, no weights, no expert layout), rounded to bf16 (upstream stages the activation
 * in bf16), then the per-channel cast of §5.1 on that bf16 activation (`perChannelCastRef`), written transposed as
 * §5.3 (`perChannelCastAndTransposeRef`) unless `withoutTranspose`. Numerics only: arguments are checked by
 * `swiglu_per_channel.ts`.
 * @module
 */
import type { HostTensor } from "../../core/tensor.ts";
import { type PerChannelArgs, perChannelCastAndTransposeRef, perChannelCastRef } from "./per_channel_cast.ref.ts";
import { swigluValues } from "./swiglu.ref.ts";
import { binary32To } from "./swiglu_backward.ref.ts";

/** Resolved arguments of one call (already checked). */
export interface SwigluPerChannelArgs {
  readonly tokens: number;
  /** H: x is [T, 2H]. */
  readonly hidden: number;
  readonly clampValue: number | null;
  readonly withoutTranspose: boolean;
  /** The per-channel cast of the bf16 activation (`tokens`, `hidden` as above). */
  readonly cast: PerChannelArgs;
}

/** §8.6: `[data e4m3 [H, T] (or [T, H] withoutTranspose), sf fp32 [T/r, H]]`. */
export function swigluForwardAndPerChannelCastAndTransposeRef(op: string, x: HostTensor, a: SwigluPerChannelArgs): { data: HostTensor; sf: HostTensor } {
  const T = a.tokens, H = a.hidden;
  const v = swigluValues(op, x, { tokens: T, hidden: H, psum: null, tokenAlignment: 1, topkWeights: null, routedScalingFactor: null, clampValue: a.clampValue });
  const act = binary32To(v.val, [T, H], "bf16");
  return a.withoutTranspose ? perChannelCastRef(act, a.cast) : perChannelCastAndTransposeRef(act, a.cast);
}

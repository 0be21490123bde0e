/**
 * CPU reference of the per-token cast family — spec/quant.md §2 (per-token cast), §4 (scale layouts) and §4.4
 * (re-quantization of a quantized input, upstream 2.0 order `q · (s_in · inv)`). A per-token cast is the block
 * cast of `per_block_cast.ref.ts` with blocks of one row by `numPerChannels` columns, so the numerics live there
 * once. Numerics only: arguments are checked by `per_token_cast.ts`.
 * @module
 */
import type { HostTensor } from "../../core/tensor.ts";
import { perBlockCastRef, perBlockCastWithPrecomputedSfRef } from "./per_block_cast.ref.ts";
import type { QuantFmt, ScaleRule } from "./scale.ref.ts";
import type { SfInput, SfLayout } from "./sf_layout.ts";

/** A quantized input `[data, sf]` with its block size (§4.4). */
export interface QuantizedInput {
  /** e4m3 `[T, H]` or e2m1x2 `[T, H/2]` codes. */
  readonly data: HostTensor;
  /** The input scales, read through `sfIn`. */
  readonly sf: HostTensor;
  readonly sfIn: SfInput;
  readonly blockRows: number;
  readonly blockCols: number;
}

/** Resolved arguments of one per-token cast. */
export interface PerTokenArgs {
  readonly tokens: number;
  /** Logical H. */
  readonly hidden: number;
  /** N (== H for one scale per row). */
  readonly numPerChannels: number;
  readonly rule: ScaleRule;
  readonly layout: SfLayout;
}

/**
 * `perTokenCast` / `perTokenCastWithSfOnly` (spec/quant.md §2.4–§2.5, §4.4): the block cast with blocks
 * `[1, N]` (§4: the scale grid is T × ⌈H/N⌉). Writes into `out` when given (contiguous data, sf with the geometry of
 * the layout), else allocates. `wantData: false` computes scales only.
 */
export function perTokenCastRef(
  x: HostTensor | QuantizedInput,
  a: PerTokenArgs,
  wantData: boolean,
  out?: { data?: HostTensor; sf?: HostTensor },
): { data: HostTensor | null; sf: HostTensor } {
  const blocks = { tokens: a.tokens, hidden: a.hidden, blockRows: 1, blockCols: a.numPerChannels, rule: a.rule, layout: a.layout };
  return perBlockCastRef(x, blocks, wantData, out);
}

/**
 * `perTokenCastWithPrecomputedSf` (spec/quant.md §2.5): `inv = fl(1 / s)` of the given row-major fp32 / e4m3
 * scale, then §2.4.
 */
export function perTokenCastWithPrecomputedSfRef(
  x: HostTensor,
  sf: HostTensor,
  sfIn: SfInput,
  fmt: QuantFmt,
  hidden: number,
  numPerChannels: number,
  out?: HostTensor,
): HostTensor {
  return perBlockCastWithPrecomputedSfRef(x, sf, sfIn, fmt, hidden, 1, numPerChannels, out);
}

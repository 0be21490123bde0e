/**
 * CPU reference of the per-channel casts — spec/quant.md §5.1 (`perChannelCast`), §5.2 (`perChannelCastFused`:
 * row gather, then the same cast) and §5.3 (`perChannelCastAndTranspose`: the same codes written `[H, T]`).
 * Blocks are `numPerTokens` rows × 1 column; the numerics are those of the shared block cast
 * (`perBlockCastRef`, which dequantizes a quantized input first for `[r, 1]` blocks, §5.1), and a partial last
 * block row covers only its real rows (§4). Numerics only: arguments are checked by `per_channel_cast.ts`.
 * @module
 */
import { TkError } from "../../core/errors.ts";
import { type HostTensor, hostZeros } from "../../core/tensor.ts";
import { perBlockCastRef } from "./per_block_cast.ref.ts";
import type { QuantizedInput } from "./per_token_cast.ref.ts";
import type { ScaleRule } from "./scale.ref.ts";
import { packTokenUe8m0 } from "./sf_token_packed.ts";

/** Resolved arguments of one per-channel cast. */
export interface PerChannelArgs {
  readonly tokens: number;
  readonly hidden: number;
  readonly numPerTokens: number;
  /** e4m3 target; `packedUe8m0` selects the token-packed UE8M0 sf of §4.2-3 (requires `roundSf`). */
  readonly rule: ScaleRule;
}

/**
 * §5.1: `[data e4m3 [T, H], sf]` with sf fp32 `[⌈T/r⌉, H]` row-major, or token-packed int32 `[⌈T/r/4⌉, H]`.
 * `x` is a plain `[T, H]` tensor, or a quantized input with per-token blocks `[1, numPerChannels]`.
 */
export function perChannelCastRef(x: HostTensor | QuantizedInput, a: PerChannelArgs): { data: HostTensor; sf: HostTensor } {
  // Token packing is not a channel layout of sf_layout.ts: compute the bytes in a row-major grid, then pack.
  const blocks = { tokens: a.tokens, hidden: a.hidden, blockRows: a.numPerTokens, blockCols: 1, rule: a.rule, layout: { kind: "fp32", colMajor: false } as const };
  const { data, sf } = perBlockCastRef(x, blocks, true);
  if (!a.rule.packedUe8m0) return { data: data!, sf };
  return { data: data!, sf: packTokenUe8m0(sf.data as Float32Array, sf.shape[0], a.hidden) };
}

/**
 * §5.2: output row `p` is input row `posToToken[p]`, or an all-zero row when it is negative (quantized input:
 * code 0 and scale 0); then §5.1 over the `T_out` gathered rows. An index `≥ T` violates the caller contract
 * (§11.2) and throws `DEVICE_VALUE` before anything is computed. Without `posToToken`, §5.1 as is.
 */
export function perChannelCastFusedRef(
  op: string,
  x: HostTensor | QuantizedInput,
  posToToken: HostTensor | null,
  a: PerChannelArgs,
): { data: HostTensor; sf: HostTensor } {
  if (posToToken === null) return perChannelCastRef(x, a);
  const T = a.tokens;
  const rows: number[] = [];
  const pos = posToToken.data as Int32Array;
  for (let p = 0; p < posToToken.shape[0]; p++) {
    const r = pos[posToToken.offset + p * posToToken.strides[0]];
    if (r >= T) throw new TkError(op, "posToToken", "DEVICE_VALUE", `posToToken[${p}] = ${r} is not below the ${T} input tokens`);
    rows.push(r);
  }
  const args = { ...a, tokens: rows.length };
  if (!("sfIn" in x)) return perChannelCastRef(gatherRows(x, rows), args);
  const data = gatherRows(x.data, rows);
  const sf = gatherRows(x.sf, rows);
  return perChannelCastRef({ ...x, data, sf, sfIn: { kind: "fp32", s0: sf.strides[0], s1: 1 } }, args);
}

/** Rows `rows[p]` of a row-major 2-D host tensor (any element type) into a new contiguous one; `-1` → zeros. */
function gatherRows(t: HostTensor, rows: readonly number[]): HostTensor {
  const W = t.shape[1];
  const out = hostZeros([rows.length, W], t.dtype);
  const src = t.data as Float32Array;
  const dst = out.data as Float32Array;
  rows.forEach((r, p) => {
    if (r < 0) return;
    const base = t.offset + r * t.strides[0];
    for (let j = 0; j < W; j++) dst[p * W + j] = src[base + j * t.strides[1]];
  });
  return out;
}

/** §5.3: the codes of §5.1 (plain input) written transposed, `data[k][t] = code(t, k)`; sf `[T/r, H]` as §5.1. */
export function perChannelCastAndTransposeRef(x: HostTensor, a: PerChannelArgs): { data: HostTensor; sf: HostTensor } {
  const { data, sf } = perChannelCastRef(x, a);
  const T = a.tokens;
  const H = a.hidden;
  const out = hostZeros([H, T], "e4m3");
  const s = data.data as Uint8Array;
  const d = out.data as Uint8Array;
  for (let t = 0; t < T; t++) for (let k = 0; k < H; k++) d[k * T + t] = s[t * H + k];
  return { data: out, sf };
}

/**
 * CPU reference of the fused RMSNorm + per-token cast — spec/norm-rope-rand.md §A.4 and D.5: the cast is
 * `perTokenCast` (spec/quant.md §2) of the `normForward` output **already rounded to `x.dtype`**, per batch for 3-D
 * inputs. The norm arithmetic is `normForwardRef` (reached through `normForward`), the cast arithmetic is
 * `perTokenCastRef`; this file only applies the second to the first. Numerics only: arguments are checked by
 * `norm_forward_and_per_token_cast.ts`.
 * @module
 */
import { encodeBf16 } from "../../core/dtype.ts";
import { HostTensor, hostStrided, hostZeros } from "../../core/tensor.ts";
import { type PerTokenArgs, perTokenCastRef } from "../quant/per_token_cast.ref.ts";
import { sfGeometry } from "../quant/sf_layout.ts";

/** Outputs of the cast step; absent ones are allocated (data contiguous, sf with the layout's geometry per batch). */
export interface CastNormalizedOut {
  data?: HostTensor;
  sf?: HostTensor;
  outBf16?: HostTensor;
}

/** Element offset of batch `b` in a 2-D (`b = 0`) or 3-D tensor. */
function batchView(t: HostTensor, b: number, shape: readonly number[], strides: readonly number[]): HostTensor {
  return new HostTensor(t.data, t.dtype, shape, strides, t.offset + (t.shape.length === 3 ? b * t.strides[0] : 0));
}

/**
 * §A.4: `q = perTokenCast(out)` of the x-dtype normalized output `out` (`[T, H]` or `[B, T, H]`, contiguous rows),
 * batch `b`'s data/sf being the 2-D cast of `out[b]`; and `outBf16 = RNbf16(out)` when asked (identity for bf16).
 * The sf of a 3-D input is `[B, sfRows, sfCols]`, each batch laid out as the 2-D geometry (TMA alignment per batch).
 */
export function castNormalizedRef(
  out: HostTensor,
  a: PerTokenArgs,
  withOutBf16: boolean,
  given: CastNormalizedOut,
): { data: HostTensor; sf: HostTensor; outBf16: HostTensor | null } {
  const batched = out.shape.length === 3;
  const B = batched ? out.shape[0] : 1;
  const H = a.hidden;
  const g = sfGeometry(a.tokens, Math.ceil(H / a.numPerChannels), a.layout);
  const data = given.data ?? hostZeros(out.shape, "e4m3");
  const sf = given.sf ??
    (batched ? hostStrided([B, ...g.shape], [g.storage, ...g.strides], g.dtype, B * g.storage) : hostStrided(g.shape, g.strides, g.dtype, g.storage));
  const rows = [a.tokens, H];
  for (let b = 0; b < B; b++) {
    const x2 = batchView(out, b, rows, [out.strides[out.shape.length - 2], 1]);
    const d2 = batchView(data, b, rows, [H, 1]);
    const s2 = batchView(sf, b, g.shape, [sf.strides[sf.shape.length - 2], sf.strides[sf.shape.length - 1]]);
    perTokenCastRef(x2, a, true, { data: d2, sf: s2 });
  }
  let outBf16: HostTensor | null = null;
  if (withOutBf16) {
    outBf16 = given.outBf16 ?? hostZeros(out.shape, "bf16");
    const dst = outBf16.data as Uint16Array;
    const n = out.numel;
    // `out` and `outBf16` are contiguous row tensors here (allocated by normForward / checked by the op).
    for (let i = 0; i < n; i++) {
      dst[outBf16.offset + i] = out.dtype === "bf16" ? (out.data as Uint16Array)[out.offset + i] : encodeBf16((out.data as Float32Array)[out.offset + i]);
    }
  }
  return { data, sf, outBf16 };
}

/**
 * CPU reference of the generic element conversion `cast(x, {dtype})` — spec/quant.md §7.1, round to nearest: the
 * source is widened exactly to binary32 (§1.1), then encoded once by §1.2 (e4m3, saturating) or §1.5 (bf16, fp16);
 * e4m3 → e4m3 and same-dtype casts copy. The block-scaled form of `cast` is the per-block reference
 * (`per_block_cast.ref.ts`) with any block shape. Numerics only: arguments are checked by `cast.ts`.
 * @module
 */
import {
  decodeBf16,
  decodeE4m3,
  decodeFp16,
  encodeBf16,
  encodeE4m3,
  encodeFp16,
} from "../../core/dtype.ts";
import { type HostTensor, hostZeros } from "../../core/tensor.ts";

/** Float dtypes of the element conversion. */
export type CastDtype = "fp32" | "bf16" | "fp16" | "e4m3";

const WIDEN: Readonly<Record<CastDtype, (v: number) => number>> = {
  fp32: (v) => v,
  bf16: decodeBf16,
  fp16: decodeFp16,
  e4m3: decodeE4m3,
};

const ENCODE: Readonly<Record<CastDtype, (v: number) => number>> = {
  fp32: Math.fround,
  bf16: encodeBf16,
  fp16: encodeFp16,
  e4m3: encodeE4m3,
};

/** Converts every element of the contiguous `x` to `dtype` into `out` (contiguous, same shape; allocated when absent). */
export function castRef(x: HostTensor, dtype: CastDtype, out?: HostTensor): HostTensor {
  const o = out ?? hostZeros(x.shape, dtype);
  const src = x.data as Float32Array | Uint16Array | Uint8Array;
  const dst = o.data as Float32Array | Uint16Array | Uint8Array;
  const copy = x.dtype === dtype;
  const widen = WIDEN[x.dtype as CastDtype];
  const encode = ENCODE[dtype];
  for (let i = 0; i < x.numel; i++) {
    const e = src[x.offset + i];
    dst[o.offset + i] = copy ? e : encode(widen(e));
  }
  return o;
}

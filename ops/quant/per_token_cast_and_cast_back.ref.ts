/**
 * CPU reference of `perTokenCastAndCastBack` — spec/quant.md §2.5: per element, the RN code `q` of the per-token
 * cast (§2.4) and the binary32 scale `s` of its group (`2^e`, `sfRaw` or `decodeE4m3(c)`), then `x ← convert(fl(
 * decode(q) · s))` in x's dtype (§2.6). Built from the per-token cast's and the cast-back's own references, so the
 * scale, inverse, encoders and dequantization are the very same code. Numerics only: arguments are checked by
 * `per_token_cast_and_cast_back.ts`.
 * @module
 */
import type { HostTensor } from "../../core/tensor.ts";
import { castBackRef } from "./cast_back.ref.ts";
import { type PerTokenArgs, perTokenCastRef } from "./per_token_cast.ref.ts";

/**
 * Quantizes and dequantizes `x` (fp32/bf16 `[T, H]`, last stride 1, any row stride) in place. `a.layout` must be
 * row-major fp32 (or e4m3 with `useE4m3Sf`), `a.rule.packedUe8m0` false. Returns `x`.
 */
export function perTokenCastAndCastBackRef(x: HostTensor, a: PerTokenArgs): HostTensor {
  const { tokens: T, hidden: H, numPerChannels: N } = a;
  const { data, sf } = perTokenCastRef(x, a, true);
  const y = castBackRef(data!, sf, { kind: a.layout.kind, s0: sf.strides[0], s1: sf.strides[1] }, H, 1, N, x.dtype as "fp32" | "bf16");
  const dst = x.data as Float32Array | Uint16Array;
  const src = y.data as Float32Array | Uint16Array;
  for (let t = 0; t < T; t++) {
    const row = x.offset + t * x.strides[0];
    for (let j = 0; j < H; j++) dst[row + j * x.strides[1]] = src[t * H + j];
  }
  return x;
}

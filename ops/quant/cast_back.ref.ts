/**
 * CPU reference of block dequantization — spec/quant.md §2.6 and §6: `out = fl(decode(q) · s)`, then binary32 as
 * is (a NaN as 0x7FC00000) or bf16 by §1.5. Serves `perTokenCastBack` (blocks `[1, N]`) and the generic `castBack`.
 * @module
 */
import { decodeE2m1, decodeE4m3, decodeUe8m0, encodeBf16 } from "../../core/dtype.ts";
import { type HostTensor, hostZeros } from "../../core/tensor.ts";
import { type SfInput, sfLoad } from "./sf_layout.ts";

/** Scale layouts castBack reads: §4 channel layouts, plus token packing for per-channel blocks (§4.2-3). */
export type CastBackSf = SfInput | { readonly kind: "packedToken"; readonly s0: number; readonly s1: number };

function scaleAt(sf: HostTensor, lay: CastBackSf, m: number, k: number): number {
  if (lay.kind !== "packedToken") return sfLoad(sf, lay, m, k);
  const word = (sf.data as Int32Array)[sf.offset + (m >> 2) * lay.s0 + k * lay.s1];
  return decodeUe8m0(word >>> (8 * (m & 3)));
}

/** `castBack([data, sf], {fmt, xBlockSize: [r, c]})` into `out` (allocated when absent). */
export function castBackRef(
  data: HostTensor,
  sf: HostTensor,
  lay: CastBackSf,
  hidden: number,
  blockRows: number,
  blockCols: number,
  fmt: "fp32" | "bf16",
  out?: HostTensor,
): HostTensor {
  const T = data.shape[0];
  const o = out ?? hostZeros([T, hidden], fmt);
  const d = data.data as Uint8Array;
  const fp4 = data.dtype === "e2m1x2";
  for (let t = 0; t < T; t++) {
    const row = data.offset + t * data.strides[0];
    const orow = o.offset + t * o.strides[0];
    const m = Math.floor(t / blockRows);
    for (let j = 0; j < hidden; j++) {
      const q = fp4 ? decodeE2m1(j & 1 ? d[row + (j >> 1)] >> 4 : d[row + (j >> 1)] & 0xf) : decodeE4m3(d[row + j]);
      const y = Math.fround(q * scaleAt(sf, lay, m, Math.floor(j / blockCols)));
      // a NaN product (0 · ±Inf, a NaN code or scale) is written as 0x7FC00000, as the kernels write it: the bits of
      // an arithmetic NaN differ between engines and CPUs (x86's 0 · Inf is 0xFFC00000), docs/DECISIONS.md
      if (fmt === "fp32") (o.data as Float32Array)[orow + j * o.strides[1]] = y === y ? y : NaN;
      else (o.data as Uint16Array)[orow + j * o.strides[1]] = encodeBf16(y);
    }
  }
  return o;
}

/**
 * Token-packed UE8M0 scales (spec/quant.md §4.2-3), the layout of per-channel casts with `usePackedUe8m0`: an
 * int32 tensor `[⌈nbm/4⌉, nbk]`, row-major, word `(p, k)` holding the exponent bytes of blocks `4p … 4p+3` of
 * column `k`, the first in the low byte, with 0 for blocks `≥ nbm`. Kept apart from `sf_layout.ts`, whose
 * channel layouts every cast shares; `cast_back.ref.ts` reads this layout back.
 * @module
 */
import { type HostTensor, hostZeros } from "../../core/tensor.ts";
import type { SfGeometry } from "./sf_layout.ts";

/** Geometry of a token-packed scale tensor for an `nbm × nbk` grid (row-major, no alignment padding). */
export function tokenPackedGeometry(nbm: number, nbk: number): SfGeometry {
  const rows = Math.ceil(nbm / 4);
  return { dtype: "int32", shape: [rows, nbk], strides: [nbk, 1], storage: rows * nbk, paddedRows: rows, nbm, nbk };
}

/**
 * Packs a row-major grid of UE8M0 exponent bytes (`bytes[m·nbk + k]`, values 0…255) four tokens to a word,
 * first block in the low byte, missing blocks 0 (§4.2-3 and the §4 padding rule).
 */
export function packTokenUe8m0(bytes: ArrayLike<number>, nbm: number, nbk: number): HostTensor {
  const g = tokenPackedGeometry(nbm, nbk);
  const out = hostZeros(g.shape, "int32");
  const d = out.data as Int32Array;
  for (let m = 0; m < nbm; m++) {
    const shift = 8 * (m & 3);
    const row = (m >> 2) * nbk;
    for (let k = 0; k < nbk; k++) d[row + k] |= (bytes[m * nbk + k] & 0xff) << shift;
  }
  return out;
}

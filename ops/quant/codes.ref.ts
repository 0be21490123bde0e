/**
 * Writing quantized codes (spec/quant.md §1.2, §1.3): the contiguous data output of every cast — e4m3 `[T, H]`, or
 * e2m1x2 `[T, H/2]` with element `2i` in the low nibble — shared by the per-token, per-block and generic casts.
 * @module
 */
import { type HostTensor, hostZeros } from "../../core/tensor.ts";
import type { QuantFmt } from "./scale.ref.ts";

/** Contiguous zeroed data output of a cast: e4m3 `[T, H]` or e2m1x2 `[T, H/2]`. */
export function allocCodes(fmt: QuantFmt, T: number, H: number): HostTensor {
  return fmt === "e4m3" ? hostZeros([T, H], "e4m3") : hostZeros([T, H / 2], "e2m1x2");
}

/** Stores the code of element `(t, j)` (a byte, or a nibble of the packed FP4 byte). */
export function putCode(data: HostTensor, fmt: QuantFmt, t: number, j: number, code: number): void {
  const d = data.data as Uint8Array;
  const row = data.offset + t * data.strides[0];
  if (fmt === "e4m3") d[row + j] = code;
  else if ((j & 1) === 0) d[row + (j >> 1)] = (d[row + (j >> 1)] & 0xf0) | code;
  else d[row + (j >> 1)] = (d[row + (j >> 1)] & 0x0f) | (code << 4);
}

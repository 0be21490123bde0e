/**
 * `unpackFromE2m1fnX2` — decodes packed FP4 codes (spec/API.md §3.1; spec/quant.md §9.2). A CPU helper for
 * debugging: there is no CUDA kernel (device inputs need `backend: "cpu"`). The decode is exact, so the numerics
 * fit in this file (the E2M1 table of `core/dtype.ts`).
 * @module
 */
import { type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, oneOf, overlaps } from "../../core/checks.ts";
import { decodeE2m1, encodeBf16 } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice } from "../../core/stage.ts";
import { type HostTensor, hostZeros, type Tensor } from "../../core/tensor.ts";

/** Options of {@link unpackFromE2m1fnX2}. */
export interface UnpackFromE2m1fnX2Options extends OpOptions {
  /** Output dtype (both exact). Default `"fp32"`. */
  dtype?: "fp32" | "bf16";
  /** Preallocated contiguous output `[…, 2K]`. */
  out?: Tensor;
}

/**
 * Unpacks FP4 E2M1 codes, two per byte (element `2i` in the low nibble of byte `i`, `2i+1` in the high nibble):
 * `x` e2m1x2 / uint8 / int8 `[…, K]` (at least 1-D, any strides) → `[…, 2K]` in `dtype`, exact (spec/quant.md
 * §9.2). Values are ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type HostTensor, tensor, unpackFromE2m1fnX2 } from "../../mod.ts";
 * const y = unpackFromE2m1fnX2(tensor([0x72, 0x8f], [2], "e2m1x2")) as HostTensor;
 * assert.deepEqual([...(y.data as Float32Array)], [1, 6, -6, -0]);
 * ```
 */
export function unpackFromE2m1fnX2(x: Tensor, options?: UnpackFromE2m1fnX2Options): Tensor {
  const op = "unpackFromE2m1fnX2";
  checkOptions(op, options, ["dtype"]);
  const dtype = options?.dtype === undefined ? "fp32" : oneOf(op, "dtype", options.dtype, ["fp32", "bf16"] as const);
  const t = checkTensor(op, "x", x, ["e2m1x2", "uint8", "int8"]);
  if (t.shape.length < 1) throw new TkError(op, "x", "SHAPE", "expected at least 1 dimension, got a 0-D tensor");
  const shape = [...t.shape.slice(0, -1), 2 * t.shape[t.shape.length - 1]];
  let out: Tensor | null = null;
  if (options?.out !== undefined) {
    out = checkOutTensor(op, "out", options.out, dtype);
    if (out.shape.length !== shape.length || out.shape.some((d, i) => d !== shape[i])) {
      throw new TkError(op, "out", "OUT_MISMATCH", `expected shape [${shape.join(", ")}], got [${out.shape.join(", ")}]`);
    }
    if (!out.isContiguous()) throw new TkError(op, "out", "OUT_MISMATCH", "must be contiguous");
    if (overlaps(out, t)) throw new TkError(op, "out", "OUT_MISMATCH", "overlaps an input");
  }
  const pl = placeWithoutKernel(op, options?.backend, t, out);
  const h = onHost(t) as HostTensor;
  const o = pl.staged || out === null ? hostZeros(shape, dtype) : (out as HostTensor);
  const n = h.shape.length;
  const idx = new Array<number>(n).fill(0);
  const src = h.data as Uint8Array | Int8Array;
  const dst = o.data as Float32Array | Uint16Array;
  for (let i = 0; i < h.numel; i++) {
    let off = h.offset;
    for (let d = 0; d < n; d++) off += idx[d] * h.strides[d];
    const b = src[off] & 0xff;
    const lo = decodeE2m1(b & 0xf);
    const hi = decodeE2m1(b >> 4);
    dst[o.offset + 2 * i] = dtype === "fp32" ? lo : encodeBf16(lo);
    dst[o.offset + 2 * i + 1] = dtype === "fp32" ? hi : encodeBf16(hi);
    for (let d = n - 1; d >= 0; d--) {
      if (++idx[d] < h.shape[d]) break;
      idx[d] = 0;
    }
  }
  return pl.staged ? resultToDevice(op, o, out, pl.device) : o;
}

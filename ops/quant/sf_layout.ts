/**
 * Scale-factor storage layouts shared by every cast (spec/quant.md §4): the geometry of an output sf tensor, the
 * recognition of an input sf tensor's layout, and element access for the CPU references.
 * @module
 */
import type { DType } from "../../core/dtype.ts";
import { decodeE4m3, decodeUe8m0 } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import type { HostTensor, Tensor } from "../../core/tensor.ts";

/** How scales are stored: fp32 values, e4m3 bytes, or UE8M0 exponent bytes packed four per int32. */
export type SfKind = "fp32" | "e4m3" | "packed";

/** An output layout: storage kind and row- or TMA-aligned column-major order. */
export interface SfLayout {
  readonly kind: SfKind;
  readonly colMajor: boolean;
}

/** Shape, strides and storage size (elements) of a scale tensor for an `nbm × nbk` scale grid. */
export interface SfGeometry {
  readonly dtype: DType;
  readonly shape: readonly [number, number];
  readonly strides: readonly [number, number];
  readonly storage: number;
  /** Rows written per column including alignment padding (P for column-major, else nbm). */
  readonly paddedRows: number;
  /** The logical scale grid. */
  readonly nbm: number;
  readonly nbk: number;
}

const align = (a: number, b: number) => Math.ceil(a / b) * b;

const memo: SfGeometry[] = [];

/** spec/quant.md §4.1–§4.2 (channel packing) and §2.1 (0 rows). Memoised per layout for the last grid asked. */
export function sfGeometry(nbm: number, nbk: number, layout: SfLayout): SfGeometry {
  const slot = (layout.kind === "fp32" ? 0 : layout.kind === "e4m3" ? 2 : 4) + (layout.colMajor ? 1 : 0);
  const m = memo[slot];
  if (m !== undefined && m.nbm === nbm && m.nbk === nbk) return m;
  return (memo[slot] = computeGeometry(nbm, nbk, layout));
}

function computeGeometry(nbm: number, nbk: number, layout: SfLayout): SfGeometry {
  const dtype: DType = layout.kind === "fp32" ? "fp32" : layout.kind === "e4m3" ? "e4m3" : "int32";
  const cols = layout.kind === "packed" ? Math.ceil(nbk / 4) : nbk;
  if (!layout.colMajor) {
    return { dtype, shape: Object.freeze([nbm, cols]), strides: Object.freeze([cols, 1]), storage: nbm * cols, paddedRows: nbm, nbm, nbk };
  }
  const p = align(nbm, layout.kind === "e4m3" ? 16 : 4);
  return { dtype, shape: Object.freeze([nbm, cols]), strides: Object.freeze([1, p === 0 ? 1 : p]), storage: p * cols, paddedRows: p, nbm, nbk };
}

/** An input scale tensor as the kernels and references read it. */
export interface SfInput {
  readonly kind: SfKind;
  /** Strides in storage elements (fp32 value, e4m3 byte or int32 word). */
  readonly s0: number;
  readonly s1: number;
}

/**
 * Recognises an input sf's layout (spec/quant.md §4.4, §11.1): dtype fp32 / e4m3 / int32 (packed UE8M0); strides
 * row-major `[cols, 1]` or column-major `[1, P ≥ rows]`; any other pattern is a `LAYOUT` error. The logical
 * shape must be `[nbm, nbk]` (packed: `[nbm, ⌈nbk/4⌉]`).
 */
export function sfInput(op: string, arg: string, sf: Tensor, nbm: number, nbk: number): SfInput {
  const kind: SfKind = sf.dtype === "fp32" ? "fp32" : sf.dtype === "e4m3" ? "e4m3" : "packed";
  if (sf.dtype !== "fp32" && sf.dtype !== "e4m3" && sf.dtype !== "int32") {
    throw new TkError(op, arg, "DTYPE", `expected fp32, e4m3 or int32 (packed UE8M0) scales, got ${sf.dtype}`);
  }
  const cols = kind === "packed" ? Math.ceil(nbk / 4) : nbk;
  if (sf.shape.length !== 2 || sf.shape[0] !== nbm || sf.shape[1] !== cols) {
    throw new TkError(op, arg, "SHAPE", `expected scale shape [${nbm}, ${cols}], got [${sf.shape.join(", ")}]`);
  }
  const [s0, s1] = sf.strides;
  const rowMajor = (s1 === 1 || cols <= 1) && (s0 === cols || nbm <= 1);
  const colMajor = (s0 === 1 || nbm <= 1) && (s1 >= nbm || cols <= 1);
  if (!rowMajor && !colMajor) {
    throw new TkError(op, arg, "LAYOUT", `scale strides must be row-major [${cols}, 1] or column-major [1, P ≥ ${nbm}], got [${s0}, ${s1}]`);
  }
  return { kind, s0, s1 };
}

/** Decoded binary32 scale of block `(m, k)` of a host sf tensor (channel packing for `packed`). */
export function sfLoad(sf: HostTensor, lay: SfInput, m: number, k: number): number {
  const base = sf.offset + m * lay.s0;
  if (lay.kind === "fp32") return (sf.data as Float32Array)[base + k * lay.s1];
  if (lay.kind === "e4m3") return decodeE4m3((sf.data as Uint8Array)[base + k * lay.s1]);
  const word = (sf.data as Int32Array)[base + (k >> 2) * lay.s1];
  return decodeUe8m0(word >>> (8 * (k & 3)));
}

/**
 * Stores the scale of block `(m, k)` into a zero-initialised host sf tensor of {@link sfGeometry}: an fp32
 * value, an e4m3 byte, or a UE8M0 byte OR-ed into its packed word.
 */
export function sfStore(sf: HostTensor, layout: SfLayout, m: number, k: number, v: number): void {
  const [s0, s1] = sf.strides;
  if (layout.kind === "packed") {
    const i = sf.offset + m * s0 + (k >> 2) * s1;
    (sf.data as Int32Array)[i] |= (v & 0xff) << (8 * (k & 3));
  } else {
    (sf.data as Float32Array | Uint8Array)[sf.offset + m * s0 + k * s1] = v;
  }
}

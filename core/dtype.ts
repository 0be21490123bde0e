/**
 * Dtypes and bit-exact codecs (DESIGN §2, spec/quant.md §1).
 *
 * Every encoder takes a binary32 value (a JS number that is already a float32, e.g. read from a Float32Array or
 * passed through `Math.fround`) and rounds to nearest, ties to even. NaN handling follows spec/quant.md §1:
 * e4m3 NaN → 0x7F, e2m1 NaN → 0x7, bf16 NaN → 0x7FC0 (sign dropped), fp16 NaN → 0x7E00 | sign.
 * @module
 */

/** Element types of tensors (spec/API.md §2.1). */
export type DType =
  | "fp32"
  | "bf16"
  | "fp16"
  | "e4m3"
  | "e2m1x2"
  | "ue8m0"
  | "int8"
  | "uint8"
  | "int32"
  | "int64"
  | "bool";

/** The TypedArray that holds a dtype's elements on the host. */
export type TypedArray =
  | Float32Array
  | Uint16Array
  | Uint8Array
  | Int8Array
  | Int32Array
  | BigInt64Array;

/** Every dtype name, in a fixed order. */
export const DTYPES: readonly DType[] = Object.freeze([
  "fp32",
  "bf16",
  "fp16",
  "e4m3",
  "e2m1x2",
  "ue8m0",
  "int8",
  "uint8",
  "int32",
  "int64",
  "bool",
]);

const ELEMENT_BYTES: Record<DType, number> = {
  fp32: 4,
  bf16: 2,
  fp16: 2,
  e4m3: 1,
  e2m1x2: 1,
  ue8m0: 1,
  int8: 1,
  uint8: 1,
  int32: 4,
  int64: 8,
  bool: 1,
};

/** Bytes per stored element (`e2m1x2` stores two FP4 codes in one byte-sized element). */
export function elementBytes(dtype: DType): number {
  return ELEMENT_BYTES[dtype];
}

/** True for a known dtype name. */
export function isDType(x: unknown): x is DType {
  return typeof x === "string" && Object.hasOwn(ELEMENT_BYTES, x);
}

/** A zero-filled TypedArray of `n` elements for `dtype`. */
export function allocArray(dtype: DType, n: number): TypedArray {
  switch (dtype) {
    case "fp32":
      return new Float32Array(n);
    case "bf16":
    case "fp16":
      return new Uint16Array(n);
    case "int8":
      return new Int8Array(n);
    case "int32":
      return new Int32Array(n);
    case "int64":
      return new BigInt64Array(n);
    default:
      return new Uint8Array(n);
  }
}

/** True when `data` is the TypedArray kind that stores `dtype`. */
export function arrayMatches(dtype: DType, data: TypedArray): boolean {
  switch (dtype) {
    case "fp32":
      return data instanceof Float32Array;
    case "bf16":
    case "fp16":
      return data instanceof Uint16Array;
    case "int8":
      return data instanceof Int8Array;
    case "int32":
      return data instanceof Int32Array;
    case "int64":
      return data instanceof BigInt64Array;
    default:
      return data instanceof Uint8Array;
  }
}

// ---- binary32 bit access ----------------------------------------------------------------------------------

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** The 32-bit pattern of a binary32 value (`bits(v)` in the specs). */
export function f32Bits(v: number): number {
  F32[0] = v;
  return U32[0];
}

/** The binary32 value with pattern `u` (`f32(u)` in the specs). */
export function f32FromBits(u: number): number {
  U32[0] = u >>> 0;
  return F32[0];
}

/** Round half to even of a non-negative number whose scaled value is exact in binary64. */
function rneInt(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

// ---- bf16 / fp16 (spec/quant.md §1.5) ----------------------------------------------------------------------

/** binary32 → bf16 bits, RNE; NaN → 0x7FC0. */
export function encodeBf16(v: number): number {
  if (v !== v) return 0x7fc0;
  const u = f32Bits(v);
  // u ≤ 0xFF800000 for non-NaN, so the sum stays below 2^33 and is exact in a double.
  return Math.floor((u + 0x7fff + ((u >>> 16) & 1)) / 65536) & 0xffff;
}

/** bf16 bits → binary32 (exact). */
export function decodeBf16(b: number): number {
  return f32FromBits((b & 0xffff) << 16);
}

/** binary32 → fp16 bits, IEEE RNE; NaN → 0x7E00 | sign. */
export function encodeFp16(v: number): number {
  const u = f32Bits(v);
  const s = (u >>> 16) & 0x8000;
  if (v !== v) return 0x7e00 | s;
  const a = Math.abs(v);
  if (a >= 65520) return s | 0x7c00;
  if (a < 2 ** -14) return s | rneInt(a * 2 ** 24); // subnormal; 1024 is the smallest normal
  const e = Math.floor(Math.log2(a));
  // Math.log2 may be off by one near powers of two: correct it exactly.
  let E = e;
  if (2 ** E > a) E -= 1;
  else if (2 ** (E + 1) <= a) E += 1;
  let n = rneInt(a * 2 ** (10 - E));
  if (n === 2048) {
    n = 1024;
    E += 1;
  }
  return s | ((E + 15) << 10) | (n - 1024);
}

/** fp16 bits → binary32 (exact). */
export function decodeFp16(b: number): number {
  const s = b & 0x8000 ? -1 : 1;
  const e = (b >>> 10) & 0x1f;
  const m = b & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m === 0 ? s * Infinity : NaN;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

// ---- e4m3 (spec/quant.md §1.2) ------------------------------------------------------------------------------

/** binary32 → OCP E4M3FN byte, round to nearest even, saturating to ±448; NaN → 0x7F. */
export function encodeE4m3(v: number): number {
  if (v !== v) return 0x7f;
  const s = (f32Bits(v) >>> 31) << 7;
  const a = Math.abs(v);
  if (a > 448) return s | 0x7e; // +Inf included
  if (a < 2 ** -6) return s | rneInt(a * 512);
  let E = ((f32Bits(a) >>> 23) & 0xff) - 127; // a is a normal binary32 here
  let n = rneInt(a * 2 ** (3 - E));
  if (n === 16) {
    n = 8;
    E += 1;
  }
  return s | ((E + 7) << 3) | (n - 8);
}

/** Decoded value of every E4M3 byte (0x7F / 0xFF are NaN). */
export const E4M3_VALUES: Float32Array = (() => {
  const t = new Float32Array(256);
  for (let c = 0; c < 256; c++) {
    const s = c & 0x80 ? -1 : 1;
    const e = (c >>> 3) & 0xf;
    const m = c & 7;
    if (e === 15 && m === 7) t[c] = NaN;
    else if (e === 0) t[c] = s * (m / 8) * 2 ** -6;
    else t[c] = s * (1 + m / 8) * 2 ** (e - 7);
  }
  return t;
})();

/** E4M3 byte → binary32 (exact). */
export function decodeE4m3(c: number): number {
  return E4M3_VALUES[c & 0xff];
}

// ---- e2m1 (spec/quant.md §1.3) ------------------------------------------------------------------------------

/** binary32 → E2M1 nibble, RNE with ties to the even code, saturating to ±6; NaN → 0x7. */
export function encodeE2m1(v: number): number {
  if (v !== v) return 0x7;
  const s = (f32Bits(v) >>> 31) << 3;
  const a = Math.abs(v);
  let code: number;
  if (a <= 0.25) code = 0;
  else if (a < 0.75) code = 1;
  else if (a <= 1.25) code = 2;
  else if (a < 1.75) code = 3;
  else if (a <= 2.5) code = 4;
  else if (a < 3.5) code = 5;
  else if (a <= 5) code = 6;
  else code = 7;
  return s | code;
}

/** Decoded value of every E2M1 nibble. */
export const E2M1_VALUES: Float32Array = Float32Array.from(
  [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6],
);

/** E2M1 nibble → binary32 (exact). */
export function decodeE2m1(n: number): number {
  return E2M1_VALUES[n & 0xf];
}

// ---- ue8m0 (spec/quant.md §1.4) -----------------------------------------------------------------------------

/** UE8M0 byte → binary32: `f32(b << 23)`, so 0 → +0 and 255 → +Inf. */
export function decodeUe8m0(b: number): number {
  return f32FromBits((b & 0xff) << 23);
}

/** Converts a JS number to the stored element of a dtype (narrow floats via binary32, then RNE). */
export function encodeNumber(dtype: DType, v: number): number {
  switch (dtype) {
    case "fp32":
      return Math.fround(v);
    case "bf16":
      return encodeBf16(Math.fround(v));
    case "fp16":
      return encodeFp16(Math.fround(v));
    case "e4m3":
      return encodeE4m3(Math.fround(v));
    default:
      return v;
  }
}

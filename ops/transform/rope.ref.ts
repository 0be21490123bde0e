/**
 * CPU reference of `applyRotary` — spec/norm-rope-rand.md §B.3 (upstream's fma form, bitwise equal to its CUDA
 * kernel) with the binary64 round-to-odd emulation of `fma` that §B.3 gives, and D.6 (rows outside the cache
 * raise `DEVICE_VALUE` before anything is written). Numerics only: arguments are checked by `rope.ts`.
 * @module
 */
import { decodeBf16, decodeFp16, encodeBf16, encodeFp16 } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import type { HostTensor } from "../../core/tensor.ts";

const F64 = new Float64Array(1);
const W32 = new Uint32Array(F64.buffer);
/** Index of the low 32-bit word of a binary64 in {@link W32} (0 on little-endian hosts). */
const LO = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 0 : 1;
const HI = 1 - LO;

/** The binary64 neighbour of finite `r` one step in the direction of the sign of `e` (e ≠ 0). */
function stepToward(r: number, e: number): number {
  if (r === 0) return e > 0 ? Number.MIN_VALUE : -Number.MIN_VALUE;
  F64[0] = r;
  let lo = W32[LO];
  let hi = W32[HI];
  if ((e > 0) === (r > 0)) { // away from zero: magnitude + 1 ulp
    lo = (lo + 1) >>> 0;
    if (lo === 0) hi = (hi + 1) >>> 0;
  } else { // toward zero: magnitude − 1 ulp
    if (lo === 0) hi = (hi - 1) >>> 0;
    lo = (lo - 1) >>> 0;
  }
  W32[LO] = lo;
  W32[HI] = hi;
  return F64[0];
}

/**
 * `fma(a, b, c)` on binary32 operands with one rounding to binary32 (spec §B.3): the exact product in binary64,
 * the sum rounded to odd in binary64 (TwoSum error term), then one rounding to binary32.
 */
export function fmaf(a: number, b: number, c: number): number {
  const p = a * b; // exact: ≤ 48 significant bits
  let r = p + c;
  if (!Number.isFinite(r)) return Math.fround(r);
  const t = r - p;
  const e = (p - (r - t)) + (c - t); // p + c = r + e exactly
  if (e !== 0) {
    F64[0] = r;
    if ((W32[LO] & 1) === 0) r = stepToward(r, e);
  }
  return Math.fround(r);
}

/** Arguments of one rotation, resolved by `rope.ts`. */
export interface RotaryArgs {
  readonly interleaved: boolean;
  readonly conjugate: boolean;
  readonly seqlenOffset: number;
}

/**
 * Cache row of every `(b, s)` token (B·S entries, row-major), `seqlenOffset + position` (or `+ s`) computed
 * exactly (D.6). A row outside `[0, R)` throws `DEVICE_VALUE` — before the caller writes anything.
 */
export function rotaryRows(op: string, B: number, S: number, positions: HostTensor | null, seqlenOffset: number, R: number): number[] {
  const rows = new Array<number>(B * S);
  const off = BigInt(seqlenOffset);
  for (let b = 0; b < B; b++) {
    for (let s = 0; s < S; s++) {
      let row: number;
      if (!positions) row = seqlenOffset + s;
      else {
        const i = positions.shape.length === 1 ? positions.offset + s * positions.strides[0] : positions.offset + b * positions.strides[0] + s * positions.strides[1];
        const p = positions.dtype === "int64" ? (positions.data as BigInt64Array)[i] : BigInt((positions.data as Int32Array)[i]);
        const r = off + p;
        if (r < 0n || r >= BigInt(R)) {
          throw new TkError(op, "positions", "DEVICE_VALUE", `seqlenOffset + positions[${positions.shape.length === 1 ? s : `${b}, ${s}`}] = ${r} is outside the cache rows [0, ${R})`);
        }
        row = Number(r);
      }
      rows[b * S + s] = row;
    }
  }
  return rows;
}

/**
 * Rotates `X` (`[T, H, D]` or `[B, S, H, D]`, any strides with a unit last stride) in place by the cache rows of
 * {@link rotaryRows} (§B.3). Writes only the view's elements.
 */
export function rotateRef(X: HostTensor, cache: HostTensor, rows: readonly number[], a: RotaryArgs): void {
  const four = X.shape.length === 4;
  const B = four ? X.shape[0] : 1;
  const S = four ? X.shape[1] : X.shape[0];
  const Hh = X.shape[X.shape.length - 2];
  const D = X.shape[X.shape.length - 1];
  const half = D / 2;
  const sb = four ? X.strides[0] : 0;
  const ss = X.strides[four ? 1 : 0];
  const sh = X.strides[four ? 2 : 1];
  const cd = cache.data as Float32Array;
  const decode = X.dtype === "bf16" ? decodeBf16 : decodeFp16;
  const encode = X.dtype === "bf16" ? encodeBf16 : encodeFp16;
  const f32 = X.dtype === "fp32" ? (X.data as Float32Array) : null;
  const u16 = X.dtype === "fp32" ? null : (X.data as Uint16Array);
  for (let b = 0; b < B; b++) {
    for (let s = 0; s < S; s++) {
      const cRow = cache.offset + rows[b * S + s] * cache.strides[0];
      for (let h = 0; h < Hh; h++) {
        const base = X.offset + b * sb + s * ss + h * sh;
        for (let i = 0; i < half; i++) {
          const ia = base + (a.interleaved ? 2 * i : i);
          const ib = base + (a.interleaved ? 2 * i + 1 : i + half);
          const x1 = f32 ? f32[ia] : decode(u16![ia]);
          const x2 = f32 ? f32[ib] : decode(u16![ib]);
          const c = cd[cRow + i];
          const sn = cd[cRow + half + i];
          let o1: number, o2: number;
          if (!a.conjugate) {
            o1 = fmaf(x1, c, -Math.fround(x2 * sn));
            o2 = fmaf(x1, sn, Math.fround(x2 * c));
          } else {
            o1 = fmaf(x1, c, Math.fround(x2 * sn));
            o2 = fmaf(x1, -sn, Math.fround(x2 * c));
          }
          if (f32) {
            f32[ia] = o1;
            f32[ib] = o2;
          } else {
            u16![ia] = encode(o1);
            u16![ib] = encode(o2);
          }
        }
      }
    }
  }
}

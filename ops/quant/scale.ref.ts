/**
 * Scale and inverse of a block from its amax — spec/quant.md §2.2–§2.3 — and the element encoders of §1. Every
 * cast's CPU reference uses these (per-token now; per-block, per-channel and the fused casts later).
 * @module
 */
import { decodeE4m3, encodeE2m1, encodeE4m3, f32Bits, f32FromBits } from "../../core/dtype.ts";
import { config } from "../../core/config.ts";

/** Target of a quantizing cast. */
export type QuantFmt = "e4m3" | "e2m1";

/** Largest magnitude of each target (`Qmax`). */
export const QMAX: Readonly<Record<QuantFmt, number>> = Object.freeze({ e4m3: 448, e2m1: 6 });

/** What shapes a scale: the target, the rounding and the stored kind. */
export interface ScaleRule {
  readonly fmt: QuantFmt;
  readonly roundSf: boolean;
  readonly packedUe8m0: boolean;
  readonly e4m3Sf: boolean;
  /** Lower bound on amax (config.amaxClamp), binary32. */
  readonly clamp: number;
}

/** The clamp in effect for a target (spec/quant.md §2.2), read from `config` at call time. */
export function amaxClampFor(fmt: QuantFmt, e4m3Sf: boolean): number {
  return config.amaxClamp[e4m3Sf ? (fmt === "e4m3" ? "e4m3/e4m3sf" : "e2m1/e4m3sf") : fmt];
}

/** IEEE maximumNumber of binary32 values: a NaN operand is ignored. */
export function maxNum(a: number, b: number): number {
  if (a !== a) return b;
  if (b !== b) return a;
  return a > b ? a : b;
}

/**
 * `sfAndInv(amax)` of spec/quant.md §2.3. Returns the stored scale (fp32 value, e4m3 byte, or UE8M0 byte when
 * packed) in `out[0]` and the binary32 inverse in `out[1]`; `out` is reused to keep the hot loop allocation-free.
 */
export function sfAndInv(amax: number, r: ScaleRule, out: [number, number]): void {
  const q = QMAX[r.fmt];
  const a = maxNum(amax, r.clamp);
  const sfRaw = Math.fround(a / q);
  if (r.roundSf) {
    const u = f32Bits(sfRaw);
    const e = (((u - 1) >>> 0) >>> 23) + 1 - 127;
    out[0] = r.packedUe8m0 ? (127 + e) & 0xff : f32FromBits(((127 + e) << 23) >>> 0);
    out[1] = f32FromBits(((127 - e) << 23) >>> 0);
  } else if (r.e4m3Sf) {
    const c = encodeE4m3(sfRaw);
    out[0] = c;
    out[1] = Math.fround(1 / decodeE4m3(c));
  } else {
    out[0] = sfRaw;
    out[1] = Math.fround(q / a);
  }
}

/** RN encoder of a target (spec/quant.md §1.2, §1.3). */
export function encoderFor(fmt: QuantFmt): (v: number) => number {
  return fmt === "e4m3" ? encodeE4m3 : encodeE2m1;
}

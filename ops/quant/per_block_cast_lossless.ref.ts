/**
 * CPU reference of `perBlockCastLossless` — spec/quant.md §10: FP4 (E2M1) data with power-of-two scales re-blocked
 * to FP8 (E4M3) exactly. Per output block the scale exponent is the largest input exponent minus 6 (saturating
 * at 0); each input block's codes are multiplied by `2^(Ein − Eout)`, which E4M3 holds exactly while every input
 * block satisfies `Ein ≥ Eout − 5`. Numerics only: arguments are checked by `per_block_cast_lossless.ts`.
 * @module
 */
import { decodeE2m1, encodeE4m3, f32Bits, f32FromBits } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import { type HostTensor, hostStrided } from "../../core/tensor.ts";
import { allocCodes, putCode } from "./codes.ref.ts";
import { type SfInput, type SfLayout, sfGeometry, sfLoad, sfStore } from "./sf_layout.ts";

/** Resolved arguments of one lossless re-blocking. */
export interface LosslessArgs {
  readonly tokens: number;
  /** Logical H (the e2m1x2 data has H/2 bytes per row). */
  readonly hidden: number;
  readonly xBlockSize: readonly [number, number];
  readonly outBlockSize: readonly [number, number];
  /** Output sf layout: fp32 `f32(Eout << 23)` or packed UE8M0 byte `Eout`, row- or column-major. */
  readonly layout: SfLayout;
}

/**
 * §10. Reads `Ein` as the exponent field of each decoded input scale (a packed UE8M0 byte `b` decodes to
 * `f32(b << 23)`, so the field is `b` again). Checks the exponent-spread contract over every block first and
 * throws `DEVICE_VALUE` (op `perBlockCastLossless`, arg `x`) before anything is written when it is violated.
 */
export function perBlockCastLosslessRef(data: HostTensor, sf: HostTensor, sfIn: SfInput, a: LosslessArgs): { data: HostTensor; sf: HostTensor } {
  const { tokens: T, hidden: H } = a;
  const [ri, ci] = a.xBlockSize;
  const [ro, co] = a.outBlockSize;
  const nbmIn = Math.ceil(T / ri);
  const nbkIn = Math.ceil(H / ci);
  const nbm = Math.ceil(T / ro);
  const nbk = Math.ceil(H / co);
  const fm = ro / ri;
  const fk = co / ci;
  const ein = new Uint8Array(nbmIn * nbkIn);
  const eout = new Uint8Array(nbm * nbk); // Emax first, then Eout
  for (let m = 0; m < nbmIn; m++) {
    for (let k = 0; k < nbkIn; k++) {
      const e = (f32Bits(sfLoad(sf, sfIn, m, k)) >>> 23) & 0xff;
      ein[m * nbkIn + k] = e;
      const o = Math.floor(m / fm) * nbk + Math.floor(k / fk);
      if (e > eout[o]) eout[o] = e;
    }
  }
  for (let o = 0; o < eout.length; o++) eout[o] = eout[o] >= 6 ? eout[o] - 6 : 0;
  for (let m = 0; m < nbmIn; m++) {
    for (let k = 0; k < nbkIn; k++) {
      const e = ein[m * nbkIn + k];
      const eo = eout[Math.floor(m / fm) * nbk + Math.floor(k / fk)];
      if (e < eo - 5) {
        throw new TkError("perBlockCastLossless", "x", "DEVICE_VALUE", `input scale block (${m}, ${k}) has exponent byte ${e}, more than 11 below the largest (${eo + 6}) of its output block: the cast would not be exact`);
      }
    }
  }
  const g = sfGeometry(nbm, nbk, a.layout);
  const out = hostStrided(g.shape, g.strides, g.dtype, g.storage);
  for (let m = 0; m < nbm; m++) {
    for (let k = 0; k < nbk; k++) {
      const e = eout[m * nbk + k];
      sfStore(out, a.layout, m, k, a.layout.kind === "packed" ? e : f32FromBits(e << 23));
    }
  }
  const codes = allocCodes("e4m3", T, H);
  const d = data.data as Uint8Array;
  for (let t = 0; t < T; t++) {
    const row = data.offset + t * data.strides[0];
    const m = Math.floor(t / ri);
    for (let j = 0; j < H; j++) {
      const k = Math.floor(j / ci);
      const mul = 2 ** (ein[m * nbkIn + k] - eout[Math.floor(m / fm) * nbk + Math.floor(k / fk)]);
      const b = d[row + (j >> 1)];
      putCode(codes, "e4m3", t, j, encodeE4m3(Math.fround(decodeE2m1(j & 1 ? b >> 4 : b & 0xf) * mul)));
    }
  }
  return { data: codes, sf: out };
}

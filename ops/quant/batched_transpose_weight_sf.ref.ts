/**
 * CPU reference of `batchedTransposeWeightSf` — spec/quant.md §9.1: fp32 power-of-two weight scales to the two
 * packed-UE8M0 layouts DeepGEMM reads. Only the exponent field of each scale counts. Numerics only: arguments
 * are checked by `batched_transpose_weight_sf.ts`.
 * @module
 */
import { f32Bits } from "../../core/dtype.ts";
import { type HostTensor, hostStrided } from "../../core/tensor.ts";

/** Shapes and strides of the two outputs of one weight (§9.1); `groups` is null for a dense `[nS, kS]` input. */
export interface WeightSfGeometry {
  readonly sf0: { readonly shape: readonly number[]; readonly strides: readonly number[] };
  readonly sf1: { readonly shape: readonly number[]; readonly strides: readonly number[] };
  /** int32 words of each output's storage. */
  readonly storage0: number;
  readonly storage1: number;
}

/**
 * §9.1 geometry: sf0 `[G?, n, P0]` strides `[P0·n, 1, n]`; sf1 `[G?, k, P1]` strides `[P1·k, 1, k]`, or with
 * `transposeSf1` `[G?, P1, k]` strides `[P1·k, k, 1]` (same storage); `P0 = ⌈kS/4⌉`, `P1 = ⌈nS/4⌉`.
 */
export function weightSfGeometry(groups: number | null, nS: number, kS: number, blockSize: number, transposeSf1: boolean): WeightSfGeometry {
  const n = nS * blockSize;
  const k = kS * blockSize;
  const p0 = Math.ceil(kS / 4);
  const p1 = Math.ceil(nS / 4);
  const lead = (shape: number[], strides: number[], per: number) =>
    groups === null ? { shape, strides } : { shape: [groups, ...shape], strides: [per, ...strides] };
  return {
    sf0: lead([n, p0], [1, n], p0 * n),
    sf1: transposeSf1 ? lead([p1, k], [k, 1], p1 * k) : lead([k, p1], [1, k], p1 * k),
    storage0: (groups ?? 1) * p0 * n,
    storage1: (groups ?? 1) * p1 * k,
  };
}

/**
 * The `[sf0, sf1]` pair of one contiguous fp32 scale tensor `[nS, kS]` or `[G, nS, kS]` (§9.1):
 * `E = (bits >>> 23) & 0xFF`; sf0 word `(g, i, p) = Σ_h E[g][⌊i/bs⌋][4p+h] << 8h`, sf1 word
 * `(g, c, p) = Σ_h E[g][4p+h][⌊c/bs⌋] << 8h`, missing blocks 0.
 */
export function batchedTransposeWeightSfRef(sf: HostTensor, blockSize: number, transposeSf1: boolean): [HostTensor, HostTensor] {
  const dense = sf.shape.length === 2;
  const G = dense ? 1 : sf.shape[0];
  const nS = sf.shape[dense ? 0 : 1];
  const kS = sf.shape[dense ? 1 : 2];
  const geo = weightSfGeometry(dense ? null : G, nS, kS, blockSize, transposeSf1);
  const sf0 = hostStrided(geo.sf0.shape, geo.sf0.strides, "int32", geo.storage0);
  const sf1 = hostStrided(geo.sf1.shape, geo.sf1.strides, "int32", geo.storage1);
  const src = sf.data as Float32Array;
  const E = (g: number, a: number, b: number) => a < nS && b < kS ? (f32Bits(src[sf.offset + (g * nS + a) * kS + b]) >>> 23) & 0xff : 0;
  const n = nS * blockSize;
  const k = kS * blockSize;
  const p0 = Math.ceil(kS / 4);
  const p1 = Math.ceil(nS / 4);
  const w0 = sf0.data as Int32Array;
  const w1 = sf1.data as Int32Array;
  for (let g = 0; g < G; g++) {
    for (let i = 0; i < n; i++) {
      const a = Math.floor(i / blockSize);
      for (let p = 0; p < p0; p++) {
        w0[g * p0 * n + p * n + i] = E(g, a, 4 * p) | (E(g, a, 4 * p + 1) << 8) | (E(g, a, 4 * p + 2) << 16) | (E(g, a, 4 * p + 3) << 24);
      }
    }
    for (let c = 0; c < k; c++) {
      const b = Math.floor(c / blockSize);
      for (let p = 0; p < p1; p++) {
        w1[g * p1 * k + p * k + c] = E(g, 4 * p, b) | (E(g, 4 * p + 1, b) << 8) | (E(g, 4 * p + 2, b) << 16) | (E(g, 4 * p + 3, b) << 24);
      }
    }
  }
  return [sf0, sf1];
}

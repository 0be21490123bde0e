/**
 * Roofline cases of the per-channel family: perChannelCast and perChannelCastAndTranspose (bf16 → e4m3, blocks
 * of 128 tokens × 1 channel, fp32 sf) at 8192 and 16384 tokens × 7168, and batchedTransposeWeightSf for 256
 * experts of a 7168 × 2048 weight in 128-blocks. Outputs are preallocated; bytes are what must be read + written.
 * @module
 */
import {
  batchedTransposeWeightSf,
  type DeviceTensor,
  empty,
  perChannelCast,
  perChannelCastAndTranspose,
  type Tensor,
  tensor,
  toDevice,
} from "../mod.ts";
import type { BenchCase } from "./cases.ts";
import { randomBf16 } from "./common.ts";

const H = 7168;
const R = 128;

/** Bytes of a bf16 → e4m3 per-channel cast: read 2·T·H, write T·H codes and T/128 · H fp32 scales. */
function castBytes(T: number): number {
  return 3 * T * H + (T / R) * H * 4;
}

function castCases(): BenchCase[] {
  const out: BenchCase[] = [];
  for (const T of [8192, 16384]) {
    for (const transpose of [false, true]) {
      const x = randomBf16(T, H, T);
      const data = empty(transpose ? [H, T] : [T, H], "e4m3", { device: 0 }) as DeviceTensor;
      const sf = empty([T / R, H], "fp32", { device: 0 }) as DeviceTensor;
      const o = { fmt: "e4m3", numPerTokens: R, out: { data, sf } } as const;
      out.push({
        op: transpose ? "perChannelCastAndTranspose" : "perChannelCast",
        tokens: T,
        hidden: H,
        variant: "bf16→e4m3 [128,1]",
        bytes: castBytes(T),
        run: transpose ? () => void perChannelCastAndTranspose(x, o) : () => void perChannelCast(x, o),
        dispose: () => [x, data, sf].forEach((t) => t.dispose()),
      });
    }
  }
  return out;
}

/** 256 experts, n = 7168, k = 2048, blockSize 128: sf [256, 56, 16] fp32 in; sf0 [256, 7168, 4], sf1 [256, 2048, 14] out. */
function transposeCase(): BenchCase {
  const G = 256, nS = H / R, kS = 2048 / R;
  const v = new Float32Array(G * nS * kS).map((_, i) => 2 ** ((i % 61) - 30));
  const sf = toDevice(tensor(v, [G, nS, kS], "fp32"));
  const o = { blockSize: R, transposeSf1: [false] };
  const [sf0, sf1] = batchedTransposeWeightSf([sf], o)[0] as [Tensor, Tensor];
  const reuse = { ...o, out: [[sf0, sf1] as const] };
  const words = G * (Math.ceil(kS / 4) * nS * R + Math.ceil(nS / 4) * kS * R);
  return {
    op: "batchedTransposeWeightSf",
    tokens: G,
    hidden: H,
    variant: "256×7168×2048 bs128",
    bytes: 4 * (G * nS * kS + words),
    run: () => void batchedTransposeWeightSf([sf], reuse),
    dispose: () => [sf, sf0, sf1].forEach((t) => (t as DeviceTensor).dispose()),
  };
}

/** The cases of this family (called only with a CUDA device present). */
export function cases(): BenchCase[] {
  return [...castCases(), transposeCase()];
}

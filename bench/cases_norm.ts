/**
 * Roofline cases of the RMSNorm family (bench/cases.ts): `normForward`, `normForwardAndPerTokenCast` (128 channels,
 * packed UE8M0 scales in DeepGEMM's TMA-aligned layout) and `normBackward`, bf16, at 8192 and 16384 tokens × 7168,
 * outputs preallocated. Bytes are what each op must read and write (no workspace).
 * @module
 */
import { type DeviceTensor, empty, normBackward, normForward, normForwardAndPerTokenCast } from "../mod.ts";
import type { BenchCase } from "./cases.ts";
import { randomBf16 } from "./common.ts";

const H = 7168;

/** Packed UE8M0 sf bytes of a `[T, H]` cast with groups of 128: padded rows × ⌈(H/128)/4⌉ int32 words. */
function packedSfBytes(T: number): number {
  return Math.ceil(T / 4) * 4 * Math.ceil(H / 128 / 4) * 4;
}

/** The cases; every tensor is allocated here and freed by the case's `dispose`. */
export function cases(): BenchCase[] {
  const out: BenchCase[] = [];
  for (const T of [8192, 16384]) {
    const x = randomBf16(T, H, 1);
    const w1 = randomBf16(1, H, 2);
    const w = w1.view([H]);
    {
      const o = empty([T, H], "bf16", { device: 0 }) as DeviceTensor;
      const rstd = empty([T], "fp32", { device: 0 }) as DeviceTensor;
      const opts = { eps: 1e-6, out: { out: o, rstd } };
      out.push({
        op: "normForward",
        tokens: T,
        hidden: H,
        variant: "bf16 weight",
        bytes: 2 * T * H + 2 * H + 2 * T * H + 4 * T,
        run: () => void normForward(x, w, opts),
        dispose: () => [o, rstd].forEach((t) => t.dispose()),
      });
    }
    {
      const sfo = { fmt: "e4m3", numPerChannels: 128, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const;
      // the TMA-aligned sf cannot be passed as out.sf (row-major only): it is allocated by each call
      const data = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
      const rstd = empty([T], "fp32", { device: 0 }) as DeviceTensor;
      const opts = { eps: 1e-6, ...sfo, out: { data, rstd } };
      out.push({
        op: "normForwardAndPerTokenCast",
        tokens: T,
        hidden: H,
        variant: "bf16→e4m3 128 packed-ue8m0",
        bytes: 2 * T * H + 2 * H + T * H + packedSfBytes(T) + 4 * T,
        run: () => void (normForwardAndPerTokenCast(x, w, opts)[0][1] as DeviceTensor).dispose(),
        dispose: () => [data, rstd].forEach((t) => t.dispose()),
      });
    }
    {
      const dy = randomBf16(T, H, 3);
      const [, rstd] = normForward(x, w, { eps: 1e-6 });
      const xGrad = empty([T, H], "bf16", { device: 0 }) as DeviceTensor;
      const weightGrad = empty([H], "fp32", { device: 0 }) as DeviceTensor;
      const opts = { out: { xGrad, weightGrad } };
      out.push({
        op: "normBackward",
        tokens: T,
        hidden: H,
        variant: "bf16 weight, fp32 weightGrad",
        bytes: 2 * T * H + 2 * T * H + 4 * T + 2 * H + 2 * T * H + 4 * H,
        run: () => void normBackward(x, w, dy, rstd, opts),
        dispose: () => [dy, rstd as DeviceTensor, xGrad, weightGrad, x, w, w1].forEach((t) => t.dispose()),
      });
    }
  }
  return out;
}

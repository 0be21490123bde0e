/**
 * Roofline cases of the element-wise casts: `cast` (RN) and `stochasticCast` (SR) at 8192 and 16384 × 7168, the
 * stochastic per-token cast, and the in-place `perTokenCastAndCastBack` (bf16, e4m3, blocks [1, 128]). Bytes are
 * what must move: every input element read and every output element written once (in place: read + write).
 * @module
 */
import { cast, type DeviceTensor, empty, perTokenCast, perTokenCastAndCastBack, stochasticCast } from "../mod.ts";
import type { BenchCase } from "./cases.ts";
import { randomBf16 } from "./common.ts";

const HIDDEN = 7168;
const TOKENS = [8192, 16384];

/** An input shared by several cases: made on first use, freed when the last of its cases is disposed. */
function shared(make: () => DeviceTensor, users: number): { get(): DeviceTensor; release(): void } {
  let t: DeviceTensor | null = null;
  let left = users;
  return {
    get: () => (t ??= make()),
    release: () => {
      if (--left === 0 && t) {
        t.dispose();
        t = null;
      }
    },
  };
}

/** The cases of this family (called only with a CUDA device present). */
export function cases(): BenchCase[] {
  const out: BenchCase[] = [];
  for (const T of TOKENS) {
    const n = T * HIDDEN;
    const bf16 = shared(() => randomBf16(T, HIDDEN, T), 7);
    const fp32 = shared(() => cast(bf16.get(), { dtype: "fp32" }) as DeviceTensor, 4);
    const conversions = [
      { from: bf16, inBytes: 2, to: "e4m3", name: "bf16→e4m3" },
      { from: fp32, inBytes: 4, to: "e4m3", name: "fp32→e4m3" },
      { from: fp32, inBytes: 4, to: "bf16", name: "fp32→bf16" },
    ] as const;
    for (const c of conversions) {
      for (const sr of [false, true]) {
        const x = c.from.get();
        const y = empty([T, HIDDEN], c.to, { device: 0 }) as DeviceTensor;
        const run = sr ? () => void stochasticCast(x, { dtype: c.to, out: y }) : () => void cast(x, { dtype: c.to, out: y });
        out.push({
          op: sr ? "stochasticCast" : "cast",
          tokens: T,
          hidden: HIDDEN,
          variant: `${c.name}${sr ? " SR" : " RN"}`,
          bytes: n * (c.inBytes + (c.to === "e4m3" ? 1 : 2)),
          run,
          dispose: () => {
            y.dispose();
            if (c.from === fp32) {
              fp32.release();
              bf16.release();
            } else bf16.release();
          },
        });
      }
    }
    {
      const x = bf16.get();
      const data = empty([T, HIDDEN], "e4m3", { device: 0 }) as DeviceTensor;
      const sf = empty([T, HIDDEN / 128], "fp32", { device: 0 }) as DeviceTensor;
      out.push({
        op: "perTokenCast",
        tokens: T,
        hidden: HIDDEN,
        variant: "bf16→e4m3 128 SR",
        bytes: 3 * n + 4 * T * (HIDDEN / 128),
        run: () => void perTokenCast(x, { fmt: "e4m3", numPerChannels: 128, stochasticCast: true, out: { data, sf } }),
        dispose: () => {
          data.dispose();
          sf.dispose();
          bf16.release();
        },
      });
    }
    {
      // its own copy: the op rewrites x in place
      const x = randomBf16(T, HIDDEN, T + 1);
      out.push({
        op: "perTokenCastAndCastBack",
        tokens: T,
        hidden: HIDDEN,
        variant: "bf16 e4m3 [1,128]",
        bytes: 4 * n,
        run: () => void perTokenCastAndCastBack(x, { fmt: "e4m3", numPerChannels: 128 }),
        dispose: () => x.dispose(),
      });
    }
  }
  return out;
}

/**
 * Roofline cases of the per-block family: perBlockCast bf16 → e4m3 with [128, 128] blocks (plain fp32 scales, and
 * DeepGEMM's packed UE8M0 column-major layout) and castBack e4m3 → bf16 of [128, 128] blocks, at 8192 and 16384
 * tokens × 7168. Outputs are preallocated; byte counts are what must be read and written (inputs, codes, scale
 * storage including its alignment padding).
 * @module
 */
import { castBack, type DeviceTensor, empty, perBlockCast, type PerBlockCastOptions, type Quantized } from "../mod.ts";
import type { BenchCase } from "./cases.ts";
import { randomBf16 } from "./common.ts";

const H = 7168;
const BLOCK: [number, number] = [128, 128];
const VARIANTS: { name: string; opts: PerBlockCastOptions }[] = [
  { name: "fp32-sf", opts: { fmt: "e4m3", blockSize: BLOCK } },
  { name: "packed-ue8m0", opts: { fmt: "e4m3", blockSize: BLOCK, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } },
];

/** Bytes of the sf storage of a [T/128, H/128] grid: fp32 row-major, or packed words column-major (P = align(nbm, 4)). */
function sfBytes(T: number, packed: boolean): number {
  const nbm = T / 128;
  const nbk = H / 128;
  return packed ? Math.ceil(nbm / 4) * 4 * Math.ceil(nbk / 4) * 4 : nbm * nbk * 4;
}

/** The cases (called only with a CUDA device present). */
export function cases(): BenchCase[] {
  const out: BenchCase[] = [];
  for (const T of [8192, 16384]) {
    const x = randomBf16(T, H, T);
    for (const v of VARIANTS) {
      const [data, sf] = perBlockCast(x, v.opts) as [DeviceTensor, DeviceTensor];
      const o = { ...v.opts, out: { data, sf } };
      out.push({
        op: "perBlockCast",
        tokens: T,
        hidden: H,
        variant: `bf16→e4m3 128x128 ${v.name}`,
        bytes: 2 * T * H + T * H + sfBytes(T, v.opts.usePackedUe8m0 === true),
        run: () => void perBlockCast(x, o),
        dispose: () => {
          data.dispose();
          sf.dispose();
        },
      });
    }
    const q = perBlockCast(x, VARIANTS[0].opts) as Quantized;
    const y = empty([T, H], "bf16", { device: 0 }) as DeviceTensor;
    const ob = { fmt: "bf16" as const, xBlockSize: BLOCK, out: y };
    out.push({
      op: "castBack",
      tokens: T,
      hidden: H,
      variant: "e4m3→bf16 [128,128] fp32 sf",
      bytes: T * H + sfBytes(T, false) + 2 * T * H,
      run: () => void castBack(q, ob),
      dispose: () => {
        (q[0] as DeviceTensor).dispose();
        (q[1] as DeviceTensor).dispose();
        y.dispose();
        x.dispose();
      },
    });
  }
  return out;
}

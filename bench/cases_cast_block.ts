/**
 * Roofline cases of `cast`'s block-scaled form at 8192 and 16384 tokens × 7168: two forms that run the generic
 * kernels of `kernels-src/cuda/quant/cast_block.cu` (bf16 → e4m3 with [16, 64] blocks; fp16 → e4m3 per-token
 * [1, 128], which the per-token kernel does not take from fp16), and one routed form (bf16 → e4m3 [1, 128]: the
 * per-token kernel behind `cast`, to show the routing costs nothing on the device). Outputs are preallocated;
 * bytes are what must be read and written (input, codes, fp32 scales), not the generic path's second read of the
 * input or its inverse scratch.
 * @module
 */
import { cast, type CastOptions, type DeviceTensor, type Quantized } from "../mod.ts";
import type { BenchCase } from "./cases.ts";
import { randomBf16 } from "./common.ts";

const H = 7168;
const VARIANTS: { name: string; input: "bf16" | "fp16"; block: [number, number] }[] = [
  { name: "bf16→e4m3 [16,64] generic", input: "bf16", block: [16, 64] },
  { name: "fp16→e4m3 [1,128] generic", input: "fp16", block: [1, 128] },
  { name: "bf16→e4m3 [1,128] per-token", input: "bf16", block: [1, 128] },
];

/** The cases (called only with a CUDA device present). */
export function cases(): BenchCase[] {
  const out: BenchCase[] = [];
  for (const T of [8192, 16384]) {
    for (const v of VARIANTS) {
      const bf = randomBf16(T, H, T);
      const x = v.input === "bf16" ? bf : cast(bf, { dtype: "fp16" }) as DeviceTensor;
      if (x !== bf) bf.dispose();
      const o: CastOptions = { dtype: "e4m3", blockSize: v.block };
      const [data, sf] = cast(x, o) as [DeviceTensor, DeviceTensor];
      const withOut: CastOptions = { ...o, out: { data, sf } };
      out.push({
        op: "cast",
        tokens: T,
        hidden: H,
        variant: v.name,
        bytes: 2 * T * H + T * H + 4 * Math.ceil(T / v.block[0]) * Math.ceil(H / v.block[1]),
        run: () => void (cast(x, withOut) as Quantized),
        dispose: () => {
          data.dispose();
          sf.dispose();
          x.dispose();
        },
      });
    }
  }
  return out;
}

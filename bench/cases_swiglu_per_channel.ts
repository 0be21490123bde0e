/**
 * Roofline cases of `swigluForwardAndPerChannelCastAndTranspose` (spec/quant.md §8.6) at 8192 and 16384 tokens ×
 * H = 7168 (input width 2H): numPerTokens 128 and 32 transposed, and 128 with `withoutTranspose`. The op has no
 * expert layout (§8.6: every row is real, no psum) and allocates its outputs (no `out`): each call allocates and
 * frees them stream-ordered from the pool. Gates and ups are bf16 values of mixed sign and magnitude (2^-7 … 2^8),
 * so the kernel's expf table is read at scattered entries as with real activations. Bytes: x read once
 * (T · 2H · 2) plus data written (T · H) plus sf written (T / R · H · 4).
 * @module
 */
import { tensor, toDevice } from "../core/tensor.ts";
import type { DeviceTensor } from "../core/tensor.ts";
import { swigluForwardAndPerChannelCastAndTranspose } from "../ops/quant/swiglu_per_channel.ts";
import type { BenchCase } from "./cases.ts";

const H = 7168;

/** bf16 pattern of element i: random sign, exponent field 0x78 … 0x87, random mantissa (a multiplicative hash). */
function mixed(i: number): number {
  const h = Math.imul(i, 0x9e3779b1) >>> 0;
  return ((h >>> 31) << 15) | (0x3c00 + ((h >>> 8) & 0x7ff));
}

/** The SwiGLU + per-channel roofline cases (needs a CUDA device). */
export function cases(): BenchCase[] {
  const out: BenchCase[] = [];
  for (const T of [8192, 16384]) {
    const x = toDevice(tensor(new Uint16Array(T * 2 * H).map((_, i) => mixed(i)), [T, 2 * H], "bf16"));
    const variants = [
      { numPerTokens: 128, withoutTranspose: false, label: "bf16 → e4m3 [H, T], 128 tokens per scale" },
      { numPerTokens: 32, withoutTranspose: false, label: "bf16 → e4m3 [H, T], 32 tokens per scale" },
      { numPerTokens: 128, withoutTranspose: true, label: "bf16 → e4m3 [T, H], 128 tokens per scale" },
    ] as const;
    for (const v of variants) {
      const o = { fmt: "e4m3", numPerTokens: v.numPerTokens, withoutTranspose: v.withoutTranspose } as const;
      out.push({
        op: "swigluForwardAndPerChannelCastAndTranspose",
        tokens: T,
        hidden: H,
        variant: v.label,
        bytes: T * 2 * H * 2 + T * H + (T / v.numPerTokens) * H * 4,
        run: () => {
          for (const t of swigluForwardAndPerChannelCastAndTranspose(x, o)) (t as DeviceTensor).dispose();
        },
        dispose: () => {},
      });
    }
    out[out.length - 1] = { ...out[out.length - 1], dispose: () => x.dispose() };
  }
  return out;
}

/**
 * The input of the GPU tests of swigluForwardAndPerChannelCastAndTranspose (tests/swiglu_per_channel_gpu.test.ts and
 * tests/spc32_gpu.test.ts, the `_an` form).
 * @module
 */
import { encodeBf16 } from "../core/dtype.ts";
import { type HostTensor, tensor } from "../mod.ts";

/**
 * A random bf16 `[T, 2H]` input. Each column (gate and up alike) has its own magnitude (2^-30 … 2^10), so per-channel
 * scales differ; columns cycle through edge cases: all ±0, gates around the ends of the kernel's e^(−g) table
 * window (|g| from 2^-26 to 2^-22, and from 60 to 260), exact e4m3 rounding ties, sparse NaN and ±Inf, and large
 * values that the clamp cuts.
 */
export function randomX(rand: () => number, T: number, H: number): HostTensor {
  const W = 2 * H;
  const colScale = Array.from({ length: W }, () => 2 ** Math.floor(rand() * 40 - 30));
  const v = new Uint16Array(T * W);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < W; j++) {
      const r = rand();
      const kind = j % 13;
      let x: number;
      if (kind === 1) x = r < 0.5 ? -0 : 0;
      else if (kind === 3) x = (r < 0.5 ? -1 : 1) * 2 ** (-26 + Math.floor(rand() * 4)) * (1 + Math.floor(rand() * 128) / 128);
      else if (kind === 5) x = (r < 0.5 ? -1 : 1) * (60 + rand() * 200);
      else if (kind === 7) x = (Math.floor(rand() * 64) - 32) * 0.5 + 0.25;
      else if (kind === 9 && t % 37 === 5) x = r < 0.3 ? NaN : r < 0.6 ? Infinity : -Infinity;
      else if (kind === 11) x = (r - 0.5) * 40;
      else x = (r - 0.5) * 8 * colScale[j] * (1 + 7 * rand());
      v[t * W + j] = encodeBf16(Math.fround(x));
    }
  }
  return tensor(v, [T, W], "bf16");
}

/**
 * Inputs and helpers shared by the perTokenCast GPU tests (tests/per_token_cast_gpu.test.ts, tests/sr12_gpu.test.ts):
 * rows with specials, SR edge values and NaN quads, and the function handle of a per_token_cast.cu symbol.
 */
import type { HostTensor } from "../mod.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { rng } from "./harness.ts";
import { randomInput } from "./gpu_util.ts";

/** The function handle of a per_token_cast.cu symbol on device 0. */
export function ptcFn(suffix: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, `tk_per_token_cast__${suffix}`);
}

/**
 * `x` with NaN, ±Inf, ±0 and subnormals written into a few rows (quant.md: NaN ignored by the amax, an infinite amax
 * gives an infinite scale), so that the `_sor4` and `_pkl` kernels (and the sf-only `_g<N>` / `_u4` kernels of the
 * forms not built as `_sor4`) meet every special in the group reduction.
 */
export function withSpecials(x: HostTensor): HostTensor {
  const [T, H] = x.shape;
  const s0 = x.strides[0];
  const f32 = x.dtype === "fp32";
  const sp = f32 ? [NaN, Infinity, -Infinity, -0, 1e-45, -3e-39] : [0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0001, 0x8033];
  const d = x.data as Float32Array | Uint16Array;
  for (let t = 0; t < T; t += 3) {
    const kind = (t / 3) % 4; // 0: one NaN in a group, 1: +Inf, 2: a whole group NaN, 3: subnormals and −0 only
    for (let j = 0; j < H; j++) {
      const i = x.offset + t * s0 + j;
      if (kind === 0 && j % 97 === 5) d[i] = sp[0];
      else if (kind === 1 && j % 131 === 7) d[i] = sp[(j & 1) + 1];
      else if (kind === 2 && j < 128) d[i] = sp[0];
      else if (kind === 3) d[i] = sp[3 + (j % 3)];
    }
  }
  return x;
}

/**
 * `x` with values that reach every branch of the stochastic e4m3 encode once scaled by the group's inverse: ±0, bf16
 * subnormals, values whose scaled magnitude falls in the e4m3 subnormal range (below 2^-6: the rz-FMA low term),
 * exactly at the e4m3 grid and just below the next one (the carry of the random bits into the exponent), the group
 * maximum (448 after scaling: saturation), and groups of tiny values only (scales at the amax clamp). Rows t ≡ 1
 * (mod 3); withSpecials (NaN, ±Inf: the per-chunk NaN probe's fallback) writes rows t ≡ 0 (mod 3). `extraEdges`
 * are appended to the edge list.
 */
export function withSrEdges(x: HostTensor, extraEdges: readonly number[] = []): HostTensor {
  const [T, H] = x.shape;
  const s0 = x.strides[0];
  const d = x.data as Uint16Array;
  const edges = [0x0000, 0x8000, 0x0001, 0x807f, 0x3a80, 0xba81, 0x3c00, 0x3bff, 0xbdff, 0x3e00, 0x4000, 0xc3df, 0x0400, ...extraEdges];
  for (let t = 1; t < T; t += 3) {
    for (let j = 0; j < H; j++) {
      const i = x.offset + t * s0 + j;
      if (Math.floor(t / 3) % 2 === 1 && j % 256 < 128) d[i] = 0x0080 + (j % 7); // a group of tiny normals: sf at the clamp
      else if (j % 5 === 0) d[i] = edges[(j / 5 + t) % edges.length];
    }
  }
  return x;
}

/**
 * bf16 rows of ordinary values with NaNs of several patterns (quiet 0x7FC0, 0xFFC0, 0x7FE5; signalling, with
 * payloads, 0xFFA5, 0x7F81, 0xFF81) at every position of a quad, next to finite values, ±0 and subnormals: the hash
 * of a quad holding a NaN product and other values (§7.4 hashes a NaN product as the canonical 0x7FFFFFFF the GPU's
 * multiply gives, whatever x's NaN pattern: stochastic.ref.ts productBits). Found by the first GPU run of
 * `_g128_sr_wu` (a 1 × 64 row of withSpecials, byte 7: 0x6C against a reference that hashed x's quieted NaN).
 */
export function nanQuadRows(T: number, H: number, seed = 10109): HostTensor {
  const x = randomInput(rng(seed), T, H, "bf16");
  const d = x.data as Uint16Array;
  const nans = [0x7fc0, 0xffc0, 0x7fe5, 0xffa5, 0x7f81, 0xff81];
  const others = [0x0000, 0x8000, 0x0001, 0x8033, 0x3f80, 0xc2f0];
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j += 4) {
      const q = t * (H / 4) + j / 4;
      if (q % 3 === 2) continue; // some quads without NaN
      d[t * H + j + (q % 4)] = nans[q % nans.length];
      if (q % 5 === 0) d[t * H + j + ((q + 1) % 4)] = nans[(q + 1) % nans.length];
      if (q % 7 === 0) d[t * H + j + ((q + 2) % 4)] = others[q % others.length];
    }
  }
  return x;
}

/**
 * Inputs and the byte-for-byte comparison shared by the GPU tests of normForwardAndPerTokenCast's bulk-rows forms
 * (tests/ncast18_gpu.test.ts: `_br4y`; rounds 14 and 15 used it for `_br4w` / `_br4x`, no longer built): inputs, the knobs that select a form, the
 * byte-for-byte comparison and the sweep over shapes, layouts and options.
 * @module
 */
import assert from "node:assert/strict";
import { encodeBf16 } from "../core/dtype.ts";
import { config } from "../core/config.ts";
import { HostTensor, tensor } from "../mod.ts";
import { kernelFunction, launchCount } from "../ffi/cuda.ts";
import { normForwardAndPerTokenCast, type NormForwardAndPerTokenCastOptions } from "../ops/norm/mod.ts";
import { normForwardLastLaunch } from "../ops/norm/norm_forward.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { rng } from "./harness.ts";
import { dispose, randomInput, sameNormCastOutputs, SF_LAYOUTS_FP32, uploadView, withPdl } from "./gpu_util.ts";

/** The fused cast's options a test varies (eps, outScale and residual are set by {@link compareOn}). */
export type CastOpts = Omit<NormForwardAndPerTokenCastOptions, "eps" | "outScale" | "residual">;

/** `[T, H]` bf16 rows (row stride `stride`), `[B, T, H]` when B > 0; with `special`, rows of NaN / ±Inf / subnormal / huge values by t % 5. */
export function rows(rand: () => number, B: number, T: number, H: number, stride: number, special: boolean): HostTensor {
  const flat = randomInput(rand, Math.max(B, 1) * T, H, "bf16", stride);
  if (special) {
    const d = flat.data as Uint16Array;
    for (let t = 0; t < Math.max(B, 1) * T; t++) {
      for (let j = 0; j < H; j++) {
        const r = rand(), i = t * stride + j;
        if (t % 5 === 1 && r < 0.05) d[i] = [0x7fc0, 0xffc0, 0x7f81, 0xffff][i % 4];
        else if (t % 5 === 2 && r < 0.05) d[i] = r < 0.025 ? 0x7f80 : 0xff80;
        else if (t % 5 === 3) d[i] = encodeBf16(Math.fround((r * 2 - 1) * 1e-40));
        else if (t % 5 === 4) d[i] = encodeBf16(Math.fround((r * 2 - 1) * 3e38));
      }
    }
  }
  if (B === 0) return flat;
  return new HostTensor(flat.data, "bf16", [B, T, H], [T * stride, stride, 1]);
}

/** A bf16 weight `[H]` (|v| ≤ 4). */
export function weightOf(rand: () => number, H: number): HostTensor {
  return tensor(new Uint16Array(H).map(() => encodeBf16(Math.fround((rand() * 2 - 1) * 4))), [H], "bf16");
}

/** CPU vs device normForwardAndPerTokenCast, every output allocation byte for byte; the kernel `sym` and its PDL flag. */
export function compareOn(
  x: HostTensor,
  w: HostTensor | null,
  outScale: number,
  o: CastOpts,
  sym: string,
  label: string,
): void {
  const opts: NormForwardAndPerTokenCastOptions = { ...o, eps: 1e-6, outScale };
  const want = normForwardAndPerTokenCast(x, w, opts);
  const dx = uploadView(x);
  const dw = w ? uploadView(w) : null;
  const n0 = launchCount();
  const got = normForwardAndPerTokenCast(dx, dw, opts);
  const last = normForwardLastLaunch();
  try {
    assert.ok(launchCount() > n0, `${label}: a launch`);
    assert.equal(last.fn, kernelFunction("test", { kind: "cuda", index: 0 }, sym), `${label}: ${sym} ran`);
    assert.equal(last.pdl, config.pdl, `${label}: PDL as config.pdl`);
    sameNormCastOutputs(got, want, false, label);
  } finally {
    dispose(got, dx, dw);
  }
}

/**
 * The aligned bulk-rows form of the plain fused cast (round 9's `_br4a`, which the knob castWarpBound selected, left
 * the package in trim24).
 */
export type CastForm = "_br4y";

/**
 * Runs f with the bulk-rows forms from any row count (the aligned form `form`) and grid cap `blocks`; restores the
 * knobs however f ends.
 */
export function withCastForm<T>(_form: CastForm, blocks: number, f: () => T): T {
  const t = normLaunchTuning;
  const prev = [
    t.castBulkRows,
    t.forwardBlocksPerSm,
    t.forwardWarpRowsMinRowsPerSm,
    t.teamThreads,
  ] as const;
  t.castBulkRows = true;
  t.forwardBlocksPerSm = blocks;
  t.forwardWarpRowsMinRowsPerSm = 0;
  t.teamThreads = 0;
  try {
    return f();
  } finally {
    [t.castBulkRows, t.forwardBlocksPerSm, t.forwardWarpRowsMinRowsPerSm, t.teamThreads] = prev;
  }
}

// H: 128 / 256 (K = 8 / 16 chunks < 32: one partly live warp, three wholly dead ones; one packed sf word), 512 (K = 32:
// warp 0 only), 1152 (K = 72, J = 1: warps 0–1 live, warp 2 partly, warp 3 dead; a partly live packed word in warp 2),
// 2176 (K = 136, J = 2: j = 1 partly live in warp 0, dead in 1–3), 4224 (K = 264, J = 4: j = 2 partly live in warp 0,
// j = 3 dead everywhere; nbk = 33 at g128, the last packed word holds one group), 7168 (K = 448, the bench's H: j = 3
// live in warps 0–1, dead in 2–3), 8192 (K = 512: all live). Every one a multiple of 128: both group sizes apply.
const HS = [128, 256, 512, 1152, 2176, 4224, 7168, 8192];

/**
 * The sweep of an aligned bulk-rows form against the CPU reference: every H of HS × groups of 32 / 128 × every fp32
 * and packed sf layout, with grid caps 0 / 1 / 3, PDL on and off, 1 / 7 / 300 rows, 2-D / 3-D, padded strides, a
 * weight with probability `p.weight`, outScale 1 with probability `p.outScale1` (else 0.3), outBf16 half the time,
 * special rows every `p.specialEvery`-th case; the kernel `form` asserted after every call.
 */
export function castFormSweep(
  form: CastForm,
  seed: number,
  p: { weight: number; outScale1: number; specialEvery: number },
): void {
  const rand = rng(seed);
  let n = 0;
  for (const H of HS) {
    for (const npc of [32, 128] as const) {
      for (const [name, sf] of SF_LAYOUTS_FP32) {
        const blocks = [0, 1, 3][n % 3];
        const pdl = n % 2 === 0;
        const T = [1, 7, 300, 7][(n >> 1) % 4];
        const B = n % 5 === 0 ? 2 : 0;
        const weight = rand() < p.weight;
        const withOutBf16 = rand() < 0.5;
        const outScale = rand() < p.outScale1 ? 1 : 0.3;
        const stride = H + (rand() < 0.5 ? 0 : 8 * Math.ceil(rand() * 4));
        const special = n % p.specialEvery === 1;
        n++;
        const x = rows(rand, B, T, H, stride, special);
        const w = weight ? weightOf(rand, H) : null;
        const label = `${form} blocks/SM ${blocks} pdl ${pdl} ${name} g${npc} B ${B} T ${T} H ${H} stride ${stride} ` +
          `weight ${weight} outScale ${outScale} outBf16 ${withOutBf16} special ${special}`;
        const o: CastOpts = { fmt: "e4m3", numPerChannels: npc, withOutBf16, ...sf };
        withPdl(pdl, () =>
          withCastForm(form, blocks, () => compareOn(x, w, outScale, o, `tk_norm_forward__bf16_e4m3_g${npc}${form}`, label)));
      }
    }
  }
}

/**
 * `form` at the bench's shape: 3000 × 7168 rows with special values, a weight, outScale 1, packed UE8M0 TMA-aligned
 * scales, groups of 32 and 128, PDL on and off; the kernel asserted after every call.
 */
export function castFormBenchShape(form: CastForm, rand: () => number): void {
  const x = rows(rand, 0, 3000, 7168, 7168, true);
  const w = weightOf(rand, 7168);
  for (const npc of [32, 128] as const) {
    const o: CastOpts = { fmt: "e4m3", numPerChannels: npc, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true };
    for (const pdl of [false, true]) {
      withPdl(pdl, () =>
        withCastForm(form, 0, () =>
          compareOn(x, w, 1, o, `tk_norm_forward__bf16_e4m3_g${npc}${form}`, `3000 ${form} g${npc} pdl ${pdl}`)));
    }
  }
}

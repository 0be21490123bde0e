/**
 * Round 26 (docs/perf-notes/perf26-fp4.md): `tk_per_token_cast__bf16_e2m1_g32_mxw` (MXFP4: groups of 32, roundSf;
 * perTokenLaunchTuning.mxfp4Wide, default on since its A/B), against the CPU reference byte for byte on both output allocations
 * (data and sf, padding included) and against main's `_g32_u4sca` with the knob off, for every roundSf layout (fp32
 * row / col, packed UE8M0 row / col): 0 rows, 1 row, rows whose last warp unit has dead lanes (H = 576, 960,
 * 7168 + 64), dead warps (1 × 64), strided and 16-byte-offset views (the knob's kernel), unaligned views (main's
 * kernel: the knob never applies), every bf16 pattern shuffled into groups (NaN / ±Inf groups take the kernel's
 * scalar path), edge rows (all zero: inverse 2^127, scalar path; subnormal-only: inverse above 2^126, scalar path;
 * ~2^-118 and near the bf16 maximum: the fast path's inverse range ends), 3000 and 8192 × 7168, replay with the knob
 * flipped, PDL on and off (the form never carries the attribute). Options the form does not take keep main's kernels
 * with the knob on. The symbol of every launch is asserted (perTokenLastLaunch). Skips without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import type { HostTensor } from "../mod.ts";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { gpuTest, rng } from "./harness.ts";
import { randomInput } from "./gpu_util.ts";
import { allPatterns, checkKnobLeavesOthers, checkKnobView, type KnobLayout, sweepKnobViews } from "./e2m1_knob_util.ts";

const MAIN = "bf16_e2m1_g32_u4sca";
const FORM = "bf16_e2m1_g32_mxw";

/** The roundSf layouts at groups of 32 the knob takes. */
const TAKEN: readonly KnobLayout[] = [
  ["mxfp4-fp32-row", { numPerChannels: 32, roundSf: true }, MAIN, FORM],
  ["mxfp4-fp32-col", { numPerChannels: 32, roundSf: true, useTmaAlignedColMajorSf: true }, MAIN, FORM],
  ["mxfp4-packed-row", { numPerChannels: 32, roundSf: true, usePackedUe8m0: true }, MAIN, FORM],
  ["mxfp4-packed-col", { numPerChannels: 32, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true }, MAIN, FORM],
];

/**
 * Rows at the ends of the fast path's inverse range [2^-125, 2^126]: all ±0; subnormal bf16 only; values near 2^-118;
 * values near the bf16 maximum; then random rows. Signs random.
 */
function edgeRows(seed: number, H: number): HostTensor {
  const rand = rng(seed);
  const x = randomInput(rand, 8, H, "bf16");
  const d = x.data as Uint16Array;
  const sign = () => (rand() < 0.5 ? 0x8000 : 0);
  for (let j = 0; j < H; j++) {
    d[j] = sign();
    d[H + j] = sign() | (1 + Math.floor(rand() * 0x7f));
    d[2 * H + j] = sign() | (0x0480 + Math.floor(rand() * 0x100));
    d[3 * H + j] = sign() | (0x7e80 + Math.floor(rand() * 0xff));
  }
  return x;
}

gpuTest("perTokenCast bf16 → MXFP4 through _g32_mxw (mxfp4Wide) = reference = _g32_u4sca: every roundSf layout, 0 / 1 rows, dead lanes and warps, strided, 16-byte-offset and unaligned views, every bf16 pattern, edge and special rows, 3000 and 8192 × 7168, replay (seeds 26101, 26102)", async () => {
  const saved = perTokenLaunchTuning.mxfp4Wide;
  try {
    await checkKnobView("mxfp4Wide", allPatterns(26103, 8, 8192), true, "every bf16 pattern 8x8192", TAKEN);
    await checkKnobView("mxfp4Wide", allPatterns(26104, 72, 960), true, "every bf16 pattern 72x960", TAKEN);
    await checkKnobView("mxfp4Wide", edgeRows(26105, 7168), true, "edge rows 8x7168", TAKEN);
    await checkKnobView("mxfp4Wide", edgeRows(26106, 576), true, "edge rows 8x576", TAKEN);
    // the large shapes: two layouts each
    await sweepKnobViews("mxfp4Wide", [26101, 26102], TAKEN, [["mxfp4-fp32-row", "mxfp4-packed-col"], ["mxfp4-packed-row", "mxfp4-packed-col"]]);
  } finally {
    perTokenLaunchTuning.mxfp4Wide = saved;
  }
});

gpuTest("mxfp4Wide on: options the form does not take keep main's kernels (g32 without roundSf, g16 roundSf, NVFP4, sf only), and the knob is on by default (seed 26107)", () => {
  assert.equal(perTokenLaunchTuning.mxfp4Wide, true, "mxfp4Wide is on by default (since round 26's A/B)");
  checkKnobLeavesOthers("mxfp4Wide", 26107, [
    [{ fmt: "e2m1", numPerChannels: 32 }, "bf16_e2m1_g32_u4"],
    [{ fmt: "e2m1", numPerChannels: 16, roundSf: true }, "bf16_e2m1_g16_u4"],
    [{ fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true }, "bf16_e2m1_g16_nvw"],
  ], { fmt: "e2m1", numPerChannels: 32, roundSf: true }, { not: FORM });
});

/**
 * Round 29 (docs/perf-notes/perf29-nvfp4.md): `tk_per_token_cast__bf16_e2m1_g16_nvw` (NVFP4: groups of 16, e4m3 sf;
 * perTokenLaunchTuning.nvfp4Wide, the default since its A/B), against the CPU reference byte for byte on both output
 * allocations (data and sf, padding included) and against main's `_g16_u4` with the knob off (round 17's `_g16_lw`, the
 * knob-off kernel of aligned views until trim32, left the package), for row- and column-major sf: 0 rows, 1 row, rows
 * whose last warp unit has dead lanes (H = 576, 960, 7168 + 64), dead warps (1 × 64), strided and 16-byte-offset views
 * (the knob's kernel), unaligned views (main's kernel: the knob never applies), every bf16 pattern shuffled into groups
 * (NaN / ±Inf groups take the kernel's scalar path), edge rows (all zero and subnormal-only: e4m3 byte below 0x08,
 * scalar path; amax around 6 · 2^-6 and around 6 · 416 … 6 · 448: the ends of the fast path's bytes [0x08, 0x7D], mixed
 * in one lane; near the bf16 maximum: saturated sf), groups built on exact e2m1 midpoints times their own e4m3 scale
 * (the double-rounding cases), the smallest allowed amax clamp (e4m3 byte 0, an infinite inverse), 3000 and 8192 ×
 * 7168, replay with the knob flipped, PDL on and off (the form never carries the attribute). Options the form does not
 * take keep main's kernels with the knob on. The symbol of every launch is asserted (perTokenLastLaunch). Skips without
 * a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { config } from "../mod.ts";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { gpuTest } from "./harness.ts";
import {
  allPatterns,
  checkKnobLeavesOthers,
  checkKnobView,
  edgeRows,
  type KnobLayout,
  sweepKnobViews,
} from "./e2m1_knob_util.ts";

/** Main's symbol, with the knob off and for views that are not 16-byte aligned. */
const MAIN = "bf16_e2m1_g16_u4";
const FORM = "bf16_e2m1_g16_nvw";

/** The NVFP4 layouts the knob takes. */
const TAKEN: readonly KnobLayout[] = [
  ["nvfp4-row", { numPerChannels: 16, useE4m3Sf: true }, MAIN, FORM],
  ["nvfp4-col", { numPerChannels: 16, useE4m3Sf: true, useTmaAlignedColMajorSf: true }, MAIN, FORM],
];

gpuTest("perTokenCast bf16 → NVFP4 through _g16_nvw (nvfp4Wide) = reference = _g16_u4: row / col sf, 0 / 1 rows, dead lanes and warps, strided, 16-byte-offset and unaligned views, every bf16 pattern, edge, midpoint and special rows, the smallest clamp, 3000 and 8192 × 7168, replay (seeds 29101, 29102)", async () => {
  const saved = perTokenLaunchTuning.nvfp4Wide, savedCol = perTokenLaunchTuning.nvfp4ColTiles;
  const savedClamp = config.amaxClamp["e2m1/e4m3sf"];
  // round 30's nvfp4ColTiles (the default since) takes column-major sf whatever nvfp4Wide says; it is
  // tests/fp4c30_gpu.test.ts's subject: off here, so column-major sf shows `_g16_u4` / `_g16_nvw`
  perTokenLaunchTuning.nvfp4ColTiles = false;
  try {
    await checkKnobView("nvfp4Wide", allPatterns(29103, 8, 8192), true, "every bf16 pattern 8x8192", TAKEN);
    await checkKnobView("nvfp4Wide", allPatterns(29104, 72, 960), true, "every bf16 pattern 72x960", TAKEN);
    await checkKnobView("nvfp4Wide", edgeRows(29105, 7168), true, "edge rows 10x7168", TAKEN);
    await checkKnobView("nvfp4Wide", edgeRows(29106, 576), true, "edge rows 10x576", TAKEN);
    // the smallest clamp the config allows (6 · 2^-126): tiny groups get e4m3 byte 0 and an infinite inverse
    config.amaxClamp["e2m1/e4m3sf"] = 6 * 2 ** -126;
    await checkKnobView("nvfp4Wide", edgeRows(29107, 1024), true, "edge rows 10x1024, clamp 6·2^-126", TAKEN);
    config.amaxClamp["e2m1/e4m3sf"] = savedClamp;
    // the large shapes: one layout each
    await sweepKnobViews("nvfp4Wide", [29101, 29102], TAKEN, [["nvfp4-row"], ["nvfp4-col"]]);
  } finally {
    perTokenLaunchTuning.nvfp4Wide = saved;
    perTokenLaunchTuning.nvfp4ColTiles = savedCol;
    config.amaxClamp["e2m1/e4m3sf"] = savedClamp;
  }
});

gpuTest("nvfp4Wide on: options the form does not take keep main's kernels (fp32 sf, g16 roundSf, g32 e4m3 sf, e4m3 data, sf only), and the knob is on by default (seed 29108)", () => {
  assert.equal(perTokenLaunchTuning.nvfp4Wide, true, "nvfp4Wide is on by default (since round 29's A/B)");
  checkKnobLeavesOthers("nvfp4Wide", 29108, [
    [{ fmt: "e2m1", numPerChannels: 16 }, "bf16_e2m1_g16_u4"],
    [{ fmt: "e2m1", numPerChannels: 16, roundSf: true }, "bf16_e2m1_g16_u4"],
    [{ fmt: "e2m1", numPerChannels: 32, useE4m3Sf: true }, "bf16_e2m1_g32_u4"],
    [{ fmt: "e4m3", numPerChannels: 16, useE4m3Sf: true }, "bf16_e4m3_g16"],
  ], { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true }, { not: FORM });
});

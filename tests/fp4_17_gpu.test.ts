/**
 * Round 17 (docs/perf-notes/perf17-fp4.md): `tk_per_token_cast__bf16_e2m1_g16_lw` (NVFP4; perTokenLaunchTuning.
 * e2m1LaneWide, the default since the A/B; MXFP4's `_g32_lw` lost and is not built, so MXFP4 keeps `_g32_u4sca` with
 * the knob on), against the CPU reference byte for byte on both output allocations (data and
 * sf, padding included) and against main's `_g16_u4` / `_g32_u4sca` with the knob off: NVFP4 with row- and
 * column-major e4m3 sf, MXFP4 with every roundSf layout (fp32 row / col, packed UE8M0 row / col), 0 rows, 1 row,
 * rows whose last warp unit has dead lanes (H = 576, 960, 7168 + 64: 72, 120, 904 chunks), units past the last row
 * (dead warps: 1 × 64 runs one unit in a block of 8 warps), strided and 16-byte-offset views (the knob's kernel),
 * unaligned views (main's kernels: the knob never applies), every bf16 pattern shuffled into groups, NaN / ±Inf / ±0 /
 * subnormal rows, rounding ties, 3000, 8192 × 7168 (the bench's shape), replay with the knob flipped. Options the
 * form does not take (fp32 sf, groups of 32 without roundSf, perTokenCastWithSfOnly) keep main's kernels with the
 * knob on. mxfp4Wide, nvfp4Wide and nvfp4ColTiles (rounds 26, 29 and 30, the defaults since) are off in the first test. The symbol of every launch is
 * asserted (perTokenLastLaunch), so a silent fallback fails; the form has no
 * PDL variant (its launch never carries the attribute, PDL on or off). Skips without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { gpuTest } from "./harness.ts";
import { allPatterns, checkKnobLeavesOthers, checkKnobView, type KnobLayout, sweepKnobViews } from "./e2m1_knob_util.ts";

/**
 * The option sets: [label, options, main's symbol, the symbol with the knob on] (MXFP4: `_g32_lw` lost its A/B and is
 * not built, so the knob leaves it on `_g32_u4sca`).
 */
const TAKEN: readonly KnobLayout[] = [
  ["nvfp4-row", { numPerChannels: 16, useE4m3Sf: true }, "bf16_e2m1_g16_u4", "bf16_e2m1_g16_lw"],
  ["nvfp4-col", { numPerChannels: 16, useE4m3Sf: true, useTmaAlignedColMajorSf: true }, "bf16_e2m1_g16_u4", "bf16_e2m1_g16_lw"],
  ["mxfp4-fp32-row", { numPerChannels: 32, roundSf: true }, "bf16_e2m1_g32_u4sca", "bf16_e2m1_g32_u4sca"],
  ["mxfp4-fp32-col", { numPerChannels: 32, roundSf: true, useTmaAlignedColMajorSf: true }, "bf16_e2m1_g32_u4sca", "bf16_e2m1_g32_u4sca"],
  ["mxfp4-packed-row", { numPerChannels: 32, roundSf: true, usePackedUe8m0: true }, "bf16_e2m1_g32_u4sca", "bf16_e2m1_g32_u4sca"],
  [
    "mxfp4-packed-col",
    { numPerChannels: 32, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true },
    "bf16_e2m1_g32_u4sca",
    "bf16_e2m1_g32_u4sca",
  ],
];

gpuTest("perTokenCast bf16 → e2m1 through _g16_lw (e2m1LaneWide) = reference = _g16_u4; MXFP4 stays on _g32_u4sca: NVFP4 row / col sf, MXFP4 every roundSf layout, 0 / 1 rows, dead lanes and warps, strided, 16-byte-offset and unaligned views, every bf16 pattern, specials, 3000 and 8192 × 7168, replay (seeds 17101, 17102)", async () => {
  const saved = perTokenLaunchTuning.e2m1LaneWide, savedMx = perTokenLaunchTuning.mxfp4Wide;
  const savedNv = perTokenLaunchTuning.nvfp4Wide, savedCol = perTokenLaunchTuning.nvfp4ColTiles;
  // the later forms (round 26's mxfp4Wide, round 29's nvfp4Wide, round 30's nvfp4ColTiles, all defaults) are tests/fp4_26_gpu.test.ts's and
  // tests/nvfp4_29_gpu.test.ts's subjects: here they are off, so NVFP4 shows `_g16_lw` and MXFP4 that e2m1LaneWide
  // leaves it on `_g32_u4sca`
  perTokenLaunchTuning.mxfp4Wide = false;
  perTokenLaunchTuning.nvfp4Wide = false;
  perTokenLaunchTuning.nvfp4ColTiles = false;
  try {
    await checkKnobView("e2m1LaneWide", allPatterns(17103, 8, 8192), true, "every bf16 pattern 8x8192", TAKEN);
    await checkKnobView("e2m1LaneWide", allPatterns(17104, 72, 960), true, "every bf16 pattern 72x960", TAKEN);
    // the large shapes: one NVFP4 and one MXFP4 layout each
    await sweepKnobViews("e2m1LaneWide", [17101, 17102], TAKEN, [["nvfp4-row", "nvfp4-col"], ["mxfp4-packed-row", "nvfp4-col"]]);
  } finally {
    perTokenLaunchTuning.e2m1LaneWide = saved;
    perTokenLaunchTuning.mxfp4Wide = savedMx;
    perTokenLaunchTuning.nvfp4Wide = savedNv;
    perTokenLaunchTuning.nvfp4ColTiles = savedCol;
  }
});

gpuTest("e2m1LaneWide on: options the form does not take keep main's kernels (fp32 sf g16, g32 without roundSf, sf only), and the knob is on by default (seed 17105)", () => {
  assert.equal(perTokenLaunchTuning.e2m1LaneWide, true, "e2m1LaneWide is on by default (round 17)");
  checkKnobLeavesOthers("e2m1LaneWide", 17105, [
    [{ fmt: "e2m1", numPerChannels: 16 }, "bf16_e2m1_g16_u4"],
    [{ fmt: "e2m1", numPerChannels: 32 }, "bf16_e2m1_g32_u4"],
    [{ fmt: "e2m1", numPerChannels: 16, roundSf: true }, "bf16_e2m1_g16_u4"],
  ], { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true }, { is: "bf16_e2m1_g16_u4" });
});

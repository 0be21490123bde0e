/**
 * Round 14 (docs/perf-notes/perf14-ncast.md): `tk_norm_forward__bf16_e4m3_g<N>_br4w` (normLaunchTuning.castWarpBound:
 * `_br4a` with step 4 + the cast's loop bounded per warp) against the CPU reference, byte for byte on every output
 * allocation (data, sf, outBf16, rstd), with the kernel that ran and its PDL flag checked after every device call:
 * groups of 32 and 128, H with partly live / wholly dead warps in the last iteration and rows narrower than a warp's
 * chunks, every fp32 / packed sf layout, weight or not, outScale 1 / 0.3, outBf16, 2-D / 3-D, padded strides, 1 / 7 /
 * 300 / 3000 rows, grid caps 0 / 1 / 3, NaN / ±Inf / subnormal / huge rows, PDL on and off; the knob off runs `_br4a`.
 * Flag combinations drawn pairwise-ish from a seeded stream. Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { castFormBenchShape, castFormSweep, compareOn, rows, withCastForm } from "./ncast_rows_util.ts";
import { gpuTest, rng } from "./harness.ts";

gpuTest(
  `_e4m3_g<N>_br4w (castWarpBound) = reference: groups 32 / 128, partly live and dead warps, every fp32 sf layout, weight, outScale, outBf16, 2-D / 3-D, strides, rows, grid caps, special rows, PDL (seed 14201)`,
  () => castFormSweep("_br4w", 14201, { weight: 0.7, outScale1: 0.5, specialEvery: 4 }),
);

gpuTest(
  `_br4w at the bench's shape 3000 × 7168 (packed UE8M0, weight, outScale 1; g32 / g128, PDL on and off), and the knob off runs _br4a (seed 14202)`,
  () => {
    const rand = rng(14202);
    castFormBenchShape("_br4w", rand);
    for (const npc of [32, 128] as const) {
      withCastForm(
        "_br4a",
        0,
        () =>
          compareOn(
            rows(rand, 0, 7, 2176, 2176, false),
            null,
            0.3,
            { fmt: "e4m3", numPerChannels: npc },
            `tk_norm_forward__bf16_e4m3_g${npc}_br4a`,
            `default g${npc}`,
          ),
      );
    }
    assert.equal(normLaunchTuning.castWarpBound, true, "castWarpBound is on by default (round 14)");
  },
);

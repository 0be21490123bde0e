/**
 * Round 15 (docs/perf-notes/perf15-ncast.md): `tk_norm_forward__bf16_e4m3_g<N>_br4x` (normLaunchTuning.castLeanLoop:
 * `_br4w` with a leaner bench copy of step 4 + the cast: UE8M0 exponent from amax's bits, bf16x2 products by the
 * power-of-two inverse, packed sf words stored whole) against the CPU reference, byte for byte on every output
 * allocation (data, sf, outBf16, rstd), with the kernel that ran and its PDL flag checked after every device call:
 * groups of 32 and 128, H with partly live / wholly dead warps and rows narrower than a warp's chunks, every fp32 /
 * packed sf layout (the packed ones, with a weight and outScale 1, run the lean copy), weight or not, outScale 1 / 0.3,
 * outBf16, 2-D / 3-D, padded strides, 1 / 7 / 300 / 3000 rows, grid caps 0 / 1 / 3, NaN / ±Inf / subnormal / huge
 * rows, PDL on and off, the smallest amax clamp (the division fallback below 2^-103); the knob off runs `_br4w`.
 * Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { config } from "../core/config.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { castFormBenchShape, castFormSweep, compareOn, rows, weightOf, withCastForm } from "./ncast_rows_util.ts";
import { gpuTest, rng } from "./harness.ts";
import { SF_LAYOUTS_FP32 } from "./gpu_util.ts";

gpuTest(
  `_e4m3_g<N>_br4x (castLeanLoop) = reference: groups 32 / 128, partly live and dead warps, every fp32 / packed sf layout, weight, outScale, outBf16, 2-D / 3-D, strides, rows, grid caps, special rows, PDL (seed 15201)`,
  // mostly the bench copy's case (a weight, outScale 1) on the packed layouts
  () => castFormSweep("_br4x", 15201, { weight: 0.85, outScale1: 0.75, specialEvery: 3 }),
);

gpuTest(
  `_br4x with the smallest amax clamp (448·2^-126: tiny and zero groups take the division fallback), packed layouts, special rows (seed 15203)`,
  () => {
    const rand = rng(15203);
    const saved = config.amaxClamp.e4m3;
    config.amaxClamp.e4m3 = 448 * 2 ** -126;
    try {
      withCastForm("_br4x", 0, () => {
        for (const H of [1152, 4224, 7168]) {
          for (const npc of [32, 128] as const) {
            for (const [name, sf] of SF_LAYOUTS_FP32.filter(([k]) => k.startsWith("packed"))) {
              const x = rows(rand, 0, 40, H, H, true);
              const d = x.data as Uint16Array;
              for (let i = 0; i < 3 * H; i++) d[10 * H + i] = i % 7 === 0 ? 0x8000 : 0; // rows 10–12: ±0 only
              for (let i = 0; i < H; i++) d[20 * H + i] = i % 2 ? 0x0001 : 0x8003; // row 20: bf16 subnormals only
              compareOn(
                x,
                weightOf(rand, H),
                1,
                { fmt: "e4m3", numPerChannels: npc, withOutBf16: H === 4224, ...sf },
                `tk_norm_forward__bf16_e4m3_g${npc}_br4x`,
                `clamp-min ${name} g${npc} H ${H}`,
              );
            }
          }
        }
      });
    } finally {
      config.amaxClamp.e4m3 = saved;
    }
  },
);

gpuTest(
  `_br4x at the bench's shape 3000 × 7168 (packed UE8M0, weight, outScale 1; g32 / g128, PDL on and off), and the knob off runs _br4w (seed 15202)`,
  () => {
    const rand = rng(15202);
    castFormBenchShape("_br4x", rand);
    for (const npc of [32, 128] as const) {
      withCastForm(
        "_br4w",
        0,
        () =>
          compareOn(
            rows(rand, 0, 7, 2176, 2176, false),
            weightOf(rand, 2176),
            1,
            { fmt: "e4m3", numPerChannels: npc, roundSf: true, usePackedUe8m0: true },
            `tk_norm_forward__bf16_e4m3_g${npc}_br4w`,
            `default g${npc}`,
          ),
      );
    }
    assert.equal(normLaunchTuning.castLeanLoop, true, "the default is _br4x (round 15)");
  },
);

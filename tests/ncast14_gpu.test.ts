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
import { compareOn, rows, weightOf } from "./ncast_rows_util.ts";
import { gpuTest, rng } from "./harness.ts";
import { SF_LAYOUTS_FP32, withPdl } from "./gpu_util.ts";

/** Runs f with the row forms from any row count, castWarpBound = `on` (castLeanLoop off) and grid cap `blocks`; restores the knobs. */
function withKnob<T>(on: boolean, blocks: number, f: () => T): T {
  const t = normLaunchTuning;
  const prev = [
    t.castLeanLoop,
    t.castWarpBound,
    t.castBulkRows,
    t.forwardBlocksPerSm,
    t.forwardWarpRowsMinRowsPerSm,
    t.teamThreads,
  ] as const;
  t.castLeanLoop = false; // _br4w itself, not round 15's _br4x
  t.castWarpBound = on;
  t.castBulkRows = true;
  t.forwardBlocksPerSm = blocks;
  t.forwardWarpRowsMinRowsPerSm = 0;
  t.teamThreads = 0;
  try {
    return f();
  } finally {
    [t.castLeanLoop, t.castWarpBound, t.castBulkRows, t.forwardBlocksPerSm, t.forwardWarpRowsMinRowsPerSm, t.teamThreads] = prev;
  }
}

// H: 128 / 256 (K = 8 / 16 < 32: one partly live warp, three wholly dead ones that still run their one iteration,
// J = 1), 512 (K = 32: warp 0 only), 1152 (K = 72, J = 1: warps 0–1 live, warp 2 partly, warp 3 dead), 2176 (K = 136, J = 2: j = 1 partly live in warp 0, dead in 1–3),
// 4224 (K = 264, J = 4: j = 2 partly live in warp 0, j = 3 dead everywhere), 7168 (K = 448: j = 3 live in warps 0–1,
// dead in 2–3), 8192 (K = 512: all live)
const HS = [128, 256, 512, 1152, 2176, 4224, 7168, 8192];

gpuTest(
  `_e4m3_g<N>_br4w (castWarpBound) = reference: groups 32 / 128, partly live and dead warps, every fp32 sf layout, weight, outScale, outBf16, 2-D / 3-D, strides, rows, grid caps, special rows, PDL (seed 14201)`,
  () => {
    const rand = rng(14201);
    let n = 0;
    for (const H of HS) {
      for (const npc of [32, 128] as const) {
        for (const [name, sf] of SF_LAYOUTS_FP32) {
          const blocks = [0, 1, 3][n % 3];
          const pdl = n % 2 === 0;
          const T = [1, 7, 300, 7][(n >> 1) % 4];
          const B = n % 5 === 0 ? 2 : 0;
          const weight = rand() < 0.7;
          const withOutBf16 = rand() < 0.5;
          const outScale = rand() < 0.5 ? 1 : 0.3;
          const stride = H + (rand() < 0.5 ? 0 : 8 * Math.ceil(rand() * 4));
          const special = n % 4 === 1;
          n++;
          const x = rows(rand, B, T, H, stride, special);
          const w = weight ? weightOf(rand, H) : null;
          const label =
            `br4w blocks/SM ${blocks} pdl ${pdl} ${name} g${npc} B ${B} T ${T} H ${H} stride ${stride} weight ${weight} outScale ${outScale} outBf16 ${withOutBf16} special ${special}`;
          withPdl(
            pdl,
            () =>
              withKnob(true, blocks, () =>
                compareOn(
                  x,
                  w,
                  outScale,
                  { fmt: "e4m3", numPerChannels: npc, withOutBf16, ...sf },
                  `tk_norm_forward__bf16_e4m3_g${npc}_br4w`,
                  label,
                )),
          );
        }
      }
    }
  },
);

gpuTest(
  `_br4w at the bench's shape 3000 × 7168 (packed UE8M0, weight, outScale 1; g32 / g128, PDL on and off), and the knob off runs _br4a (seed 14202)`,
  () => {
    const rand = rng(14202);
    const x = rows(rand, 0, 3000, 7168, 7168, true);
    const w = weightOf(rand, 7168);
    for (const npc of [32, 128] as const) {
      for (const pdl of [false, true]) {
        const o = {
          fmt: "e4m3" as const,
          numPerChannels: npc,
          roundSf: true,
          usePackedUe8m0: true,
          useTmaAlignedColMajorSf: true,
        };
        withPdl(
          pdl,
          () =>
            withKnob(
              true,
              0,
              () => compareOn(x, w, 1, o, `tk_norm_forward__bf16_e4m3_g${npc}_br4w`, `3000 br4w g${npc} pdl ${pdl}`),
            ),
        );
      }
      withKnob(
        false,
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

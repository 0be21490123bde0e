/**
 * Round 29 (docs/perf-notes/perf29-nvfp4.md): `tk_per_token_cast__bf16_e2m1_g16_nvw` (NVFP4: groups of 16, e4m3 sf;
 * perTokenLaunchTuning.nvfp4Wide, the default since its A/B), against the CPU reference byte for byte on both output
 * allocations (data and sf, padding included) and against main's `_g16_lw` with the knob off, for row- and column-major sf: 0
 * rows, 1 row, rows whose last warp unit has dead lanes (H = 576, 960, 7168 + 64), dead warps (1 × 64), strided and
 * 16-byte-offset views (the knob's kernel), unaligned views (main's kernel: the knob never applies), every bf16
 * pattern shuffled into groups (NaN / ±Inf groups take the kernel's scalar path), edge rows (all zero and
 * subnormal-only: e4m3 byte below 0x08, scalar path; amax around 6 · 2^-6 and around 6 · 416 … 6 · 448: the ends of
 * the fast path's bytes [0x08, 0x7D], mixed in one lane; near the bf16 maximum: saturated sf), groups built on exact
 * e2m1 midpoints times their own e4m3 scale (the double-rounding cases), the smallest allowed amax clamp (e4m3 byte
 * 0, an infinite inverse), 3000 and 8192 × 7168, replay with the knob flipped, PDL on and off (the form never
 * carries the attribute). Options the form does not take keep main's kernels with the knob on. The symbol of every
 * launch is asserted (perTokenLastLaunch). Skips without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { config, type HostTensor } from "../mod.ts";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { gpuTest, rng } from "./harness.ts";
import { randomInput } from "./gpu_util.ts";
import { allPatterns, checkKnobLeavesOthers, checkKnobView, type KnobLayout, sweepKnobViews } from "./e2m1_knob_util.ts";

const MAIN = "bf16_e2m1_g16_lw";
const FORM = "bf16_e2m1_g16_nvw";
/** Main's symbol for views that are not 16-byte aligned, with the knob on or off. */
const UNALIGNED = "bf16_e2m1_g16_u4";

/** The NVFP4 layouts the knob takes. */
const TAKEN: readonly KnobLayout[] = [
  ["nvfp4-row", { numPerChannels: 16, useE4m3Sf: true }, MAIN, FORM, UNALIGNED],
  ["nvfp4-col", { numPerChannels: 16, useE4m3Sf: true, useTmaAlignedColMajorSf: true }, MAIN, FORM, UNALIGNED],
];

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** The bf16 pattern of a value exactly representable in bf16. */
function bf16Of(v: number): number {
  f32[0] = v;
  return u32[0] >>> 16;
}

/** Value of e4m3 byte c (normal: c ≥ 0x08). */
function e4m3Value(c: number): number {
  return (1 + (c & 7) / 8) * 2 ** ((c >> 3) - 7);
}

/**
 * Rows at the ends of the fast path's e4m3 bytes [0x08, 0x7D] and on the double-rounding cases: all ±0; subnormal
 * bf16 only; groups with amax in [0.05, 0.15] (around 6 · 2^-6: bytes 0x04 … 0x0C) and in [2300, 2900] (around
 * 6 · 416: bytes 0x7C … 0x7E, saturated above 6 · 464), so fast and scalar groups meet in one lane; near the bf16
 * maximum; groups whose amax is 6 · s for an e4m3 normal s (sf = s exactly) and whose other values are ±m · s for
 * the e2m1 midpoints m (fl32(m · s · fl(1 / s)) lands on m or not, by s: ties to even or not); then random rows.
 * Signs random.
 */
function edgeRows(seed: number, H: number): HostTensor {
  const rand = rng(seed);
  const x = randomInput(rand, 10, H, "bf16");
  const d = x.data as Uint16Array;
  const sign = () => (rand() < 0.5 ? 0x8000 : 0);
  const mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5];
  for (let j = 0; j < H; j++) {
    d[j] = sign();
    d[H + j] = sign() | (1 + Math.floor(rand() * 0x7f));
    d[4 * H + j] = sign() | (0x7e80 + Math.floor(rand() * 0xff));
  }
  for (let g = 0; g < H / 16; g++) {
    // rows 2 and 3: a group's amax A drawn per group, its other values in [0, A]
    const lo = 0.05 + rand() * 0.1, hi = 2300 + rand() * 600;
    for (let k = 0; k < 16; k++) {
      d[2 * H + 16 * g + k] = sign() | bf16Of(Math.fround(k === 0 ? lo : rand() * lo));
      d[3 * H + 16 * g + k] = sign() | bf16Of(Math.fround(k === 0 ? hi : rand() * hi));
    }
    const s = e4m3Value(0x08 + Math.floor(rand() * (0x7e - 0x08)));
    for (let k = 0; k < 16; k++) {
      d[5 * H + 16 * g + k] = sign() | bf16Of(k === 0 ? 6 * s : mids[Math.floor(rand() * mids.length)] * s);
    }
  }
  return x;
}

gpuTest("perTokenCast bf16 → NVFP4 through _g16_nvw (nvfp4Wide) = reference = _g16_lw: row / col sf, 0 / 1 rows, dead lanes and warps, strided, 16-byte-offset and unaligned views, every bf16 pattern, edge, midpoint and special rows, the smallest clamp, 3000 and 8192 × 7168, replay (seeds 29101, 29102)", async () => {
  const saved = perTokenLaunchTuning.nvfp4Wide;
  const savedClamp = config.amaxClamp["e2m1/e4m3sf"];
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

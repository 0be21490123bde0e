/**
 * Round 30 (docs/perf-notes/perf30-fp4c.md): `tk_per_token_cast__bf16_e2m1_g16_nvc` (NVFP4 with column-major,
 * TMA-aligned e4m3 sf; perTokenLaunchTuning.nvfp4ColTiles, default off), against the CPU reference byte for byte on
 * both output allocations (data and sf, the padding rows included) and against main's `_g16_nvw` (`_g16_u4` with
 * nvfp4Wide off; `_g16_lw` until trim32) with the knob off: 0 rows, 1 row, row counts around the kernel's 16-row units
 * (2, 3, 5, 7, 9, 11, 16, 17, 31, 33, 48, 66, 257, 3000, 8192: partial last units, padding rows written by the units),
 * H = 64 … 73728 (one 64-column tile to 1152), strided and 16-byte-offset views (the knob's kernel), unaligned views
 * (main's `_g16_u4`), every bf16 pattern shuffled into groups (NaN / ±Inf groups: the lane body's scalar path), round
 * 29's edge rows, the smallest amax clamp, replay with the knob flipped, PDL on and off (never the attribute).
 * Row-major sf keeps `_g16_nvw` with the knob on; out.sf views whose base is not a multiple of 4 bytes keep `_g16_nvw`
 * (bytes outside the view untouched); options the form does not take keep main's kernels. The symbol of every launch is
 * asserted. Skips without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { config, type HostTensor, perTokenCast, zeros } from "../mod.ts";
import { DeviceTensor } from "../core/tensor.ts";
import { perTokenLastLaunch, perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";
import { ptcFn, withSpecials } from "./per_token_rows.ts";
import {
  allPatterns,
  checkKnobLeavesOthers,
  checkKnobView,
  edgeRows,
  type KnobLayout,
  sweepKnobViews,
} from "./e2m1_knob_util.ts";

const NVW = "bf16_e2m1_g16_nvw";
const FORM = "bf16_e2m1_g16_nvc";
/** Main's symbol for views that are not 16-byte aligned, with the knob on or off. */
const UNALIGNED = "bf16_e2m1_g16_u4";

const COL = { numPerChannels: 16, useE4m3Sf: true, useTmaAlignedColMajorSf: true } as const;
const ROW = { numPerChannels: 16, useE4m3Sf: true } as const;

/** Column-major sf: the form; row-major sf: `_g16_nvw` whatever the knob. */
const TAKEN: readonly KnobLayout[] = [
  ["nvfp4-col", COL, NVW, FORM, UNALIGNED],
  ["nvfp4-row", ROW, NVW, NVW, UNALIGNED],
];

gpuTest("perTokenCast bf16 → NVFP4, column-major sf, through _g16_nvc (nvfp4ColTiles) = reference = _g16_nvw: 0 / 1 / 16k ± 1 rows, dead rows of the last unit, strided, 16-byte-offset and unaligned views, every bf16 pattern, edge rows, the smallest clamp, 3000 and 8192 × 7168, replay; with nvfp4Wide off against _g16_u4 (seeds 30101 … 30108)", async () => {
  const saved = perTokenLaunchTuning.nvfp4ColTiles;
  const savedWide = perTokenLaunchTuning.nvfp4Wide;
  const savedClamp = config.amaxClamp["e2m1/e4m3sf"];
  try {
    await checkKnobView("nvfp4ColTiles", allPatterns(30103, 8, 8192), true, "every bf16 pattern 8x8192", TAKEN);
    await checkKnobView("nvfp4ColTiles", allPatterns(30104, 72, 960), true, "every bf16 pattern 72x960", TAKEN);
    await checkKnobView("nvfp4ColTiles", edgeRows(30105, 7168), true, "edge rows 10x7168", TAKEN);
    await checkKnobView("nvfp4ColTiles", edgeRows(30106, 576), true, "edge rows 10x576", TAKEN);
    // row counts at a unit's edges: a whole unit, one row over, one row short of two
    const rand = rng(30107);
    for (const [T, H] of [[16, 7168], [17, 1024], [31, 64], [48, 2048]]) {
      await checkKnobView("nvfp4ColTiles", withSpecials(randomInput(rand, T, H, "bf16")), true, `${T}x${H}`, TAKEN);
    }
    config.amaxClamp["e2m1/e4m3sf"] = 6 * 2 ** -126;
    await checkKnobView("nvfp4ColTiles", edgeRows(30108, 1024), true, "edge rows 10x1024, clamp 6·2^-126", TAKEN);
    config.amaxClamp["e2m1/e4m3sf"] = savedClamp;
    await sweepKnobViews("nvfp4ColTiles", [30101, 30102], TAKEN, [["nvfp4-col"], ["nvfp4-col"]]);
    // the form does not depend on nvfp4Wide: with it off, main's column-major kernel is `_g16_u4`
    perTokenLaunchTuning.nvfp4Wide = false;
    await checkKnobView("nvfp4ColTiles", edgeRows(30109, 2048), true, "edge rows 10x2048, nvfp4Wide off", [
      ["nvfp4-col", COL, UNALIGNED, FORM],
    ]);
  } finally {
    perTokenLaunchTuning.nvfp4ColTiles = saved;
    perTokenLaunchTuning.nvfp4Wide = savedWide;
    config.amaxClamp["e2m1/e4m3sf"] = savedClamp;
  }
});

gpuTest("nvfp4ColTiles: on by default (since its A/B); out.sf views at byte offsets 1, 2, 3 keep _g16_nvw, 4 and 16 take _g16_nvc, bytes outside untouched; options the form does not take keep main's kernels (seeds 30110, 30111)", () => {
  assert.equal(perTokenLaunchTuning.nvfp4ColTiles, true, "nvfp4ColTiles is on by default (since round 30's A/B)");
  const saved = perTokenLaunchTuning.nvfp4ColTiles;
  const x = withSpecials(randomInput(rng(30110), 37, 2048, "bf16"));
  const dx = uploadView(x);
  try {
    perTokenLaunchTuning.nvfp4ColTiles = true;
    const o = { fmt: "e2m1", ...COL } as const;
    const [, cs] = perTokenCast(x, o) as [HostTensor, HostTensor];
    const want = storageBytes(cs);
    for (const off of [1, 2, 3, 4, 16]) {
      const whole = zeros([want.length + 32], "uint8", { device: 0 }) as DeviceTensor;
      const sf = new DeviceTensor(whole.storage, "e4m3", cs.shape, cs.strides, off);
      try {
        const [d, s] = perTokenCast(dx, { ...o, out: { sf } }) as [DeviceTensor, DeviceTensor];
        assert.equal(perTokenLastLaunch().fn, ptcFn(off % 4 === 0 ? FORM : NVW), `out.sf at byte ${off}: symbol`);
        const got = readAllocation(whole);
        assert.deepEqual(got.subarray(off, off + want.length), want, `out.sf at byte ${off}: sf bytes`);
        const outside = [...got.subarray(0, off), ...got.subarray(off + want.length)];
        assert.ok(outside.every((b) => b === 0), `out.sf at byte ${off}: bytes outside untouched`);
        assert.equal(s, sf, "the given sf is returned");
        dispose(d);
      } finally {
        dispose(sf, whole);
      }
    }
  } finally {
    perTokenLaunchTuning.nvfp4ColTiles = saved;
    dispose(dx);
  }
  const MX = { numPerChannels: 32, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true };
  checkKnobLeavesOthers("nvfp4ColTiles", 30111, [
    [{ fmt: "e2m1", numPerChannels: 16, useTmaAlignedColMajorSf: true }, UNALIGNED],
    [{ fmt: "e2m1", numPerChannels: 16, roundSf: true, useTmaAlignedColMajorSf: true }, UNALIGNED],
    [{ fmt: "e2m1", numPerChannels: 32, useE4m3Sf: true, useTmaAlignedColMajorSf: true }, "bf16_e2m1_g32_u4"],
    [{ fmt: "e2m1", ...MX }, "bf16_e2m1_g32_mxw"],
    [{ fmt: "e4m3", numPerChannels: 16, useE4m3Sf: true, useTmaAlignedColMajorSf: true }, "bf16_e4m3_g16"],
  ], { fmt: "e2m1", ...COL }, { not: FORM });
});

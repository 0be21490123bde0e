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
 * knob on. mxfp4Wide (round 26, MXFP4's default since) is off in the first test. The symbol of every launch is
 * asserted (perTokenLastLaunch), so a silent fallback fails; the form has no
 * PDL variant (its launch never carries the attribute, PDL on or off). Skips without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type HostTensor, perTokenCast, perTokenCastWithSfOnly } from "../mod.ts";
import { perTokenLastLaunch, perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, shuffledBf16Patterns, sameAllocation, samePair, uploadView, withPdl } from "./gpu_util.ts";
import { ptcFn, withSpecials } from "./per_token_rows.ts";

/**
 * The option sets: [label, options, main's symbol, the symbol with the knob on] (MXFP4: `_g32_lw` lost its A/B and is
 * not built, so the knob leaves it on `_g32_u4sca`).
 */
const TAKEN: readonly [string, Record<string, unknown>, string, string][] = [
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

/** [T, H] bf16 rows holding every one of the 65536 bf16 patterns, shuffled (T · H ≥ 65536), rest random finite. */
function allPatterns(seed: number, T: number, H: number): HostTensor {
  const rand = rng(seed);
  const x = randomInput(rand, T, H, "bf16");
  const d = x.data as Uint16Array;
  d.set(shuffledBf16Patterns(rand), 0);
  return x;
}

/** Runs one view through main's kernel (knob off), the form (knob on), replay, and the knob off again. */
async function checkView(x: HostTensor, aligned: boolean, what: string, layouts = TAKEN): Promise<void> {
  const dx = uploadView(x);
  const T = x.shape[0];
  try {
    for (const [name, extra, mainSym, formSym] of layouts) {
      const o = { fmt: "e2m1", ...extra } as const;
      const c = perTokenCast(x, o as never);
      for (const pdl of [false, true]) {
        await withPdl(pdl, () => {
          const label = `${what} ${name} pdl ${pdl}`;
          perTokenLaunchTuning.e2m1LaneWide = false;
          const main = perTokenCast(dx, o as never);
          if (T > 0) assert.equal(perTokenLastLaunch().fn, ptcFn(mainSym), `${label}: main's symbol`);
          perTokenLaunchTuning.e2m1LaneWide = true;
          const got = perTokenCast(dx, o as never);
          if (T > 0) {
            const l = perTokenLastLaunch();
            assert.equal(l.fn, ptcFn(aligned ? formSym : mainSym), `${label}: symbol`);
            assert.equal(l.pdl, false, `${label}: no PDL attribute`);
          }
          samePair(got, c, label);
          samePair(main, c, `${label} (main's kernel)`);
          samePair(perTokenCast(dx, o as never), c, `${label} (again: replay)`);
          perTokenLaunchTuning.e2m1LaneWide = false;
          samePair(perTokenCast(dx, o as never), c, `${label} (knob off on the replayed options)`);
          if (T > 0) assert.equal(perTokenLastLaunch().fn, ptcFn(mainSym), `${label}: knob off`);
        });
      }
    }
  } finally {
    dispose(dx);
  }
}

gpuTest("perTokenCast bf16 → e2m1 through _g16_lw (e2m1LaneWide) = reference = _g16_u4; MXFP4 stays on _g32_u4sca: NVFP4 row / col sf, MXFP4 every roundSf layout, 0 / 1 rows, dead lanes and warps, strided, 16-byte-offset and unaligned views, every bf16 pattern, specials, 3000 and 8192 × 7168, replay (seeds 17101, 17102)", async () => {
  const saved = perTokenLaunchTuning.e2m1LaneWide, savedMx = perTokenLaunchTuning.mxfp4Wide;
  // MXFP4's own form (round 26's mxfp4Wide, the default) is tests/fp4_26_gpu.test.ts's subject: here it is off, so
  // MXFP4 shows that e2m1LaneWide leaves it on `_g32_u4sca`
  perTokenLaunchTuning.mxfp4Wide = false;
  try {
    await checkView(allPatterns(17103, 8, 8192), true, "every bf16 pattern 8x8192");
    await checkView(allPatterns(17104, 72, 960), true, "every bf16 pattern 72x960");
    for (const seed of [17101, 17102]) {
      const rand = rng(seed);
      // [T, H, row stride, element offset]
      const shapes: [number, number, number, number][] = seed === 17101
        ? [[0, 7168, 7168, 0], [1, 64, 64, 0], [1, 7168, 7168, 0], [3, 576, 577, 1], [5, 2048, 2048 + 8, 8], [7, 960, 968, 0],
          [33, 7168 + 64, 7168 + 64, 0], [257, 576, 576, 0], [3, 73728, 73728, 0], [3000, 7168, 7168, 0]]
        : [[2, 64, 128, 8], [9, 7168, 7168 + 128, 0], [66, 1024, 1024, 4], [11, 2048, 2048 + 4, 0], [8192, 7168, 7168, 0]];
      for (const [T, H, stride, off] of shapes) {
        let x = withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, "bf16", stride));
        if (off > 0) x = x.slice(0, 0, T).slice(1, off, H + off) as HostTensor;
        const aligned = off % 8 === 0 && stride % 8 === 0;
        // the large shapes: one NVFP4 and one MXFP4 layout each (the CPU reference dominates the time)
        const layouts = T >= 3000 ? TAKEN.filter(([n]) => n === (seed === 17101 ? "nvfp4-row" : "mxfp4-packed-row") || n === "nvfp4-col") : TAKEN;
        await checkView(x, aligned, `${T}x${H} stride ${stride} offset ${off}`, layouts);
      }
    }
  } finally {
    perTokenLaunchTuning.e2m1LaneWide = saved;
    perTokenLaunchTuning.mxfp4Wide = savedMx;
  }
});

gpuTest("e2m1LaneWide on: options the form does not take keep main's kernels (fp32 sf g16, g32 without roundSf, sf only), and the knob is on by default (seed 17105)", () => {
  assert.equal(perTokenLaunchTuning.e2m1LaneWide, true, "e2m1LaneWide is on by default (round 17)");
  const saved = perTokenLaunchTuning.e2m1LaneWide;
  const x = withSpecials(randomInput(rng(17105), 37, 2048, "bf16"));
  const dx = uploadView(x);
  try {
    perTokenLaunchTuning.e2m1LaneWide = true;
    for (const [o, sym] of [
      [{ fmt: "e2m1", numPerChannels: 16 }, "bf16_e2m1_g16_u4"],
      [{ fmt: "e2m1", numPerChannels: 32 }, "bf16_e2m1_g32_u4"],
      [{ fmt: "e2m1", numPerChannels: 16, roundSf: true }, "bf16_e2m1_g16_u4"],
    ] as const) {
      samePair(perTokenCast(dx, o), perTokenCast(x, o), `knob on ${JSON.stringify(o)}`);
      assert.equal(perTokenLastLaunch().fn, ptcFn(sym), `knob on ${JSON.stringify(o)}: symbol`);
    }
    const so = { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true } as const;
    const g = perTokenCastWithSfOnly(dx, so);
    try {
      sameAllocation(g, perTokenCastWithSfOnly(x, so), "knob on sf only");
    } finally {
      dispose(g);
    }
    assert.equal(perTokenLastLaunch().fn, ptcFn("bf16_e2m1_g16_u4"), "knob on sf only: symbol");
  } finally {
    perTokenLaunchTuning.e2m1LaneWide = saved;
    dispose(dx);
  }
});

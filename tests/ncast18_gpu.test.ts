/**
 * Round 18 (docs/perf-notes/perf18-ncast.md): `tk_norm_forward__bf16_e4m3_g<N>_br4y` (round 9's
 * `_br4a` trimmed in rounds 14, 15 and 18; round 18 made its bench copy of step 4 + the cast takes the |y| maximum by max.xorsign.abs.bf16x2, builds its addresses
 * from per-row bases and leaves by the warp vote alone) against the CPU reference, byte for byte on every output
 * allocation (data, sf, outBf16, rstd), with the kernel that ran and its PDL flag checked after every device call:
 * groups of 32 and 128, H with partly live / wholly dead warps and rows narrower than a warp's chunks, every fp32 /
 * packed sf layout (the packed ones, with a weight and outScale 1, run the trimmed copy), weight or not, outScale 1 /
 * 0.3, outBf16, 2-D / 3-D, padded strides, 1 / 7 / 300 / 3000 rows, grid caps 0 / 1 / 3 (a block's later rows), NaN /
 * ±Inf / subnormal / huge rows, PDL on and off, the smallest amax clamp (the division fallback); NaN products from
 * NaN weights inside finite rows (whole chunks, one half of every pair, single elements: the maximum's NaN handling);
 * (`_br4a` and its knob castWarpBound left in trim24.) (The round-14 and -15 files, ncast14 / ncast15, left with their kernels `_br4w` / `_br4x`;
 * their sweeps are this file's with other seeds, their clamp test is this file's second.) Skipped, and counted as skipped, without a GPU.
 * @module
 */
import { config } from "../core/config.ts";
import { castFormBenchShape, castFormSweep, compareOn, rows, weightOf, withCastForm } from "./ncast_rows_util.ts";
import { gpuTest, rng } from "./harness.ts";
import { SF_LAYOUTS_FP32, withPdl } from "./gpu_util.ts";

gpuTest(
  `_e4m3_g<N>_br4y = reference: groups 32 / 128, partly live and dead warps, every fp32 / packed sf layout, weight, outScale, outBf16, 2-D / 3-D, strides, rows, grid caps, special rows, PDL (seed 18201)`,
  // mostly the trimmed copy's case (a weight, outScale 1) on the packed layouts
  () => castFormSweep("_br4y", 18201, { weight: 0.85, outScale1: 0.75, specialEvery: 3 }),
);

gpuTest(
  `_br4y with NaN / ±Inf weights inside finite rows (NaN chunks, NaN low or high halves, single NaNs, negative and ±0 values) and the smallest amax clamp, packed layouts (seed 18203)`,
  () => {
    const rand = rng(18203);
    const saved = config.amaxClamp.e4m3;
    try {
      for (const clamp of [saved, 448 * 2 ** -126]) {
        config.amaxClamp.e4m3 = clamp;
        withCastForm("_br4y", 0, () => {
          for (const H of [1152, 4224, 7168]) {
            for (const npc of [32, 128] as const) {
              for (const [name, sf] of SF_LAYOUTS_FP32.filter(([k]) => k.startsWith("packed"))) {
                const x = rows(rand, 0, 24, H, H, false);
                const d = x.data as Uint16Array;
                for (let i = 0; i < 3 * H; i++) d[10 * H + i] = i % 7 === 0 ? 0x8000 : 0; // rows 10–12: ±0 only
                for (let i = 0; i < H; i++) d[20 * H + i] = i % 2 ? 0x0001 : 0x8003; // row 20: bf16 subnormals only
                for (let i = 0; i < H; i++) d[21 * H + i] |= 0x8000; // row 21: all negative
                const w = weightOf(rand, H);
                const wd = w.data as Uint16Array;
                for (let c = 0; c < H / 16; c++) {
                  const k = c % 9;
                  for (let e = 0; e < 16; e++) {
                    const i = 16 * c + e;
                    if (k === 1) wd[i] = [0x7fc0, 0xffc0, 0x7f81, 0xffff][e % 4]; // a whole NaN chunk
                    else if (k === 2 && e % 2 === 0) wd[i] = 0x7fc0; // NaN low halves
                    else if (k === 3 && e % 2 === 1) wd[i] = 0xffc1; // NaN high halves
                    else if (k === 4 && e === 5) wd[i] = 0x7fff; // one NaN
                    else if (k === 5 && e === 9) wd[i] = c % 2 ? 0x7f80 : 0xff80; // one ±Inf (the division path)
                    else if (k === 6 && e < 8) wd[i] = 0x8000; // −0 weights
                  }
                }
                for (const pdl of [false, true]) {
                  withPdl(pdl, () =>
                    compareOn(
                      x,
                      w,
                      1,
                      { fmt: "e4m3", numPerChannels: npc, withOutBf16: H === 4224, ...sf },
                      `tk_norm_forward__bf16_e4m3_g${npc}_br4y`,
                      `nan-weights clamp ${clamp} ${name} g${npc} H ${H} pdl ${pdl}`,
                    ));
                }
              }
            }
          }
        });
      }
    } finally {
      config.amaxClamp.e4m3 = saved;
    }
  },
);

gpuTest(
  `_br4y at the bench's shape 3000 × 7168 (packed UE8M0, weight, outScale 1; g32 / g128, PDL on and off) (seed 18202)`,
  () => castFormBenchShape("_br4y", rng(18202)),
);

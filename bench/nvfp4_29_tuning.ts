/**
 * perTokenCast bf16 → NVFP4 (e2m1 [1,16], e4m3 sf): main's `_g16_u4` against round 29's `_g16_nvw`
 * (per_token_cast_fp4_29.cu; docs/perf-notes/perf29-nvfp4.md; the default since its A/B; its A/B ran against round 17's
 * `_g16_lw`, the default then, which left the package in trim32), in one process, at 8192 and 16384 × 7168 (FP4_TOKENS,
 * comma-separated, for other sizes). Settings (perTokenLaunchTuning.nvfp4Wide, restored at the end): "main" off, "nvw"
 * on. Cases: the roofline's row-major e4m3 sf of bench/cases_more.ts, and column-major (TMA) e4m3 sf (align(T, 16) ·
 * H/16 sf bytes). Timing, byte check and exit codes: bench/e2m1_ab.ts.
 *
 * `deno run -A --no-check bench/nvfp4_29_tuning.ts` (or `bun bench/nvfp4_29_tuning.ts`).
 * @module
 */
import process from "node:process";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { runE2m1Ab } from "./e2m1_ab.ts";

// round 30's `_g16_nvc` (nvfp4ColTiles, the default since) takes column-major sf whatever nvfp4Wide says: off here,
// so the column-major case compares `_g16_lw` with `_g16_nvw` as round 29 did
perTokenLaunchTuning.nvfp4ColTiles = false;

const TOKENS = (process.env.FP4_TOKENS ?? "8192,16384").split(",").map(Number);
await runE2m1Ab("nvfp4_29_tuning", "nvfp4Wide", "nvw", [
  {
    name: "NVFP4 [1,16] e4m3 sf row",
    o: { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true },
    sfBytes: (T, H) => (T * H) / 16,
  },
  {
    name: "NVFP4 [1,16] e4m3 sf col",
    o: { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true, useTmaAlignedColMajorSf: true },
    sfBytes: (T, H) => (Math.ceil(T / 16) * 16 * H) / 16,
  },
], TOKENS);

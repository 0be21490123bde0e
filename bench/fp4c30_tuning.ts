/**
 * perTokenCast bf16 → NVFP4 (e2m1 [1,16], e4m3 sf) with column-major (TMA-aligned) sf: main's `_g16_nvw` against
 * round 30's `_g16_nvc` (per_token_cast_fp4_30.cu; docs/perf-notes/perf30-fp4c.md), in one process, at 8192 and
 * 16384 × 7168 (FP4_TOKENS, comma-separated, for other sizes). Settings (perTokenLaunchTuning.nvfp4ColTiles, restored
 * at the end): "main" off, "nvc" on. Case: column-major e4m3 sf (align(T, 16) · H/16 sf bytes); the row-major case
 * runs `_g16_nvw` in both settings and is left out. Timing, byte check and exit codes: bench/e2m1_ab.ts.
 *
 * `deno run -A --no-check bench/fp4c30_tuning.ts` (or `bun bench/fp4c30_tuning.ts`).
 * @module
 */
import process from "node:process";
import { runE2m1Ab } from "./e2m1_ab.ts";

const TOKENS = (process.env.FP4_TOKENS ?? "8192,16384").split(",").map(Number);
await runE2m1Ab("fp4c30_tuning", "nvfp4ColTiles", "nvc", [
  {
    name: "NVFP4 [1,16] e4m3 sf col",
    o: { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true, useTmaAlignedColMajorSf: true },
    sfBytes: (T, H) => (Math.ceil(T / 16) * 16 * H) / 16,
  },
], TOKENS);

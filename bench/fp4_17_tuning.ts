/**
 * perTokenCast bf16 → e2m1 (the roofline's two FP4 cases of bench/cases_more.ts: NVFP4 [1,16] row-major e4m3 sf, and
 * MXFP4 [1,32] packed UE8M0 column-major (TMA) sf), main's `_g16_u4` against the lane-wide `_g16_lw`
 * (per_token_cast_fp4_17.cu; docs/perf-notes/perf17-fp4.md; the default since its A/B), in one process, 8192 and
 * 16384 × 7168. Settings (perTokenLaunchTuning.e2m1LaneWide, restored at the end): "main" off, "lw" on. MXFP4's
 * `_g32_lw` lost here and is not built: its row is a control, the same kernel in both settings (`_g32_mxw` since
 * round 26, bench/fp4_26_tuning.ts). Timing, byte check and exit codes: bench/e2m1_ab.ts.
 *
 * `deno run -A --no-check bench/fp4_17_tuning.ts` (or `bun bench/fp4_17_tuning.ts`).
 * @module
 */
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { MXFP4_PACKED_COL, runE2m1Ab } from "./e2m1_ab.ts";

// round 29's `_g16_nvw` (nvfp4Wide, the default since) takes NVFP4 whatever e2m1LaneWide says: off here, so the NVFP4
// row compares `_g16_u4` with `_g16_lw` as round 17 did
perTokenLaunchTuning.nvfp4Wide = false;

const NVFP4_ROW = {
  name: "NVFP4 [1,16] e4m3 sf",
  o: { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true } as const,
  sfBytes: (T: number, H: number) => (T * H) / 16,
};
await runE2m1Ab("fp4_17_tuning", "e2m1LaneWide", "lw", [NVFP4_ROW, MXFP4_PACKED_COL], [8192, 16384]);

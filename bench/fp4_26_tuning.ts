/**
 * perTokenCast bf16 → MXFP4 (e2m1 [1,32], roundSf): main's `_g32_u4sca` against round 26's `_g32_mxw`
 * (per_token_cast_fp4_26.cu; docs/perf-notes/perf26-fp4.md; the default since its A/B), in one process, at 8192 and
 * 16384 × 7168 (FP4_TOKENS, comma-separated, for other sizes). Settings (perTokenLaunchTuning.mxfp4Wide, restored at
 * the end): "main" off, "mxw" on. Cases: the roofline's packed UE8M0 column-major (TMA) sf of bench/cases_more.ts,
 * and packed row-major. Timing, byte check and exit codes: bench/e2m1_ab.ts.
 *
 * `deno run -A --no-check bench/fp4_26_tuning.ts` (or `bun bench/fp4_26_tuning.ts`).
 * @module
 */
import process from "node:process";
import { MXFP4_PACKED_COL, MXFP4_PACKED_ROW, runE2m1Ab } from "./e2m1_ab.ts";

const TOKENS = (process.env.FP4_TOKENS ?? "8192,16384").split(",").map(Number);
await runE2m1Ab("fp4_26_tuning", "mxfp4Wide", "mxw", [MXFP4_PACKED_COL, MXFP4_PACKED_ROW], TOKENS);

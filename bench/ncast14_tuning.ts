/**
 * normForwardAndPerTokenCast bf16 → e4m3 without residual on aligned views (bench/cases_norm.ts's roofline case),
 * `_e4m3_g<N>_br4a` against round 14's `_e4m3_g<N>_br4w` (the cast loop bounded per warp;
 * docs/perf-notes/perf14-ncast.md), interleaved in one process by bench/ncast_ab.ts. Settings: "br4a"
 * (castWarpBound off), "br4w" (castWarpBound on, castLeanLoop off).
 *
 * `deno run -A --no-check bench/ncast14_tuning.ts` (or `bun bench/ncast14_tuning.ts`).
 * @module
 */
import { normCastAB } from "./ncast_ab.ts";

await normCastAB("ncast14_tuning", [
  { name: "br4a", knobs: { castWarpBound: false } },
  { name: "br4w", knobs: { castWarpBound: true, castLeanLoop: false } },
]);

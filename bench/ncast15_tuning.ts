/**
 * normForwardAndPerTokenCast bf16 → e4m3 without residual on aligned views (bench/cases_norm.ts's roofline case),
 * `_e4m3_g<N>_br4w` against round 15's `_e4m3_g<N>_br4x` (the lean bench copy of the cast loop;
 * docs/perf-notes/perf15-ncast.md), interleaved in one process by bench/ncast_ab.ts. The fp32 row-major case runs the
 * general copy of the loop in both. Settings: "br4w" (castLeanLoop off), "br4x" (castLeanLoop on); castWarpBound on.
 *
 * `deno run -A --no-check bench/ncast15_tuning.ts` (or `bun bench/ncast15_tuning.ts`).
 * @module
 */
import { normCastAB } from "./ncast_ab.ts";

await normCastAB("ncast15_tuning", [
  { name: "br4w", knobs: { castWarpBound: true, castLeanLoop: false } },
  { name: "br4x", knobs: { castWarpBound: true, castLeanLoop: true } },
]);

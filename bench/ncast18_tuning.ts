/**
 * normForwardAndPerTokenCast bf16 → e4m3 without residual on aligned views (bench/cases_norm.ts's roofline case),
 * main's `_e4m3_g<N>_br4x` against round 18's `_e4m3_g<N>_br4y` (the trimmed bench copy of the cast loop:
 * max.xorsign.abs maximum, per-row address bases, the warp vote as the only exit; docs/perf-notes/perf18-ncast.md),
 * interleaved in one process by bench/ncast_ab.ts. The fp32 row-major case runs the general copy of the loop in both
 * (a control). Settings: "br4x" (castTrim off), "br4y" (castTrim on); castWarpBound and castLeanLoop on.
 *
 * `deno run -A --no-check bench/ncast18_tuning.ts` (or `bun bench/ncast18_tuning.ts`).
 * @module
 */
import { normCastAB } from "./ncast_ab.ts";

await normCastAB("ncast18_tuning", [
  { name: "br4x", knobs: { castWarpBound: true, castLeanLoop: true, castTrim: false } },
  { name: "br4y", knobs: { castWarpBound: true, castLeanLoop: true, castTrim: true } },
]);

/**
 * normForwardAndPerTokenCast bf16 → e4m3 without residual on aligned views (bench/cases_norm.ts's roofline case),
 * `_e4m3_g<N>_br4a` (castWarpBound off) against the default `_e4m3_g<N>_br4y` (measured in round 18 against `_br4x`, which
 * then left the package) (the trimmed bench copy of the cast loop:
 * max.xorsign.abs maximum, per-row address bases, the warp vote as the only exit; docs/perf-notes/perf18-ncast.md),
 * interleaved in one process by bench/ncast_ab.ts. The fp32 row-major case runs the general copy of the loop in both
 * (a control for round 18's trim). Settings: "br4a" (castWarpBound off), "br4y" (on).
 *
 * `deno run -A --no-check bench/ncast18_tuning.ts` (or `bun bench/ncast18_tuning.ts`).
 * @module
 */
import { normCastAB } from "./ncast_ab.ts";

await normCastAB("ncast18_tuning", [
  { name: "br4a", knobs: { castWarpBound: false } },
  { name: "br4y", knobs: { castWarpBound: true } },
]);

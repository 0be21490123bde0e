/**
 * The RMSNorm forward's launch forms compared by bench/norm_tuning.ts and selectable in bench/profile.ts (a variant
 * argument ending in `@<form>`): name → `normLaunchTuning` knobs (ops/norm/launch.ts; unlisted knobs keep their
 * defaults). Every form gives the same bits. docs/perf-notes/perf3-norm.md.
 * @module
 */
import { normLaunchTuning } from "../ops/norm/launch.ts";

type Tuning = typeof normLaunchTuning;

export const NORM_FORMS: Record<string, Partial<Tuning>> = {
  // the defaults (measured 2026-11-30, bench/RESULTS.md sixth and seventh runs): from 16 rows per SM normForward by
  // register rows (one block of 4 warps a row, the row in registers, its aligned loads with the L2::256B hint since
  // 2026-12-01: docs/perf-notes/perf6-norm.md), the fused cast by bulk rows (the same team, the
  // row landed in shared memory by one bulk copy, an 85% carveout), the residual forms by warp rows; fewer rows on
  // team kernels (the weight through L1; the form staging it in shared memory measured slower and was removed)
  "default": {},
  // round 2's form: team kernels, weight through L1 after the reduction, grid 8 / 4 blocks per SM, and one block per
  // row (grid = rows: the block scheduler refills SMs as blocks end, as torch.compile's one-program-per-row kernel)
  "team-l1": { forwardRegRows: false, castBulkRows: false, residualWarpRows: false },
  "team-l1-4": { forwardRegRows: false, castBulkRows: false, residualWarpRows: false, forwardBlocksPerSm: 4 },
  "team-l1-rows": { forwardRegRows: false, castBulkRows: false, residualWarpRows: false, forwardBlocksPerSm: 1 << 20 },
  // (the warp-rows forms without a residual, "wr" (the fifth run's default for normForward), "wr-cast", "wr-2" and
  // "wr-1blk", went with their kernels `_wr` and `_e4m3_g<N>_wr`: 72.9% and 48.4% of copy against 88.9% and 72.6%)
  // register rows (docs/perf-notes/perf4-norm.md) in one wave of 8 blocks per SM walked grid-stride (rr4-8), and
  // from any row count, i.e. the decode cases too (rr4-decode: normForward 1 row 4.0 µs against 4.7, the cast 5.9
  // against 5.0)
  "rr4-8": { forwardBlocksPerSm: 8 },
  "rr4-decode": { forwardWarpRowsMinRowsPerSm: 0 },
  // the cast by bulk rows with the largest shared-memory carveout (perf5-norm's first default: 68.1% against 72.9%
  // at 85, the weight short of L1)
  "br4-100": { bulkRowsCarveout: 100 },
  // ("bwd-swx", normBackward's rows kernel before round 11, `_b4swx` in place of `_b4swc`, left with it in trim24)
  // round 32's seven-warp rows kernel at H = 7168 (A/B only; docs/perf-notes/perf32-nbw.md)
  "bwd-sw7": { backwardForm: "sw7" },
};

const DEFAULTS = { ...normLaunchTuning };

/** Sets the knobs of `form` (from the defaults); false for an unknown name. */
export function applyNormForm(form: string): boolean {
  const knobs = NORM_FORMS[form];
  if (!knobs) return false;
  Object.assign(normLaunchTuning, DEFAULTS, knobs);
  return true;
}

/** Back to the defaults. */
export function resetNormForm(): void {
  Object.assign(normLaunchTuning, DEFAULTS);
}

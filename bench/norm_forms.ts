/**
 * The RMSNorm forward's launch forms compared by bench/norm_tuning.ts and selectable in bench/profile.ts (a variant
 * argument ending in `@<form>`): name → `normLaunchTuning` knobs (ops/norm/launch.ts; unlisted knobs keep their
 * defaults). Every form gives the same bits. docs/perf-notes/perf3-norm.md.
 * @module
 */
import { normLaunchTuning } from "../ops/norm/launch.ts";

type Tuning = typeof normLaunchTuning;

export const NORM_FORMS: Record<string, Partial<Tuning>> = {
  // the defaults (measured 2026-11-30, bench/RESULTS.md sixth run): from 16 rows per SM normForward and the fused
  // cast by register rows (one block of 4 warps a row, the row in registers), the residual forms by warp rows; fewer
  // rows on team kernels (the weight through L1; the form staging it in shared memory measured slower and was removed)
  "default": {},
  // the fifth run's defaults: normForward by warp rows, the fused cast by team kernels
  "wr": { forwardRegRows: false, castRegRows: false },
  // round 2's form: team kernels, weight through L1 after the reduction, grid 8 / 4 blocks per SM, and one block per
  // row (grid = rows: the block scheduler refills SMs as blocks end, as torch.compile's one-program-per-row kernel)
  "team-l1": { forwardRegRows: false, castRegRows: false, forwardWarpRows: false, castWarpRows: false, residualWarpRows: false },
  "team-l1-4": { forwardRegRows: false, castRegRows: false, forwardWarpRows: false, castWarpRows: false, residualWarpRows: false, forwardBlocksPerSm: 4 },
  "team-l1-rows": { forwardRegRows: false, castRegRows: false, forwardWarpRows: false, castWarpRows: false, residualWarpRows: false, forwardBlocksPerSm: 1 << 20 },
  // warp rows for the fused cast too: perf3-norm's default (48.4% against the team kernel's 50.6%)
  "wr-cast": { forwardRegRows: false, castRegRows: false, castWarpRows: true },
  // warp rows (every form) with the grid capped at 2 blocks per SM (one wave, ~rows / 2112 rows per warp)
  "wr-2": { forwardRegRows: false, castRegRows: false, castWarpRows: true, forwardBlocksPerSm: 2 },
  // warp rows held at 1 resident block (8 rows) per SM by 120 KiB of unused dynamic shared memory
  "wr-1blk": { forwardRegRows: false, castRegRows: false, castWarpRows: true, warpRowsSmemPad: 120 * 1024 },
  // register rows (docs/perf-notes/perf4-norm.md) in one wave of 8 blocks per SM walked grid-stride (rr4-8), and
  // from any row count, i.e. the decode cases too (rr4-decode: normForward 1 row 4.0 µs against 4.7, the cast 5.9
  // against 5.0)
  "rr4-8": { forwardBlocksPerSm: 8 },
  "rr4-decode": { forwardWarpRowsMinRowsPerSm: 0 },
  // bulk rows (docs/perf-notes/perf5-norm.md): the register rows' team with the row landed in shared memory by one
  // bulk copy (TMA), 14 rows per SM at H = 7168 (the casts 12, step 4 and the cast by a rolled loop): normForward and
  // the fused cast (br4), with the output row stored by a bulk copy too (br4s), and from any row count (br4-decode)
  "br4": { forwardBulkRows: true, castBulkRows: true },
  "br4s": { forwardBulkRows: true, castBulkRows: true, bulkRowsStore: true },
  "br4-decode": { forwardBulkRows: true, castBulkRows: true, forwardWarpRowsMinRowsPerSm: 0 },
  // br4 with a smaller shared-memory carveout: 12 blocks per SM at H = 7168 (normForward; the casts stay at 12) and
  // 60 KiB of L1 for the weight instead of 28 KiB
  "br4-l1": { forwardBulkRows: true, castBulkRows: true, bulkRowsCarveout: 85 },
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

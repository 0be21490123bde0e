/**
 * The RMSNorm forward's launch forms compared by bench/norm_tuning.ts and selectable in bench/profile.ts (a variant
 * argument ending in `@<form>`): name → `normLaunchTuning` knobs (ops/norm/launch.ts; unlisted knobs keep their
 * defaults). Every form gives the same bits. docs/perf-notes/perf3-norm.md.
 * @module
 */
import { normLaunchTuning } from "../ops/norm/launch.ts";

type Tuning = typeof normLaunchTuning;

export const NORM_FORMS: Record<string, Partial<Tuning>> = {
  // the defaults of this round: warp rows from 16 rows per SM, else team kernels with the weight staged
  "default": {},
  // team kernels everywhere, weight staged in shared memory (_ws), grid 8 / 4 blocks per SM, one block per row
  "team-ws": { forwardWarpRows: false, castWarpRows: false, residualWarpRows: false },
  "team-ws-4": { forwardWarpRows: false, castWarpRows: false, residualWarpRows: false, forwardBlocksPerSm: 4 },
  "team-ws-rows": { forwardWarpRows: false, castWarpRows: false, residualWarpRows: false, forwardBlocksPerSm: 1 << 20 },
  // main's form: team kernels, weight through L1 after the reduction, grid 8 blocks per SM
  "team-l1": { forwardWarpRows: false, castWarpRows: false, residualWarpRows: false, forwardWeightSmem: false },
  // warp rows with the grid capped at 2 blocks per SM (one wave, ~rows / 2112 rows per warp)
  "wr-2": { forwardBlocksPerSm: 2 },
  // warp rows held at 1 resident block (8 rows) per SM by 120 KiB of unused dynamic shared memory
  "wr-1blk": { warpRowsSmemPad: 120 * 1024 },
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

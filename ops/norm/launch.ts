/**
 * Launch geometry shared by the RMSNorm kernels (`kernels-src/cuda/norm/*.cu`, `common/rms_tree.cuh`): the team
 * of P threads per row that realizes the fixed reduction tree of spec/norm-rope-rand.md D.2, and the stream a
 * device call runs on.
 * @module
 */
import type { Placement } from "../../core/backend.ts";
import { TkError } from "../../core/errors.ts";
import { type Device, deviceRuntime, type Stream } from "../../core/tensor.ts";

/** Threads of every norm kernel block. */
export const NORM_BLOCK_THREADS = 256;

/**
 * Launch knobs for tests and device A/B runs (same bits for every setting). Not part of the public API.
 * - `teamThreads`: 0 = the default team width, or a power of two that replaces it wherever it is legal (≥ N/2 and
 *   ≤ 256) — the bits must not change (spec D.2, D.11). Non-zero also keeps the forward on the team kernels (not
 *   the warp-rows ones, whose team is the warp).
 * - `forwardBlocksPerSm`: the forward grid cap in blocks per SM (0 = the default 8: two full waves of the 4 resident
 *   blocks). 4 = one wave, every block resident from the start; ≥ 1024 = one block per row team (grid = rows, no
 *   grid-stride reuse: the block scheduler refills SMs as blocks end, as a one-program-per-row Triton kernel).
 * - `forwardWarpRowsMinRowsPerSm` (default 16): the row count per SM (every SM's 16 resident warps get a row) from
 *   which bf16 rows run by the row forms below instead of the team kernels above; fewer rows (decode) keep the team
 *   kernels: 256 threads per row finish one row sooner than one warp or one block of 4. Not when `teamThreads` asks
 *   for a team width.
 * - `residualWarpRows` (default true): bf16 with a residual, plain or cast, H > 256 (normForward with residual,
 *   addRmsnormForwardAndPerTokenCast) runs `tk_norm_forward__bf16[_e4m3_g<N>]_wr_res`: one warp per row, two
 *   passes; s = x + residual is written to residualOut in the first pass and read back from L2 in the second. Its
 *   default grid is one block per 8 rows (no cap: `forwardBlocksPerSm` caps it when set). Off: the team kernels.
 *   (The warp-rows forms without a residual, `_wr` (72.9% of copy against the register rows' 88.9%) and the casts
 *   `_e4m3_g<N>_wr` (48.4% against the team kernel's 50.6% and the bulk rows' 72.6%), were reachable by knobs only
 *   and were removed with their knobs `forwardWarpRows` and `castWarpRows`.)
 *   Where the casts run and every view allows 16-byte accesses (x, residual, residualOut: bases and strides; the
 *   weight, data, outBf16) they run `tk_norm_forward__bf16_e4m3_g<N>_tp16c_res` by default (`castRowForm` below).
 *   Until round 11 they ran `tk_norm_forward__bf16_e4m3_g<N>_wr_resa` (removed from the package then): `_wr_res` compiled for aligned
 *   views only (pass 2's weight without its if-converted 16 narrow loads a chunk; sm_90a 96 registers instead of 125,
 *   still 2 blocks = 16 rows per SM; same launch geometry and bits). H200, addRmsnormForwardAndPerTokenCast 8192 /
 *   16384 × 7168: 70.4 / 76.1% of copy against `_e4m3_g<N>_wr_res`'s 65.1 / 68.3% (2026-12-01,
 *   docs/perf-notes/perf9-ncast.md; the same at 3 blocks = 24 rows per SM, `_wr_resa3`, tied at 69.5 / 77.5% and was
 *   removed with the knob `residualWarpRowsAligned`).
 * - `forwardRegRows` (default true): bf16 normForward without residual, from the same rows per SM (no team width
 *   asked for; any H), runs `tk_norm_forward__bf16_rr4_l2`: one block of 4 warps per row holding the row in
 *   registers from its load to its store (read once from HBM, written once, no second pass through L2), its aligned
 *   loads with the L2::256B prefetch-size hint; 128 threads, 64 registers, 8 rows per SM.
 *   Grid: one block per row (`forwardBlocksPerSm` caps it when set). Off: the team kernels (as before the row forms).
 *   H200, 16384 × 7168: 88.2% of copy against 72.9% for the warp rows (bench/RESULTS.md, sixth run); the L2 hint
 *   84.2–84.5% against 81.7–82.7% at 8192 rows, 88.6–89.3% against 88.1–89.3% at 16384 (2026-12-01,
 *   docs/perf-notes/perf6-norm.md: the unhinted `_rr4` and the round-6 forms at more rows per SM, two rows or two
 *   row teams per block and 8 warps per row were no faster, and were removed).
 *   On views that allow 16-byte accesses (x, out and the weight: bases 16-byte aligned, row and batch strides multiples
 *   of 8 elements) it runs `tk_norm_forward__bf16_tp16hr` instead: torch.compile's geometry, one block of 512 threads
 *   per row, x read once by whole-sector 16-byte loads (past L1: L1::no_allocate) and held in registers from pass 1
 *   (the sums) to step 4, the chunk sums folded by warp 0 (rstd handed over behind a second barrier), the weight and
 *   outScale branches taken once per kernel; 31–32 registers, 4 blocks = 64 warps per SM. H200, 8192 / 16384 × 7168:
 *   91.3 / 94.2% of copy against 87.6 / 91.3% for round 8's `_tp16f` (x read twice, per-load L2 policies) and 84.2 /
 *   89.0% for `_rr4_l2` (2026-12-01, docs/perf-notes/perf8-norm.md, perf9-nf.md; `_tp16f`, its hoisted forms
 *   `_tp16h` / `_tp16hn` (x read twice, with and without the hints: 90.2 / 94.0, 89.1 / 91.4), `_rr4_l2` without its
 *   element-wise fallbacks and the two-pass form with every warp folding were no faster, and were removed with their
 *   knobs `forwardRowForm` and `twoPassForm`). Same bits either way.
 *   (The residual forms have no register-rows kernel: it measured no faster than the warp rows, and was removed with
 *   the 2-warp and whole-sector forms.)
 * - `castBulkRows` (default true): normForwardAndPerTokenCast without residual, under the same conditions, runs
 *   `tk_norm_forward__bf16_e4m3_g<N>_br4`: the register rows' team of 4 warps a row with the row landed in shared
 *   memory by one bulk copy (TMA) instead of in registers (2H bytes of dynamic shared memory, 40 registers, 12 rows
 *   per SM; step 4 and the cast by a rolled loop). H200, 16384 × 7168: 72.9% of copy against 60.6% for the cast by
 *   register rows (removed) and 50.5% for the team kernel (bench/RESULTS.md, seventh run). Off: the team kernel.
 *   Where every view allows 16-byte accesses (x's base and strides, the weight, data, outBf16: multiples of 16 bytes)
 *   it ran `tk_norm_forward__bf16_e4m3_g<N>_br4a` instead (rounds 9–13): the same kernel compiled for aligned views
 *   only (no element-load fallbacks, which ptxas if-converts into predicated narrow loads issued with every chunk: 24 of ~265
 *   warp-instructions a chunk in `_br4`), with the bench's case (a weight, outScale = 1, rounded scales as packed
 *   UE8M0) in its own copy of the loop; same launch geometry, registers (40) and bits. H200, 8192 / 16384 × 7168:
 *   70.5 / 76.9% of copy against `_br4`'s 67.1 / 73.2% (2026-12-01, docs/perf-notes/perf9-ncast.md; its knob
 *   `castBulkRowsAligned` was removed). Since round 18 aligned views run `_e4m3_g<N>_br4y`
 *   (see the note after castRowForm).
 * - `bulkRowsCarveout` (default 85): the shared-memory carveout (percent of the most, 228 KiB on the H200) asked for
 *   the bulk-rows launches. 85 leaves ~60 KiB of L1 for the weight (read through L1 by every row): 72.9% against
 *   68.1% with 100 (14 blocks' worth of shared memory at H = 7168, 28 KiB of L1).
 *   (normForward by bulk rows measured 86.0–87.3% against the register rows' 89.0%, and with a bulk store of the
 *   output 82.9%: both removed.)
 * - `warpRowsSmemPad`: bytes of (unused) dynamic shared memory given to the warp-rows (`_wr_res`) launches, only to
 *   cap their resident blocks below the registers' 2 per SM (e.g. 120 KiB: 1 block = 8 rows per SM, half the rows
 *   waiting in L2 between the two passes); 0 = none.
 */
export const normLaunchTuning = {
  teamThreads: 0,
  forwardBlocksPerSm: 0,
  residualWarpRows: true,
  forwardWarpRowsMinRowsPerSm: 16,
  forwardRegRows: true,
  castBulkRows: true,
  bulkRowsCarveout: 85,
  warpRowsSmemPad: 0,
  /**
   * The residual casts (addRmsnormForwardAndPerTokenCast, normForwardAndPerTokenCast with a residual) where
   * every view allows 16-byte accesses (bf16, H > 256; round 11,
   * docs/perf-notes/perf11-ncast.md):
   * - 1 (the default): `tk_norm_forward__bf16_e4m3_g<N>_tp16c_res` (kernels-src/cuda/norm/norm_cast_tp16.cu, N ∈
   *   {32, 128}): normForward's two-pass geometry (`_tp16hr`: one row per block of 512 threads, 32 registers on
   *   sm_90a = 4 blocks per SM), s = x ⊕ residual written to residualOut and kept in registers (not read back from L2),
   *   the cast by 8-element pieces; PDL. H200, addRmsnormForwardAndPerTokenCast 4096 / 8192 / 16384 × 7168 (groups
   *   of 128, packed UE8M0): 85.6 / 90.3 / 92.7% of copy against `_wr_resa`'s 68.9 / 72.3 / 75.9% (2026-12-02);
   * - 0: the warp rows `_e4m3_g<N>_wr_res` (for A/B; `_wr_resa`, the same compiled for aligned views only and timed
   *   above, was removed from the package: −0.57 MB).
   * Same bits in both settings. (The same geometry without a residual, in place of `_e4m3_g<N>_br4a`, lost: 51.6–55.7%
   * against 63.0–77.5%, as did a cast by whole chunks; both were removed.)
   */
  castRowForm: 1 as 0 | 1,
  /*
   * (Removed in trim24: `castWarpBound`. normForwardAndPerTokenCast without residual on aligned views (N ∈ {32, 128})
   * runs `tk_norm_forward__bf16_e4m3_g<N>_br4y` (kernels-src/cuda/norm/norm_cast_br4y.cu); the knob's false ran round
   * 9's `_br4a` (same launch geometry, PDL prologue, 40 registers without spills, 12 blocks per SM, and bits), which
   * left the package with it (docs/branches/trim24-removed.patch). `_br4y` is `_br4a` with three rounds of trimming,
   * each A/B'd in one process on the H200 (bench/RESULTS.md):
   * - round 14 (`_br4w`, docs/perf-notes/perf14-ncast.md): step 4 + the cast's loop bounded per warp by a warp vote
   *   (77.5 → 80.3% of copy at 16384 × 7168 g128 packed);
   * - round 15 (`_br4x`, perf15-ncast.md): the UE8M0 exponent from amax's bits instead of a division, bf16x2 products
   *   by the power-of-two inverse, packed sf words (80.2 → 81.1%);
   * - round 18 (`_br4y`, perf18-ncast.md): the |y| maximum by max.xorsign.abs.bf16x2, addresses from per-row bases,
   *   the warp vote as the only exit (80.9 → 82.8%; g32 packed 79.2 → 81.0%, fp32 row-major 77.6 → 78.0%).
   * The intermediate `_br4w` and `_br4x` left the package when `_br4y` landed (−0.33 MB; their source is
   * docs/branches/perf15-br4wx.patch).)
   */
  /**
   * bf16 `_b4` normBackward (not `_b4swc`): how the slot's next row (t + 512) is sent toward L2 while row t is computed
   * (docs/perf-notes/perf3-nbw.md): "bulk" (one cp.async.bulk.prefetch.L2 per input and row), "thread"
   * (per-thread prefetch.global.L2 of each thread's chunks), "off" (the default). Hints only: same bits either way.
   * Measured on the H200 (bench/nbw_tuning.ts, 2026-11-30): every setting of the three knobs within 58.3–59.2% of
   * copy at 16384 rows (54–55% at 8192), i.e. no gain: the defaults are the round-2 kernel's (plus one barrier a row).
   */
  backwardPrefetch: "off" as "bulk" | "thread" | "off",
  // (Removed in trim24: `backwardFoldWarps`, whose 16 picked the 16-warp fold `_w16`, level with the 8-warp fold
  // in round 3's table (58.3–59.2% of copy in every setting) and never the default.)
  /** normBackward's fold launched as a programmatic dependent of the rows kernel (when `config.pdl`; default off). Same bits. */
  backwardFoldPdl: false,
  // (Removed in trim24: `backwardForm`. bf16 normBackward's rows kernel where usesB4swc (ops/norm/norm_backward.ts)
  // holds is `_b4swc_unit` of kernels-src/cuda/norm/norm_backward_sw.cu (x, gradOut and xGrad moved by warp-ordered
  // 16-byte lanes, 4 whole 128-byte lines per instruction; H200: 67.1% of copy at 8192 × 7168, 72.2% at 16384);
  // the knob's "swx" ran round 8's `_b4swx_unit` (63.0 / 68.5%; docs/perf-notes/perf11-nbw.md), which left the
  // package with it.)
  /**
   * bf16 normBackward's rows kernel where `usesB4swc` holds and H = 7168 (ops/norm/norm_backward.ts
   * `backwardRowsForm`): "sw7" (the default since round 32's A/B) `_b4sw7_unit` of
   * kernels-src/cuda/norm/norm_backward_sw7.cu (docs/perf-notes/perf32-nbw.md): `_b4swc`'s rows loop on 224 threads,
   * the chunks that `_b4swc`'s warps 6 and 7 ran on zeros dropped, both weight chunks in registers; "swc"
   * `_b4swc_unit` (kept for A/B). Same bits. Every other launch is unaffected. Interleaved A/B on the H200
   * (bench/nbw32_tuning.ts, twenty-second run): 8192 × 7168 66.7 → 68.1%, 16384 71.9 → 73.5% of copy.
   */
  backwardForm: "sw7" as "swc" | "sw7",
};

/** Forward grid cap per SM: {@link normLaunchTuning}.forwardBlocksPerSm, or `fallback`. */
export function forwardBlocksPerSm(fallback = 8): number {
  const b = normLaunchTuning.forwardBlocksPerSm;
  return Number.isInteger(b) && b > 0 ? b : fallback;
}

/** N = nextPow2(H / 16): the tree's width in 16-element chunks. */
function treeWidth(hidden: number): number {
  let n = 1;
  while (n < hidden / 16) n *= 2;
  return n;
}

/** P: threads per row, max(1, N/2) (every thread owns two chunks), or the test override where legal. */
export function teamThreads(hidden: number): number {
  const n = treeWidth(hidden);
  const p = Math.max(1, n / 2);
  const o = normLaunchTuning.teamThreads;
  return o >= p && o <= NORM_BLOCK_THREADS && (o & (o - 1)) === 0 ? o : p;
}

/** The stream of a device call: `options.stream` (on the inputs' device), else the device's default stream. */
export function normStream(op: string, pl: Placement & { backend: "cuda" }, s: Stream | undefined): Stream {
  if (s && (s.device.kind !== pl.device.kind || s.device.index !== pl.device.index)) {
    throw new TkError(op, "stream", "DEVICE_MISMATCH", `the stream belongs to ${s.device.kind}:${s.device.index}, the inputs to ${pl.device.kind}:${pl.device.index}`);
  }
  return s ?? deviceRuntime(op).defaultStream(pl.device as Device);
}

/**
 * Round 32 (docs/perf-notes/perf32-sbc.md): swigluBackwardAndPerTokenCast by `tk_swiglu_backward__e4m3_bf16_g128_t16y`
 * (`swigluLaunchTuning.backwardCastForm = "team16y"`, off by default), against the CPU reference on every byte of
 * every output allocation (xGrad, the e4m3 data, the sf in every layout, weightGrad; padding rows included, which
 * `_t16y` now computes from staged zeros instead of branching around): 1 row, odd row counts (the second team of the
 * last warp dead), row counts that leave warps of the last block dead, H from one group to 7168, psum layouts with
 * padding rows that keep §11.2, weights and scale, x as a view 16 or 32 bytes into its storage, every e4m3 code (NaN
 * and subnormal codes), scales from 2^-40 to 2^20 (the exponentials' out-of-line slow path and the reciprocals' slow
 * path), dy with NaN / ±Inf / subnormal patterns; the bench's 3000 × 7168 against the CPU and 16384 × 7168 against
 * `_t16x`. `_t16y` takes binary32 sf entries only (row-major, and column-major with its zeroed padding rows); with
 * roundSf or packed UE8M0 the knob runs `_t16x`. Every launch asserts the kernel sent: `_t16y` or `_t16x` by sf layout
 * with the knob on, `_t16x` by default, main's kernels for what the team forms do not take (clamp, recompute, fp32 dy,
 * groups of 32, views off 16 bytes). `_t16y` has no PDL prologue: the launch is plain whether config.pdl is on or off.
 * The knob is set and restored around every call. Skipped without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { swigluBackwardAndPerTokenCast } from "../mod.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, uploadView } from "./gpu_util.ts";
import {
  benchShapeCase,
  CASES,
  checkFallbacks,
  compareAtBenchShape,
  compareCase,
  fnOf,
  sameOutputs,
  type SfLayout,
  T16X,
  T16Y,
  TEAM_SHAPES,
  withForm,
} from "./sbc_team_util.ts";

/** The kernel "team16y" runs for an sf layout: `_t16y` for binary32 entries, `_t16x` for roundSf / packed UE8M0. */
const team16y = (sfo: SfLayout) => (sfo.roundSf || sfo.usePackedUe8m0 ? T16X : T16Y);

gpuTest("_t16y (backwardCastForm team16y) = CPU reference: 1 row, odd rows, dead warps, H 128 … 7168, psum, weights, scale, every sf layout, views, special values, PDL on / off (seed 32001)", () => {
  const rand = rng(32001);
  let i = 0;
  for (const [T, H] of TEAM_SHAPES) for (const c of CASES) compareCase("team16y", team16y, rand, T, H, c, i++ % 2 === 0);
});

gpuTest("the team16y knob leaves clamp, recompute, fp32 dy, groups of 32 and views off 16 bytes to main's kernels and roundSf to _t16x; team16y is the default (seed 32002)", () => {
  const rand = rng(32002);
  const { q, qsf, dy, dco } = checkFallbacks("team16y", rand, [["roundSf", T16X, { roundSf: true }]]);
  // team16y is the default since round 32's A/B: it runs `_t16y` (binary32 sf), team16x `_t16x`, the same bytes
  assert.equal(swigluLaunchTuning.backwardCastForm, "team16y", "the default form is team16y");
  const dx = uploadView(q), ds = uploadView(qsf), dd = uploadView(dy);
  const o = { fmt: "e4m3", numPerChannels: 128, ...dco } as const;
  const d = withForm("team16x", false, () => swigluBackwardAndPerTokenCast([dx, ds], dd, o));
  assert.equal(swigluLastLaunch().fn, fnOf(T16X), "knob team16x: the _t16x kernel");
  const y = swigluBackwardAndPerTokenCast([dx, ds], dd, o);
  assert.equal(swigluLastLaunch().fn, fnOf(T16Y), "default: the _t16y kernel");
  sameOutputs(y, d, "default team16y vs team16x");
  dispose(d, y, dx, ds, dd, Object.values(dco));
});

gpuTest("_t16y at the bench's 3000 × 7168 (psum, weights, fp32 sf; packed UE8M0 by _t16x) = CPU reference, knob set and default (seed 32003)", () => {
  benchShapeCase("team16y", team16y, rng(32003), team16y);
});

gpuTest("at the bench's 16384 × 7168 (64 experts, alignment 128, weights) _t16y writes _t16x's bytes, row-major and column-major fp32 sf (seed 32004)", () => {
  compareAtBenchShape(rng(32004), ["team16x", T16X], ["team16y", T16Y], [{}, { useTmaAlignedColMajorSf: true }]);
});

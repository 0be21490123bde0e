/**
 * Round 28 (docs/perf-notes/perf28-sbc.md): swigluBackwardAndPerTokenCast by `tk_swiglu_backward__e4m3_bf16_g128_t16x`
 * (`swigluLaunchTuning.backwardCastForm = "team16x"`, the default since its A/B), against the CPU reference on every
 * byte of every output allocation (xGrad, the e4m3 data, the sf in every layout, weightGrad; padding rows included,
 * which this op writes as +0): 1 row, odd row counts (the second team of the last warp dead), row counts that leave
 * warps of the last block dead, H from one group to 7168, psum layouts with padding rows that keep §11.2, weights and
 * scale, x as a view 16 or 32 bytes into its storage, every e4m3 code (NaN and subnormal codes: the NaN-code test of
 * the store phase), scales from 2^-40 (subnormal results) to 2^20 (e^(-g) overflowing, tmp = +Inf: the exponentials'
 * and the reciprocals' slow paths), dy with NaN / ±Inf / subnormal patterns; the bench's 3000 × 7168 against the CPU
 * (and under the default knob) and 16384 × 7168 against main's kernel (knob "main"; until trim32 against `_t16w`, which
 * left the package with its knob value "team16w"). Every launch asserts the kernel sent: `_t16x` with the knob on (the
 * default), main's kernel with "main", main's kernels for what the team form does not take (clamp, recompute, fp32 dy,
 * groups of 32, views off 16 bytes). `_t16x` has no PDL prologue: the launch is plain whether config.pdl is on or off.
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
  MAIN,
  sameOutputs,
  T16X,
  TEAM_SHAPES,
  withForm,
} from "./sbc_team_util.ts";


gpuTest("_t16x (backwardCastForm team16x) = CPU reference: 1 row, odd rows, dead warps, H 128 … 7168, psum, weights, scale, every sf layout, views, special values, PDL on / off (seed 28001)", () => {
  const rand = rng(28001);
  let i = 0;
  for (const [T, H] of TEAM_SHAPES) for (const c of CASES) compareCase("team16x", T16X, rand, T, H, c, i++ % 2 === 0);
});

gpuTest("the team16x knob leaves clamp, recompute, fp32 dy, groups of 32 and views off 16 bytes to main's kernels; knob main runs main's kernel (seed 28002)", () => {
  const rand = rng(28002);
  const { q, qsf, dy, dco } = checkFallbacks("team16x", rand);
  // team16x was the default from round 28 to 32 (team16y since: tests/sbc32_gpu.test.ts): "main" runs main's kernel,
  // team16x `_t16x`, the same bytes
  assert.equal(swigluLaunchTuning.backwardCastForm, "team16y", "the default form is team16y");
  const dx = uploadView(q), ds = uploadView(qsf), dd = uploadView(dy);
  const o = { fmt: "e4m3", numPerChannels: 128, ...dco } as const;
  const d = withForm("main", false, () => swigluBackwardAndPerTokenCast([dx, ds], dd, o));
  assert.equal(swigluLastLaunch().fn, fnOf(MAIN), "knob main: main's kernel");
  const x = withForm("team16x", false, () => swigluBackwardAndPerTokenCast([dx, ds], dd, o));
  assert.equal(swigluLastLaunch().fn, fnOf(T16X), "knob team16x: the _t16x kernel");
  sameOutputs(x, d, "team16x vs main");
  dispose(d, x, dx, ds, dd, Object.values(dco));
});

gpuTest("_t16x at the bench's 3000 × 7168 (psum, weights, packed UE8M0 and fp32 sf) = CPU reference, knob set (seed 28003)", () => {
  benchShapeCase("team16x", T16X, rng(28003));
});

gpuTest("at the bench's 16384 × 7168 (64 experts, alignment 128, weights) _t16x writes main's kernel's bytes (seed 28004)", () => {
  compareAtBenchShape(rng(28004), ["main", MAIN], ["team16x", T16X], [{}]);
});

/**
 * Round 17 (docs/perf-notes/perf17-sbc.md): swigluBackwardAndPerTokenCast by the 16-lane team form with whole 16-byte
 * output stores, `tk_swiglu_backward__e4m3_bf16_g128_t16w` (`swigluLaunchTuning.backwardCastForm = "team16w"`), against
 * the CPU reference on every byte of every output allocation (xGrad, the e4m3 data, the sf in every layout,
 * weightGrad; padding rows included, which this op writes as +0): 1 row, odd row counts (the second team of the last
 * warp dead), row counts that leave warps of the last block dead, H from one group to 7168, psum layouts with padding
 * rows that keep §11.2 (psum[e] ≥ align(psum[e − 1], A), psum[E − 1] ≤ T), weights and scale, x as a view 16 or 32
 * bytes into its storage, every e4m3 code (NaN and subnormal codes), scales from 2^-40 (subnormal results) to 2^20
 * (e^(-g) overflowing), dy with NaN / ±Inf / subnormal patterns; the bench's 3000 × 7168 against the CPU (16384 × 7168
 * against main's kernel: tests/sbc11_gpu.test.ts). The form has no PDL prologue: the launch is plain whether
 * config.pdl is on or off. The knob is set and restored around every call; the default was "team16w" from that A/B to round 28's ("team16x").
 * Skipped without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { gpuTest, rng } from "./harness.ts";
import { benchShapeCase, CASES, compareCase, T16W, T16X, TEAM_SHAPES } from "./sbc_team_util.ts";

gpuTest("_t16w (backwardCastForm team16w) = CPU reference: 1 row, odd rows, dead warps, H 128 … 7168, psum, weights, scale, every sf layout, views, special values, PDL on / off (seed 17001)", () => {
  const rand = rng(17001);
  let i = 0;
  for (const [T, H] of TEAM_SHAPES) for (const c of CASES) compareCase("team16w", T16W, rand, T, H, c, i++ % 2 === 0);
});

gpuTest("_t16w at the bench's 3000 × 7168 (psum, weights, packed UE8M0 and fp32 sf) = CPU reference, and the default is _t16x since round 28 (seed 17002)", () => {
  benchShapeCase("team16w", T16W, rng(17002), T16X);
  assert.equal(swigluLaunchTuning.backwardCastForm, "team16x", "the default form is team16x (round 28)");
});

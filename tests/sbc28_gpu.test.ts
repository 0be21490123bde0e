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
import { type HostTensor, swigluBackwardAndPerTokenCast, tensor } from "../mod.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, uploadView } from "./gpu_util.ts";
import {
  benchShapeCase,
  CASES,
  codes,
  compareCase,
  dyOf,
  fnOf,
  onDevice,
  options,
  sameOutputs,
  scales,
  T16X,
  TEAM_SHAPES,
  withForm,
} from "./sbc_team_util.ts";

const MAIN = "tk_swiglu_backward__e4m3_bf16_g128";

gpuTest("_t16x (backwardCastForm team16x) = CPU reference: 1 row, odd rows, dead warps, H 128 … 7168, psum, weights, scale, every sf layout, views, special values, PDL on / off (seed 28001)", () => {
  const rand = rng(28001);
  let i = 0;
  for (const [T, H] of TEAM_SHAPES) for (const c of CASES) compareCase("team16x", T16X, rand, T, H, c, i++ % 2 === 0);
});

gpuTest("the team16x knob leaves clamp, recompute, fp32 dy, groups of 32 and views off 16 bytes to main's kernels; knob main runs main's kernel (seed 28002)", () => {
  const rand = rng(28002);
  const T = 37, H = 256;
  const q = codes(rand, T, 2 * H);
  const qOff = codes(rand, T, 2 * H, 8); // 8 bytes into its storage: the team forms need 16
  const qsf = scales(rand, T, (2 * H) / 128);
  const qsf32 = scales(rand, T, (2 * H) / 32);
  const dy = dyOf(rand, T, H);
  const dyF = tensor(Float32Array.from({ length: T * H }, () => Math.fround(rand() * 2 - 1)), [T, H], "fp32");
  const co = options(rand, T, { psum: true, weights: true });
  const dco = onDevice(co);
  const runs: [string, string, HostTensor, HostTensor, HostTensor, Record<string, unknown>][] = [
    ["clamp", MAIN, q, qsf, dy, { clampValue: 7 }],
    ["recompute", MAIN, q, qsf, dy, { doRecompute: true }],
    ["fp32 dy", "tk_swiglu_backward__e4m3_fp32_g128", q, qsf, dyF, {}],
    ["groups of 32", "tk_swiglu_backward__e4m3_bf16_g32", q, qsf32, dy, { numPerChannels: 32 }],
    ["x off 16 bytes", MAIN, qOff, qsf, dy, {}],
  ];
  for (const [label, sym, hx, hs, hdy, extra] of runs) {
    const o = { fmt: "e4m3", numPerChannels: 128, ...co, ...extra } as const;
    const dx = uploadView(hx), ds = uploadView(hs), dd = uploadView(hdy);
    const cpu = swigluBackwardAndPerTokenCast([hx, hs], hdy, o as never);
    const gpu = withForm("team16x", false, () => swigluBackwardAndPerTokenCast([dx, ds], dd, { ...o, ...dco } as never));
    assert.equal(swigluLastLaunch().fn, fnOf(sym), `${label}: kernel ${sym}`);
    sameOutputs(gpu, cpu, label);
    dispose(gpu, dx, ds, dd);
  }
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
  const rand = rng(28004);
  const T = 16384, H = 7168, E = 64, A = 128;
  const p = new Int32Array(E);
  let start = 0;
  for (let e = 0; e < E; e++) {
    p[e] = start + Math.floor(T / E) - 1 - Math.floor(rand() * 8); // one or more padding rows per expert
    start = Math.ceil(p[e] / A) * A;
  }
  const dq = uploadView(codes(rand, T, 2 * H));
  const dqsf = uploadView(scales(rand, T, (2 * H) / 128));
  const ddy = uploadView(dyOf(rand, T, H));
  const o = {
    fmt: "e4m3",
    numPerChannels: 128,
    psumNumTokensPerExpert: uploadView(tensor(p, [E], "int32")),
    tokenAlignment: A,
    topkWeights: uploadView(tensor(Float32Array.from({ length: T }, () => Math.fround(rand())), [T], "fp32")),
  } as const;
  const base = withForm("main", false, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, o));
  assert.equal(swigluLastLaunch().fn, fnOf(MAIN), "main's kernel");
  const x = withForm("team16x", false, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, o));
  assert.equal(swigluLastLaunch().fn, fnOf(T16X), "_t16x kernel");
  sameOutputs(x, base, "16384 x 7168");
  dispose(base, x, dq, dqsf, ddy, o.psumNumTokensPerExpert, o.topkWeights);
});

/**
 * Round 28 (docs/perf-notes/perf28-sbc.md): swigluBackwardAndPerTokenCast by `tk_swiglu_backward__e4m3_bf16_g128_t16x`
 * (`swigluLaunchTuning.backwardCastForm = "team16x"`, the default since its A/B), against the CPU reference on every
 * byte of every output allocation (xGrad, the e4m3 data, the sf in every layout, weightGrad; padding rows included, which this op
 * writes as +0): 1 row, odd row counts (the second team of the last warp dead), row counts that leave warps of the last
 * block dead, H from one group to 7168, psum layouts with padding rows that keep §11.2, weights and scale, x as a view
 * 16 or 32 bytes into its storage, every e4m3 code (NaN and subnormal codes: the NaN-code test of the store phase),
 * scales from 2^-40 (subnormal results) to 2^20 (e^(-g) overflowing, tmp = +Inf: the exponentials' and the
 * reciprocals' slow paths), dy with NaN / ±Inf / subnormal patterns; the bench's 3000 × 7168 against the CPU and
 * 16384 × 7168 against `_t16w`. Every launch asserts the kernel sent: `_t16x` with the knob on (the default), `_t16w` with
 * "team16w", main's kernels for what the team forms do not take (clamp, recompute, fp32 dy, groups of 32, views off
 * 16 bytes). `_t16x` has no PDL prologue: the launch is plain whether config.pdl is on or off. The knob is set and
 * restored around every call. Skipped without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { config, type DeviceTensor, HostTensor, swigluBackwardAndPerTokenCast, type Tensor, tensor } from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomPsum, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";

const T16X = "tk_swiglu_backward__e4m3_bf16_g128_t16x";
const T16W = "tk_swiglu_backward__e4m3_bf16_g128_t16w";
const MAIN = "tk_swiglu_backward__e4m3_bf16_g128";
const SF_LAYOUTS = [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { roundSf: true, usePackedUe8m0: true }, {
  useTmaAlignedColMajorSf: true,
  roundSf: true,
  usePackedUe8m0: true,
}] as const;

type Form = typeof swigluLaunchTuning.backwardCastForm;
type Outputs = ReturnType<typeof swigluBackwardAndPerTokenCast>;

function fnOf(sym: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, sym);
}

/** Runs `f` with `form` and config.pdl = `pdl`, restoring both. */
function withForm<R>(form: Form, pdl: boolean, f: () => R): R {
  const saved = swigluLaunchTuning.backwardCastForm, savedPdl = config.pdl;
  swigluLaunchTuning.backwardCastForm = form;
  config.pdl = pdl;
  try {
    return f();
  } finally {
    swigluLaunchTuning.backwardCastForm = saved;
    config.pdl = savedPdl;
  }
}

/** [T, 2H] e4m3 codes of every pattern (NaN 0x7f / 0xff, subnormals) as a view `offset` bytes into its storage. */
function codes(rand: () => number, T: number, W: number, offset = 0): HostTensor {
  const b = new Uint8Array(offset + T * W);
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(rand() * 256);
  return new HostTensor(b, "e4m3", [T, W], [W, 1], offset);
}

/** fp32 x scales per group of 128: 2^-4 … 2^4, rows of 2^20 (tmp = +Inf) and rows of 2^-40 (subnormal results). */
function scales(rand: () => number, T: number, n: number): HostTensor {
  const v = new Float32Array(T * n);
  for (let t = 0; t < T; t++) {
    for (let k = 0; k < n; k++) v[t * n + k] = t % 7 === 3 ? 2 ** 20 : t % 11 === 5 ? 2 ** -40 : Math.fround(2 ** (rand() * 8 - 4));
  }
  return tensor(v, [T, n], "fp32");
}

/** [T, H] bf16 dy: |v| in 2^-16 … 2^16 mostly, 2% any pattern (NaN, ±Inf, subnormals, ±0). */
function dyOf(rand: () => number, T: number, H: number): HostTensor {
  const b = new Uint16Array(T * H);
  for (let i = 0; i < b.length; i++) {
    const r = rand();
    b[i] = r < 0.02 ? Math.floor(rand() * 65536) : r < 0.025 ? encodeBf16(r < 0.0225 ? Infinity : NaN) : ((r < 0.5 ? 0x8000 : 0) | (0x3780 + Math.floor(rand() * 0x1000)));
  }
  return tensor(b, [T, H], "bf16");
}

interface Case {
  psum?: boolean;
  weights?: boolean;
  scale?: boolean;
}
const CASES: Case[] = [{}, { psum: true }, { weights: true, scale: true }, { psum: true, weights: true }, { psum: true, weights: true, scale: true }];

/** The op's options for a case: psum of 5 experts with alignment 1, 4 or 16 (randomPsum keeps §11.2), weights in [0, 2). */
function options(rand: () => number, T: number, c: Case) {
  const A = [1, 4, 16][Math.floor(rand() * 3)];
  return {
    psumNumTokensPerExpert: c.psum ? randomPsum(rand, T, 5, A) : undefined,
    tokenAlignment: A,
    topkWeights: c.weights ? tensor(Float32Array.from({ length: T }, () => Math.fround(rand() * 2)), [T], "fp32") : undefined,
    routedScalingFactor: c.scale ? 1.5 : undefined,
  };
}

function onDevice<O extends Record<string, unknown>>(o: O): O {
  const r: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) r[k] = v instanceof HostTensor ? uploadView(v) : v;
  return r as O;
}

/** Every byte of every output allocation, `got` (device) against `want` (host or device). */
function sameOutputs(got: Outputs, want: Outputs, label: string): void {
  const bytes = (t: Tensor) => (t instanceof HostTensor ? storageBytes(t) : readAllocation(t as DeviceTensor));
  const pairs: [Tensor | null, Tensor | null, string][] = [[got[0], want[0], "xGrad"], [got[1][0], want[1][0], "xGradQ"], [
    got[1][1],
    want[1][1],
    "xGradSf",
  ], [got[2], want[2], "weightGrad"], [got[3], want[3], "actOut"]];
  for (const [g, w, name] of pairs) {
    assert.equal(g === null, w === null, `${label} ${name} presence`);
    if (g && w) assertBytesEqual(bytes(g), bytes(w), `${label} ${name}`);
  }
}

/** One shape and case through the CPU and through `_t16x` (PDL setting `pdl`), every sf layout. */
function compareCase(rand: () => number, T: number, H: number, c: Case, pdl: boolean): void {
  const q = codes(rand, T, 2 * H, 16 * Math.floor(rand() * 3)); // 0, 16 or 32 bytes into its storage
  const qsf = scales(rand, T, (2 * H) / 128);
  const dy = dyOf(rand, T, H);
  const co = options(rand, T, c);
  const dco = onDevice(co);
  const dq = uploadView(q), dqsf = uploadView(qsf), ddy = uploadView(dy);
  for (const sfo of SF_LAYOUTS) {
    const label = `T=${T} H=${H} ${JSON.stringify(c)} ${JSON.stringify(sfo)} x+${q.offset} pdl=${pdl}`;
    const o = { fmt: "e4m3", numPerChannels: 128, ...sfo } as const;
    const cpu = swigluBackwardAndPerTokenCast([q, qsf], dy, { ...o, ...co });
    const gpu = withForm("team16x", pdl, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, { ...o, ...dco }));
    const l = swigluLastLaunch();
    assert.equal(l.fn, fnOf(T16X), `${label}: kernel`);
    assert.equal(l.pdl, false, `${label}: launched plainly`);
    sameOutputs(gpu, cpu, label);
    dispose(gpu);
  }
  dispose(dq, dqsf, ddy, Object.values(dco));
}

gpuTest("_t16x (backwardCastForm team16x) = CPU reference: 1 row, odd rows, dead warps, H 128 … 7168, psum, weights, scale, every sf layout, views, special values, PDL on / off (seed 28001)", () => {
  const rand = rng(28001);
  // 1 row; 2; 3 (a dead team); 17 (a dead team, 7 dead warps of 8); 37; 67; 7 × 7168
  const shapes: [number, number][] = [[1, 128], [2, 256], [3, 128], [17, 384], [37, 1024], [67, 256], [7, 7168]];
  let i = 0;
  for (const [T, H] of shapes) for (const c of CASES) compareCase(rand, T, H, c, i++ % 2 === 0);
});

gpuTest("the team16x knob leaves clamp, recompute, fp32 dy, groups of 32 and views off 16 bytes to main's kernels; team16x is the default, team16w runs _t16w (seed 28002)", () => {
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
  // team16x is the default since the A/B: team16w runs `_t16w`, team16x `_t16x`, the same bytes
  assert.equal(swigluLaunchTuning.backwardCastForm, "team16x", "the default form is team16x");
  const dx = uploadView(q), ds = uploadView(qsf), dd = uploadView(dy);
  const o = { fmt: "e4m3", numPerChannels: 128, ...dco } as const;
  const d = withForm("team16w", false, () => swigluBackwardAndPerTokenCast([dx, ds], dd, o));
  assert.equal(swigluLastLaunch().fn, fnOf(T16W), "knob team16w: the _t16w kernel");
  const x = withForm("team16x", false, () => swigluBackwardAndPerTokenCast([dx, ds], dd, o));
  assert.equal(swigluLastLaunch().fn, fnOf(T16X), "knob team16x: the _t16x kernel");
  sameOutputs(x, d, "team16x vs default");
  dispose(d, x, dx, ds, dd, Object.values(dco));
});

gpuTest("_t16x at the bench's 3000 × 7168 (psum, weights, packed UE8M0 and fp32 sf) = CPU reference (seed 28003)", () => {
  const rand = rng(28003);
  const T = 3000, H = 7168;
  const q = codes(rand, T, 2 * H), qsf = scales(rand, T, (2 * H) / 128), dy = dyOf(rand, T, H);
  const co = options(rand, T, { psum: true, weights: true });
  const dco = onDevice(co);
  const dq = uploadView(q), dqsf = uploadView(qsf), ddy = uploadView(dy);
  for (const sfo of [{}, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }] as const) {
    const o = { fmt: "e4m3", numPerChannels: 128, ...sfo } as const;
    const cpu = swigluBackwardAndPerTokenCast([q, qsf], dy, { ...o, ...co });
    const gpu = withForm("team16x", true, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, { ...o, ...dco }));
    assert.equal(swigluLastLaunch().fn, fnOf(T16X), "3000 x 7168: kernel");
    sameOutputs(gpu, cpu, `3000 x 7168 ${JSON.stringify(sfo)}`);
    dispose(gpu);
  }
  dispose(dq, dqsf, ddy, Object.values(dco));
});

gpuTest("at the bench's 16384 × 7168 (64 experts, alignment 128, weights) _t16x writes _t16w's bytes (seed 28004)", () => {
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
  const base = withForm("team16w", false, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, o));
  assert.equal(swigluLastLaunch().fn, fnOf(T16W), "_t16w kernel");
  const x = withForm("team16x", false, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, o));
  assert.equal(swigluLastLaunch().fn, fnOf(T16X), "_t16x kernel");
  sameOutputs(x, base, "16384 x 7168");
  dispose(base, x, dq, dqsf, ddy, o.psumNumTokensPerExpert, o.topkWeights);
});

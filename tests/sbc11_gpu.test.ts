/**
 * The 16-lane team form of swigluBackwardAndPerTokenCast (round 11, docs/perf-notes/perf11-sbc.md; since round 17 with
 * whole 16-byte output stores, docs/perf-notes/perf17-sbc.md; since round 28 `tk_swiglu_backward__e4m3_bf16_g128_t16x`,
 * kernels-src/cuda/swiglu/swiglu_bwd_t16x.cu, docs/perf-notes/perf28-sbc.md; round 11's `_t16` left the package in
 * trim20, round 17's `_t16w` in trim32), with `swigluLaunchTuning.backwardCastForm = "team16x"`: every output byte
 * (xGrad, the e4m3 data, the sf in every layout, weightGrad; padding rows included) against the CPU reference over
 * small, odd and wide shapes, 0 rows, psum with padding rows, weights and scale, random e4m3 codes (NaN codes included)
 * with scales from 2^-4 to 2^20 (e^(-g) overflowing, tmp = +Inf, the reciprocal's fallback) and dy with NaN / ±Inf; x
 * as an aligned view inside a larger storage (random seeds, printed: the draws change run to run). The bench's
 * 16384 × 7168 comparison with main's kernel is tests/sbc28_gpu.test.ts's 28004 (this file had a copy until the
 * twenty-second run). The test sets the knob. Every launch asserts the kernel sent;
 * the launches the form does not serve (clamp, recompute, fp32 dy, groups of 32, views off 16 bytes) must take main's
 * kernels. Skipped without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, HostTensor, swigluBackwardAndPerTokenCast, type Tensor, tensor } from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";

const SEED = Number(Date.now() % 1_000_000);
const T16X = "tk_swiglu_backward__e4m3_bf16_g128_t16x";
const T16Y = "tk_swiglu_backward__e4m3_bf16_g128_t16y";
const MAIN = "tk_swiglu_backward__e4m3_bf16_g128";
const SF_LAYOUTS = [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { roundSf: true, usePackedUe8m0: true }, {
  useTmaAlignedColMajorSf: true,
  roundSf: true,
  usePackedUe8m0: true,
}] as const;

function fnOf(sym: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, sym);
}

/** Runs `f` with `form` selected, restoring the knob. */
function withForm<R>(form: typeof swigluLaunchTuning.backwardCastForm, f: () => R): R {
  const saved = swigluLaunchTuning.backwardCastForm;
  swigluLaunchTuning.backwardCastForm = form;
  try {
    return f();
  } finally {
    swigluLaunchTuning.backwardCastForm = saved;
  }
}

/** [T, 2H] e4m3 codes (every pattern, NaN codes 0x7f / 0xff included) as a view `offset` bytes into its storage. */
function randomCodes(rand: () => number, T: number, W: number, offset = 0): HostTensor {
  const words = new Uint32Array(Math.ceil((offset + T * W) / 4));
  for (let i = 0; i < words.length; i++) words[i] = Math.floor(rand() * 2 ** 32);
  return new HostTensor(new Uint8Array(words.buffer, 0, offset + T * W), "e4m3", [T, W], [W, 1], offset);
}

/** fp32 x scales per group of 128: 2^-4 … 2^4, and rows of 2^20 (gates up to ~4.7e8: e^(-g) overflows, tmp = +Inf). */
function randomScales(rand: () => number, T: number, n: number): HostTensor {
  const v = new Float32Array(T * n);
  for (let t = 0; t < T; t++) for (let k = 0; k < n; k++) v[t * n + k] = t % 7 === 3 ? 2 ** 20 : Math.fround(2 ** (rand() * 8 - 4));
  return tensor(v, [T, n], "fp32");
}

/** [T, H] bf16 dy: mixed magnitudes with ±0, NaN and ±Inf. */
function randomDy(rand: () => number, T: number, H: number): HostTensor {
  const b = new Uint16Array(T * H);
  for (let i = 0; i < b.length; i++) {
    const r = rand();
    const v = r < 0.002 ? NaN : r < 0.004 ? Infinity : r < 0.006 ? -Infinity : r < 0.02 ? 0 : r < 0.03 ? -0 : (rand() * 2 - 1) * [1, 4, 1e-3, 100][i % 4];
    b[i] = encodeBf16(v);
  }
  return tensor(b, [T, H], "bf16");
}

/**
 * Prefix sums of E experts over T rows, keeping the §11.2 contract: expert e < E − 1 fills a random part (maybe none)
 * of its aligned span [e·S, (e + 1)·S), S = A·⌊T / (A·E)⌋, the last one of [(E − 1)·S, T); the rest are padding rows.
 */
function spanPsum(rand: () => number, T: number, E: number, A: number): HostTensor {
  const S = A * Math.floor(T / (A * E));
  const p = Int32Array.from({ length: E }, (_, e) => e * S + Math.floor(rand() * ((e === E - 1 ? T - e * S : S) + 1)));
  return tensor(p, [E], "int32");
}

interface Case {
  psum?: boolean;
  weights?: boolean;
  scale?: boolean;
}
const CASES: Case[] = [{}, { psum: true }, { weights: true, scale: true }, { psum: true, weights: true }, { psum: true, weights: true, scale: true }];

function options(rand: () => number, T: number, c: Case) {
  const A = [1, 4, 16][Math.floor(rand() * 3)];
  return {
    psumNumTokensPerExpert: c.psum && T > 0 ? spanPsum(rand, T, 5, A) : undefined,
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

/** The four outputs of one call, device vs host (or device vs device), every byte of each allocation. */
function sameOutputs(g: [Tensor, [Tensor, Tensor], Tensor | null, Tensor | null], c: typeof g, label: string): void {
  const bytes = (t: Tensor) => (t instanceof HostTensor ? storageBytes(t) : readAllocation(t as DeviceTensor));
  const pairs: [Tensor | null, Tensor | null, string][] = [[g[0], c[0], "xGrad"], [g[1][0], c[1][0], "xGradQ"], [g[1][1], c[1][1], "xGradSf"], [
    g[2],
    c[2],
    "weightGrad",
  ], [g[3], c[3], "actOut"]];
  for (const [gg, cc, name] of pairs) {
    assert.equal(gg === null, cc === null, `${label} ${name} presence`);
    if (gg && cc) assertBytesEqual(bytes(gg), bytes(cc), `${label} ${name}`);
  }
}

gpuTest("the team16x form equals the CPU reference on every byte: shapes, 0 rows, psum, weights, every sf layout, extreme inputs", () => {
  const seed = SEED + 11;
  console.log(`sbc11 seed ${seed}`);
  const rand = rng(seed);
  const t16x = fnOf(T16X);
  const shapes: [number, number][] = [[0, 128], [1, 128], [2, 256], [37, 384], [67, 1024], [7, 7168]];
  for (const [T, H] of shapes) {
    for (const c of CASES) {
      const q = randomCodes(rand, T, 2 * H, 16 * Math.floor(rand() * 3)); // 0, 16 or 32 bytes into its storage
      const qsf = randomScales(rand, T, (2 * H) / 128);
      const dy = randomDy(rand, T, H);
      const co = options(rand, T, c);
      const dco = onDevice(co);
      const dq = uploadView(q), dqsf = uploadView(qsf), ddy = uploadView(dy);
      for (const sfo of SF_LAYOUTS) {
        const label = `T=${T} H=${H} ${JSON.stringify(c)} ${JSON.stringify(sfo)} x+${q.offset}`;
        const o = { fmt: "e4m3", numPerChannels: 128, ...sfo } as const;
        const cpu = swigluBackwardAndPerTokenCast([q, qsf], dy, { ...o, ...co });
        const gpu = withForm("team16x", () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, { ...o, ...dco }));
        if (T > 0) assert.equal(swigluLastLaunch().fn, t16x, `${label}: kernel`); // 0 rows may launch nothing
        sameOutputs(gpu, cpu, label);
        dispose(gpu);
      }
      dispose(dq, dqsf, ddy, Object.values(dco));
    }
  }
});

gpuTest("the team16x knob leaves clamp, recompute, fp32 dy, groups of 32 and views off 16 bytes to main's kernels (same bytes as the CPU)", () => {
  const seed = SEED + 12;
  console.log(`sbc11 fallback seed ${seed}`);
  const rand = rng(seed);
  const T = 37, H = 256;
  const q = randomCodes(rand, T, 2 * H);
  const qOff = randomCodes(rand, T, 2 * H, 8); // 8 bytes into its storage: the form needs 16
  const qsf = randomScales(rand, T, (2 * H) / 128);
  const qsf32 = randomScales(rand, T, (2 * H) / 32);
  const dy = randomDy(rand, T, H);
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
    const gpu = withForm("team16x", () => swigluBackwardAndPerTokenCast([dx, ds], dd, { ...o, ...dco } as never));
    assert.equal(swigluLastLaunch().fn, fnOf(sym), `${label}: kernel ${sym}`);
    sameOutputs(gpu, cpu, label);
    dispose(gpu, dx, ds, dd);
  }
  // the team form is the default (`_t16y` for binary32 sf since round 32, tests/sbc32_gpu.test.ts; `_t16x` from round
  // 28), and "main" selects main's kernel
  const dx = uploadView(q), ds = uploadView(qsf), dd = uploadView(dy);
  const d = swigluBackwardAndPerTokenCast([dx, ds], dd, { fmt: "e4m3", numPerChannels: 128, ...dco });
  assert.equal(swigluLastLaunch().fn, fnOf(T16Y), "default (binary32 sf): the team16y kernel");
  const g = withForm("main", () => swigluBackwardAndPerTokenCast([dx, ds], dd, { fmt: "e4m3", numPerChannels: 128, ...dco }));
  assert.equal(swigluLastLaunch().fn, fnOf(MAIN), "knob \"main\": main's kernel");
  sameOutputs(d, g, "default vs main");
  dispose(d, g, dx, ds, dd, Object.values(dco));
});


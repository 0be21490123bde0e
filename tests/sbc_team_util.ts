/**
 * Inputs, options and checks of the GPU tests of swigluBackwardAndPerTokenCast's 16-lane team forms
 * (tests/sbc28_gpu.test.ts: `_t16x`, tests/sbc32_gpu.test.ts: `_t16y`; tests/sbc17_gpu.test.ts shared them for `_t16w`
 * until trim32): e4m3 codes of every pattern, scales reaching the exponentials' and reciprocals' slow paths, dy with
 * specials, psum / weights / scale cases, and the byte comparison of every output allocation.
 */
import assert from "node:assert/strict";
import { config, type DeviceTensor, HostTensor, swigluBackwardAndPerTokenCast, type Tensor, tensor } from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { assertBytesEqual } from "./harness.ts";
import { dispose, randomPsum, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";

export const T16X = "tk_swiglu_backward__e4m3_bf16_g128_t16x";
export const T16Y = "tk_swiglu_backward__e4m3_bf16_g128_t16y";

/** The shapes of the team form's main test: 1 row; 2; 3 (a dead team); 17 (a dead team, 7 dead warps of 8); 37; 67; 7 × 7168. */
export const TEAM_SHAPES: readonly [number, number][] = [[1, 128], [2, 256], [3, 128], [17, 384], [37, 1024], [67, 256], [7, 7168]];

export const SF_LAYOUTS = [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { roundSf: true, usePackedUe8m0: true }, {
  useTmaAlignedColMajorSf: true,
  roundSf: true,
  usePackedUe8m0: true,
}] as const;

export type Form = typeof swigluLaunchTuning.backwardCastForm;
export type SfLayout = { roundSf?: boolean; usePackedUe8m0?: boolean; useTmaAlignedColMajorSf?: boolean };
/** The kernel a form runs: one symbol for every sf layout, or one per layout (`_t16y` takes binary32 sf only). */
export type FormKernel = string | ((sfo: SfLayout) => string);
const kernelOf = (k: FormKernel, sfo: SfLayout) => (typeof k === "string" ? k : k(sfo));
export type Outputs = ReturnType<typeof swigluBackwardAndPerTokenCast>;

export function fnOf(sym: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, sym);
}

/** Runs `f` with `form` and config.pdl = `pdl`, restoring both. */
export function withForm<R>(form: Form, pdl: boolean, f: () => R): R {
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
export function codes(rand: () => number, T: number, W: number, offset = 0): HostTensor {
  const b = new Uint8Array(offset + T * W);
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(rand() * 256);
  return new HostTensor(b, "e4m3", [T, W], [W, 1], offset);
}

/** fp32 x scales per group of 128: 2^-4 … 2^4, rows of 2^20 (tmp = +Inf) and rows of 2^-40 (subnormal results). */
export function scales(rand: () => number, T: number, n: number): HostTensor {
  const v = new Float32Array(T * n);
  for (let t = 0; t < T; t++) {
    for (let k = 0; k < n; k++) v[t * n + k] = t % 7 === 3 ? 2 ** 20 : t % 11 === 5 ? 2 ** -40 : Math.fround(2 ** (rand() * 8 - 4));
  }
  return tensor(v, [T, n], "fp32");
}

/** [T, H] bf16 dy: |v| in 2^-16 … 2^16 mostly, 2% any pattern (NaN, ±Inf, subnormals, ±0). */
export function dyOf(rand: () => number, T: number, H: number): HostTensor {
  const b = new Uint16Array(T * H);
  for (let i = 0; i < b.length; i++) {
    const r = rand();
    b[i] = r < 0.02 ? Math.floor(rand() * 65536) : r < 0.025 ? encodeBf16(r < 0.0225 ? Infinity : NaN) : ((r < 0.5 ? 0x8000 : 0) | (0x3780 + Math.floor(rand() * 0x1000)));
  }
  return tensor(b, [T, H], "bf16");
}

export interface Case {
  psum?: boolean;
  weights?: boolean;
  scale?: boolean;
}
export const CASES: Case[] = [{}, { psum: true }, { weights: true, scale: true }, { psum: true, weights: true }, { psum: true, weights: true, scale: true }];

/** The op's options for a case: psum of 5 experts with alignment 1, 4 or 16 (randomPsum keeps §11.2), weights in [0, 2). */
export function options(rand: () => number, T: number, c: Case) {
  const A = [1, 4, 16][Math.floor(rand() * 3)];
  return {
    psumNumTokensPerExpert: c.psum ? randomPsum(rand, T, 5, A) : undefined,
    tokenAlignment: A,
    topkWeights: c.weights ? tensor(Float32Array.from({ length: T }, () => Math.fround(rand() * 2)), [T], "fp32") : undefined,
    routedScalingFactor: c.scale ? 1.5 : undefined,
  };
}

export function onDevice<O extends Record<string, unknown>>(o: O): O {
  const r: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) r[k] = v instanceof HostTensor ? uploadView(v) : v;
  return r as O;
}

/** Every byte of every output allocation, `got` (device) against `want` (host or device). */
export function sameOutputs(got: Outputs, want: Outputs, label: string): void {
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

/**
 * One shape and case through the CPU and through the team form `form` (PDL setting `pdl`; the forms have no PDL
 * prologue, so the launch is plain either way), every sf layout, the kernel `sym` (of the layout) asserted.
 */
export function compareCase(form: Form, sym: FormKernel, rand: () => number, T: number, H: number, c: Case, pdl: boolean): void {
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
    const gpu = withForm(form, pdl, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, { ...o, ...dco }));
    const l = swigluLastLaunch();
    assert.equal(l.fn, fnOf(kernelOf(sym, sfo)), `${label}: kernel`);
    assert.equal(l.pdl, false, `${label}: launched plainly`);
    sameOutputs(gpu, cpu, label);
    dispose(gpu);
  }
  dispose(dq, dqsf, ddy, Object.values(dco));
}

/**
 * The bench's 3000 × 7168 (psum, weights; fp32 and packed UE8M0 TMA sf) through the team form `form` (PDL on), the
 * kernel `sym` (of the layout) asserted, against the CPU reference; with `defaultSym` (the default's kernel, of the
 * layout), the same call under the default knob too.
 */
export function benchShapeCase(form: Form, sym: FormKernel, rand: () => number, defaultSym: FormKernel | null = null): void {
  const T = 3000, H = 7168;
  const q = codes(rand, T, 2 * H), qsf = scales(rand, T, (2 * H) / 128), dy = dyOf(rand, T, H);
  const co = options(rand, T, { psum: true, weights: true });
  const dco = onDevice(co);
  const dq = uploadView(q), dqsf = uploadView(qsf), ddy = uploadView(dy);
  for (const sfo of [{}, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }] as const) {
    const o = { fmt: "e4m3", numPerChannels: 128, ...sfo } as const;
    const cpu = swigluBackwardAndPerTokenCast([q, qsf], dy, { ...o, ...co });
    const gpu = withForm(form, true, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, { ...o, ...dco }));
    assert.equal(swigluLastLaunch().fn, fnOf(kernelOf(sym, sfo)), "3000 x 7168: kernel");
    sameOutputs(gpu, cpu, `3000 x 7168 ${JSON.stringify(sfo)}`);
    dispose(gpu);
    if (defaultSym !== null) {
      const d = swigluBackwardAndPerTokenCast([dq, dqsf], ddy, { ...o, ...dco });
      assert.equal(swigluLastLaunch().fn, fnOf(kernelOf(defaultSym, sfo)), "default: its kernel");
      sameOutputs(d, cpu, `3000 x 7168 default ${JSON.stringify(sfo)}`);
      dispose(d);
    }
  }
  dispose(dq, dqsf, ddy, Object.values(dco));
}

/** swiglu.cu's main kernel (bf16 dy, groups of 128): what the team forms fall back to. */
export const MAIN = "tk_swiglu_backward__e4m3_bf16_g128";

/**
 * The knob test's fallbacks: at 37 × 256 (psum, weights), with `form` set, clamp, recompute, fp32 dy, groups of 32 and
 * an x view 8 bytes into its storage (the team forms need 16) each run the kernel they name, then every case of
 * `more` (a label, the kernel it must run, extra options on the same inputs); every call against the CPU reference
 * byte for byte. Returns the inputs (q, its scales, dy and the device options) for the test's own checks after.
 */
export function checkFallbacks(form: Form, rand: () => number, more: readonly [string, string, Record<string, unknown>][] = []) {
  const T = 37, H = 256;
  const q = codes(rand, T, 2 * H);
  const qOff = codes(rand, T, 2 * H, 8);
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
    ...more.map(([label, sym, extra]) => [label, sym, q, qsf, dy, extra] as [string, string, HostTensor, HostTensor, HostTensor, Record<string, unknown>]),
  ];
  for (const [label, sym, hx, hs, hdy, extra] of runs) {
    const o = { fmt: "e4m3", numPerChannels: 128, ...co, ...extra } as const;
    const dx = uploadView(hx), ds = uploadView(hs), dd = uploadView(hdy);
    const cpu = swigluBackwardAndPerTokenCast([hx, hs], hdy, o as never);
    const gpu = withForm(form, false, () => swigluBackwardAndPerTokenCast([dx, ds], dd, { ...o, ...dco } as never));
    assert.equal(swigluLastLaunch().fn, fnOf(sym), `${label}: kernel ${sym}`);
    sameOutputs(gpu, cpu, label);
    dispose(gpu, dx, ds, dd);
  }
  return { q, qsf, dy, dco };
}

/**
 * The bench's 16384 × 7168 (64 experts at alignment 128, one or more padding rows each, weights): `cand`'s outputs
 * equal `base`'s byte for byte under each sf layout of `layouts`, the kernel of each asserted.
 */
export function compareAtBenchShape(rand: () => number, base: readonly [Form, string], cand: readonly [Form, string], layouts: readonly SfLayout[]): void {
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
  const common = {
    fmt: "e4m3",
    numPerChannels: 128,
    psumNumTokensPerExpert: uploadView(tensor(p, [E], "int32")),
    tokenAlignment: A,
    topkWeights: uploadView(tensor(Float32Array.from({ length: T }, () => Math.fround(rand())), [T], "fp32")),
  } as const;
  for (const sfo of layouts) {
    const o = { ...common, ...sfo };
    const b = withForm(base[0], false, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, o));
    assert.equal(swigluLastLaunch().fn, fnOf(base[1]), `${base[1]} kernel`);
    const c = withForm(cand[0], false, () => swigluBackwardAndPerTokenCast([dq, dqsf], ddy, o));
    assert.equal(swigluLastLaunch().fn, fnOf(cand[1]), `${cand[1]} kernel`);
    sameOutputs(c, b, `16384 x 7168 ${JSON.stringify(sfo)}`);
    dispose(b, c);
  }
  dispose(dq, dqsf, ddy, common.psumNumTokensPerExpert, common.topkWeights);
}


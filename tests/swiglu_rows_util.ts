/**
 * Inputs and comparisons shared by the GPU tests of SwiGLU's row forms at H = 7168 (tests/swr11_gpu.test.ts and
 * swl17_gpu.test.ts: the cast's row form, `_anrt` since round 33; tests/swc33_gpu.test.ts: `_anrt` against `_anrs`;
 * tests/swf15_gpu.test.ts and swf18_gpu.test.ts: `_anrps`): bf16 [T, 2H] inputs with special values and the cast's
 * edge groups, the option sets (psum layouts, weights, scaling), their device copies, the real-row views of outputs the
 * forward leaves unwritten on padding rows, and the cast's knob checks (a knob's two kernels byte for byte at the
 * bench's shapes; a data view at +8 bytes and the fallbacks with the knob on).
 * @module
 */
import { encodeBf16 } from "../core/dtype.ts";
import { HostTensor, tensor } from "../mod.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import assert from "node:assert/strict";
import { type DeviceTensor, swigluForward, swigluForwardAndPerTokenCast } from "../mod.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import { assertBytesEqual } from "./harness.ts";
import { dispose, randomInput, randomPsum, readAllocation, storageBytes, uploadView, withPdl } from "./gpu_util.ts";

/** The one hidden size the row forms are built for. */
export const H = 7168;

/** The function handle of a kernel symbol on device 0. */
export function fnOf(sym: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, sym);
}

/** A bf16 [T, 2H] input: random values with NaN, ±Inf and ±0 (kind 0), gpu_util's row kinds (1), or edge groups (2). */
export function inputX(rand: () => number, T: number, kind: number): HostTensor {
  if (kind === 1) return randomInput(rand, T, 2 * H, "bf16");
  const b = new Uint16Array(T * 2 * H);
  const NAN = 0x7fc0, INF = 0x7f80, TINY = 0x0080, HUGE = 0x7f00;
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      const r = () => {
        const v = rand();
        if (kind === 0 && v < 0.002) return NAN;
        if (kind === 0 && v < 0.004) return INF;
        if (kind === 0 && v < 0.006) return 0xff80;
        return encodeBf16(Math.fround((rand() * 2 - 1) * [1, 4, 20, 300, 1e-3][j % 5]));
      };
      let g = r(), u = r();
      if (kind === 2) {
        const e = (t * (H / 128) + (j >> 7)) % 8;
        if (e === 1) g = NAN; // the whole group NaN: amax 0, the clamp's scale
        else if (e === 2) [g, u] = [0, rand() < 0.5 ? 0x8000 : 0]; // ±0 only
        else if (e === 3 && j % 128 === 37) u = INF; // amax +Inf (the divisions' slow paths)
        else if (e === 4) [g, u] = [0x3f80, TINY ^ (rand() < 0.5 ? 0x8000 : 0)]; // subnormal products
        else if (e === 5) [g, u] = [HUGE, HUGE]; // overflow to +Inf, a gate outside the silu window
        else if (e === 6 && j % 128 === 5) g = NAN; // one NaN among finite values
        else if (e === 7 && j % 128 === 127) u = encodeBf16(-1000); // the amax at the last column, negative
      }
      b[t * 2 * H + j] = g;
      b[t * 2 * H + H + j] = u;
    }
  }
  return tensor(b, [T, 2 * H], "bf16");
}
export interface Opts {
  psum?: boolean | number[];
  weights?: boolean;
  scale?: boolean;
}
export const OPTS: readonly Opts[] = [{}, { psum: true }, { weights: true }, { weights: true, scale: true }, { psum: true, weights: true, scale: true }];

export function options(rand: () => number, T: number, o: Opts, A: number) {
  return {
    psumNumTokensPerExpert: Array.isArray(o.psum)
      ? tensor(Int32Array.from(o.psum), [o.psum.length], "int32")
      : o.psum && T > 0
      ? randomPsum(rand, T, 7, A)
      : undefined,
    tokenAlignment: A,
    topkWeights: o.weights ? tensor(Float32Array.from({ length: T }, () => Math.fround(rand() * 2)), [T], "fp32") : undefined,
    routedScalingFactor: o.scale ? 1.5 : undefined,
  };
}

export function onDevice<T extends Record<string, unknown>>(o: T): T {
  const r: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) r[k] = v instanceof HostTensor ? uploadView(v) : v;
  return r as T;
}

/** The bytes of rows `real` of a [T, rowBytes] allocation, padding rows zeroed (the forward leaves them unwritten). */
export function realRows(b: Uint8Array, real: Uint8Array, rowBytes: number): Uint8Array {
  const c = b.slice();
  for (let t = 0; t < real.length; t++) if (!real[t]) c.fill(0, t * rowBytes, (t + 1) * rowBytes);
  return c;
}

/** The sf storage of rows `real` (4-byte elements, strides of `ref`), other rows zeroed; the padding rows kept. */
export function realSf(b: Uint8Array, ref: HostTensor, real: Uint8Array): Uint8Array {
  const c = b.slice();
  const [s0, s1] = ref.strides;
  for (let t = 0; t < real.length; t++) {
    if (real[t]) continue;
    for (let k = 0; k < ref.shape[1]; k++) c.fill(0, 4 * (t * s0 + k * s1), 4 * (t * s0 + k * s1) + 4);
  }
  return c;
}

export const SF_OPTS = [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }];


/**
 * With a clamp (H = 7168, x = `x` on the host and `dx` on the device) the row forms are not taken: swigluForward runs
 * `_a` and the cast main's kernel, each equal to the CPU reference; their outputs are freed.
 */
export function checkClampFallback(x: HostTensor, dx: DeviceTensor): void {
  const f = swigluForward(dx, { fmt: "bf16", clampValue: 7 }) as DeviceTensor;
  assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16_a"), "clamp: _a");
  assertBytesEqual(readAllocation(f), storageBytes(swigluForward(x, { fmt: "bf16", clampValue: 7 }) as HostTensor), "clamp forward");
  const [c, sf] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, clampValue: 7 });
  assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_e4m3_g128"), "clamp: main's cast kernel");
  const want = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, clampValue: 7 })[0] as HostTensor;
  assertBytesEqual(readAllocation(c as DeviceTensor), storageBytes(want), "clamp cast");
  dispose(f, c, sf);
}

/** A launch knob of swigluForwardAndPerTokenCast's row forms (swigluLaunchTuning). */
export type CastRowKnob = "rowForm" | "castTailPrefetch";

const CAST = { fmt: "e4m3", numPerChannels: 128 } as const;
const CAST_ANL = "tk_swiglu_forward__bf16_e4m3_g128_anl";
const CAST_MAIN = "tk_swiglu_forward__bf16_e4m3_g128";

/** Runs `f` with swigluLaunchTuning[`knob`] = `on`, restoring it however `f` ends. */
export function withCastKnob<R>(knob: CastRowKnob, on: boolean, f: () => R): R {
  const saved = swigluLaunchTuning[knob];
  swigluLaunchTuning[knob] = on;
  try {
    return f();
  } finally {
    swigluLaunchTuning[knob] = saved;
  }
}

/**
 * The cast with `knob` off (kernel `offSym`) and on (`onSym`), byte for byte, at each [T, E, A] of `cases` (gpu_util's
 * row kinds, weights and routedScalingFactor, a random psum of E experts at alignment A), PDL off and on; at T ≤ 3000
 * `onSym` also against the CPU reference (real rows; the sf with the padding rows' entries masked as realSf does).
 */
export function castKnobAB(rand: () => number, knob: CastRowKnob, offSym: string, onSym: string, cases: readonly (readonly [number, number, number])[]): void {
  for (const [T, E, A] of cases) {
    const x = inputX(rand, T, 1);
    const co = options(rand, T, { weights: true, scale: true }, A);
    co.psumNumTokensPerExpert = randomPsum(rand, T, E, A);
    const real = swigluRealRows("t", T, co.psumNumTokensPerExpert, A);
    const dx = uploadView(x), dco = onDevice(co);
    try {
      for (const pdl of [false, true]) {
        withPdl(pdl, () => {
          const run = (on: boolean) =>
            withCastKnob(knob, on, () => {
              const [d, s] = swigluForwardAndPerTokenCast(dx, { ...CAST, ...dco });
              const out = { fn: swigluLastLaunch().fn, d: realRows(readAllocation(d as DeviceTensor), real, H), s: readAllocation(s as DeviceTensor) };
              dispose(d, s);
              return out;
            });
          const m = run(false);
          assert.equal(m.fn, fnOf(offSym), `knob off: ${offSym}`);
          const q = run(true);
          assert.equal(q.fn, fnOf(onSym), `knob on: ${onSym}`);
          assertBytesEqual(q.d, m.d, `${T} E=${E} cast data pdl ${pdl}`);
          assertBytesEqual(q.s, m.s, `${T} E=${E} cast sf pdl ${pdl}`);
        });
      }
      if (T > 3000) continue; // the CPU reference of more rows: too slow for a test
      withCastKnob(knob, true, () => {
        const [cd, cs] = swigluForwardAndPerTokenCast(x, { ...CAST, ...co });
        const [gd, gs] = swigluForwardAndPerTokenCast(dx, { ...CAST, ...dco });
        assert.equal(swigluLastLaunch().fn, fnOf(onSym), `${T}: ${onSym}`);
        assertBytesEqual(realRows(readAllocation(gd as DeviceTensor), real, H), realRows(storageBytes(cd as HostTensor), real, H), `${T} E=${E} data vs CPU`);
        assertBytesEqual(realSf(readAllocation(gs as DeviceTensor), cs as HostTensor, real), realSf(storageBytes(cs as HostTensor), cs as HostTensor, real), `${T} E=${E} sf vs CPU`);
        dispose(gd, gs);
      });
    } finally {
      dispose(dx, Object.values(dco));
    }
  }
}

/**
 * A preallocated data view 8 bytes into its allocation (the cast's 8-byte condition holds, 16 does not; every row
 * real) runs `onSym` with `knob` on and `offSym` with it off; then, with the knob on, the cases the row forms do not
 * take run their usual kernel: rowForm off `_anl`, a clamp main's kernel, H = 1024 `_anl`, x off alignment main's
 * kernel; every output against the CPU reference.
 */
export function castKnobViewsAndFallbacks(rand: () => number, knob: CastRowKnob, offSym: string, onSym: string): void {
  {
    const T = 5;
    const x = inputX(rand, T, 0);
    const dx = uploadView(x);
    const want = storageBytes(swigluForwardAndPerTokenCast(x, CAST)[0] as HostTensor);
    for (const on of [false, true]) {
      const dd = uploadView(new HostTensor(new Uint8Array(T * H + 8), "e4m3", [T, H], [H, 1], 8));
      withCastKnob(knob, on, () => {
        const [d, s] = swigluForwardAndPerTokenCast(dx, { ...CAST, out: { data: dd } });
        assert.equal(swigluLastLaunch().fn, fnOf(on ? onSym : offSym), `data at +8: ${on}`);
        assertBytesEqual(readAllocation(d as DeviceTensor).subarray(8), want, `data at +8 (${on}) vs CPU`);
        dispose(s);
      });
      dispose(dd);
    }
    dispose(dx);
  }
  withCastKnob(knob, true, () => {
    const x2 = inputX(rand, 3, 0);
    const d2 = uploadView(x2);
    withCastKnob("rowForm", false, () => {
      const [c3, s3] = swigluForwardAndPerTokenCast(d2, CAST);
      assert.equal(swigluLastLaunch().fn, fnOf(CAST_ANL), "rowForm off: _anl");
      assertBytesEqual(readAllocation(c3 as DeviceTensor), storageBytes(swigluForwardAndPerTokenCast(x2, CAST)[0] as HostTensor), "rowForm off cast");
      dispose(c3, s3);
    });
    const [c2, s2] = swigluForwardAndPerTokenCast(d2, { ...CAST, clampValue: 7 });
    assert.equal(swigluLastLaunch().fn, fnOf(CAST_MAIN), "clamp: main's cast kernel");
    assertBytesEqual(readAllocation(c2 as DeviceTensor), storageBytes(swigluForwardAndPerTokenCast(x2, { ...CAST, clampValue: 7 })[0] as HostTensor), "clamp cast");
    dispose(c2, s2);
    const x1 = tensor(Uint16Array.from({ length: 9 * 2 * 1024 }, () => encodeBf16(Math.fround(rand() * 8 - 4))), [9, 2048], "bf16");
    const d1 = uploadView(x1);
    const [c1, s1] = swigluForwardAndPerTokenCast(d1, CAST);
    assert.equal(swigluLastLaunch().fn, fnOf(CAST_ANL), "H = 1024: _anl");
    assertBytesEqual(readAllocation(c1 as DeviceTensor), storageBytes(swigluForwardAndPerTokenCast(x1, CAST)[0] as HostTensor), "H = 1024 cast");
    dispose(d1, c1, s1);
    const src = x2.data as Uint16Array;
    const pad = new Uint16Array(src.length + 1);
    pad.set(src, 1);
    const du = uploadView(new HostTensor(pad, "bf16", x2.shape, x2.strides, 1));
    const [cu, su] = swigluForwardAndPerTokenCast(du, CAST);
    assert.equal(swigluLastLaunch().fn, fnOf(CAST_MAIN), "x off alignment: main's kernel");
    assertBytesEqual(readAllocation(cu as DeviceTensor), storageBytes(swigluForwardAndPerTokenCast(x2, CAST)[0] as HostTensor), "x off alignment cast");
    dispose(d2, du, cu, su);
  });
}


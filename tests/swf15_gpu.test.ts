/**
 * swigluForward's row-prefetch form (`_anrps` since trim24, round 15's `_anrp` before: kernels-src/cuda/swiglu/swiglu_rows.cu,
 * docs/perf-notes/perf15-swf.md, perf18-swf.md;
 * `swigluLaunchTuning.rowPrefetch`, on by default, set and restored in try/finally) against the CPU reference and
 * main's `_an` byte for byte at H = 7168 (the only hidden size it is built for): T = 1, 2, 5, 37 and more rows than
 * a grid of one wave (blocks walk several rows, the last prefetch past T), random rows with NaN / ±Inf / ±0, gpu_util's
 * row kinds and edge groups; psum layouts (random with 0-token experts, and small hand-made ones: a padding gap after a
 * 1-row expert, empty experts, rows beyond psum[E−1], every row padding, an alignment wider than T), token alignments
 * 1 / 4 / 16 / 128, weights with and without routedScalingFactor, PDL on and off; the launched kernel asserted after
 * every call. swigluForwardAndPerTokenCast keeps its row form (`_anrt` since round 33, `_anrs` from round 17) with the knob on (the same walk lost for the cast) and is
 * checked against the reference on every sf layout alongside. Then the bench's shape 3000 × 7168 (psum, weights,
 * scaling) against `_an`, and the cases the row-prefetch form does not take (a clamp, another H, x off alignment) run main's
 * choice. Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, HostTensor, swigluForward, swigluForwardAndPerTokenCast, tensor } from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { config } from "../core/config.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { checkClampFallback, fnOf, H, inputX, onDevice, type Opts, OPTS, options, realRows, realSf, SF_OPTS } from "./swiglu_rows_util.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomPsum, readAllocation, storageBytes, uploadView, withPdl } from "./gpu_util.ts";

const SEED = 15201;
/** The cast's default row form at H = 7168 (`_anr2` until round 17, `_anrs` until round 33, `_anrt` since: tests/swl17_gpu.test.ts). */
const CAST_ROWS = "tk_swiglu_forward__bf16_e4m3_g128_anrt";
/** The row-prefetch form (round 15's `_anrp`, pinned here by forwardRowScan off until trim24 removed both). */
const FWD_ROWS = "tk_swiglu_forward__bf16_bf16_anrps";

/** Runs `f` with swigluLaunchTuning.rowPrefetch = `on`, restoring it however `f` ends. */
function withPrefetch<R>(on: boolean, f: () => R): R {
  const saved = { ...swigluLaunchTuning };
  swigluLaunchTuning.rowPrefetch = on;
  try {
    return f();
  } finally {
    Object.assign(swigluLaunchTuning, saved);
  }
}



/** Small psum layouts by hand: [T, A, psum] (each keeps §11.2: psum[e] ≥ align(psum[e−1], A), psum[E−1] ≤ T). */
const SMALL_PSUM: readonly [number, number, number[]][] = [
  [9, 4, [1, 4, 4, 9]], // expert 0: row 0, rows 1–3 padding; experts 1, 2 empty; expert 3 rows 4–8
  [5, 1, [0, 0, 2, 2]], // two empty experts first, rows 2–4 beyond psum[E−1] (padding)
  [3, 1, [0, 0]], // every row padding: nothing written
  [20, 16, [3, 19]], // expert 0 rows 0–2, rows 3–15 padding, expert 1 rows 16–18, row 19 beyond psum[E−1]
  [7, 16, [3]], // one expert, alignment 16 > T: rows 3–6 padding
  [2, 1, [2]], // one expert, every row real
];

/** Both ops under the row-prefetch form against the CPU reference (real rows; the sf with its padding rows) and the launched kernel. */
function checkCase(x: HostTensor, co: ReturnType<typeof options>, A: number, pdl: boolean, tag: string): number {
  const T = x.shape[0];
  const real = swigluRealRows("t", T, co.psumNumTokensPerExpert ?? null, A);
  const dx = uploadView(x), dco = onDevice(co);
  let calls = 0;
  try {
    withPrefetch(true, () =>
      withPdl(pdl, () => {
        const fr = swigluForward(x, { fmt: "bf16", ...co }) as HostTensor;
        const fg = swigluForward(dx, { fmt: "bf16", ...dco }) as DeviceTensor;
        const last = swigluLastLaunch();
        assert.equal(last.fn, fnOf(FWD_ROWS), `swigluForward ${tag}: kernel`);
        assert.equal(last.pdl, config.pdl, `swigluForward ${tag}: PDL as config.pdl`);
        assertBytesEqual(realRows(readAllocation(fg), real, 2 * H), realRows(storageBytes(fr), real, 2 * H), `swigluForward ${tag}`);
        dispose(fg);
        calls++;
        for (const sfo of SF_OPTS) {
          const [cd, cs] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, ...sfo, ...co });
          const [gd, gs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, ...sfo, ...dco });
          const label = `swigluForwardAndPerTokenCast ${JSON.stringify(sfo)} ${tag}`;
          assert.equal(swigluLastLaunch().fn, fnOf(CAST_ROWS), `${label}: kernel (the cast keeps its row form)`);
          assertBytesEqual(realRows(readAllocation(gd as DeviceTensor), real, H), realRows(storageBytes(cd as HostTensor), real, H), `${label} data`);
          assertBytesEqual(realSf(readAllocation(gs as DeviceTensor), cs as HostTensor, real), realSf(storageBytes(cs as HostTensor), cs as HostTensor, real), `${label} sf`);
          dispose(gd, gs);
          calls++;
        }
      })
    );
  } finally {
    dispose(dx, Object.values(dco));
  }
  return calls;
}

gpuTest("_anrps (rowPrefetch on) equals the CPU reference at H = 7168: small and random psum layouts, 0-token experts, alignments, weights, scaling, PDL on and off", () => {
  const rand = rng(SEED);
  let calls = 0, n = 0;
  for (const [T, A, ps] of SMALL_PSUM) {
    const o: Opts = { psum: ps, weights: n % 2 === 0, scale: n % 4 === 0 }; // a scaling factor only with weights
    calls += checkCase(inputX(rand, T, n % 3), options(rand, T, o, A), A, n % 2 === 1, `small psum ${JSON.stringify(ps)} T=${T} A=${A} ${JSON.stringify(o)}`);
    n++;
  }
  for (const T of [1, 2, 5, 37, 700]) {
    for (const o of OPTS) {
      if (T === 700 && !(o.psum === o.weights)) continue; // the large case (CPU time): no options, and all of them
      const A = [1, 4, 16, 128][Math.floor(rand() * 4)];
      const kind = Math.floor(rand() * 3);
      calls += checkCase(inputX(rand, T, kind), options(rand, T, o, A), A, n++ % 2 === 0, `T=${T} ${JSON.stringify(o)} A=${A} input kind ${kind}`);
    }
  }
  assert.ok(calls > 0);
  assert.equal(swigluLaunchTuning.rowPrefetch, true, "the knob is restored (default on)");
});

gpuTest("_anrps equals main's _an (and the cast its row form) at the bench's shape 3000 × 7168 (psum over 64 experts, alignment 128, weights, scaling; PDL on and off)", () => {
  const rand = rng(SEED + 1);
  const T = 3000, A = 128;
  const x = inputX(rand, T, 1);
  const co = options(rand, T, { weights: true, scale: true }, A);
  co.psumNumTokensPerExpert = randomPsum(rand, T, 64, A);
  const real = swigluRealRows("t", T, co.psumNumTokensPerExpert, A);
  const dx = uploadView(x), dco = onDevice(co);
  try {
    for (const pdl of [false, true]) {
      withPdl(pdl, () => {
        const run = (on: boolean) =>
          withPrefetch(on, () => {
            const f = swigluForward(dx, { fmt: "bf16", ...dco }) as DeviceTensor;
            const ff = swigluLastLaunch().fn;
            const [d, s] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, ...dco });
            const cf = swigluLastLaunch().fn;
            const out = {
              fn: [ff, cf],
              f: realRows(readAllocation(f), real, 2 * H),
              d: realRows(readAllocation(d as DeviceTensor), real, H),
              s: readAllocation(s as DeviceTensor),
            };
            dispose(f, d, s);
            return out;
          });
        const m = run(false), p = run(true);
        assert.deepEqual(m.fn, [fnOf("tk_swiglu_forward__bf16_bf16_an"), fnOf(CAST_ROWS)], "knob off: main's forms");
        assert.deepEqual(p.fn, [fnOf(FWD_ROWS), fnOf(CAST_ROWS)], "knob on: _anrps (the cast keeps its row form)");
        assertBytesEqual(p.f, m.f, `3000 swigluForward pdl ${pdl}`);
        assertBytesEqual(p.d, m.d, `3000 cast data pdl ${pdl}`);
        assertBytesEqual(p.s, m.s, `3000 cast sf pdl ${pdl}`);
      });
    }
  } finally {
    dispose(dx, Object.values(dco));
  }
});

gpuTest("with rowPrefetch on, the cases _anrps does not take run main's choice (clampValue, another H, x off alignment)", () => {
  const rand = rng(SEED + 2);
  withPrefetch(true, () => {
    const x2 = inputX(rand, 3, 0);
    const d2 = uploadView(x2);
    checkClampFallback(x2, d2);
    const x1 = tensor(Uint16Array.from({ length: 9 * 2 * 1024 }, () => encodeBf16(Math.fround(rand() * 8 - 4))), [9, 2048], "bf16");
    const d1 = uploadView(x1);
    const f1 = swigluForward(d1, { fmt: "bf16" }) as DeviceTensor;
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16_an"), "H = 1024: _an");
    const [c1, s1] = swigluForwardAndPerTokenCast(d1, { fmt: "e4m3", numPerChannels: 128 });
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_e4m3_g128_anl"), "H = 1024: _anl");
    dispose(d1, f1, c1, s1);
    const src = x2.data as Uint16Array;
    const pad = new Uint16Array(src.length + 1);
    pad.set(src, 1);
    const du = uploadView(new HostTensor(pad, "bf16", x2.shape, x2.strides, 1));
    const fu = swigluForward(du, { fmt: "bf16" }) as DeviceTensor;
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16"), "x off alignment: main's kernel");
    assertBytesEqual(readAllocation(fu), storageBytes(swigluForward(x2, { fmt: "bf16" }) as HostTensor), "x off alignment forward");
    dispose(d2, du, fu);
  });
  assert.equal(swigluLaunchTuning.rowPrefetch, true, "the knob is restored (default on)");
});

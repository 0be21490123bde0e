/**
 * swigluForward's row-prefetch form with the block's expert cursor, `_anrps` (kernels-src/cuda/swiglu/swiglu_rows.cu,
 * docs/perf-notes/perf18-swf.md; `swigluLaunchTuning.rowPrefetch`, on by default, set and restored in try/finally)
 * against the CPU reference on the output's real rows (the padding rows, which the forward leaves unwritten, masked)
 * at H = 7168, the only hidden size it is built for: T = 1, 2, 5, 37, 700 (blocks walk several rows, the last
 * prefetch past T), random rows with NaN / ±Inf / ±0, gpu_util's row kinds and edge groups; psum layouts that move the
 * cursor every way: random with 0-token experts, small hand-made ones (a padding gap after a 1-row expert, empty
 * experts, rows beyond psum[E−1], every row padding, an alignment wider than T), padding rows among a block's later
 * rows (their prefetch skipped: a padding row before a real one and after one), and layouts where a block's next row
 * lies more than 31 experts further (the cursor's binary-search fallback) or 1–31 further (the warp scan); token
 * alignments 1 / 4 / 16 / 128, weights with and without routedScalingFactor (the factor only with weights), PDL on
 * and off; the launched kernel and its PDL flag asserted after every call. Then the bench's shape 3000 × 7168 (64
 * experts at alignment 128, 512 at 1; weights, scaling) against `_an` (rowPrefetch off) byte for byte, PDL on
 * and off, and against the CPU reference (until trim24 against round 15's `_anrp`, forwardRowScan off, both removed);
 * the cases the row form does not take (rowPrefetch off, a clamp, another H, x off alignment) run main's choice, and
 * the cast keeps `_anrt`. Every psum here keeps §11.2 (psum[e] ≥ align(psum[e−1], A),
 * psum[E−1] ≤ T). Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, HostTensor, swigluForward, swigluForwardAndPerTokenCast, tensor } from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { config } from "../core/config.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { checkClampFallback, fnOf, H, inputX, onDevice, type Opts, OPTS, options, realRows } from "./swiglu_rows_util.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomPsum, readAllocation, storageBytes, uploadView, withPdl } from "./gpu_util.ts";

const SEED = 18101;
const FWD_AN = "tk_swiglu_forward__bf16_bf16_an";
const FWD_ANRPS = "tk_swiglu_forward__bf16_bf16_anrps";
const CAST_ROW_FORM = "tk_swiglu_forward__bf16_e4m3_g128_anrt";
const FWD = { fmt: "bf16" } as const;

/** Runs `f` with swigluLaunchTuning.rowPrefetch = `on` (off: `_an`), restoring it however `f` ends. */
function withScan<R>(on: boolean, f: () => R): R {
  const saved = swigluLaunchTuning.rowPrefetch;
  swigluLaunchTuning.rowPrefetch = on;
  try {
    return f();
  } finally {
    swigluLaunchTuning.rowPrefetch = saved;
  }
}

/** psum of E experts: experts 0 … n − 1 one row each (rows 0 … n − 1), the rest empty but the last, which ends at T. */
function stairPsum(T: number, E: number, n: number): number[] {
  return Array.from({ length: E }, (_, e) => (e === E - 1 ? T : Math.min(e + 1, n)));
}

/** Small psum layouts by hand: [T, A, psum] (each keeps §11.2: psum[e] ≥ align(psum[e−1], A), psum[E−1] ≤ T). */
const SMALL_PSUM: readonly [number, number, number[]][] = [
  [9, 4, [1, 4, 4, 9]], // expert 0: row 0, rows 1–3 padding; experts 1, 2 empty; expert 3 rows 4–8
  [5, 1, [0, 0, 2, 2]], // two empty experts first, rows 2–4 beyond psum[E−1] (padding)
  [3, 1, [0, 0]], // every row padding: nothing written
  [20, 16, [3, 19]], // expert 0 rows 0–2, rows 3–15 padding, expert 1 rows 16–18, row 19 beyond psum[E−1]
  [7, 16, [3]], // one expert, alignment 16 > T: rows 3–6 padding
  [2, 1, [2]], // one expert, every row real
  [1, 1, [1]], // one row, real
  [1, 1, [0]], // one row, padding
  [600, 1, stairPsum(600, 100, 99)], // 99 one-row experts, then rows 99–599: block b's next row passes 99 − b experts
  [900, 1, stairPsum(900, 400, 350)], // 350 one-row experts, 49 empty, then rows 350–899: scans and fallbacks
  [700, 4, [0, 0, 3, 8, 8, 8, 20, 200, 264, 265, 528, 530, 533, 690]], // rows on and next to every boundary
  // padding runs among the blocks' second and third rows: rows 10–127, 138–255, 300–383 padding, 700–799 beyond
  // psum[E−1] (a block's first row padding and its next real, a real row followed by padding ones, and back)
  [800, 128, [10, 138, 300, 700]],
  [1000, 1, [0, 0, 0, 1000]], // every row real in one expert after three empty ones: the cursor never moves again
];

/** swigluForward with `_anrps` against the CPU reference (real rows) and the launched kernel. */
function checkCase(x: HostTensor, co: ReturnType<typeof options>, A: number, pdl: boolean, tag: string): number {
  const T = x.shape[0];
  const real = swigluRealRows("t", T, co.psumNumTokensPerExpert ?? null, A);
  const dx = uploadView(x), dco = onDevice(co);
  try {
    withScan(true, () =>
      withPdl(pdl, () => {
        const fr = swigluForward(x, { ...FWD, ...co }) as HostTensor;
        const fg = swigluForward(dx, { ...FWD, ...dco }) as DeviceTensor;
        const last = swigluLastLaunch();
        assert.equal(last.fn, fnOf(FWD_ANRPS), `swigluForward ${tag}: kernel`);
        assert.equal(last.pdl, config.pdl, `swigluForward ${tag}: PDL as config.pdl`);
        assertBytesEqual(realRows(readAllocation(fg), real, 2 * H), realRows(storageBytes(fr), real, 2 * H), `swigluForward _anrps ${tag}`);
        dispose(fg);
      })
    );
  } finally {
    dispose(dx, Object.values(dco));
  }
  return 1;
}

gpuTest("_anrps equals the CPU reference at H = 7168: small, stair, padding-run and random psum layouts, 0-token experts, alignments, weights, scaling, special values, PDL on and off", () => {
  const rand = rng(SEED);
  let calls = 0, n = 0;
  for (const [T, A, ps] of SMALL_PSUM) {
    const o: Opts = { psum: ps, weights: n % 2 === 0, scale: n % 4 === 0 }; // a scaling factor only with weights
    const tag = `small psum E=${ps.length} T=${T} A=${A} ${JSON.stringify({ ...o, psum: undefined })}`;
    calls += checkCase(inputX(rand, T, n % 3), options(rand, T, o, A), A, n % 2 === 1, tag);
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
  // many experts (random sizes, 0-token ones): the scan and the fallback, with alignment
  for (const [T, E, A] of [[700, 300, 1], [700, 90, 4], [900, 40, 16]]) {
    const co = options(rand, T, { weights: true, scale: E === 90 }, A);
    co.psumNumTokensPerExpert = randomPsum(rand, T, E, A);
    calls += checkCase(inputX(rand, T, 1), co, A, n++ % 2 === 0, `T=${T} random psum E=${E} A=${A}`);
  }
  assert.ok(calls > 0);
  assert.equal(swigluLaunchTuning.rowPrefetch, true, "the knob is restored (default on)");
});

gpuTest("_anrps equals _an (rowPrefetch off) at the bench's shape 3000 × 7168 (64 experts at alignment 128, 512 at 1; weights, scaling; PDL on and off)", () => {
  const rand = rng(SEED + 1);
  const T = 3000;
  for (const [E, A] of [[64, 128], [512, 1]]) {
    const x = inputX(rand, T, 1);
    const co = options(rand, T, { weights: true, scale: true }, A);
    co.psumNumTokensPerExpert = randomPsum(rand, T, E, A);
    const real = swigluRealRows("t", T, co.psumNumTokensPerExpert, A);
    const dx = uploadView(x), dco = onDevice(co);
    try {
      for (const pdl of [false, true]) {
        withPdl(pdl, () => {
          const run = (on: boolean) =>
            withScan(on, () => {
              const f = swigluForward(dx, { ...FWD, ...dco }) as DeviceTensor;
              const out = { fn: swigluLastLaunch().fn, f: realRows(readAllocation(f), real, 2 * H) };
              dispose(f);
              return out;
            });
          const m = run(false);
          assert.equal(m.fn, fnOf(FWD_AN), "knob off: _an");
          const q = run(true);
          assert.equal(q.fn, fnOf(FWD_ANRPS), "knob on: _anrps");
          assertBytesEqual(q.f, m.f, `3000 E=${E} swigluForward pdl ${pdl}`);
        });
      }
      // and against the CPU reference once (real rows)
      withScan(true, () => {
        const fr = swigluForward(x, { ...FWD, ...co }) as HostTensor;
        const fg = swigluForward(dx, { ...FWD, ...dco }) as DeviceTensor;
        assert.equal(swigluLastLaunch().fn, fnOf(FWD_ANRPS), "3000: _anrps");
        assertBytesEqual(realRows(readAllocation(fg), real, 2 * H), realRows(storageBytes(fr), real, 2 * H), `3000 E=${E} vs CPU`);
        dispose(fg);
      });
    } finally {
      dispose(dx, Object.values(dco));
    }
  }
});

gpuTest("rowPrefetch: the cases the row form does not take run main's choice (rowPrefetch off, clampValue, another H, x off alignment); the cast keeps _anrt", () => {
  const rand = rng(SEED + 2);
  withScan(true, () => {
    const x2 = inputX(rand, 3, 0);
    const d2 = uploadView(x2);
    const want2 = storageBytes(swigluForward(x2, FWD) as HostTensor);
    const savedPrefetch = swigluLaunchTuning.rowPrefetch;
    swigluLaunchTuning.rowPrefetch = false;
    try {
      const f3 = swigluForward(d2, FWD) as DeviceTensor;
      assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16_an"), "rowPrefetch off: _an");
      assertBytesEqual(readAllocation(f3), want2, "rowPrefetch off forward");
      dispose(f3);
    } finally {
      swigluLaunchTuning.rowPrefetch = savedPrefetch;
    }
    const [c0, s0] = swigluForwardAndPerTokenCast(d2, { fmt: "e4m3", numPerChannels: 128 });
    assert.equal(swigluLastLaunch().fn, fnOf(CAST_ROW_FORM), "the cast keeps _anrt");
    dispose(c0, s0);
    checkClampFallback(x2, d2);
    const x1 = tensor(Uint16Array.from({ length: 9 * 2 * 1024 }, () => encodeBf16(Math.fround(rand() * 8 - 4))), [9, 2048], "bf16");
    const d1 = uploadView(x1);
    const f1 = swigluForward(d1, FWD) as DeviceTensor;
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16_an"), "H = 1024: _an");
    assertBytesEqual(readAllocation(f1), storageBytes(swigluForward(x1, FWD) as HostTensor), "H = 1024 forward");
    dispose(d1, f1);
    const src = x2.data as Uint16Array;
    const pad = new Uint16Array(src.length + 1);
    pad.set(src, 1);
    const du = uploadView(new HostTensor(pad, "bf16", x2.shape, x2.strides, 1));
    const fu = swigluForward(du, FWD) as DeviceTensor;
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16"), "x off alignment: main's kernel");
    assertBytesEqual(readAllocation(fu), want2, "x off alignment forward");
    dispose(d2, du, fu);
  });
  assert.equal(swigluLaunchTuning.rowPrefetch, true, "the knob is restored (default on)");
});

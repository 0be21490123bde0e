/**
 * swigluForwardAndPerTokenCast's row form with the block's expert cursor, `_anrt` (round 33's `_anrs` with the next row's loads under the cast; kernels-src/cuda/swiglu/swiglu_rows.cu,
 * docs/perf-notes/perf17-swl.md; the row form `swigluLaunchTuning.rowForm` takes since round 17, set and restored in
 * try/finally) against the CPU reference on the
 * data's real rows and every sf layout (the sf's padding rows included, as `_anl` zeroes them; the padding rows of
 * the data, which the forward leaves unwritten, masked) at H = 7168, the only hidden size they are built for: T = 1,
 * 2, 5, 37, 700 (blocks walk several rows), random rows with NaN / ±Inf / ±0, gpu_util's row kinds and edge groups;
 * psum layouts that move the cursor every way: random with 0-token experts, small hand-made ones (a padding gap after a
 * 1-row expert, empty experts, rows beyond psum[E−1], every row padding, an alignment wider than T), and layouts where
 * a block's next row lies more than 31 experts further (the cursor's binary-search fallback) or 1–31 further (the
 * warp scan); token alignments 1 / 4 / 16 / 128, weights with and without routedScalingFactor, PDL on and off; the
 * launched kernel and its PDL flag asserted after every call. Then the bench's shape 3000 × 7168 (64 and 512 experts,
 * weights, scaling) against `_anl` (rowForm off) byte for byte, PDL on and off, and against the CPU reference;
 * a data view 8 bytes into its allocation; the cases the row form does not take (a clamp, another H, x off alignment)
 * run main's choice. (Until trim24 the comparison was with `_anr2`, the knob castRowScan's off, both removed.)
 * Every psum here keeps §11.2 (psum[e] ≥ align(psum[e−1], A), psum[E−1] ≤ T). Skipped, and counted as
 * skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, type HostTensor, swigluForwardAndPerTokenCast } from "../mod.ts";
import { config } from "../core/config.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { castKnobAB, castKnobViewsAndFallbacks, fnOf, H, inputX, onDevice, type Opts, OPTS, options, realRows, realSf, SF_OPTS } from "./swiglu_rows_util.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomPsum, readAllocation, storageBytes, uploadView, withPdl } from "./gpu_util.ts";

const SEED = 17301;
const CAST_ANL = "tk_swiglu_forward__bf16_e4m3_g128_anl";
const CAST_ROW_FORM = "tk_swiglu_forward__bf16_e4m3_g128_anrt";
const CAST = { fmt: "e4m3", numPerChannels: 128 } as const;

/** Runs `f` with swigluLaunchTuning.rowForm = `on` (off: `_anl`), restoring it however `f` ends. */
function withScan<R>(on: boolean, f: () => R): R {
  const saved = swigluLaunchTuning.rowForm;
  swigluLaunchTuning.rowForm = on;
  try {
    return f();
  } finally {
    swigluLaunchTuning.rowForm = saved;
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
  [3, 1, [0, 0]], // every row padding: nothing written, the sf's padding rows zeroed
  [20, 16, [3, 19]], // expert 0 rows 0–2, rows 3–15 padding, expert 1 rows 16–18, row 19 beyond psum[E−1]
  [7, 16, [3]], // one expert, alignment 16 > T: rows 3–6 padding
  [2, 1, [2]], // one expert, every row real
  [1, 1, [1]], // one row, real
  [1, 1, [0]], // one row, padding
  [600, 1, stairPsum(600, 100, 99)], // 99 one-row experts, then rows 99–599: block b's next row passes 99 − b experts
  [900, 1, stairPsum(900, 400, 350)], // 350 one-row experts, 49 empty, then rows 350–899: scans and fallbacks
  [700, 4, [0, 0, 3, 8, 8, 8, 20, 200, 264, 265, 528, 530, 533, 690]], // rows on and next to every boundary
];

/** The cast with `_anrt` against the CPU reference (real rows of the data; the sf with its padding rows), every sf layout. */
function checkCase(x: HostTensor, co: ReturnType<typeof options>, A: number, pdl: boolean, tag: string): number {
  const T = x.shape[0];
  const real = swigluRealRows("t", T, co.psumNumTokensPerExpert ?? null, A);
  const dx = uploadView(x), dco = onDevice(co);
  let calls = 0;
  try {
    withScan(true, () =>
      withPdl(pdl, () => {
        for (const sfo of SF_OPTS) {
          const [cd, cs] = swigluForwardAndPerTokenCast(x, { ...CAST, ...sfo, ...co });
          const [gd, gs] = swigluForwardAndPerTokenCast(dx, { ...CAST, ...sfo, ...dco });
          const last = swigluLastLaunch();
          const label = `swigluForwardAndPerTokenCast _anrt ${JSON.stringify(sfo)} ${tag}`;
          assert.equal(last.fn, fnOf(CAST_ROW_FORM), `${label}: kernel`);
          assert.equal(last.pdl, config.pdl, `${label}: PDL as config.pdl`);
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

gpuTest("_anrt equals the CPU reference at H = 7168: small, stair and random psum layouts, 0-token experts, alignments, weights, scaling, special values, PDL on and off", () => {
  const rand = rng(SEED);
  let calls = 0, n = 0;
  {
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
    for (const [T, E, A] of [[700, 300, 1], [700, 90, 4]]) {
      const co = options(rand, T, { weights: true }, A);
      co.psumNumTokensPerExpert = randomPsum(rand, T, E, A);
      calls += checkCase(inputX(rand, T, 1), co, A, n++ % 2 === 0, `T=${T} random psum E=${E} A=${A}`);
    }
  }
  assert.ok(calls > 0);
  assert.equal(swigluLaunchTuning.rowForm, true, "the knob is restored (default on)");
});

gpuTest("_anrt equals _anl (rowForm off) at the bench's shape 3000 × 7168 (64 experts at alignment 128, 512 at 1; weights, scaling; PDL on and off)", () => {
  castKnobAB(rng(SEED + 1), "rowForm", CAST_ANL, CAST_ROW_FORM, [[3000, 64, 128], [3000, 512, 1]]);
});

gpuTest("rowForm: a data view 8 bytes into its allocation runs _anrt (off: _anl); the cases the row form does not take run main's choice (rowForm off, clampValue, another H, x off alignment)", () => {
  castKnobViewsAndFallbacks(rng(SEED + 2), "rowForm", CAST_ANL, CAST_ROW_FORM);
  assert.equal(swigluLaunchTuning.rowForm, true, "the knob is restored (default on)");
});

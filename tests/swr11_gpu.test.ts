/**
 * The row form of swigluForwardAndPerTokenCast (`_anrt` since round 33, `_anrs` since trim24, round 11's `_anr2` before:
 * kernels-src/cuda/swiglu/swiglu_rows.cu, docs/perf-notes/perf11-swr.md, perf17-swl.md; the default at H = 7168) against the CPU reference and the lean cast form `_anl`
 * (`swigluLaunchTuning.rowForm` off, restored afterwards), byte for byte: H = 7168 (the only hidden size it is built for) with
 * T = 0, 1, 5, 37 and more rows than a grid of one wave (each block then walks several rows), random bf16 rows of
 * every kind tests/gpu_util.ts randomInput makes (huge, tiny, ±0, rounding ties) and random values with NaN / ±Inf,
 * the cast's edge groups (all NaN, ±0 only, one +Inf, subnormal products, overflow), psum layouts with padding rows
 * and alignments, weights with and without the scaling factor, every sf layout; which kernel launched is asserted
 * after every call (a silent fallback fails). Then the cases the row form does not take (another H, a clamp, x off
 * its alignment) run `_anl` or main's kernels, and swigluForward runs its own row form (`_anrps` since round 18). Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, HostTensor, swigluForward, swigluForwardAndPerTokenCast, tensor } from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { checkClampFallback, fnOf, H, inputX, onDevice, OPTS, options, realRows, realSf, SF_OPTS } from "./swiglu_rows_util.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";

const SEED = Number(Date.now() % 1_000_000);

type Tuning = Partial<typeof swigluLaunchTuning>;
/**
 * The settings compared: the lean cast form `_anl` (knob off) and the row form `_anrt` (the default; round 11's
 * `_anr2`, which castRowScan off pinned here, left the package in trim24; tests/swl17_gpu.test.ts has `_anrt`'s own
 * psum walks).
 */
const SETTINGS: readonly { name: string; t: Tuning }[] = [
  { name: "anl", t: { rowForm: false } },
  { name: "anrt", t: { rowForm: true } },
];

/** Runs `f` under the tuning `t`, restoring the previous values however `f` ends. */
function withTuning<R>(t: Tuning, f: () => R): R {
  const saved = { ...swigluLaunchTuning };
  Object.assign(swigluLaunchTuning, t);
  try {
    return f();
  } finally {
    Object.assign(swigluLaunchTuning, saved);
  }
}


/** The cast kernel a setting must launch for an aligned, unclamped call at H = 7168. */
function expectedSymbol(s: Tuning): string {
  return s.rowForm ? "tk_swiglu_forward__bf16_e4m3_g128_anrt" : "tk_swiglu_forward__bf16_e4m3_g128_anl";
}




gpuTest("the row form _anrt equals the CPU reference and _anl byte for byte at H = 7168", () => {
  const seed = SEED;
  console.log(`swr11 row forms seed ${seed}`);
  const rand = rng(seed);
  let calls = 0;
  for (const T of [0, 1, 5, 37, 900]) {
    for (const o of OPTS) {
      if (T === 900 && !(o.psum === o.weights)) continue; // the large case (CPU time): no options, and all of them
      const A = [1, 4, 16, 128][Math.floor(rand() * 4)];
      const kind = T === 0 ? 0 : Math.floor(rand() * 3);
      const x = inputX(rand, T, kind);
      const co = options(rand, T, o, A);
      const real = swigluRealRows("t", T, co.psumNumTokensPerExpert ?? null, A);
      const dx = uploadView(x), dco = onDevice(co);
      const tag = `T=${T} ${JSON.stringify(o)} A=${A} input kind ${kind}`;
      // swigluForwardAndPerTokenCast, every sf layout
      for (const sfo of SF_OPTS) {
        const [cd, cs] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, ...sfo, ...co });
        const wantD = realRows(storageBytes(cd as HostTensor), real, H);
        const wantS = realSf(storageBytes(cs as HostTensor), cs as HostTensor, real);
        for (const s of SETTINGS) {
          withTuning(s.t, () => {
            const label = `swigluForwardAndPerTokenCast ${s.name} ${JSON.stringify(sfo)} ${tag}`;
            const [gd, gs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, ...sfo, ...dco });
            if (T > 0) assert.equal(swigluLastLaunch().fn, fnOf(expectedSymbol(s.t)), `${label}: kernel`);
            assertBytesEqual(realRows(readAllocation(gd as DeviceTensor), real, H), wantD, `${label} data`);
            assertBytesEqual(realSf(readAllocation(gs as DeviceTensor), cs as HostTensor, real), wantS, `${label} sf`);
            dispose(gd, gs);
            calls++;
          });
        }
      }
      dispose(dx, Object.values(dco));
    }
  }
  assert.ok(calls > 0);
});

gpuTest("with the row form on (the default), the cases it does not take run _anl or main's kernels (other H, clamp, x off alignment); at H = 7168 the defaults run _anrt and _anrps", () => {
  const rand = rng(SEED + 1);
  withTuning({}, () => {
    // another hidden size: `_an` / `_anl`
    const x1 = tensor(Uint16Array.from({ length: 9 * 2 * 1024 }, () => encodeBf16(Math.fround(rand() * 8 - 4))), [9, 2048], "bf16");
    const d1 = uploadView(x1);
    const f1 = swigluForward(d1, { fmt: "bf16" }) as DeviceTensor;
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16_an"), "H = 1024: _an");
    assertBytesEqual(readAllocation(f1), storageBytes(swigluForward(x1, { fmt: "bf16" }) as HostTensor), "H = 1024 forward");
    const [c1, s1] = swigluForwardAndPerTokenCast(d1, { fmt: "e4m3", numPerChannels: 128 });
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_e4m3_g128_anl"), "H = 1024: _anl");
    assertBytesEqual(readAllocation(c1 as DeviceTensor), storageBytes(swigluForwardAndPerTokenCast(x1, { fmt: "e4m3", numPerChannels: 128 })[0] as HostTensor), "H = 1024 cast");
    dispose(d1, f1, c1, s1);
    // H = 7168 with a clamp: main's kernels
    const x2 = inputX(rand, 3, 0);
    const d2 = uploadView(x2);
    checkClampFallback(x2, d2); // (also the clamp cast's bytes against the CPU reference)
    // H = 7168 without a clamp: the cast's row form (`_anrt` since round 33, `_anrs` from round 17), swigluForward's row-prefetch form
    // (`_anrps` since round 18)
    const f3 = swigluForward(d2, { fmt: "bf16" }) as DeviceTensor;
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16_anrps"), "H = 7168 forward: _anrps");
    assertBytesEqual(readAllocation(f3), storageBytes(swigluForward(x2, { fmt: "bf16" }) as HostTensor), "H = 7168 forward");
    const [c3, s3] = swigluForwardAndPerTokenCast(d2, { fmt: "e4m3", numPerChannels: 128 });
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_e4m3_g128_anrt"), "H = 7168 cast: _anrt");
    dispose(f3, c3, s3);
    // x one element off its 16-byte alignment: main's kernels
    const src = x2.data as Uint16Array;
    const pad = new Uint16Array(src.length + 1);
    pad.set(src, 1);
    const du = uploadView(new HostTensor(pad, "bf16", x2.shape, x2.strides, 1));
    const fu = swigluForward(du, { fmt: "bf16" }) as DeviceTensor;
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_bf16"), "x off alignment: main's kernel");
    assertBytesEqual(readAllocation(fu), storageBytes(swigluForward(x2, { fmt: "bf16" }) as HostTensor), "x off alignment forward");
    const [cu, su] = swigluForwardAndPerTokenCast(du, { fmt: "e4m3", numPerChannels: 128 });
    assert.equal(swigluLastLaunch().fn, fnOf("tk_swiglu_forward__bf16_e4m3_g128"), "x off alignment: main's cast kernel");
    dispose(d2, du, fu, cu, su);
  });
  assert.equal(swigluLaunchTuning.rowForm, true, "the knob is restored (default on)");
});

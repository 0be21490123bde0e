/**
 * normBackward's bf16 rows kernel `_b4sw7_unit` (kernels-src/cuda/norm/norm_backward_sw7.cu, round 32: `_b4swc`'s rows
 * loop on 224 threads at H = 7168, without the chunks that `_b4swc`'s warps 6 and 7 ran on zeros, both weight chunks
 * in registers; normLaunchTuning.backwardForm "sw7", where `_b4swc` runs and H = 7168; docs/perf-notes/perf32-nbw.md)
 * against the CPU reference, byte for byte on every byte of xGrad and the weight gradient (allocated and accumulated
 * into a given tensor), and against `_b4swc_unit` (the default before round 32) and itself run to run on the bench's shapes. The
 * form each launch takes is asserted (backwardRowsForm) with the knob on and off, so a silent fallback fails.
 * Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { contiguousHost } from "../core/tensor.ts";
import { type DeviceTensor, type HostTensor, tensor, toDevice } from "../mod.ts";
import { launchCount } from "../ffi/cuda.ts";
import { normBackward, normForward } from "../ops/norm/mod.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { backwardRowsForm } from "../ops/norm/norm_backward.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, uploadView } from "./gpu_util.ts";
import { type Case, moderate, specialRows, specialWeight, tiled } from "./nbw_util.ts";

type Form = typeof normLaunchTuning.backwardForm;
/** The knob value under test and its rows kernel. */
const FORMS: readonly (readonly [Form, string])[] = [["sw7", "_b4sw7"]];

/** Runs f with normLaunchTuning.backwardForm = form, then restores it. */
function withForm<T>(form: Form, f: () => T): T {
  const prev = normLaunchTuning.backwardForm;
  normLaunchTuning.backwardForm = form;
  try {
    return f();
  } finally {
    normLaunchTuning.backwardForm = prev;
  }
}

/**
 * normBackward of the host inputs on the CPU, then on the device under each of {@link FORMS} (a fresh xGrad and, when
 * accumulating, a fresh copy of the given gradient each), compared byte for byte; asserts the rows kernel each device
 * launch takes (`want` of the form's kernel: that kernel, or the fallback expected instead).
 */
function compareOn(
  x: HostTensor,
  w: HostTensor,
  dy: HostTensor,
  wg0: HostTensor | undefined,
  c: Omit<Case, "T" | "H" | "stride">,
  want: (sym: string) => string,
  label: string,
): void {
  const [, rstd] = normForward(x, w, { eps: 1e-6 });
  const o = { weightGradDtype: c.wgDtype, accumulateWeightGrad: c.accumulate };
  const hwg = wg0 ? contiguousHost(wg0) : undefined;
  const [cx, cw] = normBackward(x, w, dy, rstd, { ...o, out: hwg ? { weightGrad: hwg } : undefined });
  const d = [uploadView(x), uploadView(w), uploadView(dy), uploadView(rstd as HostTensor)] as const;
  const [T, H] = x.shape;
  try {
    for (const [form, sym] of FORMS) {
      const dwg = wg0 ? uploadView(wg0) : undefined;
      const dxg = uploadView(tensor(new Uint16Array(T * H), [T, H], "bf16"));
      let gw: unknown = null;
      try {
        withForm(form, () => {
          assert.equal(
            backwardRowsForm({ x: d[0], weight: d[1], gradOut: d[2], residualOutGrad: null, xGrad: dxg }, 1),
            want(sym),
            `${label} ${form}: rows kernel`,
          );
          gw = normBackward(d[0], d[1], d[2], d[3], {
            ...o,
            out: dwg ? { xGrad: dxg, weightGrad: dwg } : { xGrad: dxg },
          })[1];
        });
        sameAllocation(dxg, cx, `${label} ${form} xGrad`);
        sameAllocation(gw, cw, `${label} ${form} weightGrad`);
      } finally {
        dispose(dxg, dwg ? null : gw, dwg);
      }
    }
  } finally {
    dispose(d);
  }
}

/** bf16 rows and a weight, each value moderate. */
function inputs(rand: () => number, T: number, H: number, stride: number) {
  return {
    x: randomInput(rand, T, H, "bf16", stride),
    dy: randomInput(rand, T, H, "bf16", stride),
    w: moderate(rand, [H]),
  };
}

/** A given weight gradient to accumulate into (fp32 or bf16). */
function givenGrad(rand: () => number, H: number, dtype: "fp32" | "bf16"): HostTensor {
  return dtype === "bf16"
    ? moderate(rand, [H])
    : tensor(new Float32Array(H).map(() => Math.fround(rand() * 2 - 1)), [H], "fp32");
}

gpuTest(
  "normBackward _b4sw7_unit = reference: bf16 × 7168, T ∈ 1 … 4001 (1 … 511 blocks, 1 … 8 rows a slot, the last rows of a slot's tail), strides H, H + 8, H + 4 (_b4), fp32 / bf16 gradients, allocated and accumulated (seed 3201)",
  () => {
    const rand = rng(3201);
    const H = 7168;
    const Ts = [1, 2, 3, 40, 129, 385, 511, 512, 513, 1023, 1024, 1025, 1100, 1537, 2047, 4001];
    Ts.forEach((T, si) => {
      ([["fp32", false], ["fp32", true], ["bf16", false], ["bf16", true]] as const).forEach(
        ([wgDtype, accumulate], gi) => {
          const pad = [0, 8, 4][(si + gi) % 3];
          const { x, dy, w } = inputs(rand, T, H, H + pad);
          const wg0 = accumulate ? givenGrad(rand, H, wgDtype) : undefined;
          // a 1-row view's stride is not used (aligned16 ignores it): the form still applies
          const want = (sym: string) => (pad === 4 && T > 1 ? "_b4" : sym);
          compareOn(
            x,
            w,
            dy,
            wg0,
            { wgDtype, accumulate },
            want,
            `${T}x${H} stride ${H + pad} ${wgDtype}${accumulate ? " accumulated" : ""}`,
          );
        },
      );
    });
  },
);

gpuTest(
  "normBackward under backwardForm sw7 at the other H (512 … 8192, multiples of 32): _b4swc where it runs (4096 < H ≤ 8192, H ≠ 7168), _b4 below, = reference (seed 3202)",
  () => {
    const rand = rng(3202);
    const cases: [number, number, string][] = [
      [3, 512, "_b4"],
      [40, 1024, "_b4"],
      [513, 4096, "_b4"],
      [511, 4128, "_b4swc"],
      [600, 5120, "_b4swc"],
      [1025, 6144, "_b4swc"],
      [77, 7136, "_b4swc"],
      [1100, 7200, "_b4swc"],
      [513, 8192, "_b4swc"],
    ];
    for (const [T, H, main] of cases) {
      const { x, dy, w } = inputs(rand, T, H, H);
      const want = () => main;
      compareOn(x, w, dy, undefined, { wgDtype: "fp32", accumulate: false }, want, `${T}x${H}`);
      compareOn(
        x,
        w,
        dy,
        givenGrad(rand, H, "bf16"),
        { wgDtype: "bf16", accumulate: true },
        want,
        `${T}x${H} bf16 accumulated`,
      );
    }
  },
);

gpuTest(
  "normBackward _b4sw7_unit = reference on NaN payloads, ±Inf, ±0, subnormals and overflow in x, gradOut and the weight (seed 3203)",
  () => {
    const rand = rng(3203);
    const H = 7168;
    for (const T of [1, 10, 600, 1030]) {
      const x = specialRows(rand, T, H), dy = specialRows(rand, T, H), w = specialWeight(rand, H);
      const want = (sym: string) => sym;
      compareOn(x, w, dy, undefined, { wgDtype: "fp32", accumulate: false }, want, `special ${T}x${H}`);
      compareOn(
        x,
        w,
        dy,
        givenGrad(rand, H, "fp32"),
        { wgDtype: "fp32", accumulate: true },
        want,
        `special ${T}x${H} fp32 accumulated`,
      );
      compareOn(
        x,
        w,
        dy,
        moderate(rand, [H]),
        { wgDtype: "bf16", accumulate: true },
        want,
        `special ${T}x${H} bf16 accumulated`,
      );
    }
  },
);

gpuTest(
  "normBackward under backwardForm sw7 falls back where _b4swc does not apply: residualOutGrad, outScale 0.3, no weight, fp32; the default is sw7 (seed 3204)",
  () => {
    const rand = rng(3204);
    const x = uploadView(randomInput(rand, 3, 7168, "bf16"));
    const xf = uploadView(randomInput(rand, 3, 7168, "fp32"));
    const w = uploadView(moderate(rand, [7168]));
    try {
      const common = { x, weight: w, gradOut: x, residualOutGrad: null, xGrad: x };
      for (const [form, sym] of FORMS) {
        withForm(form, () => {
          assert.equal(backwardRowsForm(common, 1), sym);
          assert.equal(backwardRowsForm(common, 0.3), "_b4");
          assert.equal(backwardRowsForm({ ...common, residualOutGrad: x }, 1), "_b4");
          assert.equal(backwardRowsForm({ ...common, weight: null }, 1), "_b4");
          assert.equal(backwardRowsForm({ ...common, x: xf, gradOut: xf, xGrad: xf }, 1), "");
        });
      }
      assert.equal(normLaunchTuning.backwardForm, "sw7");
      assert.equal(backwardRowsForm(common, 1), "_b4sw7");
    } finally {
      dispose(x, xf, w);
    }
  },
);

gpuTest(
  "normBackward with 0 tokens under backwardForm sw7: no launch, an allocated weight gradient is +0",
  () => {
    const x = toDevice(tensor(new Uint16Array(0), [0, 7168], "bf16"));
    const w = uploadView(moderate(rng(1), [7168]));
    const rstd = toDevice(tensor(new Float32Array(0), [0], "fp32"));
    try {
      for (const [form] of FORMS) {
        const n = launchCount();
        const [dx, wg] = withForm(form, () => normBackward(x, w, x, rstd, {}));
        try {
          assert.equal(launchCount(), n, `${form}: no launch`);
          assert.deepEqual([...dx.shape], [0, 7168]);
          assert.ok(readAllocation(wg as DeviceTensor).every((b) => b === 0), `${form}: weightGrad +0`);
        } finally {
          dispose(dx, wg);
        }
      }
    } finally {
      dispose(x, w, rstd);
    }
  },
);

// The bench's shapes (bench/cases_norm.ts: 16384 and 8192 × 7168, fresh allocations) and 3000 × 7168: _b4swc_unit
// (the default before round 32), then _b4sw7 twice; every xGrad and weight gradient byte equal (the tests above tie both to the CPU
// reference; the rows are 2048 of randomInput's, huge, tiny, zero and rounding-tie rows among them, in rotated orders).
gpuTest(
  "normBackward _b4sw7: xGrad and weightGrad bit-identical to _b4swc and run to run, 16384, 8192 and 3000 × 7168 bf16, allocated and accumulated (seed 3205)",
  () => {
    const rand = rng(3205);
    const H = 7168;
    for (const T of [16384, 8192, 3000]) {
      const x = uploadView(tiled(randomInput(rand, 2048, H, "bf16"), T));
      const w = uploadView(moderate(rand, [H]));
      const dy = uploadView(tiled(moderate(rand, [2048, H]), T));
      const g0 = givenGrad(rand, H, "fp32");
      const [fo, rstd] = normForward(x, w, { eps: 1e-6 });
      const outs: [string, DeviceTensor, DeviceTensor][] = [];
      const given: DeviceTensor[] = [];
      try {
        const common = { x, weight: w, gradOut: dy, residualOutGrad: null, xGrad: fo };
        assert.equal(backwardRowsForm(common, 1), "_b4sw7");
        for (const [form, sym] of FORMS) withForm(form, () => assert.equal(backwardRowsForm(common, 1), sym));
        const run = (label: string, form: Form, acc: boolean) => {
          const wg = acc ? uploadView(g0) as DeviceTensor : undefined;
          if (wg) given.push(wg);
          const o = acc ? { accumulateWeightGrad: true, out: { weightGrad: wg } } : {};
          const [gx, gw] = withForm(form, () => normBackward(x, w, dy, rstd, o));
          outs.push([label, gx as DeviceTensor, gw as DeviceTensor]);
        };
        run("swc", "swc", false);
        for (const [form] of FORMS) {
          run(`${form} run 1`, form, false);
          run(`${form} run 2`, form, false);
        }
        const plain = outs.length;
        run("swc accumulated", "swc", true);
        for (const [form] of FORMS) run(`${form} accumulated`, form, true);
        const [, rx, rw] = outs[0];
        for (const [label, gx, gw] of outs.slice(1, plain)) {
          assertBytesEqual(readAllocation(gx), readAllocation(rx), `${T}: ${label} xGrad`);
          assertBytesEqual(readAllocation(gw), readAllocation(rw), `${T}: ${label} weightGrad`);
        }
        const [, ax, aw] = outs[plain];
        for (const [label, gx, gw] of outs.slice(plain + 1)) {
          assertBytesEqual(readAllocation(gw), readAllocation(aw), `${T}: ${label} weightGrad`);
          assertBytesEqual(readAllocation(gx), readAllocation(ax), `${T}: ${label} xGrad`);
        }
      } finally {
        dispose(x, w, dy, fo, rstd, outs.map(([, a, b]) => [a, given.includes(b) ? null : b]), given);
      }
    }
  },
);

/**
 * normBackward's whole-line bf16 rows kernel `_b4swc_unit` (kernels-src/cuda/norm/norm_backward_sw.cu; docs/perf-notes/
 * perf11-nbw.md) against the CPU reference, byte for byte on every byte of xGrad and the weight gradient, and run to
 * run on the bench's shape. (It was also compared with `_b4swx_unit`, the kernel before round 11, until trim24
 * removed that kernel and its knob backwardForm.) The form each launch takes is asserted (backwardRowsForm), so a
 * silent fallback to `_b4` fails. Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { contiguousHost } from "../core/tensor.ts";
import { type DeviceTensor, type HostTensor, tensor, toDevice } from "../mod.ts";
import { launchCount } from "../ffi/cuda.ts";
import { normBackward, normForward } from "../ops/norm/mod.ts";
import { backwardRowsForm } from "../ops/norm/norm_backward.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, uploadView } from "./gpu_util.ts";
import { type Case, moderate, specialRows, specialWeight, tiled } from "./nbw_util.ts";

// the form of norm_backward_sw.cu (round 11 measured _b4swd and _b4swcp too; both lost to _b4swc and were removed)
const SYM = "_b4swc";

/**
 * A GPU test of `_b4swc`: normLaunchTuning.backwardForm is pinned to "swc" while `f` runs (round 32's `_b4sw7`, the
 * default at H = 7168 since its A/B, is tests/nbw32_gpu.test.ts's subject), then restored.
 */
function swcTest(name: string, f: () => void): void {
  gpuTest(name, () => {
    const prev = normLaunchTuning.backwardForm;
    normLaunchTuning.backwardForm = "swc";
    try {
      f();
    } finally {
      normLaunchTuning.backwardForm = prev;
    }
  });
}

/**
 * normBackward of the host inputs on the CPU and on the device, compared byte for byte; asserts the rows kernel the
 * device launch takes (`want`).
 */
function compareOn(
  x: HostTensor,
  w: HostTensor,
  dy: HostTensor,
  wg0: HostTensor | undefined,
  c: Omit<Case, "T" | "H" | "stride">,
  want: string,
  label: string,
): void {
  const [, rstd] = normForward(x, w, { eps: 1e-6 });
  const o = { weightGradDtype: c.wgDtype, accumulateWeightGrad: c.accumulate };
  const hwg = wg0 ? contiguousHost(wg0) : undefined;
  const [cx, cw] = normBackward(x, w, dy, rstd, { ...o, out: hwg ? { weightGrad: hwg } : undefined });
  const dwg = wg0 ? uploadView(wg0) : undefined;
  const d = [uploadView(x), uploadView(w), uploadView(dy), uploadView(rstd as HostTensor)] as const;
  const [T, H] = x.shape;
  const dxg = uploadView(tensor(new Uint16Array(T * H), [T, H], "bf16"));
  let gw: unknown = null;
  try {
    assert.equal(
      backwardRowsForm({ x: d[0], weight: d[1], gradOut: d[2], residualOutGrad: null, xGrad: dxg }, 1),
      want,
      `${label}: rows kernel`,
    );
    gw = normBackward(d[0], d[1], d[2], d[3], { ...o, out: dwg ? { xGrad: dxg, weightGrad: dwg } : { xGrad: dxg } })[1];
    sameAllocation(dxg, cx, `${label} xGrad`);
    sameAllocation(gw, cw, `${label} weightGrad`);
  } finally {
    dispose(dxg, dwg ? null : gw, dwg, d);
  }
}

const sym = SYM;

swcTest(
  `normBackward ${sym}_unit = reference: bf16, T ∈ 1 … 4001, H ∈ {4128, 5120, 7168, 8192}, strides H, H + 8 (${sym}), H + 4 (_b4), fp32 / bf16 gradients, accumulated (seed 1101)`,
  () => {
    const rand = rng(1101);
    const shapes = [
      [1, 7168],
      [2, 4128],
      [3, 8192],
      [40, 5120],
      [511, 4128],
      [512, 7168],
      [513, 8192],
      [1100, 7168],
      [1025, 4128],
      [1100, 6144],
    ];
    shapes.forEach(([T, H], si) => {
      ([["fp32", false], ["fp32", true], ["bf16", true]] as const).forEach(([wgDtype, accumulate], gi) => {
        const pad = [0, 8, 4][(si + gi) % 3]; // each shape under every stride once
        const stride = H + pad;
        const x = randomInput(rand, T, H, "bf16", stride);
        const dy = randomInput(rand, T, H, "bf16", stride);
        const w = moderate(rand, [H]);
        const wg0 = accumulate
          ? (wgDtype === "bf16"
            ? moderate(rand, [H])
            : tensor(new Float32Array(H).map(() => Math.fround(rand() * 2 - 1)), [H], "fp32"))
          : undefined;
        // a 1-row view's stride is not used (aligned16 ignores it): the form still applies
        const want = pad === 4 && T > 1 ? "_b4" : sym;
        compareOn(
          x,
          w,
          dy,
          wg0,
          { wgDtype, accumulate },
          want,
          `${T}x${H} stride ${stride} ${wgDtype}${accumulate ? " accumulated" : ""}`,
        );
      });
    });
    // full slots: 4001 rows (7 or 8 a slot)
    const x = randomInput(rand, 4001, 7168, "bf16");
    compareOn(
      x,
      moderate(rand, [7168]),
      randomInput(rand, 4001, 7168, "bf16"),
      undefined,
      { wgDtype: "fp32", accumulate: false },
      sym,
      "4001x7168",
    );
  },
);

swcTest(
  `normBackward ${sym}_unit = reference on NaN payloads, ±Inf, ±0, subnormals and overflow in x, gradOut and the weight (seed 1102)`,
  () => {
    const rand = rng(1102);
    for (const H of [4128, 7168, 8192]) {
      for (const T of [10, 600]) {
        const x = specialRows(rand, T, H), dy = specialRows(rand, T, H), w = specialWeight(rand, H);
        compareOn(
          x,
          w,
          dy,
          undefined,
          { wgDtype: "fp32", accumulate: false },
          sym,
          `special ${T}x${H}`,
        );
        compareOn(
          x,
          w,
          dy,
          moderate(rand, [H]),
          { wgDtype: "bf16", accumulate: true },
          sym,
          `special ${T}x${H} bf16 accumulated`,
        );
      }
    }
  },
);

swcTest(
  `normBackward ${sym}_unit falls back where it does not apply: residualOutGrad, outScale 0.3, no weight, H = 4096, fp32 (seed 1103)`,
  () => {
    const rand = rng(1103);
    const x = uploadView(randomInput(rand, 3, 7168, "bf16"));
    const x4 = uploadView(randomInput(rand, 3, 4096, "bf16"));
    const xf = uploadView(randomInput(rand, 3, 7168, "fp32"));
    const w = uploadView(moderate(rand, [7168]));
    const w4 = uploadView(moderate(rand, [4096]));
    try {
      const common = { x, weight: w, gradOut: x, residualOutGrad: null, xGrad: x };
      assert.equal(backwardRowsForm(common, 1), sym);
      assert.equal(backwardRowsForm(common, 0.3), "_b4");
      assert.equal(backwardRowsForm({ ...common, residualOutGrad: x }, 1), "_b4");
      assert.equal(backwardRowsForm({ ...common, weight: null }, 1), "_b4");
      assert.equal(backwardRowsForm({ ...common, x: x4, gradOut: x4, xGrad: x4, weight: w4 }, 1), "_b4");
      assert.equal(backwardRowsForm({ ...common, x: xf, gradOut: xf, xGrad: xf }, 1), "");
    } finally {
      dispose(x, x4, xf, w, w4);
    }
  },
);

swcTest(
  "normBackward with 0 tokens where _b4swc would run: no launch, an allocated weight gradient is +0",
  () => {
    const x = toDevice(tensor(new Uint16Array(0), [0, 7168], "bf16"));
    const w = uploadView(moderate(rng(1), [7168]));
    const rstd = toDevice(tensor(new Float32Array(0), [0], "fp32"));
    const n = launchCount();
    const [dx, wg] = normBackward(x, w, x, rstd, {});
    try {
      assert.equal(launchCount(), n, "no launch");
      assert.deepEqual([...dx.shape], [0, 7168]);
      assert.ok(readAllocation(wg as DeviceTensor).every((b) => b === 0), "weightGrad +0");
    } finally {
      dispose(x, w, rstd, dx, wg);
    }
  },
);

// The bench's shape (bench/cases_norm.ts: 16384 × 7168, fresh allocations): _b4swc_unit three times; every xGrad and
// weight gradient byte equal (no CPU reference at this size: the tests above tie the form to it; the rows are 2048 of
// randomInput's (huge, tiny, zero and rounding-tie rows among them), repeated in rotated orders).
swcTest(
  "normBackward _b4swc: xGrad and weightGrad bit-identical run to run, 16384 × 7168 bf16 (seed 1104)",
  () => {
    const rand = rng(1104);
    const T = 16384, H = 7168;
    const x = uploadView(tiled(randomInput(rand, 2048, H, "bf16"), T));
    const w = uploadView(moderate(rand, [H]));
    const dy = uploadView(tiled(moderate(rand, [2048, H]), T));
    const [fo, rstd] = normForward(x, w, { eps: 1e-6 });
    const outs: [string, ReturnType<typeof normBackward>][] = [];
    try {
      const common = { x, weight: w, gradOut: dy, residualOutGrad: null, xGrad: fo };
      assert.equal(backwardRowsForm(common, 1), SYM);
      for (let r = 0; r < 3; r++) outs.push([`${SYM} run ${r + 1}`, normBackward(x, w, dy, rstd)]);
      const rx = readAllocation(outs[0][1][0] as DeviceTensor), rw = readAllocation(outs[0][1][1] as DeviceTensor);
      for (const [label, [gx, gw]] of outs.slice(1)) {
        assertBytesEqual(readAllocation(gx as DeviceTensor), rx, `${label} xGrad`);
        assertBytesEqual(readAllocation(gw as DeviceTensor), rw, `${label} weightGrad`);
      }
    } finally {
      dispose(x, w, dy, fo, rstd, outs.map(([, o]) => o));
    }
  },
);

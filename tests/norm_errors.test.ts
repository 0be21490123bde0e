/**
 * Bad inputs to `normForward`, `normBackward` and `applyRotary`: each is a TkError naming op and argument, raised
 * before anything is written (inputs are byte-identical afterwards). All three run their CUDA kernels for device
 * tensors and for `backend: "cuda"` (BACKEND_UNAVAILABLE without a device): tests/norm_gpu.test.ts and
 * tests/rope_randn_gpu.test.ts.
 * @module
 */
import assert from "node:assert/strict";
import { type Tensor, tensor } from "../core/tensor.ts";
import { normBackward, normForward } from "../ops/norm/mod.ts";
import { applyRotary } from "../ops/transform/mod.ts";
import { hasGpu, test } from "./harness.ts";
import { cudaOrUnavailable, fakeDevice, refuses as refusesWith } from "./refuses.ts";

/** {@link refusesWith} with this file's inputs as the ones that must stay unchanged. */
function refuses(op: string, arg: string, code: string, f: () => unknown, inputs: Tensor[] = ALL): void {
  refusesWith(op, arg, code, f, inputs);
}

const x = tensor(new Float32Array(4 * 64).map((_, i) => Math.sin(i)), [4, 64], "fp32");
const xb = tensor(new Uint16Array(4 * 64).fill(0x3f80), [4, 64], "bf16");
const w = tensor(new Float32Array(64).fill(1), [64], "fp32");
const res = tensor(new Float32Array(4 * 64).fill(0.5), [4, 64], "fp32");
const dy = tensor(new Float32Array(4 * 64).fill(0.25), [4, 64], "fp32");
const rstd = tensor(new Float32Array(4).fill(1), [4], "fp32");
const q = tensor(new Float32Array(3 * 2 * 64).map((_, i) => Math.cos(i)), [3, 2, 64], "fp32");
const k = tensor(new Float32Array(3 * 1 * 64).map((_, i) => Math.sin(i)), [3, 1, 64], "fp32");
const cache = tensor(new Float32Array(8 * 64).map((_, i) => Math.sin(i) / 2), [8, 64], "fp32");
const pos = tensor(new Int32Array([0, 3, 7]), [3], "int32");
const ALL: Tensor[] = [x, xb, w, res, dy, rstd, q, k, cache, pos];

// ---- normForward ----

test("normForward refuses an int32 input", () => refuses("normForward", "x", "DTYPE", () => normForward(tensor(new Int32Array(64), [1, 64], "int32"), null, { eps: 1e-6 })));
test("normForward refuses a 1-D or 4-D input", () => {
  refuses("normForward", "x", "SHAPE", () => normForward(w, null, { eps: 1e-6 }));
  refuses("normForward", "x", "SHAPE", () => normForward(x.view([1, 2, 2, 64]), null, { eps: 1e-6 }));
});
test("normForward refuses a hidden size that is not a multiple of 16", () => refuses("normForward", "x", "SHAPE", () => normForward(tensor(new Float32Array(24), [1, 24], "fp32"), null, { eps: 1e-6 })));
test("normForward refuses a last dimension with stride ≠ 1", () => refuses("normForward", "x", "LAYOUT", () => normForward(tensor(new Float32Array(64 * 64), [64, 64], "fp32").transpose(), null, { eps: 1e-6 })));
test("normForward refuses a weight of another dtype", () => refuses("normForward", "weight", "DTYPE", () => normForward(xb, w, { eps: 1e-6 })));
test("normForward refuses a weight of the wrong length", () => refuses("normForward", "weight", "SHAPE", () => normForward(x, tensor(new Float32Array(32), [32], "fp32"), { eps: 1e-6 })));
test("normForward refuses an undefined weight (null is the unit weight)", () => refuses("normForward", "weight", "VALUE", () => normForward(x, undefined as never, { eps: 1e-6 })));
test("normForward refuses a missing or negative eps", () => {
  refuses("normForward", "eps", "VALUE", () => normForward(x, w, {} as never));
  refuses("normForward", "eps", "VALUE", () => normForward(x, w, { eps: -1 }));
});
test("normForward refuses a non-finite outScale", () => refuses("normForward", "outScale", "VALUE", () => normForward(x, w, { eps: 1e-6, outScale: Infinity })));
test("normForward refuses a residual of another shape", () => refuses("normForward", "residual", "SHAPE", () => normForward(x, w, { eps: 1e-6, residual: tensor(new Float32Array(64), [1, 64], "fp32") })));
test("normForward refuses out.residualOut without residual", () => refuses("normForward", "out.residualOut", "VALUE", () => normForward(x, w, { eps: 1e-6, out: { residualOut: tensor(new Float32Array(256), [4, 64], "fp32") } })));
test("normForward refuses out.residualOut overlapping the weight", () => {
  const buf = new Float32Array(5 * 64);
  const wAlias = tensor(buf, [64], "fp32");
  const ro = tensor(buf.subarray(0, 4 * 64), [4, 64], "fp32");
  refuses("normForward", "out.residualOut", "OUT_MISMATCH", () => normForward(x, wAlias, { eps: 1e-6, residual: res, out: { residualOut: ro } }), [...ALL, wAlias]);
});
test("normForward refuses out.out overlapping x", () => refuses("normForward", "out.out", "OUT_MISMATCH", () => normForward(x, w, { eps: 1e-6, out: { out: x } })));
test("normForward refuses a strided out.rstd", () => refuses("normForward", "out.rstd", "OUT_MISMATCH", () => normForward(x, w, { eps: 1e-6, out: { rstd: tensor(new Float32Array(8), [4], "fp32", [2]) } })));
test("normForward refuses an unknown option", () => refuses("normForward", "epsilon", "VALUE", () => normForward(x, w, { eps: 1e-6, epsilon: 1 } as never)));
test("normForward with backend cuda runs its kernel on host inputs (BACKEND_UNAVAILABLE without a device)", () => cudaOrUnavailable("normForward", () => normForward(x, w, { eps: 1e-6, backend: "cuda" }), hasGpu));
test("normForward refuses host and device tensors mixed", () => refuses("normForward", "device", "DEVICE_MISMATCH", () => normForward(x, fakeDevice("fp32", [64]), { eps: 1e-6, backend: "cpu" })));
test("normForward accepts the in-place residual forms", () => {
  const r1 = tensor(new Float32Array(res.data as Float32Array), [4, 64], "fp32");
  const [, , s] = normForward(x, w, { eps: 1e-6, residual: r1, out: { residualOut: r1 } });
  assert.equal(s, r1);
  assert.equal((r1.data as Float32Array)[1], Math.fround(Math.sin(1) + 0.5));
});

// ---- normBackward ----

test("normBackward refuses a 3-D input", () => refuses("normBackward", "x", "SHAPE", () => normBackward(x.view([2, 2, 64]), null, dy.view([2, 2, 64]), rstd, {})));
test("normBackward refuses a hidden size that is not a multiple of 32", () => refuses("normBackward", "x", "SHAPE", () => normBackward(tensor(new Float32Array(48), [1, 48], "fp32"), null, tensor(new Float32Array(48), [1, 48], "fp32"), tensor([1], [1], "fp32"), {})));
test("normBackward refuses gradOut of another dtype", () => refuses("normBackward", "gradOut", "DTYPE", () => normBackward(x, w, xb, rstd, {})));
test("normBackward refuses rstd of the wrong shape", () => refuses("normBackward", "rstd", "SHAPE", () => normBackward(x, w, dy, tensor(new Float32Array(3), [3], "fp32"), {})));
test("normBackward refuses rstd that is not fp32", () => refuses("normBackward", "rstd", "DTYPE", () => normBackward(x, w, dy, tensor(new Uint16Array(4), [4], "bf16"), {})));
test("normBackward refuses residualOutGrad with a strided last dimension", () => refuses("normBackward", "residualOutGrad", "LAYOUT", () => normBackward(x, w, dy, rstd, { residualOutGrad: tensor(new Float32Array(512), [4, 64], "fp32", [128, 2]) })));
test("normBackward refuses an unknown weightGradDtype", () => refuses("normBackward", "weightGradDtype", "VALUE", () => normBackward(x, w, dy, rstd, { weightGradDtype: "fp16" as never })));
test("normBackward refuses accumulateWeightGrad without out.weightGrad", () => refuses("normBackward", "accumulateWeightGrad", "VALUE", () => normBackward(x, w, dy, rstd, { accumulateWeightGrad: true })));
test("normBackward refuses accumulateWeightGrad without a weight", () => refuses("normBackward", "accumulateWeightGrad", "VALUE", () => normBackward(x, null, dy, rstd, { accumulateWeightGrad: true, out: { weightGrad: tensor(new Float32Array(64), [64], "fp32") } })));
test("normBackward refuses out.weightGrad of a dtype other than weightGradDtype", () => refuses("normBackward", "out.weightGrad", "OUT_MISMATCH", () => normBackward(x, w, dy, rstd, { weightGradDtype: "bf16", out: { weightGrad: tensor(new Float32Array(64), [64], "fp32") } })));
test("normBackward refuses out.xGrad overlapping gradOut", () => refuses("normBackward", "out.xGrad", "OUT_MISMATCH", () => normBackward(x, w, dy, rstd, { out: { xGrad: dy } })));
test("normBackward with backend cuda runs its kernels on host inputs (BACKEND_UNAVAILABLE without a device)", () => cudaOrUnavailable("normBackward", () => normBackward(x, w, dy, rstd, { backend: "cuda" }), hasGpu));
test("normBackward leaves an accumulated weight gradient untouched with zero tokens", () => {
  const wg = tensor(new Float32Array(64).fill(-0), [64], "fp32");
  const e = tensor(new Float32Array(0), [0, 64], "fp32");
  const [, g] = normBackward(e, w, e, tensor(new Float32Array(0), [0], "fp32"), { accumulateWeightGrad: true, out: { weightGrad: wg } });
  assert.equal(g, wg);
  assert.ok(Object.is((wg.data as Float32Array)[0], -0));
});

// ---- applyRotary ----

test("applyRotary refuses an int32 query", () => refuses("applyRotary", "query", "DTYPE", () => applyRotary(tensor(new Int32Array(64), [1, 1, 64], "int32"), cache, {})));
test("applyRotary refuses a 2-D query", () => refuses("applyRotary", "query", "SHAPE", () => applyRotary(x, cache, {})));
test("applyRotary refuses a rotary dimension outside 32, 64, 128, 256", () => refuses("applyRotary", "query", "SHAPE", () => applyRotary(q.slice(-1, 0, 48), cache, {})));
test("applyRotary refuses a query whose heads share addresses", () => refuses("applyRotary", "query", "LAYOUT", () => applyRotary(tensor(new Float32Array(3 * 64), [3, 2, 64], "fp32", [64, 0, 1]), cache, {})));
test("applyRotary refuses a query with a strided last dimension", () => refuses("applyRotary", "query", "LAYOUT", () => applyRotary(tensor(new Float32Array(3 * 2 * 128), [3, 2, 64], "fp32", [256, 128, 2]), cache, {})));
test("applyRotary refuses a cache whose width is not D", () => refuses("applyRotary", "cosSinCache", "SHAPE", () => applyRotary(q, tensor(new Float32Array(8 * 32), [8, 32], "fp32"), {})));
test("applyRotary refuses a bf16 cache", () => refuses("applyRotary", "cosSinCache", "DTYPE", () => applyRotary(q, tensor(new Uint16Array(8 * 64), [8, 64], "bf16"), {})));
test("applyRotary refuses a key of another dtype", () => refuses("applyRotary", "key", "DTYPE", () => applyRotary(q, cache, { key: tensor(new Uint16Array(3 * 64), [3, 1, 64], "bf16") })));
test("applyRotary refuses a key with other tokens", () => refuses("applyRotary", "key", "SHAPE", () => applyRotary(q, cache, { key: tensor(new Float32Array(2 * 64), [2, 1, 64], "fp32") })));
test("applyRotary refuses a key that starts at query", () => refuses("applyRotary", "key", "VALUE", () => applyRotary(q, cache, { key: q.slice(1, 0, 1) })));
test("applyRotary refuses float positions", () => refuses("applyRotary", "positions", "DTYPE", () => applyRotary(q, cache, { positions: tensor(new Float32Array(3), [3], "fp32") })));
test("applyRotary refuses positions of the wrong shape", () => refuses("applyRotary", "positions", "SHAPE", () => applyRotary(q, cache, { positions: tensor(new Int32Array(2), [2], "int32") })));
test("applyRotary refuses a seqlenOffset that runs past the cache", () => refuses("applyRotary", "seqlenOffset", "VALUE", () => applyRotary(q, cache, { seqlenOffset: 6 })));
test("applyRotary refuses a non-integer seqlenOffset", () => refuses("applyRotary", "seqlenOffset", "VALUE", () => applyRotary(q, cache, { seqlenOffset: 0.5 })));
test("applyRotary refuses an out-of-range position before rotating anything", () => {
  refuses("applyRotary", "positions", "DEVICE_VALUE", () => applyRotary(q, cache, { key: k, positions: pos, seqlenOffset: 1 }));
  refuses("applyRotary", "positions", "DEVICE_VALUE", () => applyRotary(q, cache, { positions: tensor([0n, 2n ** 40n, 1n], [3], "int64") }));
});
test("applyRotary refuses a non-boolean interleaved", () => refuses("applyRotary", "interleaved", "VALUE", () => applyRotary(q, cache, { interleaved: 1 as never })));
test("applyRotary refuses inputs on two devices", () => refuses("applyRotary", "device", "DEVICE_MISMATCH", () => applyRotary(fakeDevice("fp32", [3, 2, 64], 0), fakeDevice("fp32", [8, 64], 1), {})));
test("applyRotary answers BACKEND_UNAVAILABLE for Ascend", () => refuses("applyRotary", "backend", "BACKEND_UNAVAILABLE", () => applyRotary(q, cache, { backend: "ascend" })));

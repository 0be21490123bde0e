/**
 * Bad inputs to `normForwardAndPerTokenCast` and `addRmsnormForwardAndPerTokenCast`: each is a TkError naming the op
 * and argument, raised before anything is written (inputs byte-identical afterwards). With `backend: "cuda"` host
 * inputs run the fused kernel (BACKEND_UNAVAILABLE without a device).
 * @module
 */
import assert from "node:assert/strict";
import { type Tensor, tensor } from "../core/tensor.ts";
import { addRmsnormForwardAndPerTokenCast, normForwardAndPerTokenCast } from "../ops/norm/mod.ts";
import { hasGpu, test } from "./harness.ts";
import { cudaOrUnavailable, refuses as refusesWith } from "./refuses.ts";

const x = tensor(new Float32Array(4 * 128).map((_, i) => Math.sin(i)), [4, 128], "fp32");
const xb = tensor(new Uint16Array(4 * 128).fill(0x3f80), [4, 128], "bf16");
const w = tensor(new Float32Array(128).fill(1), [128], "fp32");
const res = tensor(new Float32Array(4 * 128).fill(0.5), [4, 128], "fp32");
const ALL: Tensor[] = [x, xb, w, res];

function refuses(op: string, arg: string, code: string, f: () => unknown, inputs: Tensor[] = ALL): void {
  refusesWith(op, arg, code, f, inputs);
}

const F = "normForwardAndPerTokenCast";
const base = { eps: 1e-6, fmt: "e4m3", numPerChannels: 128 } as const;

test(`${F} refuses fmt e2m1`, () => refuses(F, "fmt", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, fmt: "e2m1" as never })));
test(`${F} refuses numPerChannels 64`, () => refuses(F, "numPerChannels", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, numPerChannels: 64 as never })));
test(`${F} refuses numPerChannels that does not divide the hidden size`, () => refuses(F, "numPerChannels", "VALUE", () => normForwardAndPerTokenCast(tensor(new Float32Array(96), [1, 96], "fp32"), null, { ...base, numPerChannels: 128 })));
test(`${F} refuses useE4m3Sf (not an option of the fused cast)`, () => refuses(F, "useE4m3Sf", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, useE4m3Sf: true } as never)));
test(`${F} refuses usePackedUe8m0 without roundSf`, () => refuses(F, "usePackedUe8m0", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, usePackedUe8m0: true })));
test(`${F} refuses a 1-D input`, () => refuses(F, "x", "SHAPE", () => normForwardAndPerTokenCast(w, null, base)));
test(`${F} refuses a weight of another dtype, under its own name`, () => refuses(F, "weight", "DTYPE", () => normForwardAndPerTokenCast(xb, w, base)));
test(`${F} refuses a negative eps, under its own name`, () => refuses(F, "eps", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, eps: -1 })));
test(`${F} refuses out.outBf16 without withOutBf16`, () => refuses(F, "out.outBf16", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, out: { outBf16: tensor(new Uint16Array(512), [4, 128], "bf16") } })));
test(`${F} refuses out.sf with useTmaAlignedColMajorSf`, () => refuses(F, "out.sf", "OUT_MISMATCH", () => normForwardAndPerTokenCast(x, w, { ...base, useTmaAlignedColMajorSf: true, out: { sf: tensor(new Float32Array(4), [4, 1], "fp32") } })));
test(`${F} refuses out.data of the wrong shape`, () => refuses(F, "out.data", "OUT_MISMATCH", () => normForwardAndPerTokenCast(x, w, { ...base, out: { data: tensor(new Uint8Array(128), [1, 128], "e4m3") } })));
test(`${F} refuses out.data overlapping out.residualOut's storage`, () => {
  const buf = new Uint8Array(4 * 128 * 4);
  const data = tensor(buf.subarray(0, 512), [4, 128], "e4m3");
  const ro = tensor(new Float32Array(buf.buffer), [4, 128], "fp32");
  refuses(F, "out.data", "OUT_MISMATCH", () => normForwardAndPerTokenCast(x, w, { ...base, residual: res, out: { data, residualOut: ro } }), [...ALL, ro]);
});
test(`${F} with backend cuda runs its kernel on host inputs (BACKEND_UNAVAILABLE without a device)`, () => cudaOrUnavailable(F, () => normForwardAndPerTokenCast(x, w, { ...base, backend: "cuda" }), hasGpu));

const A = "addRmsnormForwardAndPerTokenCast";
test(`${A} refuses a null weight`, () => refuses(A, "weight", "VALUE", () => addRmsnormForwardAndPerTokenCast(x, res, null as never, base)));
test(`${A} refuses a 3-D input`, () => refuses(A, "x", "SHAPE", () => addRmsnormForwardAndPerTokenCast(x.view([2, 2, 128]), res.view([2, 2, 128]), w, base)));
test(`${A} refuses a residual that overlaps x`, () => refuses(A, "residual", "VALUE", () => addRmsnormForwardAndPerTokenCast(x, x, w, base)));
test(`${A} refuses a residual of another dtype`, () => refuses(A, "residual", "DTYPE", () => addRmsnormForwardAndPerTokenCast(xb, res, tensor(new Uint16Array(128), [128], "bf16"), base)));
test(`${A} refuses a weight overlapping residual`, () => {
  const buf = new Float32Array(4 * 128);
  const r = tensor(buf, [4, 128], "fp32");
  const wa = tensor(buf.subarray(0, 128), [128], "fp32");
  refuses(A, "weight", "VALUE", () => addRmsnormForwardAndPerTokenCast(x, r, wa, base), [...ALL, r]);
});
test(`${A} refuses whole-row scaling`, () => refuses(A, "numPerChannels", "VALUE", () => addRmsnormForwardAndPerTokenCast(tensor(new Float32Array(256), [1, 256], "fp32"), tensor(new Float32Array(256), [1, 256], "fp32"), tensor(new Float32Array(256), [256], "fp32"), { ...base, numPerChannels: 256 as never })));
test(`${A} refuses an out option`, () => refuses(A, "out", "VALUE", () => addRmsnormForwardAndPerTokenCast(x, res, w, { ...base, out: {} } as never)));
test(`${A} refuses a non-contiguous x`, () => refuses(A, "x", "LAYOUT", () => addRmsnormForwardAndPerTokenCast(tensor(new Float32Array(8 * 128), [4, 128], "fp32", [256, 1]), res, w, base)));
test(`${A} with backend cuda runs its kernel on host inputs (BACKEND_UNAVAILABLE without a device)`, () => {
  const r = tensor(new Float32Array(res.data as Float32Array), [4, 128], "fp32");
  cudaOrUnavailable(A, () => addRmsnormForwardAndPerTokenCast(x, r, w, { ...base, backend: "cuda" }), hasGpu);
});
test(`${A} leaves x unchanged and writes residual`, () => {
  const r = tensor(new Float32Array(res.data as Float32Array), [4, 128], "fp32");
  addRmsnormForwardAndPerTokenCast(x, r, w, base);
  assert.equal((r.data as Float32Array)[1], Math.fround(Math.sin(1) + 0.5));
});

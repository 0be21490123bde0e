/**
 * Bad inputs to the per-token cast family: each is a TkError naming op and argument, raised before anything is
 * launched or written (inputs are byte-identical afterwards, the launch counter does not move).
 * @module
 */
import { castBack, perTokenCast, perTokenCastBack, perTokenCastWithPrecomputedSf, perTokenCastWithSfOnly, type Tensor, tensor } from "../mod.ts";
import { test } from "./harness.ts";
import { fakeDevice, refuses as refusesWith } from "./refuses.ts";

/** {@link refusesWith} with this file's inputs as the ones that must stay unchanged. */
function refuses(op: string, arg: string, code: string, f: () => unknown, inputs: Tensor[] = [x, codes, sf]): void {
  refusesWith(op, arg, code, f, inputs);
}

const x = tensor(new Float32Array(4 * 128).map((_, i) => Math.sin(i) * 10), [4, 128], "fp32");
const codes = tensor(new Uint8Array(4 * 128).fill(0x38), [4, 128], "e4m3");
const sf = tensor(new Float32Array(4).fill(1), [4, 1], "fp32");

const OK = { fmt: "e4m3", numPerChannels: 128 } as const;

test("perTokenCast refuses an unknown fmt", () => refuses("perTokenCast", "fmt", "VALUE", () => perTokenCast(x, { ...OK, fmt: "e5m2" as never })));
test("perTokenCast refuses numPerChannels 48", () => refuses("perTokenCast", "numPerChannels", "VALUE", () => perTokenCast(x, { ...OK, numPerChannels: 48 })));
test("perTokenCast refuses a non-integer numPerChannels", () => refuses("perTokenCast", "numPerChannels", "VALUE", () => perTokenCast(x, { ...OK, numPerChannels: 32.5 })));
test("perTokenCast refuses an int32 input", () => refuses("perTokenCast", "x", "DTYPE", () => perTokenCast(tensor(new Int32Array(128), [1, 128], "int32"), OK)));
test("perTokenCast refuses a 3-D input", () => refuses("perTokenCast", "x", "SHAPE", () => perTokenCast(x.view([2, 2, 128]), OK)));
test("perTokenCast refuses a width that is not a multiple of 64", () => refuses("perTokenCast", "x", "SHAPE", () => perTokenCast(tensor(new Float32Array(96), [1, 96], "fp32"), { ...OK, numPerChannels: 32 })));
test("perTokenCast refuses a last dimension with stride ≠ 1", () => refuses("perTokenCast", "x", "LAYOUT", () => perTokenCast(tensor(new Float32Array(128 * 128), [128, 128], "fp32").transpose(), OK)));
test("perTokenCast refuses rows that overlap (row stride < width)", () => refuses("perTokenCast", "x", "LAYOUT", () => perTokenCast(tensor(new Float32Array(256), [2, 128], "fp32", [64, 1]), OK)));
test("perTokenCast refuses packed UE8M0 without roundSf", () => refuses("perTokenCast", "usePackedUe8m0", "VALUE", () => perTokenCast(x, { ...OK, usePackedUe8m0: true })));
test("perTokenCast refuses roundSf with useE4m3Sf", () => refuses("perTokenCast", "useE4m3Sf", "VALUE", () => perTokenCast(x, { ...OK, roundSf: true, useE4m3Sf: true })));
test("perTokenCast refuses a non-boolean flag", () => refuses("perTokenCast", "roundSf", "VALUE", () => perTokenCast(x, { ...OK, roundSf: 1 as never })));
test("perTokenCast refuses an unknown option", () => refuses("perTokenCast", "numPerChannel", "VALUE", () => perTokenCast(x, { ...OK, numPerChannel: 128 } as never)));
test("perTokenCast refuses an unknown backend", () => refuses("perTokenCast", "backend", "VALUE", () => perTokenCast(x, { ...OK, backend: "tpu" as never })));
test("perTokenCast answers BACKEND_UNAVAILABLE for Ascend", () => refuses("perTokenCast", "backend", "BACKEND_UNAVAILABLE", () => perTokenCast(x, { ...OK, backend: "ascend" })));
test("perTokenCast refuses a quantized input without xBlockSize", () => refuses("perTokenCast", "xBlockSize", "VALUE", () => perTokenCast([codes, sf], OK)));
test("perTokenCast refuses an illegal xBlockSize", () => refuses("perTokenCast", "xBlockSize", "VALUE", () => perTokenCast([codes, sf], { ...OK, xBlockSize: [2, 128] })));
test("perTokenCast refuses xBlockSize on a plain input", () => refuses("perTokenCast", "xBlockSize", "VALUE", () => perTokenCast(x, { ...OK, xBlockSize: [1, 128] })));
test("perTokenCast refuses input scales of the wrong shape", () => refuses("perTokenCast", "x[1]", "SHAPE", () => perTokenCast([codes, tensor(new Float32Array(8), [4, 2], "fp32")], { ...OK, xBlockSize: [1, 128] })));
test("perTokenCast refuses input scales that are neither row- nor column-major", () => refuses("perTokenCast", "x[1]", "LAYOUT", () => perTokenCast([codes, tensor(new Float32Array(64), [4, 2], "fp32", [3, 2])], { ...OK, numPerChannels: 64, xBlockSize: [1, 64] })));
test("perTokenCast refuses numPerChannels == H for a quantized input", () => refuses("perTokenCast", "numPerChannels", "VALUE", () => perTokenCast([tensor(new Uint8Array(4 * 192), [4, 192], "e4m3"), tensor(new Float32Array(8), [4, 2], "fp32")], { fmt: "e4m3", numPerChannels: 192, xBlockSize: [1, 128] })));
test("perTokenCast refuses out.data of the wrong shape", () => refuses("perTokenCast", "out.data", "OUT_MISMATCH", () => perTokenCast(x, { ...OK, out: { data: tensor(new Uint8Array(128), [1, 128], "e4m3") } })));
test("perTokenCast refuses out.sf with a layout other than the options select", () => refuses("perTokenCast", "out.sf", "OUT_MISMATCH", () => perTokenCast(x, { ...OK, roundSf: true, usePackedUe8m0: true, out: { sf: tensor(new Float32Array(4), [4, 1], "fp32") } })));
test("perTokenCast refuses out.data overlapping the input", () => {
  const buf = new Uint8Array(4 * 128 * 2);
  const xin = tensor(new Uint16Array(buf.buffer), [4, 128], "bf16");
  const alias = tensor(buf.subarray(0, 4 * 128), [4, 128], "e4m3");
  refuses("perTokenCast", "out.data", "OUT_MISMATCH", () => perTokenCast(xin, { ...OK, out: { data: alias } }), [xin]);
});
test("perTokenCast refuses a disposed device tensor", () => {
  const d = fakeDevice("fp32", [4, 128]);
  d.dispose();
  refuses("perTokenCast", "x", "DISPOSED", () => perTokenCast(d, OK));
});
test("perTokenCast refuses tensors on two devices", () => {
  const q = fakeDevice("e4m3", [4, 128], 0);
  const s = fakeDevice("fp32", [4, 1], 1);
  refuses("perTokenCast", "device", "DEVICE_MISMATCH", () => perTokenCast([q, s], { ...OK, xBlockSize: [1, 128] }));
});
test("perTokenCast refuses host and device tensors mixed", () => {
  const s = fakeDevice("fp32", [4, 1], 0);
  refuses("perTokenCast", "device", "DEVICE_MISMATCH", () => perTokenCast([codes, s], { ...OK, xBlockSize: [1, 128] }));
});
test("perTokenCast refuses a missing options object", () => refuses("perTokenCast", "options", "VALUE", () => perTokenCast(x, undefined as never)));
test("perTokenCastWithSfOnly refuses a quantized input", () => refuses("perTokenCastWithSfOnly", "x", "VALUE", () => perTokenCastWithSfOnly([codes, sf] as never, OK)));
test("perTokenCastWithSfOnly refuses xBlockSize", () => refuses("perTokenCastWithSfOnly", "xBlockSize", "VALUE", () => perTokenCastWithSfOnly(x, { ...OK, xBlockSize: [1, 128] } as never)));
test("perTokenCastWithPrecomputedSf refuses a column-major sf", () => refuses("perTokenCastWithPrecomputedSf", "sf", "LAYOUT", () => perTokenCastWithPrecomputedSf(x, tensor(new Float32Array(8), [2, 4], "fp32").transpose(), { ...OK, numPerChannels: 64 })));
test("perTokenCastWithPrecomputedSf refuses packed scales", () => refuses("perTokenCastWithPrecomputedSf", "usePackedUe8m0", "VALUE", () => perTokenCastWithPrecomputedSf(x, sf, { ...OK, roundSf: true, usePackedUe8m0: true })));
test("perTokenCastWithPrecomputedSf refuses an sf of the wrong dtype", () => refuses("perTokenCastWithPrecomputedSf", "sf", "DTYPE", () => perTokenCastWithPrecomputedSf(x, sf, { ...OK, useE4m3Sf: true })));
test("perTokenCastBack refuses an output fmt that is not fp32/bf16", () => refuses("perTokenCastBack", "fmt", "VALUE", () => perTokenCastBack([codes, sf], { fmt: "e4m3" as never, numPerChannels: 128 })));
test("perTokenCastBack refuses a plain tensor instead of a pair", () => refuses("perTokenCastBack", "x", "VALUE", () => perTokenCastBack(x as never, { fmt: "fp32", numPerChannels: 128 })));
test("perTokenCastBack refuses scales of the wrong shape", () => refuses("perTokenCastBack", "x[1]", "SHAPE", () => perTokenCastBack([codes, sf], { fmt: "fp32", numPerChannels: 32 })));
test("tensor() refuses non-integer and negative sizes", () => {
  refuses("tensor", "shape", "SHAPE", () => tensor(new Float32Array(4), [2.5, 2], "fp32"));
  refuses("tensor", "shape", "SHAPE", () => tensor(new Float32Array(4), [-1, 4], "fp32"));
});
test("tensor() refuses data too short for shape and strides", () => refuses("tensor", "data", "SHAPE", () => tensor(new Float32Array(4), [2, 4], "fp32")));

const CB = { fmt: "fp32", xBlockSize: [128, 128] } as const;
const sfBlock = tensor(new Float32Array(1), [1, 1], "fp32");
test("castBack refuses a missing xBlockSize", () => refuses("castBack", "xBlockSize", "VALUE", () => castBack([codes, sfBlock], { fmt: "fp32" } as never)));
test("castBack refuses block shapes outside per-token, per-block and per-channel", () => {
  refuses("castBack", "xBlockSize", "VALUE", () => castBack([codes, sfBlock], { fmt: "fp32", xBlockSize: [1, 1] }));
  refuses("castBack", "xBlockSize", "VALUE", () => castBack([codes, sfBlock], { fmt: "fp32", xBlockSize: [64, 64] }));
});
test("castBack refuses an output fmt that is not fp32/bf16", () => refuses("castBack", "fmt", "VALUE", () => castBack([codes, sfBlock], { ...CB, fmt: "fp16" as never })));
test("castBack refuses per-block scales of the wrong shape", () => refuses("castBack", "x[1]", "SHAPE", () => castBack([codes, sf], CB)));
test("castBack refuses column-major scales with per-channel blocks", () => refuses("castBack", "x[1]", "LAYOUT", () => castBack([tensor(new Uint8Array(64 * 128), [64, 128], "e4m3"), tensor(new Float32Array(256), [128, 2], "fp32").transpose()], { fmt: "fp32", xBlockSize: [32, 1] })));
test("castBack refuses e4m3 scales with per-channel blocks", () => refuses("castBack", "x[1]", "DTYPE", () => castBack([codes, tensor(new Uint8Array(128), [1, 128], "e4m3")], { fmt: "fp32", xBlockSize: [32, 1] })));
test("castBack refuses token-packed scales of the wrong shape", () => refuses("castBack", "x[1]", "SHAPE", () => castBack([codes, tensor(new Int32Array(256), [2, 128], "int32")], { fmt: "fp32", xBlockSize: [32, 1] })));
test("castBack refuses an unknown option", () => refuses("castBack", "numPerChannels", "VALUE", () => castBack([codes, sfBlock], { ...CB, numPerChannels: 128 } as never)));

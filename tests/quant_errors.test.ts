/**
 * Bad inputs to perBlockCast (+ WithSfOnly, WithPrecomputedSf), perTokenCastAndCastBack, cast and
 * unpackFromE2m1fnX2: each is a TkError naming op and argument, raised before anything is launched or written
 * (host inputs are byte-identical afterwards, the launch counter does not move). The per-block casts
 * (tests/per_block_gpu.test.ts), perTokenCastAndCastBack, the element cast and unpackFromE2m1fnX2
 * (tests/elem_gpu.test.ts) and the block-scaled cast (tests/cast_block_gpu.test.ts) run on devices.
 * @module
 */
import { cast, perBlockCast, perBlockCastWithPrecomputedSf, perBlockCastWithSfOnly, perTokenCastAndCastBack, type Tensor, tensor, unpackFromE2m1fnX2 } from "../mod.ts";
import { hasGpu, test } from "./harness.ts";
import { cudaOrUnavailable, fakeDevice, refuses as refusesWith } from "./refuses.ts";

/** {@link refusesWith} with this file's inputs as the ones that must stay unchanged. */
function refuses(op: string, arg: string, code: string, f: () => unknown, inputs: Tensor[] = [x, sf, packed]): void {
  refusesWith(op, arg, code, f, inputs);
}

const x = tensor(new Float32Array(128 * 256).map((_, i) => Math.sin(i) * 10), [128, 256], "fp32");
const sf = tensor(new Float32Array(2).fill(1), [1, 2], "fp32");
const packed = tensor(new Uint8Array([0x12, 0x34, 0xfe]), [3], "e2m1x2");

// ---- perBlockCast and its variants ----------------------------------------------------------------------

const PB = { fmt: "e4m3", blockSize: [128, 128] } as const;
test("perBlockCast refuses an unknown fmt", () => refuses("perBlockCast", "fmt", "VALUE", () => perBlockCast(x, { ...PB, fmt: "e5m2" as never })));
test("perBlockCast refuses a missing blockSize", () => refuses("perBlockCast", "blockSize", "VALUE", () => perBlockCast(x, { fmt: "e4m3" } as never)));
test("perBlockCast refuses blockSize [64, 128]", () => refuses("perBlockCast", "blockSize", "VALUE", () => perBlockCast(x, { ...PB, blockSize: [64, 128] })));
test("perBlockCast refuses a token count that is not a multiple of 128", () => refuses("perBlockCast", "x", "SHAPE", () => perBlockCast(x.slice(0, 0, 33), PB)));
test("perBlockCast refuses a hidden size that is not a multiple of 128", () => refuses("perBlockCast", "x", "SHAPE", () => perBlockCast(tensor(new Float32Array(128 * 192), [128, 192], "fp32"), PB)));
test("perBlockCast refuses a non-contiguous input", () => refuses("perBlockCast", "x", "LAYOUT", () => perBlockCast(x.slice(1, 0, 128), PB)));
test("perBlockCast refuses an fp16 input", () => refuses("perBlockCast", "x", "DTYPE", () => perBlockCast(tensor(new Uint16Array(128 * 128), [128, 128], "fp16"), PB)));
test("perBlockCast refuses packed UE8M0 without roundSf", () => refuses("perBlockCast", "usePackedUe8m0", "VALUE", () => perBlockCast(x, { ...PB, usePackedUe8m0: true })));
test("perBlockCast refuses useE4m3Sf", () => refuses("perBlockCast", "useE4m3Sf", "VALUE", () => perBlockCast(x, { ...PB, useE4m3Sf: true as never })));
test("perBlockCast refuses an unknown option", () => refuses("perBlockCast", "numPerChannels", "VALUE", () => perBlockCast(x, { ...PB, numPerChannels: 128 } as never)));
test("perBlockCast refuses out.sf with another layout than the options select", () => refuses("perBlockCast", "out.sf", "OUT_MISMATCH", () => perBlockCast(x, { ...PB, roundSf: true, usePackedUe8m0: true, out: { sf: tensor(new Float32Array(2), [1, 2], "fp32") } })));
test("perBlockCast refuses out.data overlapping the input", () => {
  const buf = new Float32Array(128 * 128);
  const xin = tensor(buf, [128, 128], "fp32");
  const alias = tensor(new Uint8Array(buf.buffer, 0, 128 * 128), [128, 128], "e4m3");
  refuses("perBlockCast", "out.data", "OUT_MISMATCH", () => perBlockCast(xin, { ...PB, out: { data: alias } }), [xin]);
});
test("perBlockCast answers BACKEND_UNAVAILABLE for Ascend", () => refuses("perBlockCast", "backend", "BACKEND_UNAVAILABLE", () => perBlockCast(x, { ...PB, backend: "ascend" })));
test("perBlockCast refuses a disposed device tensor", () => {
  const d = fakeDevice("fp32", [128, 256]);
  d.dispose();
  refuses("perBlockCast", "x", "DISPOSED", () => perBlockCast(d, { ...PB, backend: "cpu" }));
});
test("perBlockCastWithSfOnly refuses a token count that is not a multiple of 128", () => refuses("perBlockCastWithSfOnly", "x", "SHAPE", () => perBlockCastWithSfOnly(x.slice(0, 0, 1), PB)));
test("perBlockCastWithSfOnly refuses blockSize [128]", () => refuses("perBlockCastWithSfOnly", "blockSize", "VALUE", () => perBlockCastWithSfOnly(x, { ...PB, blockSize: [128] as never })));
test("perBlockCastWithSfOnly refuses a non-boolean roundSf", () => refuses("perBlockCastWithSfOnly", "roundSf", "VALUE", () => perBlockCastWithSfOnly(x, { ...PB, roundSf: 1 as never })));
test("perBlockCastWithSfOnly refuses an out of the wrong dtype", () => refuses("perBlockCastWithSfOnly", "out", "OUT_MISMATCH", () => perBlockCastWithSfOnly(x, { ...PB, out: tensor(new Int32Array(2), [1, 2], "int32") })));
test("perBlockCastWithSfOnly refuses a missing options object", () => refuses("perBlockCastWithSfOnly", "options", "VALUE", () => perBlockCastWithSfOnly(x, undefined as never)));
test("perBlockCastWithPrecomputedSf refuses an sf of the wrong shape", () => refuses("perBlockCastWithPrecomputedSf", "sf", "SHAPE", () => perBlockCastWithPrecomputedSf(x, sf, { ...PB, blockSize: [32, 128] })));
test("perBlockCastWithPrecomputedSf refuses a column-major sf", () => refuses("perBlockCastWithPrecomputedSf", "sf", "LAYOUT", () => perBlockCastWithPrecomputedSf(x, tensor(new Float32Array(8), [2, 4], "fp32").transpose(), { ...PB, blockSize: [32, 128] })));
test("perBlockCastWithPrecomputedSf refuses an e4m3 sf", () => refuses("perBlockCastWithPrecomputedSf", "sf", "DTYPE", () => perBlockCastWithPrecomputedSf(x, tensor(new Uint8Array(2), [1, 2], "e4m3"), PB)));
test("perBlockCastWithPrecomputedSf refuses packed scales", () => refuses("perBlockCastWithPrecomputedSf", "usePackedUe8m0", "VALUE", () => perBlockCastWithPrecomputedSf(x, sf, { ...PB, roundSf: true, usePackedUe8m0: true })));
test("perBlockCastWithPrecomputedSf refuses useTmaAlignedColMajorSf", () => refuses("perBlockCastWithPrecomputedSf", "useTmaAlignedColMajorSf", "VALUE", () => perBlockCastWithPrecomputedSf(x, sf, { ...PB, useTmaAlignedColMajorSf: true })));
test("perBlockCastWithPrecomputedSf refuses a hidden size that is not a multiple of 128", () => refuses("perBlockCastWithPrecomputedSf", "x", "SHAPE", () => perBlockCastWithPrecomputedSf(tensor(new Float32Array(128 * 64), [128, 64], "fp32"), sf, PB)));
test("perBlockCastWithPrecomputedSf refuses a plain array as sf", () => refuses("perBlockCastWithPrecomputedSf", "sf", "VALUE", () => perBlockCastWithPrecomputedSf(x, [1, 1] as never, PB)));

// ---- perTokenCastAndCastBack (in place: x must be untouched by a refused call) ------------------------------

const CB = { fmt: "e4m3", numPerChannels: 128 } as const;
const xc = tensor(new Float32Array(4 * 128).map((_, i) => Math.cos(i) * 3), [4, 128], "fp32");
test("perTokenCastAndCastBack refuses numPerChannels 48", () => refuses("perTokenCastAndCastBack", "numPerChannels", "VALUE", () => perTokenCastAndCastBack(xc, { ...CB, numPerChannels: 48 }), [xc]));
test("perTokenCastAndCastBack refuses a hidden size that is not a multiple of numPerChannels", () => refuses("perTokenCastAndCastBack", "x", "SHAPE", () => perTokenCastAndCastBack(tensor(new Float32Array(192), [1, 192], "fp32"), CB), [xc]));
test("perTokenCastAndCastBack refuses a hidden size that is not a multiple of 64", () => refuses("perTokenCastAndCastBack", "x", "SHAPE", () => perTokenCastAndCastBack(tensor(new Float32Array(96), [1, 96], "fp32"), { ...CB, numPerChannels: 32 }), [xc]));
test("perTokenCastAndCastBack refuses roundSf with useE4m3Sf", () => refuses("perTokenCastAndCastBack", "useE4m3Sf", "VALUE", () => perTokenCastAndCastBack(xc, { ...CB, roundSf: true, useE4m3Sf: true }), [xc]));
test("perTokenCastAndCastBack refuses a last dimension with stride ≠ 1", () => refuses("perTokenCastAndCastBack", "x", "LAYOUT", () => perTokenCastAndCastBack(tensor(new Float32Array(128 * 128), [128, 128], "fp32").transpose(), CB), [xc]));
test("perTokenCastAndCastBack refuses overlapping rows", () => refuses("perTokenCastAndCastBack", "x", "LAYOUT", () => perTokenCastAndCastBack(tensor(new Float32Array(256), [2, 128], "fp32", [64, 1]), CB), [xc]));
test("perTokenCastAndCastBack refuses an e4m3 tensor", () => refuses("perTokenCastAndCastBack", "x", "DTYPE", () => perTokenCastAndCastBack(tensor(new Uint8Array(128), [1, 128], "e4m3"), CB), [xc]));
test("perTokenCastAndCastBack refuses out (it writes x in place)", () => refuses("perTokenCastAndCastBack", "out", "VALUE", () => perTokenCastAndCastBack(xc, { ...CB, out: xc } as never), [xc]));
test("perTokenCastAndCastBack refuses usePackedUe8m0 (an unknown option here)", () => refuses("perTokenCastAndCastBack", "usePackedUe8m0", "VALUE", () => perTokenCastAndCastBack(xc, { ...CB, usePackedUe8m0: true } as never), [xc]));
test("perTokenCastAndCastBack with backend cuda runs on the device, or answers BACKEND_UNAVAILABLE without one", () => cudaOrUnavailable("perTokenCastAndCastBack", () => perTokenCastAndCastBack(tensor(new Float32Array(4 * 128).fill(1.03), [4, 128], "fp32"), { ...CB, backend: "cuda" }), hasGpu));

// ---- cast ---------------------------------------------------------------------------------------------------

test("cast refuses an unknown dtype", () => refuses("cast", "dtype", "VALUE", () => cast(x, { dtype: "fp8" as never })));
test("cast refuses an int32 target", () => refuses("cast", "dtype", "VALUE", () => cast(x, { dtype: "int32" })));
test("cast refuses a seed without stochastic rounding", () => refuses("cast", "seed", "VALUE", () => cast(x, { dtype: "bf16", seed: 1n })));
test("cast refuses a non-contiguous input", () => refuses("cast", "x", "LAYOUT", () => cast(x.transpose(), { dtype: "bf16" })));
test("cast refuses an int8 input", () => refuses("cast", "x", "DTYPE", () => cast(tensor(new Int8Array(4), [4], "int8"), { dtype: "fp32" })));
test("cast refuses a block option with a bf16 target", () => refuses("cast", "dtype", "VALUE", () => cast(x, { dtype: "bf16", blockSize: [32, 32] })));
test("cast refuses a non-positive block size", () => refuses("cast", "blockSize", "VALUE", () => cast(x, { dtype: "e4m3", blockSize: [0, 32] })));
test("cast refuses a 3-D input for the block-scaled form", () => refuses("cast", "x", "SHAPE", () => cast(x.view([2, 64, 256]), { dtype: "e2m1x2" })));
test("cast refuses an odd hidden size for e2m1x2", () => refuses("cast", "x", "SHAPE", () => cast(tensor(new Float32Array(3), [1, 3], "fp32"), { dtype: "e2m1x2" })));
test("cast refuses packed UE8M0 without roundSf", () => refuses("cast", "usePackedUe8m0", "VALUE", () => cast(x, { dtype: "e4m3", usePackedUe8m0: true })));
test("cast refuses a precomputed sf of the wrong shape", () => refuses("cast", "sf", "SHAPE", () => cast(x, { dtype: "e4m3", blockSize: [32, 32], sf })));
test("cast refuses a quantized input without xBlockSize", () => refuses("cast", "xBlockSize", "VALUE", () => cast([tensor(new Uint8Array(128), [1, 128], "e4m3"), tensor([1], [1, 1], "fp32")], { dtype: "e4m3" })));
test("cast refuses xBlockSize on a plain input", () => refuses("cast", "xBlockSize", "VALUE", () => cast(x, { dtype: "e4m3", xBlockSize: [1, 128] })));
test("cast refuses an out of the wrong dtype", () => refuses("cast", "out", "OUT_MISMATCH", () => cast(x, { dtype: "bf16", out: tensor(new Float32Array(128 * 256), [128, 256], "fp32") })));
test("cast's element conversion with backend cuda runs on the device, or answers BACKEND_UNAVAILABLE without one", () => cudaOrUnavailable("cast", () => cast(x, { dtype: "bf16", backend: "cuda" }), hasGpu));
test("cast's block-scaled form with backend cuda runs on the device, or answers BACKEND_UNAVAILABLE without one", () => cudaOrUnavailable("cast", () => cast(x, { dtype: "e4m3", blockSize: [32, 32], backend: "cuda" }), hasGpu));
test("cast with a precomputed sf and backend cuda runs on the device, or answers BACKEND_UNAVAILABLE without one", () => cudaOrUnavailable("cast", () => cast(x, { dtype: "e2m1x2", blockSize: [3, 96], sf: tensor(new Float32Array(Math.ceil(x.shape[0] / 3) * Math.ceil(x.shape[1] / 96)).fill(2), [Math.ceil(x.shape[0] / 3), Math.ceil(x.shape[1] / 96)], "fp32"), backend: "cuda" }), hasGpu));

// ---- unpackFromE2m1fnX2 -------------------------------------------------------------------------------------

test("unpackFromE2m1fnX2 refuses an fp32 input", () => refuses("unpackFromE2m1fnX2", "x", "DTYPE", () => unpackFromE2m1fnX2(x)));
test("unpackFromE2m1fnX2 refuses a 0-D input", () => refuses("unpackFromE2m1fnX2", "x", "SHAPE", () => unpackFromE2m1fnX2(tensor(new Uint8Array(1), [], "uint8"))));
test("unpackFromE2m1fnX2 refuses dtype fp16", () => refuses("unpackFromE2m1fnX2", "dtype", "VALUE", () => unpackFromE2m1fnX2(packed, { dtype: "fp16" as never })));
test("unpackFromE2m1fnX2 refuses an unknown option", () => refuses("unpackFromE2m1fnX2", "fmt", "VALUE", () => unpackFromE2m1fnX2(packed, { fmt: "fp32" } as never)));
test("unpackFromE2m1fnX2 refuses an out of the wrong shape", () => refuses("unpackFromE2m1fnX2", "out", "OUT_MISMATCH", () => unpackFromE2m1fnX2(packed, { out: tensor(new Float32Array(3), [3], "fp32") })));
test("unpackFromE2m1fnX2 refuses a plain array", () => refuses("unpackFromE2m1fnX2", "x", "VALUE", () => unpackFromE2m1fnX2([1, 2] as never)));
test("unpackFromE2m1fnX2 with backend cuda runs on the device, or answers BACKEND_UNAVAILABLE without one", () => cudaOrUnavailable("unpackFromE2m1fnX2", () => unpackFromE2m1fnX2(packed, { backend: "cuda" }), hasGpu));
test("unpackFromE2m1fnX2 refuses tensors on two devices", () => refuses("unpackFromE2m1fnX2", "device", "DEVICE_MISMATCH", () => unpackFromE2m1fnX2(fakeDevice("e2m1x2", [3], 0), { out: fakeDevice("fp32", [6], 1) as never })));

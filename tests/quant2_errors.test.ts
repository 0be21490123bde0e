/**
 * Bad inputs to perChannelCast, perChannelCastFused, perChannelCastAndTranspose, perBlockCastLossless and
 * batchedTransposeWeightSf: each is a TkError naming op and argument, raised before anything is launched or
 * written (host inputs are byte-identical afterwards, the launch counter does not move). Every op here has a CUDA
 * kernel; their device runs are tested in tests/per_channel_gpu.test.ts and tests/per_block_gpu.test.ts.
 * @module
 */
import {
  batchedTransposeWeightSf,
  perBlockCastLossless,
  perChannelCast,
  perChannelCastAndTranspose,
  perChannelCastFused,
  type Tensor,
  tensor,
} from "../mod.ts";
import { hostStrided } from "../core/tensor.ts";
import { test } from "./harness.ts";
import { fakeDevice, refuses as refusesWith } from "./refuses.ts";

const x = tensor(new Float32Array(256 * 256).map((_, i) => Math.sin(i) * 10), [256, 256], "fp32");
const xb = tensor(new Uint16Array(128 * 192).fill(0x3f80), [128, 192], "bf16");
const q = tensor(new Uint8Array(256 * 256).fill(0x38), [256, 256], "e4m3");
const qsf = tensor(new Float32Array(256 * 2).fill(1), [256, 2], "fp32");
const fp4 = tensor(new Uint8Array(128 * 64).fill(0x22), [128, 64], "e2m1x2");
const fp4sf = tensor(new Float32Array(128 * 4).fill(1), [128, 4], "fp32");
const wsf = tensor(new Float32Array(2 * 3).fill(1), [2, 3], "fp32");

/** {@link refusesWith} with this file's inputs as the ones that must stay unchanged. */
function refuses(op: string, arg: string, code: string, f: () => unknown, inputs: Tensor[] = [x, xb, q, qsf, fp4, fp4sf, wsf]): void {
  refusesWith(op, arg, code, f, inputs);
}

// ---- perChannelCast --------------------------------------------------------------------------------------

const PC = { fmt: "e4m3", numPerTokens: 128 } as const;
test("perChannelCast refuses fmt e2m1", () => refuses("perChannelCast", "fmt", "VALUE", () => perChannelCast(x, { ...PC, fmt: "e2m1" as never })));
test("perChannelCast refuses numPerTokens 64", () => refuses("perChannelCast", "numPerTokens", "VALUE", () => perChannelCast(x, { ...PC, numPerTokens: 64 })));
test("perChannelCast refuses a token count that is not a multiple of 128", () => refuses("perChannelCast", "x", "SHAPE", () => perChannelCast(x.slice(0, 0, 160), PC)));
test("perChannelCast refuses a hidden size that is not a multiple of 128", () => refuses("perChannelCast", "x", "SHAPE", () => perChannelCast(xb, PC)));
test("perChannelCast refuses a non-contiguous input", () => refuses("perChannelCast", "x", "LAYOUT", () => perChannelCast(x.slice(1, 0, 128), PC)));
test("perChannelCast refuses packed UE8M0 without roundSf", () => refuses("perChannelCast", "usePackedUe8m0", "VALUE", () => perChannelCast(x, { ...PC, usePackedUe8m0: true })));
test("perChannelCast refuses numPerChannels with a plain input", () => refuses("perChannelCast", "numPerChannels", "VALUE", () => perChannelCast(x, { ...PC, numPerChannels: 128 })));
test("perChannelCast refuses a quantized input without numPerChannels", () => refuses("perChannelCast", "numPerChannels", "VALUE", () => perChannelCast([q, qsf], PC)));
test("perChannelCast refuses numPerChannels 64 for a quantized input", () => refuses("perChannelCast", "numPerChannels", "VALUE", () => perChannelCast([q, qsf], { ...PC, numPerChannels: 64 })));
test("perChannelCast refuses input scales of the wrong shape", () => refuses("perChannelCast", "x[1]", "SHAPE", () => perChannelCast([q, qsf], { ...PC, numPerChannels: 32 })));
test("perChannelCast refuses useTmaAlignedColMajorSf (not an option of per-channel casts)", () => refuses("perChannelCast", "useTmaAlignedColMajorSf", "VALUE", () => perChannelCast(x, { ...PC, useTmaAlignedColMajorSf: true } as never)));
test("perChannelCast refuses an out.sf in the channel-packed layout when token packing is selected", () => refuses("perChannelCast", "out.sf", "OUT_MISMATCH", () => perChannelCast(x, { ...PC, roundSf: true, usePackedUe8m0: true, out: { sf: tensor(new Int32Array(2 * 64), [2, 64], "int32") } })));
test("perChannelCast refuses device codes with host scales", () => refuses("perChannelCast", "device", "DEVICE_MISMATCH", () => perChannelCast([fakeDevice("e4m3", [256, 256]), qsf], { ...PC, numPerChannels: 128 })));
test("perChannelCast refuses a device input with a host out", () => refuses("perChannelCast", "device", "DEVICE_MISMATCH", () => perChannelCast(fakeDevice("fp32", [128, 128]), { ...PC, out: { sf: tensor(new Float32Array(128), [1, 128], "fp32") } })));

// ---- perChannelCastFused ---------------------------------------------------------------------------------

const pos = (n: number) => tensor(new Int32Array(n), [n], "int32");
test("perChannelCastFused refuses numPerTokens 32", () => refuses("perChannelCastFused", "numPerTokens", "VALUE", () => perChannelCastFused(x, { ...PC, numPerTokens: 32 })));
test("perChannelCastFused refuses a token count that is not a multiple of 128 without gather", () => refuses("perChannelCastFused", "x", "SHAPE", () => perChannelCastFused(x.slice(0, 0, 144), PC)));
test("perChannelCastFused refuses a gather length that is not a multiple of 16", () => refuses("perChannelCastFused", "posToToken", "SHAPE", () => perChannelCastFused(x, { ...PC, posToToken: pos(24) })));
test("perChannelCastFused refuses an int64 posToToken", () => refuses("perChannelCastFused", "posToToken", "DTYPE", () => perChannelCastFused(x, { ...PC, posToToken: tensor(new BigInt64Array(16), [16], "int64") })));
test("perChannelCastFused refuses numPerChannels 32 for a quantized input", () => refuses("perChannelCastFused", "numPerChannels", "VALUE", () => perChannelCastFused([q, qsf], { ...PC, numPerChannels: 32 })));
test("perChannelCastFused refuses packed input scales", () => refuses("perChannelCastFused", "x[1]", "DTYPE", () => perChannelCastFused([q, tensor(new Int32Array(256), [256, 1], "int32")], { ...PC, numPerChannels: 128 })));
test("perChannelCastFused refuses column-major input scales", () => {
  const col = hostStrided([256, 2], [1, 256], "fp32", 512);
  refuses("perChannelCastFused", "x[1]", "LAYOUT", () => perChannelCastFused([q, col], { ...PC, numPerChannels: 128 }));
});
test("perChannelCastFused refuses usePackedUe8m0 (not an option of the fused cast)", () => refuses("perChannelCastFused", "usePackedUe8m0", "VALUE", () => perChannelCastFused(x, { ...PC, roundSf: true, usePackedUe8m0: true } as never)));
test("perChannelCastFused refuses out.data sized for the input rather than the gathered rows", () => refuses("perChannelCastFused", "out.data", "OUT_MISMATCH", () => perChannelCastFused(x, { ...PC, posToToken: pos(16), out: { data: tensor(new Uint8Array(256 * 256), [256, 256], "e4m3") } })));
test("perChannelCastFused refuses a device input with a host posToToken", () => refuses("perChannelCastFused", "device", "DEVICE_MISMATCH", () => perChannelCastFused(fakeDevice("fp32", [128, 128]), { ...PC, posToToken: pos(16) })));

// ---- perChannelCastAndTranspose --------------------------------------------------------------------------

test("perChannelCastAndTranspose refuses an fp32 input", () => refuses("perChannelCastAndTranspose", "x", "DTYPE", () => perChannelCastAndTranspose(x, PC)));
test("perChannelCastAndTranspose refuses a quantized input", () => refuses("perChannelCastAndTranspose", "x", "VALUE", () => perChannelCastAndTranspose([q, qsf] as never, PC)));
test("perChannelCastAndTranspose refuses a hidden size that is not a multiple of 64", () => refuses("perChannelCastAndTranspose", "x", "SHAPE", () => perChannelCastAndTranspose(tensor(new Uint16Array(128 * 96), [128, 96], "bf16"), PC)));
test("perChannelCastAndTranspose refuses a token count that is not a multiple of 128", () => refuses("perChannelCastAndTranspose", "x", "SHAPE", () => perChannelCastAndTranspose(xb.slice(0, 0, 64), PC)));
test("perChannelCastAndTranspose refuses numPerTokens 16", () => refuses("perChannelCastAndTranspose", "numPerTokens", "VALUE", () => perChannelCastAndTranspose(xb, { ...PC, numPerTokens: 16 })));
test("perChannelCastAndTranspose refuses a non-boolean roundSf", () => refuses("perChannelCastAndTranspose", "roundSf", "VALUE", () => perChannelCastAndTranspose(xb, { ...PC, roundSf: "yes" as never })));
test("perChannelCastAndTranspose refuses an untransposed out.data", () => refuses("perChannelCastAndTranspose", "out.data", "OUT_MISMATCH", () => perChannelCastAndTranspose(xb, { ...PC, out: { data: tensor(new Uint8Array(128 * 192), [128, 192], "e4m3") } })));
test("perChannelCastAndTranspose refuses a device input with a host out", () => refuses("perChannelCastAndTranspose", "device", "DEVICE_MISMATCH", () => perChannelCastAndTranspose(fakeDevice("bf16", [128, 64]), { ...PC, out: { sf: tensor(new Float32Array(64), [1, 64], "fp32") } })));

// ---- perBlockCastLossless --------------------------------------------------------------------------------

const PL = { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128] } as const;
test("perBlockCastLossless refuses fmt e2m1", () => refuses("perBlockCastLossless", "fmt", "VALUE", () => perBlockCastLossless([fp4, fp4sf], { ...PL, fmt: "e2m1" as never })));
test("perBlockCastLossless refuses e4m3 input data", () => refuses("perBlockCastLossless", "x[0]", "DTYPE", () => perBlockCastLossless([q, qsf], PL)));
test("perBlockCastLossless refuses a plain tensor", () => refuses("perBlockCastLossless", "x", "VALUE", () => perBlockCastLossless(x as never, PL)));
test("perBlockCastLossless refuses non-contiguous data", () => refuses("perBlockCastLossless", "x[0]", "LAYOUT", () => perBlockCastLossless([fp4.slice(1, 0, 32), fp4sf], PL)));
test("perBlockCastLossless refuses a hidden size that is not a multiple of 32", () => {
  const d = tensor(new Uint8Array(128 * 24), [128, 24], "e2m1x2");
  refuses("perBlockCastLossless", "x[0]", "SHAPE", () => perBlockCastLossless([d, fp4sf], PL), [d]);
});
test("perBlockCastLossless refuses a non-power-of-two input block width", () => refuses("perBlockCastLossless", "xBlockSize", "VALUE", () => perBlockCastLossless([fp4, fp4sf], { ...PL, xBlockSize: [1, 48] })));
test("perBlockCastLossless refuses an output block that is not a multiple of the input block", () => refuses("perBlockCastLossless", "outBlockSize", "VALUE", () => perBlockCastLossless([fp4, fp4sf], { ...PL, xBlockSize: [32, 32], outBlockSize: [48, 128] })));
test("perBlockCastLossless refuses packed UE8M0 without roundSf", () => refuses("perBlockCastLossless", "usePackedUe8m0", "VALUE", () => perBlockCastLossless([fp4, fp4sf], { ...PL, usePackedUe8m0: true })));
test("perBlockCastLossless refuses e4m3 input scales", () => refuses("perBlockCastLossless", "x[1]", "DTYPE", () => perBlockCastLossless([fp4, tensor(new Uint8Array(512), [128, 4], "e4m3")], PL)));
test("perBlockCastLossless refuses input scales of the wrong shape", () => refuses("perBlockCastLossless", "x[1]", "SHAPE", () => perBlockCastLossless([fp4, fp4sf], { ...PL, xBlockSize: [1, 64] })));
test("perBlockCastLossless refuses useE4m3Sf", () => refuses("perBlockCastLossless", "useE4m3Sf", "VALUE", () => perBlockCastLossless([fp4, fp4sf], { ...PL, useE4m3Sf: true as never })));

// ---- batchedTransposeWeightSf ----------------------------------------------------------------------------

const BT = { blockSize: 128, transposeSf1: [false] };
test("batchedTransposeWeightSf refuses blockSize 64", () => refuses("batchedTransposeWeightSf", "blockSize", "VALUE", () => batchedTransposeWeightSf([wsf], { ...BT, blockSize: 64 })));
test("batchedTransposeWeightSf refuses a transposeSf1 of another length", () => refuses("batchedTransposeWeightSf", "transposeSf1", "VALUE", () => batchedTransposeWeightSf([wsf], { ...BT, transposeSf1: [] })));
test("batchedTransposeWeightSf refuses a bf16 scale tensor", () => refuses("batchedTransposeWeightSf", "sfs[0]", "DTYPE", () => batchedTransposeWeightSf([xb], BT)));
test("batchedTransposeWeightSf refuses a 1-D scale tensor", () => refuses("batchedTransposeWeightSf", "sfs[0]", "SHAPE", () => batchedTransposeWeightSf([tensor([1, 2], [2], "fp32")], BT)));
test("batchedTransposeWeightSf refuses G = 0", () => refuses("batchedTransposeWeightSf", "sfs[1]", "SHAPE", () => batchedTransposeWeightSf([wsf, tensor(new Float32Array(0), [0, 2, 3], "fp32")], { ...BT, transposeSf1: [false, false] })));
test("batchedTransposeWeightSf refuses n not a multiple of 128", () => refuses("batchedTransposeWeightSf", "sfs[0]", "SHAPE", () => batchedTransposeWeightSf([tensor(new Float32Array(3 * 4), [3, 4], "fp32")], { ...BT, blockSize: 32 })));
test("batchedTransposeWeightSf refuses a non-contiguous scale tensor", () => refuses("batchedTransposeWeightSf", "sfs[0]", "LAYOUT", () => batchedTransposeWeightSf([tensor(new Float32Array(16), [4, 4], "fp32").slice(1, 0, 2)], BT)));
test("batchedTransposeWeightSf refuses an out pair with row-major sf0", () => {
  const w = tensor(new Float32Array(2 * 8).fill(1), [2, 8], "fp32"); // n = 256, k = 1024: sf0 [256, 2] strides [1, 256]
  const sf1 = hostStrided([1024, 1], [1, 1024], "int32", 1024);
  refuses("batchedTransposeWeightSf", "out[0][0]", "OUT_MISMATCH", () => batchedTransposeWeightSf([w], { ...BT, out: [[tensor(new Int32Array(512), [256, 2], "int32"), sf1]] }), [w]);
});
test("batchedTransposeWeightSf refuses an out of another dtype", () => refuses("batchedTransposeWeightSf", "out[0][1]", "OUT_MISMATCH", () => batchedTransposeWeightSf([wsf], { ...BT, out: [[hostStrided([256, 1], [1, 256], "int32", 256), hostStrided([384, 1], [1, 384], "fp32", 384)]] })));
test("batchedTransposeWeightSf refuses an out that is not 32-byte aligned", () => {
  const base = new Int32Array(256 + 1);
  const sf0 = tensor(base, [257], "int32").slice(0, 1, 257).view([256, 1]);
  refuses("batchedTransposeWeightSf", "out[0][0]", "OUT_MISMATCH", () => batchedTransposeWeightSf([wsf], { ...BT, out: [[sf0, hostStrided([384, 1], [1, 384], "int32", 384)]] }), [wsf]);
});
test("batchedTransposeWeightSf refuses host and device scales in one call", () => refuses("batchedTransposeWeightSf", "device", "DEVICE_MISMATCH", () => batchedTransposeWeightSf([wsf, fakeDevice("fp32", [2, 3])], { ...BT, transposeSf1: [false, false] })));

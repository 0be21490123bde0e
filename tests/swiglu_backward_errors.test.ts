/**
 * The bad-input refusals of the SwiGLU backward ops (spec/quant.md §11.1): each names the op, the argument and the
 * error code, launches nothing and leaves the host inputs as they were.
 * @module
 */
import { swigluBackward, swigluBackwardAndPerTokenCast, tensor } from "../mod.ts";
import { test } from "./harness.ts";
import { fakeDevice, refuses } from "./refuses.ts";

const x = tensor(new Array(4 * 128).fill(1), [4, 128], "fp32");
const dy = tensor(new Array(4 * 64).fill(1), [4, 64], "fp32");
const w4 = tensor([1, 1, 1, 1], [4], "fp32");
const q = tensor(new Uint8Array(4 * 128), [4, 128], "e4m3");
const qSf = tensor(new Array(4 * 4).fill(1), [4, 4], "fp32");

test("swigluBackward refuses bad inputs, naming the argument", () => {
  const op = "swigluBackward";
  const f = swigluBackward;
  refuses(op, "x", "SHAPE", () => f(tensor(new Array(4 * 96).fill(1), [4, 96], "fp32"), dy, { fmt: "fp32" }), [dy]);
  refuses(op, "x", "DTYPE", () => f(tensor(new Array(4 * 128).fill(1), [4, 128], "fp16"), dy, { fmt: "fp32" }), [dy]);
  refuses(op, "x", "LAYOUT", () => f(x.slice(1, 0, 64) as never, dy, { fmt: "fp32" }), [x, dy]);
  refuses(op, "actXGrad", "DTYPE", () => f(x, tensor(new Array(4 * 64).fill(1), [4, 64], "bf16"), { fmt: "fp32" }), [x]);
  refuses(op, "actXGrad", "SHAPE", () => f(x, tensor(new Array(4 * 128).fill(1), [4, 128], "fp32"), { fmt: "fp32" }), [x]);
  refuses(op, "fmt", "VALUE", () => f(x, dy, { fmt: "e4m3" as never }), [x, dy]);
  refuses(op, "routedScalingFactor", "VALUE", () => f(x, dy, { fmt: "fp32", routedScalingFactor: 2 }), [x, dy]);
  refuses(op, "clampValue", "VALUE", () => f(x, dy, { fmt: "fp32", clampValue: NaN }), [x, dy]);
  refuses(op, "doRecompute", "VALUE", () => f(x, dy, { fmt: "fp32", doRecompute: 1 as never }), [x, dy]);
  refuses(op, "topkWeights", "SHAPE", () => f(x, dy, { fmt: "fp32", topkWeights: tensor([1, 1, 1], [3], "fp32") }), [x, dy]);
  refuses(op, "psumNumTokensPerExpert", "DTYPE", () => f(x, dy, { fmt: "fp32", psumNumTokensPerExpert: tensor([4], [1], "int64") }), [x, dy]);
  refuses(op, "psumNumTokensPerExpert", "SHAPE", () => f(x, dy, { fmt: "fp32", psumNumTokensPerExpert: tensor([], [0], "int32") }), [x, dy]);
  refuses(op, "tokenAlignment", "VALUE", () => f(x, dy, { fmt: "fp32", tokenAlignment: 0 }), [x, dy]);
  refuses(op, "out", "OUT_MISMATCH", () => f(x, dy, { fmt: "fp32", out: tensor(new Array(4 * 64).fill(0), [4, 64], "fp32") }), [x, dy]);
  refuses(op, "out", "OUT_MISMATCH", () => f(x, dy, { fmt: "bf16", out: tensor(new Array(4 * 128).fill(0), [4, 128], "fp32") }), [x, dy]);
  refuses(op, "device", "DEVICE_MISMATCH", () => f(fakeDevice("fp32", [4, 128]), dy, { fmt: "fp32" }), [dy]);
  refuses(op, "backend", "BACKEND_UNAVAILABLE", () => f(x, dy, { fmt: "fp32", backend: "ascend" }), [x, dy]);
});

test("swigluBackwardAndPerTokenCast refuses bad inputs, naming the argument", () => {
  const op = "swigluBackwardAndPerTokenCast";
  const f = swigluBackwardAndPerTokenCast;
  const o = { fmt: "e4m3", numPerChannels: 32 } as const;
  refuses(op, "x", "DTYPE", () => f([x, qSf], dy, o), [x, qSf, dy]);
  refuses(op, "x", "VALUE", () => f(q as never, dy, o), [q, dy]);
  refuses(op, "x", "SHAPE", () => f([q, tensor(new Array(8).fill(1), [4, 2], "fp32")], dy, { fmt: "e4m3", numPerChannels: 128 }), [q, dy]); // H = 64 % 128
  refuses(op, "xSf", "SHAPE", () => f([q, tensor(new Array(8).fill(1), [4, 2], "fp32")], dy, o), [q, dy]);
  refuses(op, "xSf", "DTYPE", () => f([q, tensor(new Array(16).fill(1), [4, 4], "bf16")], dy, o), [q, dy]);
  refuses(op, "actXGrad", "DTYPE", () => f([q, qSf], tensor(new Array(4 * 64).fill(1), [4, 64], "fp16"), o), [q, qSf]);
  refuses(op, "actXGrad", "SHAPE", () => f([q, qSf], tensor(new Array(3 * 64).fill(1), [3, 64], "fp32"), o), [q, qSf]);
  refuses(op, "numPerChannels", "VALUE", () => f([q, qSf], dy, { fmt: "e4m3", numPerChannels: 64 as never }), [q, qSf, dy]);
  refuses(op, "fmt", "VALUE", () => f([q, qSf], dy, { fmt: "e2m1" as never, numPerChannels: 32 }), [q, qSf, dy]);
  refuses(op, "useE4m3Sf", "VALUE", () => f([q, qSf], dy, { ...o, useE4m3Sf: true } as never), [q, qSf, dy]);
  refuses(op, "usePackedUe8m0", "VALUE", () => f([q, qSf], dy, { ...o, usePackedUe8m0: true }), [q, qSf, dy]);
  refuses(op, "routedScalingFactor", "VALUE", () => f([q, qSf], dy, { ...o, routedScalingFactor: 2 }), [q, qSf, dy]);
  refuses(op, "topkWeights", "DTYPE", () => f([q, qSf], dy, { ...o, topkWeights: tensor([1, 1, 1, 1], [4], "bf16") }), [q, qSf, dy]);
  refuses(op, "out", "VALUE", () => f([q, qSf], dy, { ...o, topkWeights: w4, out: x } as never), [q, qSf, dy, w4]);
  refuses(op, "backend", "BACKEND_UNAVAILABLE", () => f([q, qSf], dy, { ...o, backend: "ascend" }), [q, qSf, dy]);
});

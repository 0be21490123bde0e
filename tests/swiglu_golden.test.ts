/**
 * The SwiGLU forward CPU references against the conformance vectors (golden/README.md, SwiGLU): every case of
 * quant_swiglu_forward and quant_swiglu_forward_and_per_token_cast, byte for byte, with the rows of `excludeRows`
 * (padding rows the op does not write) masked out of the listed outputs. Then the fused op against the composition
 * (perTokenCastRef of the binary32 forward value) on random inputs, the data-dependent psum contract (§11.2), and
 * the bad-input refusals of §11.1.
 * @module
 */
import assert from "node:assert/strict";
import { type HostTensor, swigluForward, swigluForwardAndPerTokenCast, type Tensor, tensor, TkError } from "../mod.ts";
import { elementBytes } from "../core/dtype.ts";
import { hostZeros } from "../core/tensor.ts";
import { perTokenCastRef } from "../ops/quant/per_token_cast.ref.ts";
import { amaxClampFor } from "../ops/quant/scale.ref.ts";
import { swigluValues } from "../ops/quant/swiglu.ref.ts";
import { caseName, type GoldenCase, type GoldenFile, loadGolden, logicalBytes, maskExcludedRows, swigluCaseOptions } from "./golden.ts";
import { assertBytesEqual, rng, test } from "./harness.ts";
import { fakeDevice, refuses } from "./refuses.ts";

function check(g: GoldenFile, c: GoldenCase, role: string, got: Tensor): void {
  assertBytesEqual(maskExcludedRows(g, c, role, got as HostTensor), logicalBytes(g.tensors[`${c.id}.${role}`]), `${c.id} ${role}`);
}

const fwd = loadGolden("quant", "quant_swiglu_forward");
for (const c of fwd.cases) {
  test(`swigluForward reference matches vector ${caseName(c)}`, () => {
    const o = swigluCaseOptions(fwd, c);
    const out = swigluForward(fwd.tensors[`${c.id}.x`], o as never);
    check(fwd, c, "out", out);
    if (o.clampedCount) check(fwd, c, "clampedCountOut", o.clampedCount as Tensor);
  });
}

const fused = loadGolden("quant", "quant_swiglu_forward_and_per_token_cast");
for (const c of fused.cases) {
  test(`swigluForwardAndPerTokenCast reference matches vector ${caseName(c)}`, () => {
    const o = swigluCaseOptions(fused, c);
    const [data, sf] = swigluForwardAndPerTokenCast(fused.tensors[`${c.id}.x`], o as never);
    check(fused, c, "data", data);
    check(fused, c, "sf", sf);
    if (o.clampedCount) check(fused, c, "clampedCountOut", o.clampedCount as Tensor);
  });
}

test("swigluForwardAndPerTokenCast equals perTokenCastRef of the binary32 swigluForward value on random inputs", () => {
  const seed = 20261130;
  const r = rng(seed);
  for (const [T, H, N, round, packed, col] of [[9, 128, 32, false, false, false], [40, 256, 128, true, true, true], [17, 64, 32, true, false, true]] as const) {
    const xs = Array.from({ length: T * 2 * H }, () => (r() - 0.5) * 40 * (r() < 0.05 ? 100 : 1));
    const x = tensor(xs, [T, 2 * H], "bf16");
    const w = tensor(Array.from({ length: T }, () => r() * 2), [T], "fp32");
    const psum = tensor([Math.floor(T / 3), T - 2], [2], "int32");
    const o = { psumNumTokensPerExpert: psum, tokenAlignment: 4, topkWeights: w, routedScalingFactor: 1.7, clampValue: 9.3 };
    const [data, sf] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: N, roundSf: round, usePackedUe8m0: packed, useTmaAlignedColMajorSf: col, ...o });
    const fp32 = swigluForward(x, { fmt: "fp32", ...o }) as HostTensor;
    const v = swigluValues("test", x, { tokens: T, hidden: H, psum, tokenAlignment: 4, topkWeights: w, routedScalingFactor: 1.7, clampValue: 9.3 });
    const val = hostZeros([T, H], "fp32");
    (val.data as Float32Array).set(v.val);
    assert.deepEqual(logicalBytes(val), logicalBytes(fp32), `seed ${seed}: forward value`);
    const ref = perTokenCastRef(val, {
      tokens: T,
      hidden: H,
      numPerChannels: N,
      rule: { fmt: "e4m3", roundSf: round, packedUe8m0: packed, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) },
      layout: { kind: packed ? "packed" : "fp32", colMajor: col },
    }, true);
    assertBytesEqual(logicalBytes(data as HostTensor), logicalBytes(ref.data!), `seed ${seed}: data`);
    assertBytesEqual(logicalBytes(sf as HostTensor), logicalBytes(ref.sf), `seed ${seed}: sf`);
  }
});

test("swigluForward leaves the padding rows of a given out untouched", () => {
  const x = tensor(new Array(6 * 128).fill(1), [6, 128], "fp32");
  const out = tensor(new Array(6 * 64).fill(7), [6, 64], "fp32");
  swigluForward(x, { fmt: "fp32", psumNumTokensPerExpert: tensor([2, 5], [2], "int32"), tokenAlignment: 4, out });
  const d = out.data as Float32Array;
  const expect = Math.fround(1 / Math.fround(1 + Math.fround(Math.exp(-1))));
  for (let t = 0; t < 6; t++) assert.equal(d[t * 64], t < 2 || t === 4 ? expect : 7, `row ${t}`);
  assert.equal(elementBytes("fp32"), 4);
});

for (const [name, psum] of [["decreasing", [4, 2]], ["beyond T", [3, 9]], ["below the aligned start", [3, 3]]] as const) {
  test(`the SwiGLU forward references throw DEVICE_VALUE for a broken psum (${name})`, () => {
    const x = tensor(new Array(8 * 128).fill(1), [8, 128], "fp32");
    const o = { psumNumTokensPerExpert: tensor([...psum], [2], "int32"), tokenAlignment: 4 };
    for (const f of [() => swigluForward(x, { fmt: "fp32", ...o }), () => swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 32, ...o })]) {
      assert.throws(f, (e: unknown) => e instanceof TkError && e.code === "DEVICE_VALUE" && e.arg === "psumNumTokensPerExpert");
    }
  });
}

// ---- bad inputs (§11.1) ----------------------------------------------------------------------------------

const x = tensor(new Array(4 * 128).fill(1), [4, 128], "fp32");
const w4 = tensor([1, 1, 1, 1], [4], "fp32");

test("swigluForward refuses bad inputs, naming the argument", () => {
  const op = "swigluForward";
  refuses(op, "x", "SHAPE", () => swigluForward(tensor(new Array(4 * 96).fill(1), [4, 96], "fp32"), { fmt: "fp32" }), []);
  refuses(op, "x", "DTYPE", () => swigluForward(tensor(new Array(4 * 128).fill(1), [4, 128], "fp16"), { fmt: "fp32" }), []);
  refuses(op, "fmt", "VALUE", () => swigluForward(x, { fmt: "e4m3" as never }), [x]);
  refuses(op, "routedScalingFactor", "VALUE", () => swigluForward(x, { fmt: "fp32", routedScalingFactor: 2 }), [x]);
  refuses(op, "clampedCount", "VALUE", () => swigluForward(x, { fmt: "fp32", clampedCount: tensor([0, 0, 0, 0], [4], "int64") }), [x]);
  refuses(op, "clampedCount", "DTYPE", () => swigluForward(x, { fmt: "fp32", clampValue: 1, clampedCount: tensor([0, 0, 0, 0], [4], "int32") }), [x]);
  refuses(op, "topkWeights", "SHAPE", () => swigluForward(x, { fmt: "fp32", topkWeights: tensor([1, 1, 1], [3], "fp32") }), [x]);
  refuses(op, "psumNumTokensPerExpert", "DTYPE", () => swigluForward(x, { fmt: "fp32", psumNumTokensPerExpert: tensor([4], [1], "int64") }), [x]);
  refuses(op, "psumNumTokensPerExpert", "SHAPE", () => swigluForward(x, { fmt: "fp32", psumNumTokensPerExpert: tensor([], [0], "int32") }), [x]);
  refuses(op, "tokenAlignment", "VALUE", () => swigluForward(x, { fmt: "fp32", tokenAlignment: 0 }), [x]);
  refuses(op, "out", "OUT_MISMATCH", () => swigluForward(x, { fmt: "fp32", out: tensor(new Array(4 * 32).fill(0), [4, 32], "fp32") }), [x]);
  refuses(op, "backend", "BACKEND_UNAVAILABLE", () => swigluForward(fakeDevice("fp32", [4, 128], 0), { fmt: "fp32", backend: "ascend" }), []);
});

test("swigluForwardAndPerTokenCast refuses bad inputs, naming the argument", () => {
  const op = "swigluForwardAndPerTokenCast";
  const f = swigluForwardAndPerTokenCast;
  refuses(op, "x", "SHAPE", () => f(tensor(new Array(2 * 192).fill(1), [2, 192], "fp32"), { fmt: "e4m3", numPerChannels: 32 }), []);
  refuses(op, "x", "SHAPE", () => f(x, { fmt: "e4m3", numPerChannels: 128 }), [x]); // H = 64 % 128
  refuses(op, "numPerChannels", "VALUE", () => f(x, { fmt: "e4m3", numPerChannels: 64 as never }), [x]);
  refuses(op, "fmt", "VALUE", () => f(x, { fmt: "e2m1" as never, numPerChannels: 32 }), [x]);
  refuses(op, "useE4m3Sf", "VALUE", () => f(x, { fmt: "e4m3", numPerChannels: 32, useE4m3Sf: true } as never), [x]);
  refuses(op, "usePackedUe8m0", "VALUE", () => f(x, { fmt: "e4m3", numPerChannels: 32, usePackedUe8m0: true }), [x]);
  refuses(op, "routedScalingFactor", "VALUE", () => f(x, { fmt: "e4m3", numPerChannels: 32, routedScalingFactor: 2 }), [x]);
  refuses(op, "topkWeights", "DTYPE", () => f(x, { fmt: "e4m3", numPerChannels: 32, topkWeights: tensor([1, 1, 1, 1], [4], "bf16") }), [x]);
  refuses(op, "clampedCount", "SHAPE", () => f(x, { fmt: "e4m3", numPerChannels: 32, topkWeights: w4, clampValue: 1, clampedCount: tensor([0, 0, 0], [3], "int64") }), [x, w4]);
  refuses(op, "backend", "BACKEND_UNAVAILABLE", () => f(x, { fmt: "e4m3", numPerChannels: 32, backend: "ascend" }), [x]);
});

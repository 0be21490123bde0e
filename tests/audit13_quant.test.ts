/**
 * Audit 13 (docs/audit13.md), quant family: what the other suites left open.
 *
 * - A refused call leaves a *valid* preallocated `out` (and SwiGLU's in-place `clampedCount`) byte for byte as it
 *   was: each case first refuses a call that has one bad argument and a sentinel-filled `out`, then makes the same
 *   call with the bad argument fixed and checks that it does write that `out` (so "unchanged" means something).
 * - More bad inputs for the ops that had fewer than five (`perTokenCastWithSfOnly`,
 *   `perTokenCastWithPrecomputedSf`, `perTokenCastBack`), and `swigluForwardAndPerTokenCast` honouring an `out`
 *   (it used to ignore it silently; tests/swiglu_cast_out.test.ts has the rest).
 * - 0-row inputs of the ops no vector covers with 0 rows, and row-strided views where an op accepts them (equal,
 *   byte for byte, to the op on a contiguous copy).
 *
 * Random inputs come from a fixed, printed seed.
 * @module
 */
import assert from "node:assert/strict";
import {
  batchedTransposeWeightSf,
  castBack,
  cast,
  type HostTensor,
  perBlockCast,
  perBlockCastLossless,
  perBlockCastWithPrecomputedSf,
  perBlockCastWithSfOnly,
  perChannelCast,
  perChannelCastAndTranspose,
  perChannelCastFused,
  perTokenCast,
  perTokenCastAndCastBack,
  perTokenCastBack,
  perTokenCastWithPrecomputedSf,
  perTokenCastWithSfOnly,
  type Quantized,
  stochasticCast,
  swigluBackward,
  swigluBackwardAndPerTokenCast,
  swigluForward,
  swigluForwardAndPerChannelCastAndTranspose,
  swigluForwardAndPerTokenCast,
  type Tensor,
  tensor,
  unpackFromE2m1fnX2,
} from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { contiguousHost } from "../core/tensor.ts";
import { logicalBytes } from "./golden.ts";
import { assertBytesEqual, test } from "./harness.ts";
import { outSurvives as outSurvivesWith, refuses, seededValues, sentinelLike } from "./refuses.ts";

const SEED = 20261202;
/** `n` values in (−scale, scale) from the fixed seed (`salt` picks an independent stream). */
const values = (n: number, salt: number, scale = 8) => seededValues(SEED + salt, n, scale);

const x = tensor(values(128 * 256, 1), [128, 256], "fp32");
const xb = tensor(Uint16Array.from(values(128 * 128, 2), encodeBf16), [128, 128], "bf16");
const codes = tensor(new Uint8Array(128 * 256).map((_, i) => (i * 37) & 0x77), [128, 256], "e4m3");
const codeSf = tensor(new Float32Array(128 * 2).fill(0.5), [128, 2], "fp32");
const fp4 = tensor(new Uint8Array(128 * 64).map((_, i) => (i * 29) & 0x77), [128, 64], "e2m1x2");
const fp4sf = tensor(new Float32Array(128 * 4).fill(2), [128, 4], "fp32");
const INPUTS: Tensor[] = [x, xb, codes, codeSf, fp4, fp4sf];

const like = sentinelLike;
/** {@link outSurvivesWith} over this file's inputs unless others are given. */
function outSurvives(op: string, arg: string, code: string, call: (bad: boolean) => unknown, outs: HostTensor[], inputs: Tensor[] = INPUTS): void {
  outSurvivesWith(op, arg, code, call, outs, inputs);
}

/** Pair outputs as `{ data, sf }` sentinels shaped like a result. */
function pairLike([d, s]: Quantized): { data: HostTensor; sf: HostTensor } {
  return { data: like(d), sf: like(s) };
}

// ---- a refused call leaves a valid out untouched -----------------------------------------------------------

const PT = { fmt: "e4m3", numPerChannels: 128 } as const;

test("perTokenCast: a refused call leaves valid out.data and out.sf untouched", () => {
  const o = pairLike(perTokenCast(x, PT));
  outSurvives("perTokenCast", "numPerChannels", "VALUE", (bad) => perTokenCast(x, { ...PT, numPerChannels: bad ? 48 : 128, out: o }), [o.data, o.sf]);
});

test("perTokenCastWithSfOnly: a refused call leaves a valid out untouched", () => {
  const o = like(perTokenCastWithSfOnly(x, PT));
  outSurvives("perTokenCastWithSfOnly", "usePackedUe8m0", "VALUE", (bad) => perTokenCastWithSfOnly(x, { ...PT, usePackedUe8m0: bad, out: o }), [o]);
});

test("perTokenCastWithPrecomputedSf: a refused call leaves a valid out untouched", () => {
  const sf = perTokenCastWithSfOnly(x, PT);
  const o = like(perTokenCastWithPrecomputedSf(x, sf, PT));
  const wrong = tensor(new Float32Array(128 * 4).fill(1), [128, 4], "fp32");
  outSurvives("perTokenCastWithPrecomputedSf", "sf", "SHAPE", (bad) => perTokenCastWithPrecomputedSf(x, bad ? wrong : sf, { ...PT, out: o }), [o], [...INPUTS, sf, wrong]);
});

test("perTokenCastBack and castBack: a refused call leaves a valid out untouched", () => {
  const o = like(perTokenCastBack([codes, codeSf], { fmt: "fp32", numPerChannels: 128 }));
  outSurvives("perTokenCastBack", "x[1]", "SHAPE", (bad) => perTokenCastBack([codes, codeSf], { fmt: "fp32", numPerChannels: bad ? 64 : 128, out: o }), [o]);
  const b = like(castBack([codes, codeSf], { fmt: "bf16", xBlockSize: [1, 128] }));
  outSurvives("castBack", "fmt", "VALUE", (bad) => castBack([codes, codeSf], { fmt: bad ? "fp16" as never : "bf16", xBlockSize: [1, 128], out: b }), [b]);
});

const PB = { fmt: "e4m3", blockSize: [128, 128] } as const;

test("perBlockCast and its variants: a refused call leaves valid outs untouched", () => {
  const o = pairLike(perBlockCast(x, PB));
  outSurvives("perBlockCast", "useE4m3Sf", "VALUE", (bad) => perBlockCast(x, { ...PB, useE4m3Sf: bad as never, out: o }), [o.data, o.sf]);
  const s = like(perBlockCastWithSfOnly(x, PB));
  outSurvives("perBlockCastWithSfOnly", "blockSize", "VALUE", (bad) => perBlockCastWithSfOnly(x, { ...PB, blockSize: bad ? [64, 128] : [128, 128], out: s }), [s]);
  const sf = perBlockCastWithSfOnly(x, PB);
  const d = like(perBlockCastWithPrecomputedSf(x, sf, PB));
  outSurvives("perBlockCastWithPrecomputedSf", "useTmaAlignedColMajorSf", "VALUE", (bad) => perBlockCastWithPrecomputedSf(x, sf, { ...PB, useTmaAlignedColMajorSf: bad, out: d }), [d], [...INPUTS, sf]);
});

test("cast (element, block-scaled) and stochasticCast: a refused call leaves a valid out untouched", () => {
  const e = like(cast(x, { dtype: "bf16" }) as Tensor);
  outSurvives("cast", "seed", "VALUE", (bad) => cast(x, { dtype: "bf16", seed: bad ? 1n : undefined, out: e }), [e]);
  const o = pairLike(cast(x, { dtype: "e4m3", blockSize: [32, 32] }) as Quantized);
  outSurvives("cast", "blockSize", "VALUE", (bad) => cast(x, { dtype: "e4m3", blockSize: [bad ? 0 : 32, 32], out: o }), [o.data, o.sf]);
  const s = like(stochasticCast(x, { dtype: "bf16" }));
  outSurvives("stochasticCast", "offset", "VALUE", (bad) => stochasticCast(x, { dtype: "bf16", offset: bad ? 2n : 4n, out: s }), [s]);
});

test("unpackFromE2m1fnX2: a refused call leaves a valid out untouched", () => {
  const o = like(unpackFromE2m1fnX2(fp4));
  outSurvives("unpackFromE2m1fnX2", "dtype", "VALUE", (bad) => unpackFromE2m1fnX2(fp4, { dtype: bad ? "fp16" as never : "fp32", out: o }), [o]);
});

const PC = { fmt: "e4m3", numPerTokens: 128 } as const;

test("the per-channel casts: a refused call leaves valid outs untouched", () => {
  const o = pairLike(perChannelCast(x, PC));
  outSurvives("perChannelCast", "numPerTokens", "VALUE", (bad) => perChannelCast(x, { ...PC, numPerTokens: bad ? 64 : 128, out: o }), [o.data, o.sf]);
  const t = pairLike(perChannelCastAndTranspose(xb, PC));
  outSurvives("perChannelCastAndTranspose", "roundSf", "VALUE", (bad) => perChannelCastAndTranspose(xb, { ...PC, roundSf: bad ? "yes" as never : true, out: t }), [t.data, t.sf]);
  const pos = tensor(new Int32Array(16).map((_, i) => (i * 7) % 128), [16], "int32");
  const f = pairLike(perChannelCastFused(x, { ...PC, posToToken: pos }));
  outSurvives("perChannelCastFused", "numPerTokens", "VALUE", (bad) => perChannelCastFused(x, { ...PC, numPerTokens: bad ? 32 : 128, posToToken: pos, out: f }), [f.data, f.sf], [...INPUTS, pos]);
});

test("perBlockCastLossless: a refused call leaves valid outs untouched", () => {
  const L = { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128] } as const;
  const o = pairLike(perBlockCastLossless([fp4, fp4sf], L));
  outSurvives("perBlockCastLossless", "useE4m3Sf", "VALUE", (bad) => perBlockCastLossless([fp4, fp4sf], { ...L, useE4m3Sf: bad as never, out: o }), [o.data, o.sf]);
});

test("batchedTransposeWeightSf: a bad second weight leaves the first weight's out pair untouched", () => {
  const w0 = tensor(new Float32Array(2 * 3).map((_, i) => 2 ** (i - 2)), [2, 3], "fp32");
  const good = tensor(new Float32Array(4 * 4).fill(0.25), [4, 4], "fp32");
  const badW = tensor(new Uint16Array(4 * 4).fill(0x3f80), [4, 4], "bf16");
  const [[a, b]] = batchedTransposeWeightSf([w0], { blockSize: 128, transposeSf1: [false] });
  const pair: [HostTensor, HostTensor] = [like(a), like(b)];
  outSurvives(
    "batchedTransposeWeightSf",
    "sfs[1]",
    "DTYPE",
    (bad) => batchedTransposeWeightSf([w0, bad ? badW : good], { blockSize: 128, transposeSf1: [false, true], out: [pair, null] }),
    pair,
    [w0, good, badW],
  );
});

test("SwiGLU forward: a refused call leaves out and the in-place clampedCount untouched", () => {
  const T = 8, x2 = tensor(values(T * 128, 3, 20), [T, 128], "fp32");
  const w = tensor(new Float32Array(T).fill(0.5), [T], "fp32"), w3 = tensor(new Float32Array(3), [3], "fp32");
  const o = like(swigluForward(x2, { fmt: "fp32" }));
  const cc = like(tensor(new BigInt64Array(4), [4], "int64"));
  outSurvives("swigluForward", "topkWeights", "SHAPE", (bad) => swigluForward(x2, { fmt: "fp32", topkWeights: bad ? w3 : w, clampValue: 3, clampedCount: cc, out: o }), [o, cc], [x2, w, w3]);
  const cc2 = like(tensor(new BigInt64Array(4), [4], "int64"));
  outSurvives("swigluForwardAndPerTokenCast", "routedScalingFactor", "VALUE", (bad) => swigluForwardAndPerTokenCast(x2, { fmt: "e4m3", numPerChannels: 32, topkWeights: bad ? undefined : w, routedScalingFactor: 2, clampValue: 3, clampedCount: cc2 }), [cc2], [x2, w]);
});

test("SwiGLU backward: a refused call leaves a valid out untouched", () => {
  const T = 8, x2 = tensor(values(T * 128, 4), [T, 128], "fp32"), dy = tensor(values(T * 64, 5), [T, 64], "fp32");
  const [g] = swigluBackward(x2, dy, { fmt: "fp32" });
  const o = like(g);
  outSurvives("swigluBackward", "doRecompute", "VALUE", (bad) => swigluBackward(x2, dy, { fmt: "fp32", doRecompute: bad ? 1 as never : true, out: o }), [o], [x2, dy]);
});

for (const [name, psum] of [["decreasing", [4, 2]], ["beyond T", [3, 9]], ["below the aligned start", [3, 3]]] as const) {
  test(`the SwiGLU references refuse a broken psum (${name}) without touching out or clampedCount`, () => {
    const T = 8, x2 = tensor(values(T * 128, 6, 20), [T, 128], "fp32"), dy = tensor(values(T * 64, 7), [T, 64], "fp32");
    const p = tensor([...psum], [2], "int32");
    const o = like(tensor(new Float32Array(T * 64), [T, 64], "fp32"));
    const cc = like(tensor(new BigInt64Array(4), [4], "int64"));
    const g = like(tensor(new Float32Array(T * 128), [T, 128], "fp32"));
    const E = { psumNumTokensPerExpert: p, tokenAlignment: 4 };
    refuses("swigluForward", "psumNumTokensPerExpert", "DEVICE_VALUE", () => swigluForward(x2, { fmt: "fp32", ...E, clampValue: 1, clampedCount: cc, out: o }), [x2, p, o, cc]);
    refuses("swigluForwardAndPerTokenCast", "psumNumTokensPerExpert", "DEVICE_VALUE", () => swigluForwardAndPerTokenCast(x2, { fmt: "e4m3", numPerChannels: 32, ...E, clampValue: 1, clampedCount: cc }), [x2, p, cc]);
    refuses("swigluBackward", "psumNumTokensPerExpert", "DEVICE_VALUE", () => swigluBackward(x2, dy, { fmt: "fp32", ...E, out: g }), [x2, dy, p, g]);
  });
}

// ---- more bad inputs for the ops that had fewer than five ----------------------------------------------------

test("perTokenCastWithSfOnly refuses bad inputs, naming the argument, and leaves its out untouched", () => {
  const op = "perTokenCastWithSfOnly";
  const o = like(perTokenCastWithSfOnly(x, PT));
  const keep = [...INPUTS, o];
  refuses(op, "x", "DTYPE", () => perTokenCastWithSfOnly(tensor(new Int32Array(128), [1, 128], "int32"), { ...PT, out: o }), keep);
  refuses(op, "x", "SHAPE", () => perTokenCastWithSfOnly(tensor(new Float32Array(96), [1, 96], "fp32"), { ...PT, numPerChannels: 32 }), keep);
  refuses(op, "x", "LAYOUT", () => perTokenCastWithSfOnly(x.transpose(), PT), keep);
  refuses(op, "numPerChannels", "VALUE", () => perTokenCastWithSfOnly(x, { ...PT, numPerChannels: 48, out: o }), keep);
  refuses(op, "fmt", "VALUE", () => perTokenCastWithSfOnly(x, { ...PT, fmt: "e5m2" as never, out: o }), keep);
  refuses(op, "useE4m3Sf", "VALUE", () => perTokenCastWithSfOnly(x, { ...PT, roundSf: true, useE4m3Sf: true, out: o }), keep);
  refuses(op, "out", "OUT_MISMATCH", () => perTokenCastWithSfOnly(x, { ...PT, out: tensor(new Float32Array(128), [128], "fp32") }), keep);
  refuses(op, "out", "OUT_MISMATCH", () => perTokenCastWithSfOnly(x, { ...PT, roundSf: true, usePackedUe8m0: true, out: o }), keep); // fp32 out for an int32 layout
});

test("perTokenCastWithPrecomputedSf refuses bad inputs, naming the argument, and leaves its out untouched", () => {
  const op = "perTokenCastWithPrecomputedSf";
  const sf = perTokenCastWithSfOnly(x, PT);
  const o = like(perTokenCastWithPrecomputedSf(x, sf, PT));
  const keep = [...INPUTS, sf, o];
  refuses(op, "x", "DTYPE", () => perTokenCastWithPrecomputedSf(tensor(new Uint16Array(128 * 256), [128, 256], "fp16"), sf, { ...PT, out: o }), keep);
  refuses(op, "x", "SHAPE", () => perTokenCastWithPrecomputedSf(tensor(new Float32Array(96), [1, 96], "fp32"), sf, { ...PT, numPerChannels: 32 }), keep);
  refuses(op, "sf", "SHAPE", () => perTokenCastWithPrecomputedSf(x, tensor(new Float32Array(127 * 2), [127, 2], "fp32"), { ...PT, out: o }), keep);
  refuses(op, "sf", "DTYPE", () => perTokenCastWithPrecomputedSf(x, tensor(new Uint8Array(256), [128, 2], "e4m3"), { ...PT, out: o }), keep);
  refuses(op, "sf", "VALUE", () => perTokenCastWithPrecomputedSf(x, [1, 2] as never, { ...PT, out: o }), keep);
  refuses(op, "useTmaAlignedColMajorSf", "VALUE", () => perTokenCastWithPrecomputedSf(x, sf, { ...PT, useTmaAlignedColMajorSf: true, out: o }), keep);
  refuses(op, "out", "OUT_MISMATCH", () => perTokenCastWithPrecomputedSf(x, sf, { ...PT, out: tensor(new Uint8Array(128 * 256), [128, 256], "uint8") }), keep);
  refuses(op, "numPerChannels", "VALUE", () => perTokenCastWithPrecomputedSf(x, sf, { ...PT, numPerChannels: 48, out: o }), keep);
});

test("perTokenCastBack refuses bad inputs, naming the argument, and leaves its out untouched", () => {
  const op = "perTokenCastBack";
  const o = like(perTokenCastBack([codes, codeSf], { fmt: "bf16", numPerChannels: 128 }));
  const keep = [...INPUTS, o];
  const B = { fmt: "bf16", numPerChannels: 128, out: o } as const;
  refuses(op, "x[0]", "DTYPE", () => perTokenCastBack([x, codeSf], B), keep);
  refuses(op, "x[0]", "LAYOUT", () => perTokenCastBack([tensor(new Uint8Array(128 * 512), [128, 512], "e4m3").slice(1, 0, 256), codeSf], B), keep);
  refuses(op, "x[1]", "DTYPE", () => perTokenCastBack([codes, tensor(new Uint16Array(256), [128, 2], "bf16")], B), keep);
  refuses(op, "numPerChannels", "VALUE", () => perTokenCastBack([codes, codeSf], { ...B, numPerChannels: 48 }), keep);
  refuses(op, "x", "VALUE", () => perTokenCastBack([codes] as never, B), keep);
  refuses(op, "xBlockSize", "VALUE", () => perTokenCastBack([codes, codeSf], { ...B, xBlockSize: [1, 128] } as never), keep);
  refuses(op, "out", "OUT_MISMATCH", () => perTokenCastBack([codes, codeSf], { ...B, fmt: "fp32" }), keep); // a bf16 out for an fp32 result
});

test("swigluForwardAndPerTokenCast honours out { data, sf } (it used to ignore any out): the same bytes, the given tensors returned; a bad out is refused", () => {
  const T = 4, x2 = tensor(values(T * 128, 8), [T, 128], "fp32");
  const [d, s] = swigluForwardAndPerTokenCast(x2, { fmt: "e4m3", numPerChannels: 32 });
  const o = pairLike([d, s]);
  const [gd, gs] = swigluForwardAndPerTokenCast(x2, { fmt: "e4m3", numPerChannels: 32, out: o });
  assert.equal(gd, o.data);
  assert.equal(gs, o.sf);
  assertBytesEqual(o.data.bytes, (d as HostTensor).bytes, "out.data");
  assertBytesEqual(o.sf.bytes, (s as HostTensor).bytes, "out.sf");
  refuses("swigluForwardAndPerTokenCast", "out", "VALUE", () => swigluForwardAndPerTokenCast(x2, { fmt: "e4m3", numPerChannels: 32, out: 5 } as never), [x2]);
});

// ---- 0 rows ----------------------------------------------------------------------------------------------------

const shapeOf = (t: Tensor | null) => t === null ? null : [...t.shape];

test("the per-token and per-block variants take 0 rows: empty outputs in the requested layout", () => {
  const e = tensor(new Float32Array(0), [0, 256], "fp32");
  const s = perTokenCastWithSfOnly(e, { ...PT, numPerChannels: 64 });
  assert.deepEqual(shapeOf(s), [0, 4]);
  const c = perTokenCastWithSfOnly(e, { ...PT, numPerChannels: 64, useTmaAlignedColMajorSf: true });
  assert.deepEqual([shapeOf(c), [...c.strides]], [[0, 4], [1, 1]]); // spec/quant.md §2.1: column stride align(0) = 0 → 1
  const p = perTokenCastWithSfOnly(e, { ...PT, numPerChannels: 32, roundSf: true, usePackedUe8m0: true });
  assert.deepEqual([p.dtype, shapeOf(p)], ["int32", [0, 2]]);
  assert.deepEqual(shapeOf(perTokenCastWithPrecomputedSf(e, s, { ...PT, numPerChannels: 64 })), [0, 256]);
  assert.deepEqual(shapeOf(perTokenCastWithPrecomputedSf(e, tensor(new Float32Array(0), [0, 8], "fp32"), { fmt: "e2m1", numPerChannels: 32 })), [0, 128]);
  assert.deepEqual(shapeOf(perTokenCastBack([tensor(new Uint8Array(0), [0, 128], "e2m1x2"), tensor(new Float32Array(0), [0, 8], "fp32")], { fmt: "bf16", numPerChannels: 32 })), [0, 256]);
  const eb = tensor(new Uint16Array(0), [0, 128], "bf16");
  const bs = perBlockCastWithSfOnly(eb, { fmt: "e2m1", blockSize: [32, 128] });
  assert.deepEqual(shapeOf(bs), [0, 1]);
  assert.deepEqual(shapeOf(perBlockCastWithPrecomputedSf(eb, bs, { fmt: "e2m1", blockSize: [32, 128] })), [0, 64]);
  const y = perTokenCastAndCastBack(eb, { fmt: "e2m1", numPerChannels: 16 });
  assert.ok(y === eb && y.numel === 0);
});

test("cast, stochasticCast and unpackFromE2m1fnX2 take empty inputs", () => {
  const e = tensor(new Float32Array(0), [0, 64], "fp32");
  for (const dtype of ["fp32", "bf16", "fp16", "e4m3"] as const) {
    const y = cast(e, { dtype }) as Tensor;
    assert.deepEqual([y.dtype, shapeOf(y)], [dtype, [0, 64]]);
  }
  const [d, s] = cast(e, { dtype: "e2m1x2", blockSize: [16, 32] }) as Quantized;
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[0, 32], [0, 2]]);
  const [d2, s2] = cast(e, { dtype: "e4m3", blockSize: [1, 32], roundSf: true, useTmaAlignedColMajorSf: true }) as Quantized;
  assert.deepEqual([shapeOf(d2), shapeOf(s2), [...s2.strides]], [[0, 64], [0, 2], [1, 1]]);
  assert.deepEqual(shapeOf(cast(e, { dtype: "bf16", stochasticRounding: true, seed: 3n }) as Tensor), [0, 64]);
  assert.deepEqual(shapeOf(stochasticCast(tensor(new Float32Array(0), [3, 0, 4], "fp32"), { dtype: "fp16", offset: 8n })), [3, 0, 4]);
  const u = unpackFromE2m1fnX2(tensor(new Uint8Array(0), [2, 0, 8], "uint8"), { dtype: "bf16" });
  assert.deepEqual([u.dtype, shapeOf(u)], ["bf16", [2, 0, 16]]);
});

test("the per-channel casts, perBlockCastLossless and swigluForwardAndPerChannelCastAndTranspose take 0 rows", () => {
  const e = tensor(new Float32Array(0), [0, 128], "fp32");
  const eb = tensor(new Uint16Array(0), [0, 192], "bf16");
  let [d, s] = perChannelCast(e, { ...PC, numPerTokens: 32 });
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[0, 128], [0, 128]]);
  [d, s] = perChannelCast([tensor(new Uint8Array(0), [0, 128], "e4m3"), tensor(new Float32Array(0), [0, 1], "fp32")], { ...PC, numPerChannels: 128 });
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[0, 128], [0, 128]]);
  [d, s] = perChannelCastAndTranspose(eb, PC);
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[192, 0], [0, 192]]);
  [d, s] = perChannelCastFused(e, PC);
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[0, 128], [0, 128]]);
  [d, s] = perChannelCastFused(x, { ...PC, posToToken: tensor(new Int32Array(0), [0], "int32") }); // gather no rows of a full input
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[0, 256], [0, 256]]);
  [d, s] = perBlockCastLossless([tensor(new Uint8Array(0), [0, 64], "e2m1x2"), tensor(new Float32Array(0), [0, 4], "fp32")], { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [1, 128], roundSf: true });
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[0, 128], [0, 1]]);
  [d, s] = swigluForwardAndPerChannelCastAndTranspose(tensor(new Uint16Array(0), [0, 256], "bf16"), { fmt: "e4m3", numPerTokens: 32 });
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[128, 0], [0, 128]]);
  [d, s] = swigluForwardAndPerChannelCastAndTranspose(tensor(new Uint16Array(0), [0, 256], "bf16"), { fmt: "e4m3", numPerTokens: 32, withoutTranspose: true });
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[0, 128], [0, 128]]);
});

test("SwiGLU with 0 rows still checks its options and adds nothing to clampedCount", () => {
  const e = tensor(new Float32Array(0), [0, 128], "fp32");
  const cc = tensor(new BigInt64Array([1n, 2n, 3n, 4n]), [4], "int64");
  assert.deepEqual(shapeOf(swigluForward(e, { fmt: "bf16", clampValue: 2, clampedCount: cc })), [0, 64]);
  const [d, s] = swigluForwardAndPerTokenCast(e, { fmt: "e4m3", numPerChannels: 32, clampValue: 2, clampedCount: cc });
  assert.deepEqual([shapeOf(d), shapeOf(s)], [[0, 64], [0, 2]]);
  assert.deepEqual([...(cc.data as BigInt64Array)], [1n, 2n, 3n, 4n]);
  refuses("swigluForward", "topkWeights", "SHAPE", () => swigluForward(e, { fmt: "fp32", topkWeights: tensor([1], [1], "fp32") }), [e, cc]);
  const [g, [gq, gs], wg, act] = swigluBackwardAndPerTokenCast([tensor(new Uint8Array(0), [0, 128], "e4m3"), tensor(new Float32Array(0), [0, 4], "fp32")], tensor(new Float32Array(0), [0, 64], "fp32"), { fmt: "e4m3", numPerChannels: 32, doRecompute: true });
  assert.deepEqual([shapeOf(g), shapeOf(gq), shapeOf(gs), wg, shapeOf(act)], [[0, 128], [0, 128], [0, 4], null, [0, 64]]);
});

// ---- row-strided views -----------------------------------------------------------------------------------------

/** `[T, H]` view with row stride `H + pad` over fresh storage whose padding is NaN-filled (must not be read). */
function padded(dtype: "fp32" | "bf16", T: number, H: number, pad: number, salt: number): HostTensor {
  const v = values(T * (H + pad), salt).map((a, i) => (i % (H + pad) >= H ? NaN : a));
  const full = dtype === "fp32" ? tensor(v, [T, H + pad], "fp32") : tensor(Uint16Array.from(v, encodeBf16), [T, H + pad], "bf16");
  return full.slice(1, 0, H);
}

const bytes = (t: Tensor) => logicalBytes(t as HostTensor);

test(`perTokenCastWithSfOnly and perTokenCastWithPrecomputedSf on row-strided views equal the contiguous copy (seed ${SEED})`, () => {
  let salt = 100;
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const [fmt, npc] of [["e4m3", 128], ["e4m3", 32], ["e2m1", 16]] as const) {
      for (const sfo of [{}, { roundSf: true }, { useE4m3Sf: true }]) {
        const label = `seed ${SEED}+${++salt} ${dtype} ${fmt}/${npc} ${JSON.stringify(sfo)}`;
        const v = padded(dtype, 7, 256, 64, salt), c = contiguousHost(v);
        const sv = perTokenCastWithSfOnly(v, { fmt, numPerChannels: npc, ...sfo }), sc = perTokenCastWithSfOnly(c, { fmt, numPerChannels: npc, ...sfo });
        assertBytesEqual(bytes(sv), bytes(sc), `${label} sf`);
        const dv = perTokenCastWithPrecomputedSf(v, sc, { fmt, numPerChannels: npc, ...sfo });
        const dc = perTokenCastWithPrecomputedSf(c, sc, { fmt, numPerChannels: npc, ...sfo });
        assertBytesEqual(bytes(dv), bytes(dc), `${label} data`);
      }
    }
  }
});

test(`perTokenCast re-quantizes row-strided codes as it does their contiguous copy (seed ${SEED})`, () => {
  const full = tensor(new Uint8Array(9 * 320).map((_, i) => (i * 53 + 11) & 0x7e), [9, 320], "e4m3");
  const v = full.slice(1, 0, 256), c = contiguousHost(v);
  const sf = tensor(values(9 * 2, 200).map((a) => Math.abs(a) + 0.1), [9, 2], "fp32");
  for (const [fmt, npc] of [["e4m3", 32], ["e2m1", 64]] as const) {
    const [dv, sv] = perTokenCast([v, sf], { fmt, numPerChannels: npc, xBlockSize: [1, 128] });
    const [dc, sc] = perTokenCast([c, sf], { fmt, numPerChannels: npc, xBlockSize: [1, 128] });
    assertBytesEqual(bytes(dv), bytes(dc), `${fmt}/${npc} data`);
    assertBytesEqual(bytes(sv), bytes(sc), `${fmt}/${npc} sf`);
  }
});

test("unpackFromE2m1fnX2 of a strided or transposed view equals unpacking its contiguous copy", () => {
  const base = tensor(new Uint8Array(6 * 10).map((_, i) => (i * 97 + 5) & 0xff), [6, 10], "uint8");
  for (const v of [base.slice(1, 2, 8), base.transpose(), base.slice(0, 1, 5).transpose()]) {
    for (const dtype of ["fp32", "bf16"] as const) {
      assertBytesEqual(bytes(unpackFromE2m1fnX2(v, { dtype })), bytes(unpackFromE2m1fnX2(contiguousHost(v as HostTensor), { dtype })), `[${v.shape}] strides [${v.strides}] ${dtype}`);
    }
  }
});

test("swigluForward adds to a strided clampedCount at its strided positions only", () => {
  const T = 6, x2 = tensor(values(T * 128, 300, 10), [T, 128], "fp32");
  const plain = tensor(new BigInt64Array(4), [4], "int64");
  swigluForward(x2, { fmt: "fp32", clampValue: 2, clampedCount: plain });
  const store = new BigInt64Array(8).fill(-7n);
  const strided = tensor(store, [4], "int64", [2]);
  swigluForward(x2, { fmt: "fp32", clampValue: 2, clampedCount: strided });
  const want = [...(plain.data as BigInt64Array)];
  assert.ok(want[3] === BigInt(T * 64) && want[0] > 0n, `counts ${want}`);
  assert.deepEqual([...store], want.flatMap((c) => [c - 7n, -7n]));
});

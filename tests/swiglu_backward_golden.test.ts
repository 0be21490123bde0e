/**
 * The SwiGLU backward CPU references against the conformance vectors (golden/README.md, SwiGLU): every case of
 * quant_swiglu_backward and quant_swiglu_backward_and_per_token_cast, byte for byte on every output, padding rows
 * included. Then the single-rounding `fmaf` against an exact BigInt evaluation, the fused op against the composition
 * of its parts on random inputs, and the data-dependent psum contract (§11.2).
 * @module
 */
import assert from "node:assert/strict";
import {
  castBack,
  type HostTensor,
  perTokenCast,
  swigluBackward,
  swigluBackwardAndPerTokenCast,
  type Tensor,
  tensor,
  TkError,
} from "../mod.ts";
import { decodeBf16, encodeBf16 } from "../core/dtype.ts";
import { fmaf } from "../ops/transform/rope.ref.ts";
import { asCodes, caseName, type GoldenCase, type GoldenFile, knownDisagreements, loadGolden, logicalBytes, swigluCaseOptions } from "./golden.ts";
import { assertBytesEqual, rng, test } from "./harness.ts";

// No vector disagrees with spec/quant.md §8.5 (the list stays empty and is asserted so).
const KNOWN: Record<string, string> = {};
const known = knownDisagreements(KNOWN);

function check(g: GoldenFile, c: GoldenCase, role: string, got: Tensor | null): void {
  assert.ok(got !== null, `${c.id} ${role}: missing output`);
  const key = `${c.op}/${c.id}/${role}`;
  known.compare(key, () => assertBytesEqual(logicalBytes(got as HostTensor), logicalBytes(g.tensors[`${c.id}.${role}`]), `${c.id} ${role}`), () => {});
}

const bwd = loadGolden("quant", "quant_swiglu_backward");
for (const c of bwd.cases) {
  test(`swigluBackward reference matches vector ${caseName(c)}`, () => {
    const [xGrad, weightGrad, actOut] = swigluBackward(bwd.tensors[`${c.id}.x`], bwd.tensors[`${c.id}.actXGrad`], swigluCaseOptions(bwd, c) as never);
    check(bwd, c, "xGrad", xGrad);
    assert.equal(weightGrad === null, !c.outputs.includes("weightGrad"), `${c.id}: weightGrad presence`);
    assert.equal(actOut === null, !c.outputs.includes("actOut"), `${c.id}: actOut presence`);
    if (weightGrad) check(bwd, c, "weightGrad", weightGrad);
    if (actOut) check(bwd, c, "actOut", actOut);
  });
}

const fused = loadGolden("quant", "quant_swiglu_backward_and_per_token_cast");
for (const c of fused.cases) {
  test(`swigluBackwardAndPerTokenCast reference matches vector ${caseName(c)}`, () => {
    const x: [Tensor, Tensor] = [asCodes(fused.tensors[`${c.id}.xData`], "e4m3"), fused.tensors[`${c.id}.xSf`]];
    const [xGrad, [q, sf], weightGrad, actOut] = swigluBackwardAndPerTokenCast(x, fused.tensors[`${c.id}.actXGrad`], swigluCaseOptions(fused, c) as never);
    check(fused, c, "xGrad", xGrad);
    check(fused, c, "xGradQ", q);
    check(fused, c, "xGradSf", sf);
    assert.equal(weightGrad === null, !c.outputs.includes("weightGrad"), `${c.id}: weightGrad presence`);
    assert.equal(actOut === null, !c.outputs.includes("actOut"), `${c.id}: actOut presence`);
    if (weightGrad) check(fused, c, "weightGrad", weightGrad);
    if (actOut) check(fused, c, "actOut", actOut);
  });
}

test("the SwiGLU backward vectors ran every case with exactly the listed known disagreements", () => {
  assert.equal(bwd.cases.length, 12);
  assert.equal(fused.cases.length, 12);
  assert.equal(known.seen, known.listed);
  assert.equal(known.listed, 0);
});

// ---- fma: single rounding, against an exact BigInt evaluation ----------------------------------------------

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const fromBits = (u: number) => ((u32[0] = u), f32[0]);

/** The exact a·b + c of binary32 operands rounded once to binary32 (RNE, subnormals, overflow to ±Inf). */
function exactFma(a: number, b: number, c: number): number {
  const S = 2 ** 149; // every binary32 is an integer multiple of 2^-149
  const n = BigInt(a * S) * BigInt(b * S) + (BigInt(c * S) << 149n); // value = n · 2^-298
  if (n === 0n) return Math.fround(a * b + c); // exact zero: IEEE sign rule, same as binary64
  const neg = n < 0n;
  const m = neg ? -n : n;
  const len = m.toString(2).length;
  const q = Math.max(len - 298 - 24, -149); // result quantum exponent
  const sh = BigInt(q + 298);
  let r = m >> sh;
  const rem = m - (r << sh), half = 1n << (sh - 1n);
  if (rem > half || (rem === half && (r & 1n) === 1n)) r++;
  const v = Math.fround(Number(r) * 2 ** q);
  return neg ? -v : v;
}

test("fmaf (ops/transform/rope.ref.ts) is the single-rounding fma: equals an exact BigInt evaluation", () => {
  const seed = 7301;
  const r = rng(seed);
  const bits = () => Math.floor(r() * 2 ** 32) >>> 0;
  const finite = () => {
    for (;;) {
      const v = fromBits(bits());
      if (Number.isFinite(v)) return v;
    }
  };
  // Operands of moderate exponents (so that a·b and c interact), with c near −a·b for cancellation.
  const moderate = () => fromBits(((bits() & 0x807fffff) | ((64 + Math.floor(r() * 128)) << 23)) >>> 0);
  let n = 0;
  for (let i = 0; i < 200_000; i++) {
    const kind = i % 4;
    const a = kind === 0 ? finite() : moderate();
    const b = kind === 0 ? finite() : moderate();
    let c: number;
    if (kind === 3) {
      f32[0] = -Math.fround(a * b);
      u32[0] = (u32[0] + Math.floor(r() * 5) - 2) >>> 0;
      c = f32[0];
      if (!Number.isFinite(c)) c = 0;
    } else c = kind === 0 ? finite() : moderate();
    const got = fmaf(a, b, c), want = exactFma(a, b, c);
    assert.ok(Object.is(got, want), `seed ${seed}: fma(${a}, ${b}, ${c}) = ${got}, exact ${want}`);
    n++;
  }
  assert.equal(n, 200_000);
  assert.ok(Object.is(fmaf(-0, 1, -0), -0));
  assert.equal(fmaf(2 ** -75, 2 ** -75, 0), 0); // 2^-150: a tie, to even (+0)
  assert.equal(exactFma(2 ** -75, 2 ** -75, 0), 0);
});

// ---- the fused op is the composition of its parts ------------------------------------------------------------

test("swigluBackwardAndPerTokenCast equals castBack → swigluBackward(fp32) → perTokenCast, byte for byte, on random inputs", () => {
  const seed = 20261201;
  console.log(`swiglu backward composition seed ${seed}`);
  const r = rng(seed);
  const configs = [
    [9, 128, 32, false, false, false, "bf16", true, true],
    [40, 256, 128, true, true, true, "fp32", true, false],
    [17, 64, 32, true, false, true, "bf16", false, true],
    [12, 128, 128, false, false, true, "fp32", false, false],
  ] as const;
  for (const [T, H, N, round, packed, col, dyType, withW, recompute] of configs) {
    const label = `seed ${seed} T=${T} H=${H} N=${N}`;
    const codes = Array.from({ length: T * 2 * H }, () => {
      let b = Math.floor(r() * 256);
      if ((b & 0x7f) === 0x7f) b ^= 1; // no NaN codes
      return b;
    });
    const data = tensor(new Uint8Array(codes), [T, 2 * H], "e4m3");
    const xSf = tensor(Array.from({ length: T * (2 * H / N) }, () => 2 ** Math.floor(r() * 8 - 10) * (1 + r())), [T, 2 * H / N], "fp32");
    const dyVals = Array.from({ length: T * H }, () => (r() - 0.5) * 8);
    const dy = tensor(dyVals, [T, H], dyType);
    const w = tensor(Array.from({ length: T }, () => r() * 2), [T], "fp32");
    const o = {
      psumNumTokensPerExpert: tensor([Math.floor(T / 3), T - 2], [2], "int32"),
      tokenAlignment: 4,
      clampValue: 2.3,
      doRecompute: recompute,
      ...(withW ? { topkWeights: w, routedScalingFactor: 1.7 } : {}),
    };
    const sfo = { roundSf: round, usePackedUe8m0: packed, useTmaAlignedColMajorSf: col };
    const [xGrad, [q, sf], wg, act] = swigluBackwardAndPerTokenCast([data, xSf], dy, { fmt: "e4m3", numPerChannels: N, ...sfo, ...o });
    // The parts: dequantize x, widen dy exactly, the plain backward in fp32, then the per-token cast.
    const xf = castBack([data, xSf], { fmt: "fp32", xBlockSize: [1, N] });
    const dyf = tensor(Float32Array.from(dyVals.map((v) => dyType === "bf16" ? decodeBf16(encodeBf16(v)) : Math.fround(v))), [T, H], "fp32");
    const [g32, wg32, act32] = swigluBackward(xf, dyf, { fmt: "fp32", ...o });
    const [q2, sf2] = perTokenCast(g32, { fmt: "e4m3", numPerChannels: N, ...sfo });
    const toBf16 = (t: Tensor) => tensor(Uint16Array.from((t as HostTensor).data as Float32Array, encodeBf16), [...t.shape], "bf16");
    assertBytesEqual(logicalBytes(xGrad as HostTensor), logicalBytes(toBf16(g32)), `${label}: xGrad`);
    assertBytesEqual(logicalBytes(q as HostTensor), logicalBytes(q2 as HostTensor), `${label}: xGradQ`);
    // Padding rows: the fused op writes 0 in every sf entry of the row (§8.5); perTokenCast of a +0 row does not.
    const want = logicalBytes(sf2 as HostTensor).slice();
    const real = [...Array(T).keys()].map((t) => t < Math.floor(T / 3) || (t >= Math.ceil(Math.floor(T / 3) / 4) * 4 && t < T - 2));
    const rowBytes = want.length / T;
    real.forEach((isReal, t) => isReal || want.fill(0, t * rowBytes, (t + 1) * rowBytes));
    assertBytesEqual(logicalBytes(sf as HostTensor), want, `${label}: xGradSf`);
    assert.equal(wg === null, !withW);
    if (wg) assertBytesEqual(logicalBytes(wg as HostTensor), logicalBytes(wg32 as HostTensor), `${label}: weightGrad`);
    assert.equal(act === null, !recompute);
    if (act) assertBytesEqual(logicalBytes(act as HostTensor), logicalBytes(toBf16(act32!)), `${label}: actOut`);
  }
});

test("swigluBackward writes +0 in the padding rows of a given out and of every output", () => {
  const x = tensor(new Array(6 * 128).fill(1), [6, 128], "fp32");
  const dy = tensor(new Array(6 * 64).fill(1), [6, 64], "fp32");
  const out = tensor(new Array(6 * 128).fill(7), [6, 128], "fp32");
  const w = tensor(new Array(6).fill(1), [6], "fp32");
  const [g, wg, act] = swigluBackward(x, dy, { fmt: "fp32", psumNumTokensPerExpert: tensor([2, 5], [2], "int32"), tokenAlignment: 4, topkWeights: w, doRecompute: true, out });
  assert.equal(g, out);
  const d = out.data as Float32Array;
  for (let t = 0; t < 6; t++) {
    const real = t < 2 || t === 4;
    assert.equal(d[t * 128] !== 0, real, `xGrad row ${t}`);
    assert.equal(((wg as HostTensor).data as Float32Array)[t] !== 0, real, `weightGrad row ${t}`);
    assert.equal(((act as HostTensor).data as Float32Array)[t * 64] !== 0, real, `actOut row ${t}`);
  }
  assert.ok(Object.is(d[2 * 128], 0));
});

test("swigluBackward accepts a 3-D x [B, M, 2H] as its flattened rows", () => {
  const r = rng(99);
  const xs = Array.from({ length: 2 * 3 * 128 }, () => (r() - 0.5) * 10);
  const ds = Array.from({ length: 2 * 3 * 64 }, () => r() - 0.5);
  const [a] = swigluBackward(tensor(xs, [2, 3, 128], "bf16"), tensor(ds, [2, 3, 64], "bf16"), { fmt: "bf16" });
  const [b] = swigluBackward(tensor(xs, [6, 128], "bf16"), tensor(ds, [6, 64], "bf16"), { fmt: "bf16" });
  assert.deepEqual(a.shape, [2, 3, 128]);
  assert.deepEqual(logicalBytes(a as HostTensor), logicalBytes(b as HostTensor));
});

for (const [name, psum] of [["decreasing", [4, 2]], ["beyond T", [3, 9]], ["below the aligned start", [3, 3]]] as const) {
  test(`the SwiGLU backward references throw DEVICE_VALUE for a broken psum (${name})`, () => {
    const x = tensor(new Array(8 * 128).fill(1), [8, 128], "fp32");
    const dy = tensor(new Array(8 * 64).fill(1), [8, 64], "fp32");
    const data = tensor(new Uint8Array(8 * 128), [8, 128], "e4m3");
    const xSf = tensor(new Array(8 * 4).fill(1), [8, 4], "fp32");
    const o = { psumNumTokensPerExpert: tensor([...psum], [2], "int32"), tokenAlignment: 4 };
    for (const f of [() => swigluBackward(x, dy, { fmt: "fp32", ...o }), () => swigluBackwardAndPerTokenCast([data, xSf], dy, { fmt: "e4m3", numPerChannels: 32, ...o })]) {
      assert.throws(f, (e: unknown) => e instanceof TkError && e.code === "DEVICE_VALUE" && e.arg === "psumNumTokensPerExpert");
    }
  });
}

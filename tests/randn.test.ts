/**
 * `randn`, `randnLike`, `setSeed` (spec/norm-rope-rand.md Part C): the Philox known answers (§C.2.1), the known-answer
 * table of §C.2.6 and the binary64 intermediates, shape/split invariance, the offset advance of §C.3, the
 * statistical acceptance tests of §C.4 on n = 2²⁴ per stream, and bad inputs (D.10).
 * @module
 */
import assert from "node:assert/strict";
import { encodeBf16 } from "../core/dtype.ts";
import { type HostTensor, tensor } from "../core/tensor.ts";
import { randn, randnLike, setSeed } from "../ops/rand/mod.ts";
import { philox4x32, randnValues } from "../ops/rand/randn.ref.ts";
import { test } from "./harness.ts";
import { fakeDevice, refuses } from "./refuses.ts";

const hex = (a: ArrayLike<number>, w = 8) => Array.from(a, (v) => (v >>> 0).toString(16).padStart(w, "0")).join(" ");
const bits32 = (t: unknown) => new Uint32Array(((t as HostTensor).data as Float32Array).slice().buffer);
const bits16 = (t: unknown) => (t as HostTensor).data as Uint16Array;

test("philox4x32-10 reproduces the three known answers of §C.2.1", () => {
  const w = new Uint32Array(4);
  philox4x32(0, 0, 0, 0, 0, 0, w);
  assert.equal(hex(w), "6627e8d5 e169c58d bc57ac4c 9b00dbd8");
  philox4x32(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, w);
  assert.equal(hex(w), "408f276d 41c83b0e a20bc7c6 6d5451fd");
  philox4x32(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, w);
  assert.equal(hex(w), "d16cfe09 94fdcceb 5001e420 24126ea1");
});

const M64 = (1n << 64n) - 1n;
// §C.2.6: seed, offset, block j, Philox words, fp32 outputs, bf16 outputs.
const KAT: [bigint, bigint, number, string, string, string][] = [
  [0n, 0n, 0, "6627e8d5 e169c58d bc57ac4c 9b00dbd8", "3f7dbb33 bf6cb6b0 bf1e1b9f bef6d1b2", "3f7e bf6d bf1e bef7"],
  [0n, 0n, 1, "f8e4cca4 5cb200db b1a574eb 097eff67", "be1d5357 3e392a6d 3f54ec98 3e4a2da3", "be1d 3e39 3f55 3e4a"],
  [67280421310721n, 0n, 0, "64a3e0f6 d72e25ab 0be1367b 53eccf2d", "3f3c750e bf935b58 bf9501cd 400c015a", "3f3c bf93 bf95 400c"],
  [67280421310721n, 0n, 1, "252d372a d70d580d 15614e1c 0dfa50b9", "3f86cb9f bfd44390 40064d6c 3f3fe2f1", "3f87 bfd4 4006 3f40"],
  [67280421310721n, 1n, 0, "82f62f5b 3ac29c27 de1c0b42 50da8e40", "3e180dd6 3f92fa1e be5b5b0a 3ef9d8ab", "3e18 3f93 be5b 3efa"],
  [M64, M64, 0, "3d3be307 716983d6 70094bed 36c3cf91", "bfcac635 3f17be11 3e93eb5e 3fa05848", "bfcb 3f18 3e94 3fa0"],
  [0x0123456789abcdefn, 3n, 2 ** 32 + 5, "c700706d 9c85723f 88e713fa 6a794632", "bf0af6e1 beea1abb bf775eae 3f10629d", "bf0b beea bf77 3f10"],
];
for (const [seed, offset, j, words, f32, bf16] of KAT) {
  test(`§C.2.6 known answer: seed ${seed}, offset ${offset}, block ${j}`, () => {
    const w = new Uint32Array(4);
    const jl = j % 2 ** 32, jh = Math.floor(j / 2 ** 32);
    philox4x32(jl, jh, Number(offset & 0xffffffffn), Number(offset >> 32n), Number(seed & 0xffffffffn), Number(seed >> 32n), w);
    assert.equal(hex(w), words);
    const z = new Float64Array(4);
    randnValues(seed, offset, 4 * j, 4, z);
    assert.equal(hex(new Uint32Array(new Float32Array(z).buffer)), f32);
    assert.equal(hex(Array.from(new Float32Array(z), (v) => encodeBf16(v)), 4), bf16);
    if (j < 2) {
      // The public op on the same stream: element 4j + l.
      const t = randn([4 * j + 4], { seed, offset });
      assert.equal(hex(bits32(t).slice(4 * j)), f32);
      assert.equal(hex(bits16(randn([4 * j + 4], { seed, offset, dtype: "bf16" })).slice(4 * j), 4), bf16);
    }
  });
}

test("§C.2.6 fp16 outputs and binary64 intermediates of seed 0, offset 0, block 0", () => {
  assert.equal(hex(bits16(randn([4], { seed: 0n, dtype: "fp16" })), 4), "3bee bb66 b8f1 b7b7");
  const z = new Float64Array(4);
  randnValues(0n, 0n, 0, 4, z);
  const u = new Uint32Array(z.buffer);
  const b64 = [0, 1, 2, 3].map((l) => u[2 * l + 1].toString(16).padStart(8, "0") + u[2 * l].toString(16).padStart(8, "0"));
  assert.deepEqual(b64, ["3fefb7665db1b649", "bfed96d5ff0aec98", "bfe3c373dd6d9558", "bfdeda3633cd9710"]);
});

test("randn values do not depend on shape or on how a range is split", () => {
  assert.deepEqual(bits32(randn([6, 7], { seed: 5n, offset: 2n })), bits32(randn([42], { seed: 5n, offset: 2n })));
  const whole = new Float64Array(1000);
  randnValues(9n, 4n, 0, 1000, whole);
  for (const [a, b] of [[0, 1], [3, 17], [5, 6], [401, 999], [998, 1000]]) {
    const part = new Float64Array(b - a);
    randnValues(9n, 4n, a, b - a, part);
    assert.deepEqual(part, whole.slice(a, b), `split [${a}, ${b})`);
  }
  assert.deepEqual(bits32(randn([10], { seed: 9n, offset: 4n })), new Uint32Array(new Float32Array(whole.slice(0, 10)).buffer));
  // A chunk boundary of the reference (65536 elements) falls inside this call.
  const big = bits32(randn([70001], { seed: 9n, offset: 4n }));
  const tail = new Float64Array(10);
  randnValues(9n, 4n, 69991, 10, tail);
  assert.deepEqual(big.slice(69991), new Uint32Array(new Float32Array(tail).buffer));
});

test("randn writes out in row-major logical order whatever its strides", () => {
  const out = tensor(new Float32Array(12), [3, 4], "fp32").transpose().transpose(); // contiguous baseline
  randn([3, 4], { seed: 1n, out });
  const t = tensor(new Float32Array(12), [4, 3], "fp32").transpose(); // [3, 4] with strides [1, 3]
  randn([3, 4], { seed: 1n, out: t });
  const d = t.data as Float32Array;
  for (let i = 0; i < 3; i++) for (let j = 0; j < 4; j++) assert.equal(d[i + 3 * j], (out.data as Float32Array)[4 * i + j]);
});

test("bf16 and fp16 randn are RNbf16 / RNfp16 of the fp32 values", () => {
  const f = (randn([4096], { seed: 3n }) as HostTensor).data as Float32Array;
  const b = bits16(randn([4096], { seed: 3n, dtype: "bf16" }));
  for (let i = 0; i < f.length; i++) assert.equal(b[i], encodeBf16(f[i]));
});

test("unseeded calls after setSeed(s) use offsets 0, 1, … whatever their sizes", () => {
  setSeed(12345);
  const a = randn([3]);
  const b = randn([0]);
  const c = randnLike(tensor(new Float32Array(5), [5], "fp32"));
  assert.deepEqual(bits32(a), bits32(randn([3], { seed: 12345n, offset: 0n })));
  assert.equal(b.numel, 0);
  assert.deepEqual(bits32(c), bits32(randn([5], { seed: 12345n, offset: 2n })));
  setSeed(-1, 7n);
  assert.deepEqual(bits32(randn([4])), bits32(randn([4], { seed: M64, offset: 7n })));
  setSeed(67280421310721);
});

// ---- §C.4 statistical acceptance tests (n = 2^24 per stream) ----

/** Φ(x) via erfc (W. J. Cody's rational approximations are overkill here: |error| < 1.2e-7 suffices for D ≤ 4.76e-4). */
function phi(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? 1 - r / 2 : r / 2;
}

const STREAMS: [bigint, bigint][] = [[0n, 0n], [67280421310721n, 0n], [67280421310721n, 1n], [M64, 7n]];
for (const [seed, offset] of STREAMS) {
  test(`randn fp32 passes the §C.4 statistical acceptance tests for seed ${seed}, offset ${offset}`, () => {
    const n = 1 << 24;
    const z = (randn([n], { seed, offset }) as HostTensor).data as Float32Array;
    let s1 = 0, s2 = 0, s4 = 0, c3 = 0, c4 = 0, c5 = 0, maxAbs = 0, pos = 0, lag = 0;
    for (let i = 0; i < n; i++) s1 += z[i];
    const mean = s1 / n;
    for (let i = 0; i < n; i++) {
      const v = z[i], d = v - mean, a = Math.abs(v);
      s2 += d * d;
      s4 += d * d * d * d;
      if (a > 3) c3++;
      if (a > 4) c4++;
      if (a > 5) c5++;
      if (a > maxAbs) maxAbs = a;
      if (v > 0) pos++;
      if (i > 0) lag += (z[i - 1] - mean) * d;
    }
    const varPop = s2 / n;
    const variance = s2 / (n - 1);
    const kurt = s4 / n / (varPop * varPop);
    const rho = lag / s2;
    const label = `seed ${seed} offset ${offset}`;
    assert.ok(Math.abs(mean) <= 1.22e-3, `${label}: mean ${mean}`);
    assert.ok(Math.abs(variance - 1) <= 1.73e-3, `${label}: variance ${variance}`);
    assert.ok(Math.abs(kurt - 3) <= 6.0e-3, `${label}: kurtosis ${kurt}`);
    assert.ok(Math.abs(c3 - 45295) <= 1065, `${label}: |z| > 3 count ${c3}`);
    assert.ok(Math.abs(c4 - 1063) <= 163, `${label}: |z| > 4 count ${c4}`);
    assert.ok(c5 <= 25, `${label}: |z| > 5 count ${c5}`);
    assert.ok(maxAbs <= 6.6604369, `${label}: max |z| ${maxAbs}`);
    assert.ok(Math.abs(rho) <= 1.22e-3, `${label}: lag-1 correlation ${rho}`);
    assert.ok(Math.abs(pos / n - 0.5) <= 6.1e-4, `${label}: fraction > 0 ${pos / n}`);
    const sorted = z.slice().sort();
    let D = 0;
    for (let i = 0; i < n; i++) {
      const F = phi(sorted[i]);
      D = Math.max(D, Math.abs(F - i / n), Math.abs((i + 1) / n - F));
    }
    assert.ok(D <= 4.76e-4, `${label}: KS distance ${D}`);
  });
}

// ---- bad inputs (D.10) ----

test("randn refuses a negative or fractional size", () => {
  refuses("randn", "shape", "SHAPE", () => randn([2, -1]), []);
  refuses("randn", "shape", "SHAPE", () => randn([1.5]), []);
});
test("randn refuses dtype int32", () => refuses("randn", "dtype", "DTYPE", () => randn([2], { dtype: "int32" as never }), []));
test("randn refuses a number seed and a seed of 2^64", () => {
  refuses("randn", "seed", "VALUE", () => randn([2], { seed: 1 as never }), []);
  refuses("randn", "seed", "VALUE", () => randn([2], { seed: 1n << 64n }), []);
});
test("randn refuses an offset without a seed", () => refuses("randn", "offset", "VALUE", () => randn([2], { offset: 1n }), []));
test("randn refuses out of another shape or dtype", () => {
  const o = tensor(new Float32Array(3), [3], "fp32");
  refuses("randn", "out", "OUT_MISMATCH", () => randn([2], { out: o }), [o]);
  refuses("randn", "out", "OUT_MISMATCH", () => randn([3], { dtype: "bf16", out: o }), [o]);
});
test("randn refuses a self-overlapping out", () => {
  const o = tensor(new Float32Array(3), [3, 2], "fp32", [1, 0]);
  refuses("randn", "out", "OUT_MISMATCH", () => randn([3, 2], { out: o }), [o]);
});
test("randn refuses a device out that is not on the device option's device, and leaves the state alone", () => {
  setSeed(99);
  refuses("randn", "out", "OUT_MISMATCH", () => randn([2], { device: { kind: "cuda", index: 1 }, out: fakeDevice("fp32", [2], 0) }), []);
  refuses("randn", "out", "OUT_MISMATCH", () => randn([2], { device: { kind: "cuda", index: 0 }, out: tensor(new Float32Array(2), [2], "fp32") }), []);
  refuses("randn", "device", "VALUE", () => randn([2], { device: { kind: "tpu", index: 0 } as never }), []);
  assert.deepEqual(bits32(randn([2])), bits32(randn([2], { seed: 99n, offset: 0n })), "refused calls did not advance the offset");
  setSeed(67280421310721);
});
test("randnLike refuses an int32 tensor and an out option", () => {
  refuses("randnLike", "t", "DTYPE", () => randnLike(tensor(new Int32Array(2), [2], "int32")), []);
  refuses("randnLike", "out", "VALUE", () => randnLike(tensor(new Float32Array(2), [2], "fp32"), { out: tensor(new Float32Array(2), [2], "fp32") } as never), []);
});
test("setSeed refuses a fractional seed, a seed below -2^63 and a negative offset", () => {
  refuses("setSeed", "seed", "VALUE", () => setSeed(1.5), []);
  refuses("setSeed", "seed", "VALUE", () => setSeed(-(1n << 63n) - 1n), []);
  refuses("setSeed", "offset", "VALUE", () => setSeed(1, -1), []);
});

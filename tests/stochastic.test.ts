/**
 * Stochastic rounding (spec/quant.md §7.1–§7.4, §2.5): `stochasticCast`, `cast(…, {stochasticRounding: true})` and
 * `perTokenCast(…, {stochasticCast: true})` on the CPU reference. Hand-worked bytes from the spec's formulas, then
 * statistical and structural properties on random inputs (fixed seed, printed in every failure message), then
 * bad inputs.
 * @module
 */
import assert from "node:assert/strict";
import {
  cast,
  decodeBf16,
  decodeE4m3,
  decodeFp16,
  type HostTensor,
  perTokenCast,
  perTokenCastWithSfOnly,
  type Quantized,
  stochasticCast,
  type Tensor,
  tensor,
} from "../mod.ts";
import { f32Bits } from "../core/dtype.ts";
import { mix } from "../ops/quant/stochastic.ref.ts";
import { assertBytesEqual, hasGpu, rng, test } from "./harness.ts";
import { cudaOrUnavailable, refuses } from "./refuses.ts";

const SEED = 20261130;

function bytes(t: Tensor | Quantized): Uint8Array {
  return (t as HostTensor).bytes;
}

function u16(t: Tensor): number[] {
  return [...((t as HostTensor).data as Uint16Array)];
}

function u8(t: Tensor): number[] {
  return [...((t as HostTensor).data as Uint8Array)];
}

// ---- hand-worked bytes (§7.3, §7.4) ------------------------------------------------------------------------

// x = [1.0625, 1.9375, -3.3, 0.001] (binary32 bits 0x3F880000, 0x3FF80000, 0xC0533333, 0x3A83126F).
// §7.4: h = v0·0x5671D42B + v1·0x9995E499 + v2·0xACE1B8A5 + v3·0xE153538D + idx (mod 2³²). The four products sum
// to S = 0xAF77CC02, so with seed = 2³² − S = 0x508833FE (and Q = 0, offset 0) idx = seed and h = 0; then every
// later step keeps 0 (0 ^ 0 >>> k = 0, 0 · c = 0), so r0 = r1 = 0 and every element gets R = 0. §7.3 with R = 0:
// up = (D ≥ 2ⁿ) is never true, so the result is |v| truncated to the target grid, sign re-attached.
const TRUNC_X = [1.0625, 1.9375, -3.3, 0.001];
const TRUNC_SEED = 0x508833fen;

test("the hash input is S + idx: a seed of 2^32 − S gives R = 0 for the whole quad", () => {
  const r: [number, number] = [1, 1];
  const v = TRUNC_X.map((e) => f32Bits(e));
  mix(v[0], v[1], v[2], v[3], Number(TRUNC_SEED), r);
  assert.deepEqual(r, [0, 0]);
});

test("stochasticCast to e4m3 with R = 0 truncates toward zero (hand-worked)", () => {
  // 1.0625: q = 2^(0−3) = 1/8, a/q = 8.5, k = 8 → 1 = 0x38 (RN would tie to even, also 0x38).
  // 1.9375: q = 1/8, a/q = 15.5, k = 15 → 1.875 = 0x3F (RN: 16 → 2 = 0x40).
  // −3.3 (binary32 −3.29999995): q = 2^(1−3) = 1/4, a/q = 13.2, k = 13 → 3.25 = e 8, m 5 → 0x45, signed 0xC5.
  // 0.001 < 2^−6: q = 2^−9, a/q = 0.512, k = 0 → +0 = 0x00 (RN: 1 → 0x01).
  const y = stochasticCast(tensor(TRUNC_X, [4], "fp32"), { dtype: "e4m3", seed: TRUNC_SEED });
  assert.deepEqual(u8(y), [0x38, 0x3f, 0xc5, 0x00]);
});

test("stochasticCast to fp16 with R = 0 truncates toward zero (hand-worked)", () => {
  // 1.0625 = 0x3C40 and 1.9375 = 0x3FC0 are fp16 values (D = 0).
  // −3.3: q = 2^(1−10), a/q = 1689.6, k = 1689 → exponent field 1 + 15 = 16, mantissa 1689 − 1024 = 665 = 0x299
  //   → 0x4299, signed 0xC299 (RN: k + 1 = 1690 → 0xC29A).
  // 0.001: 2^−10 ≤ a < 2^−9, q = 2^(−10−10), a/q = 1048.576, k = 1048 → (5 << 10) | 24 = 0x1418 (RN: 0x1419).
  const y = stochasticCast(tensor(TRUNC_X, [4], "fp32"), { dtype: "fp16", seed: TRUNC_SEED });
  assert.deepEqual(u16(y), [0x3c40, 0x3fc0, 0xc299, 0x1418]);
});

test("stochasticCast to bf16 adds the 16-bit fields of r0 and r1 (hand-worked)", () => {
  // x = [1 + 2^−8, 1 + 2^−8, −(1 + 2^−8), 3]: bits 0x3F808000, 0x3F808000, 0xBF808000, 0x40400000; Q = 0, idx = 0.
  // sum = 0xE7748000; h ^= h >>> 23 → 0xE77481CE; h ·= 0x7FEB352D → 0x28747736; h ^= h >>> 16 → 0x28745F42;
  // r0 = h·0x846CA68B = …, r0 ^= r0 >>> 11 → 0xA4D81D46; r1 (·0xD35A2D97, same shift) → 0x34905B37.
  // Fields: element 0 ← r0 bits 0–15 = 0x1D46, element 1 ← r0 bits 16–31 = 0xA4D8, element 2 ← r1 low = 0x5B37,
  // element 3 ← r1 high = 0x3490. bf16 = (bits(|v|) + R) >>> 16, sign re-attached:
  //   0x8000 + 0x1D46 = 0x9D46 < 0x10000 → 0x3F80;  0x8000 + 0xA4D8 = 0x124D8 → carry → 0x3F81;
  //   0x8000 + 0x5B37 = 0xDB37 → 0x3F80, signed 0xBF80;  3 has D = 0 → 0x4040.
  const x = tensor([1 + 2 ** -8, 1 + 2 ** -8, -(1 + 2 ** -8), 3], [4], "fp32");
  assert.deepEqual(u16(stochasticCast(x, { dtype: "bf16" })), [0x3f80, 0x3f81, 0xbf80, 0x4040]);
  assert.deepEqual(u16(cast(x, { dtype: "bf16", stochasticRounding: true }) as Tensor), [0x3f80, 0x3f81, 0xbf80, 0x4040]);
});

// perTokenCast, x = 1.0625 everywhere, H = 64, numPerChannels 64, roundSf: amax = 1.0625, sfRaw = 1.0625/448 ≈
// 0.00237, next power of two 2^−8 → sf = 2^−8, inv = 2^8, v = 272 (bits 0x43880000). e4m3 around 272: q = 2^(8−3)
// = 32, a/q = 8.5, k = 8 → 256 (0x78) or 288 (0x79); D = 0.5·2^8 = 128, so up iff R ≥ 128 (bit 7 of the byte).
// Quad Q of a row hashes the four v's with idx = Q (the row is not hashed). For Q = 0: sum = 0x43880000 · (sum of
// the four multipliers = 0x2F1BDD98 mod 2^32)… = 0x04B00000; h ^= h >>> 23 → 0x04B00009; ·0x7FEB352D → 0xC234DE95;
// ^= >>> 16 → 0xC2341CA1; r0 → 0x54CD6995: bytes 0x95, 0x69, 0xCD, 0x54 → 0x79, 0x78, 0x79, 0x78.
// r0 of Q = 1…15 (same computation): 0x22824029 0x00845144 0xEFE0FE16 0x74ACA57E 0x1CDDEBC0 0xD567AB09
// 0xF2B89726 0xE41DA6B6 0x211FDB2F 0xE39AD086 0x51B70312 0x48718712 0xAD56DFD6 0xFA51CF07 0x5CDBAAD9.
const R0_272 = [
  0x54cd6995, 0x22824029, 0x00845144, 0xefe0fe16, 0x74aca57e, 0x1cddebc0, 0xd567ab09, 0xf2b89726,
  0xe41da6b6, 0x211fdb2f, 0xe39ad086, 0x51b70312, 0x48718712, 0xad56dfd6, 0xfa51cf07, 0x5cdbaad9,
];

test("perTokenCast with stochasticCast hashes column quads of each row (hand-worked)", () => {
  const expected = R0_272.flatMap((r0) => [0, 1, 2, 3].map((i) => ((r0 >>> (8 * i)) & 0x80 ? 0x79 : 0x78)));
  assert.deepEqual(expected.slice(0, 4), [0x79, 0x78, 0x79, 0x78]);
  const x = tensor(new Float32Array(2 * 64).fill(1.0625), [2, 64], "fp32");
  const [data, sf] = perTokenCast(x, { fmt: "e4m3", numPerChannels: 64, roundSf: true, stochasticCast: true });
  assert.deepEqual([...((sf as HostTensor).data as Float32Array)], [2 ** -8, 2 ** -8]);
  // Both rows get the same bytes: the row index is not part of the hash.
  assert.deepEqual(u8(data), [...expected, ...expected]);
  // The independent check of the table itself: the library's mix reproduces every r0.
  const r: [number, number] = [0, 0];
  const b = f32Bits(272);
  R0_272.forEach((r0, Q) => {
    mix(b, b, b, b, Q, r);
    assert.equal(r[0], r0, `Q = ${Q}`);
  });
});

test("perTokenCast with stochasticCast hashes a NaN product as 0x7FFFFFFF, whatever x's NaN pattern (hand-worked)", () => {
  // Row of 64 bf16 1.0625 (roundSf: sf 2^-8, scaled 272, halfway between e4m3 256 (0x78) and 288 (0x79): up iff
  // R ≥ 128) with a NaN at column 5: quad 1 hashes (272, NaN, 272, 272) with idx 1, the NaN product as the GPU's
  // canonical 0x7FFFFFFF (stochastic.ref.ts productBits), and the NaN encodes as 0x7F.
  const b = f32Bits(272);
  const r: [number, number] = [0, 0];
  const codes = (nanBits: number) => {
    mix(b, nanBits, b, b, 1, r);
    return [0, 1, 2, 3].map((i) => (i === 1 ? 0x7f : ((r[0] >>> (8 * i)) & 0x80 ? 0x79 : 0x78)));
  };
  const want = codes(0x7fffffff);
  // the choice matters here: x's own quieted pattern (what V8 keeps) would give other codes in this quad
  assert.notDeepEqual(codes(0x7fc00000), want);
  for (const nan of [0x7fc0, 0xffc0, 0x7fe5, 0xffa5, 0x7f81, 0xff81]) {
    const x = new Uint16Array(64).fill(0x3f88); // bf16 1.0625
    x[5] = nan;
    const [data] = perTokenCast(tensor(x, [1, 64], "bf16"), { fmt: "e4m3", numPerChannels: 64, roundSf: true, stochasticCast: true });
    assert.deepEqual(u8(data).slice(4, 8), want, `NaN 0x${nan.toString(16)}`);
  }
});

// ---- properties ---------------------------------------------------------------------------------------------

/** Random fp32 values of varied magnitude (both signs, subnormal to large). */
function randomValues(n: number, seed: number): Float32Array {
  const r = rng(seed);
  return new Float32Array(n).map(() => (r() < 0.5 ? -1 : 1) * 2 ** (r() * 40 - 20) * (1 + r()));
}

test("bf16 stochastic rounding equals ((bits + R) >>> 16) with the §7.4 fields", () => {
  const v = randomValues(4096, SEED);
  const y = u16(stochasticCast(tensor(v, [4096], "fp32"), { dtype: "bf16", seed: 5n, offset: 64n }));
  const r: [number, number] = [0, 0];
  for (let Q = 0; Q < 1024; Q++) {
    const b = [0, 1, 2, 3].map((i) => f32Bits(v[4 * Q + i]));
    mix(b[0], b[1], b[2], b[3], Q + 16 + 5, r);
    for (let i = 0; i < 4; i++) {
      const R = (r[i >> 1] >>> (16 * (i & 1))) & 0xffff;
      const mag = (b[i] & 0x7fffffff) >>> 0;
      const want = (((mag + R) / 65536) | 0) | ((b[i] >>> 31) << 15);
      assert.equal(y[4 * Q + i], want, `seed ${SEED}, element ${4 * Q + i} (${v[4 * Q + i]})`);
    }
  }
});

/** The two e4m3 values around `v` (equal when `v` is one), clamped at ±448. */
function e4m3Neighbours(v: number): [number, number] {
  const finite = [...Array(256).keys()].map(decodeE4m3).filter((e) => Number.isFinite(e)).sort((a, b) => a - b);
  const c = Math.max(-448, Math.min(448, v));
  return [Math.max(...finite.filter((e) => e <= c)), Math.min(...finite.filter((e) => e >= c))];
}

test("only the two neighbouring codes ever appear (e4m3, bf16, fp16)", () => {
  const v = randomValues(2048, SEED + 1).map((e) => e / 64);
  const x = tensor(v, [2048], "fp32");
  const e4 = u8(stochasticCast(x, { dtype: "e4m3", seed: 3n }));
  const bf = u16(stochasticCast(x, { dtype: "bf16", seed: 3n }));
  const hf = u16(stochasticCast(x, { dtype: "fp16", seed: 3n }));
  for (let i = 0; i < v.length; i++) {
    const [lo, hi] = e4m3Neighbours(v[i]);
    const d = decodeE4m3(e4[i]);
    assert.ok(d === lo || d === hi, `seed ${SEED + 1}, e4m3 of ${v[i]}: got ${d}, neighbours ${lo}, ${hi}`);
    const t = (f32Bits(v[i]) >>> 16) & 0x7fff;
    assert.ok((bf[i] & 0x7fff) === t || (bf[i] & 0x7fff) === t + 1, `seed ${SEED + 1}, bf16 of ${v[i]}: got ${bf[i].toString(16)}`);
    const f = decodeFp16(hf[i]);
    const ulp = 2 ** (Math.max(Math.floor(Math.log2(Math.abs(v[i]))), -14) - 10);
    assert.ok(Math.abs(f - v[i]) < ulp * 1.0000001 && Math.sign(f) * Math.sign(v[i]) >= 0, `seed ${SEED + 1}, fp16 of ${v[i]}: got ${f}`);
    assert.ok(Math.abs(decodeBf16(bf[i]) - v[i]) <= Math.abs(v[i]) * 2 ** -7, `bf16 of ${v[i]}`);
  }
});

test("the mean of many stochastic casts of one value lies within 6σ of it", () => {
  // Each cast is lo or lo + q, up with probability p; the mean of N casts has σ = q·√(p(1−p)/N). The rounding
  // probability is the dropped fraction truncated to n bits, a bias below q·2⁻ⁿ, far inside 6σ.
  const cases = [
    { v: 1.0 + 0.3 / 8, from: "fp32", dtype: "e4m3", q: 1 / 8, lo: 1 },
    { v: 100.7, from: "fp32", dtype: "e4m3", q: 8, lo: 96 },
    { v: 1 / 3, from: "fp32", dtype: "bf16", q: 2 ** -9, lo: decodeBf16(0x3eaa) },
    { v: 1 / 3, from: "fp32", dtype: "fp16", q: 2 ** -12, lo: decodeFp16(0x3555) },
    { v: decodeBf16(0x3f83), from: "bf16", dtype: "e4m3", q: 1 / 8, lo: 1 },
  ] as const;
  const N = 4096;
  for (const c of cases) {
    const src = c.from === "fp32" ? tensor([c.v, c.v, c.v, c.v], [4], "fp32") : tensor(new Uint16Array(4).fill(0x3f83), [4], "bf16");
    let sum = 0;
    for (let k = 0; k < N / 4; k++) {
      const y = stochasticCast(src, { dtype: c.dtype, offset: BigInt(4 * k) }) as HostTensor;
      for (let i = 0; i < 4; i++) {
        const e = y.data[i] as number;
        sum += c.dtype === "e4m3" ? decodeE4m3(e) : c.dtype === "bf16" ? decodeBf16(e) : decodeFp16(e);
      }
    }
    const v = Math.fround(c.v);
    const p = (v - c.lo) / c.q;
    assert.ok(p > 0 && p < 1, `${c.dtype}: ${v} must lie strictly between lo and lo + q`);
    const sigma = c.q * Math.sqrt(p * (1 - p) / N);
    assert.ok(Math.abs(sum / N - v) <= 6 * sigma, `${c.from} → ${c.dtype} of ${v}: mean ${sum / N}, σ ${sigma}`);
  }
});

test("exactly representable values never change", () => {
  const codes = new Uint8Array(256).map((_, i) => i).filter((c) => (c & 0x7f) !== 0x7f);
  const n4 = codes.length - (codes.length % 4);
  const vals = Float32Array.from(codes.slice(0, n4), decodeE4m3);
  for (const seed of [0n, 1n, 12345n]) {
    assert.deepEqual(u8(stochasticCast(tensor(vals, [n4], "fp32"), { dtype: "e4m3", seed })), [...codes.slice(0, n4)]);
  }
  const r = rng(SEED + 2);
  const b16 = new Uint16Array(4096).map(() => (r() * 0x10000) & 0xffff).map((b) => ((b & 0x7f80) === 0x7f80 ? b & 0xbfff : b));
  const asBf = Float32Array.from(b16, decodeBf16);
  assert.deepEqual(u16(stochasticCast(tensor(asBf, [4096], "fp32"), { dtype: "bf16", seed: 9n })), [...b16], `seed ${SEED + 2}`);
  const h16 = b16.map((b) => ((b & 0x7c00) === 0x7c00 ? b & 0xbfff : b));
  const asHf = Float32Array.from(h16, decodeFp16);
  assert.deepEqual(u16(stochasticCast(tensor(asHf, [4096], "fp32"), { dtype: "fp16", seed: 9n })), [...h16], `seed ${SEED + 2}`);
  // bf16 → e4m3 of the e4m3 values (exact in bf16 too).
  const bfOfE4 = tensor(Uint16Array.from(vals, (v) => f32Bits(v) >>> 16), [n4], "bf16");
  assert.deepEqual(u8(stochasticCast(bfOfE4, { dtype: "e4m3" })), [...codes.slice(0, n4)]);
});

test("the same seed and offset give the same bytes; another seed or offset gives others", () => {
  const x = tensor(randomValues(1024, SEED + 3), [1024], "fp32");
  for (const dtype of ["e4m3", "bf16", "fp16"] as const) {
    const a = bytes(stochasticCast(x, { dtype, seed: 42n, offset: 8n }));
    assertBytesEqual(bytes(stochasticCast(x, { dtype, seed: 42n, offset: 8n })), a, `${dtype}, seed ${SEED + 3}`);
    assert.notDeepEqual(bytes(stochasticCast(x, { dtype, seed: 43n, offset: 8n })), a);
    assert.notDeepEqual(bytes(stochasticCast(x, { dtype, seed: 42n, offset: 12n })), a);
  }
});

test("seed and offset tweak the same index: seed s, offset 4k equals seed s + k, and seeds wrap mod 2^32", () => {
  const x = tensor(randomValues(256, SEED + 4), [256], "fp32");
  const a = bytes(stochasticCast(x, { dtype: "e4m3", seed: 10n, offset: 40n }));
  assertBytesEqual(bytes(stochasticCast(x, { dtype: "e4m3", seed: 20n })), a, `seed ${SEED + 4}`);
  assertBytesEqual(bytes(stochasticCast(x, { dtype: "e4m3", seed: 20n + 2n ** 32n })), a, `seed ${SEED + 4}`);
  assertBytesEqual(bytes(stochasticCast(x, { dtype: "e4m3", seed: 20n - 2n ** 32n })), a, `seed ${SEED + 4}`);
});

test("casting in chunks with their offsets gives the bytes of casting the whole", () => {
  const v = randomValues(1000, SEED + 5);
  const x = tensor(v, [1000], "fp32");
  for (const dtype of ["e4m3", "bf16", "fp16"] as const) {
    const whole = bytes(stochasticCast(x, { dtype, seed: 77n }));
    const parts: number[] = [];
    for (const [s, e] of [[0, 256], [256, 260], [260, 1000]]) {
      parts.push(...bytes(stochasticCast(x.slice(0, s, e), { dtype, seed: 77n, offset: BigInt(s) })));
    }
    assertBytesEqual(Uint8Array.from(parts), whole, `${dtype}, seed ${SEED + 5}`);
  }
});

test("cast with stochasticRounding is stochasticCast with offset 0, into out when given, for every §7.1 pair", () => {
  const v = randomValues(512, SEED + 6);
  const f32 = tensor(v, [8, 64], "fp32");
  const bf = cast(f32, { dtype: "bf16" }) as Tensor;
  const hf = cast(f32, { dtype: "fp16" }) as Tensor;
  const pairs = [[f32, "bf16"], [f32, "fp16"], [f32, "e4m3"], [bf, "e4m3"], [hf, "e4m3"]] as const;
  for (const [x, dtype] of pairs) {
    const want = stochasticCast(x, { dtype, seed: 5n });
    const got = cast(x, { dtype, stochasticRounding: true, seed: 5n }) as Tensor;
    assert.deepEqual(got.shape, [8, 64]);
    assertBytesEqual(bytes(got), bytes(want), `${x.dtype} → ${dtype}, seed ${SEED + 6}`);
    const out = tensor(dtype === "e4m3" ? new Uint8Array(512) : new Uint16Array(512), [8, 64], dtype);
    assert.equal(stochasticCast(x, { dtype, seed: 5n, out }), out);
    assertBytesEqual(bytes(out), bytes(want), `out, ${x.dtype} → ${dtype}`);
  }
});

test("perTokenCast with stochasticCast has the sf of the RN call, and data that differs from RN and is deterministic", () => {
  const r = rng(SEED + 7);
  const x = tensor(new Float32Array(6 * 256).map(() => (r() - 0.5) * 2 ** (r() * 16 - 8)), [6, 256], "fp32");
  const variants = [
    { fmt: "e4m3", numPerChannels: 128 },
    { fmt: "e4m3", numPerChannels: 16, roundSf: true },
    { fmt: "e4m3", numPerChannels: 32, useE4m3Sf: true },
    { fmt: "e4m3", numPerChannels: 64, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true },
    { fmt: "e2m1", numPerChannels: 16 },
    { fmt: "e2m1", numPerChannels: 256, roundSf: true },
  ] as const;
  for (const o of variants) {
    const [d0, s0] = perTokenCast(x, o);
    const [d1, s1] = perTokenCast(x, { ...o, stochasticCast: true });
    const label = `${JSON.stringify(o)}, seed ${SEED + 7}`;
    assertBytesEqual(bytes(s1), bytes(s0), `sf, ${label}`);
    assertBytesEqual(bytes(perTokenCastWithSfOnly(x, o)), bytes(s0), `sf only, ${label}`);
    assert.notDeepEqual(bytes(d1), bytes(d0), `the stochastic data must differ somewhere, ${label}`);
    assertBytesEqual(bytes(perTokenCast(x, { ...o, stochasticCast: true })[0]), bytes(d1), `determinism, ${label}`);
  }
  // A quantized input (§4.4) and a strided row view take the same path.
  const q = perTokenCast(x, { fmt: "e4m3", numPerChannels: 32 });
  const [dq0, sq0] = perTokenCast(q, { fmt: "e4m3", numPerChannels: 128, xBlockSize: [1, 32] });
  const [, sq1] = perTokenCast(q, { fmt: "e4m3", numPerChannels: 128, xBlockSize: [1, 32], stochasticCast: true });
  assertBytesEqual(bytes(sq1), bytes(sq0), "quantized input sf");
  assert.equal(dq0.shape[1], 256);
  const view = x.slice(1, 0, 128);
  const [, sv0] = perTokenCast(view, { fmt: "e4m3", numPerChannels: 64 });
  const [dv1, sv1] = perTokenCast(view, { fmt: "e4m3", numPerChannels: 64, stochasticCast: true });
  assertBytesEqual(bytes(sv1), bytes(sv0), "strided view sf");
  assert.deepEqual(dv1.shape, [6, 128]);
});

// ---- bad inputs -------------------------------------------------------------------------------------------

const x8 = tensor(randomValues(8, SEED + 8), [8], "fp32");
const x6 = tensor(randomValues(6, SEED + 8), [6], "fp32");
const bf8 = tensor(new Uint16Array(8).fill(0x3f80), [8], "bf16");
const SC = "stochasticCast";

test("stochasticCast refuses an element count that is not a multiple of 4", () => refuses(SC, "x", "SHAPE", () => stochasticCast(x6, { dtype: "e4m3" }), [x6]));
test("stochasticCast refuses an offset that is not a multiple of 4", () => refuses(SC, "offset", "VALUE", () => stochasticCast(x8, { dtype: "e4m3", offset: 2n }), [x8]));
test("stochasticCast refuses a negative offset", () => refuses(SC, "offset", "VALUE", () => stochasticCast(x8, { dtype: "e4m3", offset: -4n }), [x8]));
test("stochasticCast refuses a number as offset", () => refuses(SC, "offset", "VALUE", () => stochasticCast(x8, { dtype: "e4m3", offset: 4 as never }), [x8]));
test("stochasticCast refuses a number as seed", () => refuses(SC, "seed", "VALUE", () => stochasticCast(x8, { dtype: "e4m3", seed: 1 as never }), [x8]));
test("stochasticCast refuses the pair bf16 → bf16", () => refuses(SC, "dtype", "VALUE", () => stochasticCast(bf8, { dtype: "bf16" }), [bf8]));
test("stochasticCast refuses an fp32 target", () => refuses(SC, "dtype", "VALUE", () => stochasticCast(x8, { dtype: "fp32" as never }), [x8]));
test("stochasticCast refuses an e4m3 source", () => {
  const e = tensor(new Uint8Array(8), [8], "e4m3");
  refuses(SC, "x", "DTYPE", () => stochasticCast(e, { dtype: "e4m3" }), [e]);
});
test("stochasticCast refuses a non-contiguous input", () => {
  const m = tensor(new Float32Array(16), [4, 4], "fp32");
  refuses(SC, "x", "LAYOUT", () => stochasticCast(m.transpose(), { dtype: "bf16" }), [m]);
});
test("stochasticCast refuses an out of the wrong shape", () => refuses(SC, "out", "SHAPE", () => stochasticCast(x8, { dtype: "bf16", out: tensor(new Uint16Array(4), [4], "bf16") }), [x8]));
test("stochasticCast refuses an unknown option", () => refuses(SC, "offst", "VALUE", () => stochasticCast(x8, { dtype: "e4m3", offst: 4n } as never), [x8]));
test("stochasticCast with backend cuda runs on the device, or answers BACKEND_UNAVAILABLE without one", () => cudaOrUnavailable(SC, () => stochasticCast(tensor(new Float32Array(8).fill(1.03), [8], "fp32"), { dtype: "e4m3", backend: "cuda" }), hasGpu));

test("cast with stochasticRounding refuses an element count that is not a multiple of 4", () => refuses("cast", "x", "SHAPE", () => cast(x6, { dtype: "bf16", stochasticRounding: true }), [x6]));
test("cast with stochasticRounding refuses the pair bf16 → fp16", () => refuses("cast", "dtype", "VALUE", () => cast(bf8, { dtype: "fp16", stochasticRounding: true }), [bf8]));
test("cast with stochasticRounding refuses an fp32 target", () => refuses("cast", "dtype", "VALUE", () => cast(x8, { dtype: "fp32", stochasticRounding: true }), [x8]));
test("cast with stochasticRounding refuses a number as seed", () => refuses("cast", "seed", "VALUE", () => cast(x8, { dtype: "e4m3", stochasticRounding: true, seed: 3 as never }), [x8]));
test("cast with stochasticRounding refuses the block-scaled form", () => {
  const m = tensor(new Float32Array(64), [2, 32], "fp32");
  refuses("cast", "stochasticRounding", "VALUE", () => cast(m, { dtype: "e4m3", blockSize: [1, 32], stochasticRounding: true }), [m]);
  refuses("cast", "stochasticRounding", "VALUE", () => cast(m, { dtype: "e2m1x2", stochasticRounding: true }), [m]);
});
test("cast refuses a non-boolean stochasticRounding", () => refuses("cast", "stochasticRounding", "VALUE", () => cast(x8, { dtype: "bf16", stochasticRounding: 1 as never }), [x8]));

const xt = tensor(randomValues(2 * 128, SEED + 9), [2, 128], "fp32");
const PT = { fmt: "e4m3", numPerChannels: 128, stochasticCast: true } as const;
test("perTokenCast with stochasticCast and backend cuda runs on the device, or answers BACKEND_UNAVAILABLE without one", () => cudaOrUnavailable("perTokenCast", () => perTokenCast(xt, { ...PT, backend: "cuda" }), hasGpu));
test("perTokenCast refuses a non-boolean stochasticCast", () => refuses("perTokenCast", "stochasticCast", "VALUE", () => perTokenCast(xt, { ...PT, stochasticCast: "yes" as never }), [xt]));
test("perTokenCast with stochasticCast still refuses a width that is not a multiple of 64", () => {
  const w = tensor(new Float32Array(96), [1, 96], "fp32");
  refuses("perTokenCast", "x", "SHAPE", () => perTokenCast(w, { ...PT, numPerChannels: 32 }), [w]);
});
test("perTokenCast with stochasticCast still refuses numPerChannels 48", () => refuses("perTokenCast", "numPerChannels", "VALUE", () => perTokenCast(xt, { ...PT, numPerChannels: 48 }), [xt]));
test("perTokenCastWithSfOnly refuses stochasticCast", () => refuses("perTokenCastWithSfOnly", "stochasticCast", "VALUE", () => perTokenCastWithSfOnly(xt, PT as never), [xt]));

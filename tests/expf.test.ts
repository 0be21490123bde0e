/**
 * Exhaustive proof that `expf` (ops/quant/expf.ref.ts) is the correctly rounded binary32 exponential
 * (spec/quant.md §1.1 rule 4) for every binary32 input, in the runtime that runs this file (Deno's V8 and Bun's
 * JavaScriptCore have different `Math.exp`s, so the suite runs it in both).
 *
 * Method, for each input x (all 2³¹ + 2³¹ bit patterns from ±0 up to |x| = 89 resp. 104, past the overflow and
 * underflow edges; beyond them e^x only moves further away from the last finite / first non-zero result):
 * y = Math.exp(x) in binary64 and r = fround(y). The only binary32 rounding boundary near y is the midpoint m
 * between the two binary32 neighbours around y. Bound relied on: |y − e^x| < 1 binary64 ulp (fdlibm's `exp` in V8,
 * the system libm `exp` in JSC; both document < 1 ulp). We use a margin of B = 4 ulps: when |y − m| > B ulps of y,
 * e^x lies on the same side of m as y, so r is the correctly rounded result. The few remaining inputs are decided
 * exactly: e^|x| in BigInt fixed point (Taylor series, 800 fraction bits, with a rigorous truncation error bound)
 * compared with the exact rational m. Every input whose result differs must be in EXPF_PATCHES, and the table
 * must hold exactly the inputs found (with their correct values).
 * @module
 */
import assert from "node:assert/strict";
import { expf, EXPF_PATCHES } from "../ops/quant/expf.ref.ts";
import { test } from "./harness.ts";

/** Margin, in binary64 ulps of y, beyond which Math.exp's error (< 1 ulp) cannot move e^x across m. */
const B = 4;
const F = 800n;

function bitsOf64(v: number): bigint {
  return new BigUint64Array(new Float64Array([v]).buffer)[0];
}

/** A finite non-zero binary64 as [M, E] with v = M · 2^E exactly (M a signed BigInt). */
function rational64(v: number): [bigint, bigint] {
  const b = bitsOf64(v);
  const exp = Number((b >> 52n) & 0x7ffn);
  let mant = b & ((1n << 52n) - 1n);
  if (exp !== 0) mant |= 1n << 52n;
  const e = BigInt((exp === 0 ? 1 : exp) - 1075);
  return [b >> 63n ? -mant : mant, e];
}

/** True when e^x > m (x binary32, m a positive binary64); throws when 800 bits cannot decide it. */
function expExceeds(x: number, m: number): boolean {
  const a = Math.abs(x);
  const [X, Ex] = rational64(a); // a = X · 2^Ex, Ex ≥ −1074 so X · 2^(Ex + F) is exact below
  const A = Ex + F >= 0n ? X << (Ex + F) : X >> -(Ex + F);
  assert.ok(Ex + F >= 0n, "x too small for the fixed point");
  const one = 1n << F;
  let t = one;
  let s = one;
  let n = 0n;
  // t_n = floor(t_{n−1} · a / n): each step loses < 1 unit, and earlier losses grow by at most Π a/j ≤ e^a.
  while (t !== 0n || n <= BigInt(Math.ceil(2 * a))) {
    n++;
    t = (t * A) / (n << F);
    s += t;
    if (n > 5000n) throw new Error("series did not converge");
  }
  const err = (4n * n * n + 4n) << BigInt(Math.ceil(1.45 * a) + 2); // S_true ∈ [s, s + err]
  const [M, E] = rational64(m);
  if (x >= 0) {
    const R = E + F >= 0n ? M << (E + F) : null;
    assert.ok(R !== null);
    if (s > R) return true;
    if (s + err < R) return false;
  } else {
    const lhs = 1n << (F - E); // e^x > m ⇔ 2^(F−E) > M · S_true
    if (M * (s + err) < lhs) return true;
    if (M * s > lhs) return false;
  }
  throw new Error(`expExceeds: cannot decide e^${x} against ${m}`);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1);
const w64 = new Uint32Array(f64.buffer); // [low word, high word] (little-endian hosts)

interface Sweep {
  inputs: number;
  exact: number[]; // bit patterns decided exactly
  wrong: Map<number, number>; // bit pattern → correctly rounded result bits
}

function f32Bits(v: number): number {
  f32[0] = v;
  return u32[0];
}

/** Decides one input exactly (the slow path); records it when fround(y) is not correctly rounded. */
function decide(bits: number, x: number, y: number, s: Sweep): void {
  s.exact.push(bits);
  let lo: number, hi: number, m: number;
  if (y >= 2 ** -126) {
    f64[0] = y;
    w64[0] = (w64[0] & ~0x1fffffff) >>> 0;
    lo = f64[0];
    m = lo + 2 ** (Math.floor(Math.log2(lo)) - 24); // exact: the low 29 bits become 0x10000000
    f64[0] = m;
    assert.equal(w64[0] & 0x1fffffff, 0x10000000);
    hi = lo + 2 * (m - lo);
  } else {
    const k = Math.floor(y * 2 ** 149);
    lo = k * 2 ** -149;
    hi = (k + 1) * 2 ** -149;
    m = (k + 0.5) * 2 ** -149;
  }
  const correct = Math.fround(expExceeds(x, m) ? hi : lo);
  if (!Object.is(Math.fround(y), correct)) s.wrong.set(bits, f32Bits(correct));
}

/** Sweeps the bit patterns [from, to) of one sign. */
function sweep(from: number, to: number, s: Sweep): void {
  for (let i = from; i < to; i++) {
    u32[0] = i;
    const x = f32[0];
    const y = Math.exp(x);
    s.inputs++;
    if (y >= 2 ** -126) {
      if (y >= 2 ** 128) continue; // r = +Inf, and y ≥ 2^128 is 2^103 above the last midpoint 2^128 − 2^103
      f64[0] = y;
      const d = (w64[0] & 0x1fffffff) - 0x10000000; // distance to m in ulps of y's binade
      if (d > B || d < -B) continue;
      decide(i, x, y, s);
    } else {
      const t = y * 2 ** 149;
      const dist = Math.abs(t - Math.floor(t) - 0.5) * 2 ** -149;
      f64[0] = y;
      const ulp = 2 ** (((w64[1] >>> 20) & 0x7ff) - 1075);
      if (dist > B * ulp) continue;
      decide(i, x, y, s);
    }
  }
}

const POS_END = 0x42b20000; // x = 89: e^89 > 2^128
const NEG_END = 0xc2d00000; // x = −104: e^−104 < 2^−150

test("expf is the correctly rounded binary32 exponential for every binary32 input (exhaustive proof)", () => {
  assert.equal(new Uint8Array(new Uint16Array([1]).buffer)[0], 1, "the sweep reads binary64 words little-endian");
  const s: Sweep = { inputs: 0, exact: [], wrong: new Map() };
  const t0 = performance.now();
  sweep(0x00000000, POS_END, s);
  sweep(0x80000000, NEG_END, s);
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  const runtime = "Bun" in globalThis ? "bun" : "deno";
  console.log(
    `expf proof (${runtime}): ${s.inputs} inputs in ${secs} s, ${s.exact.length} decided exactly ` +
      `[${s.exact.map((b) => "0x" + b.toString(16)).join(", ")}], ${s.wrong.size} not correctly rounded by fround(Math.exp)`,
  );
  for (const [bits, want] of s.wrong) assert.equal(EXPF_PATCHES.get(bits), want, `input 0x${bits.toString(16)} needs a patch`);
  assert.deepEqual([...EXPF_PATCHES.keys()].sort(), [...s.wrong.keys()].sort(), "the patch table is exactly the set found");
  for (const b of s.exact) {
    u32[0] = b;
    const x = f32[0];
    assert.equal(f32Bits(expf(x)), s.wrong.get(b) ?? f32Bits(Math.fround(Math.exp(x))));
  }
});

test("expf overflows to +Inf exactly from the first input with e^x ≥ 2^128 − 2^103", () => {
  const mid = 2 ** 128 - 2 ** 103;
  u32[0] = 0x42b17217;
  const last = f32[0];
  u32[0] = 0x42b17218;
  const first = f32[0];
  assert.equal(expExceeds(last, mid), false);
  assert.equal(expExceeds(first, mid), true);
  assert.ok(Number.isFinite(expf(last)) && expf(last) > 3.4e38);
  assert.equal(expf(first), Infinity);
  assert.equal(expf(Infinity), Infinity);
  assert.equal(expf(3.4028234663852886e38), Infinity);
});

test("expf underflows to subnormals and to +0 exactly at e^x ≤ 2^−150", () => {
  const mid = 2 ** -150;
  let b = 0xc2cff000;
  for (;; b++) {
    u32[0] = b;
    if (!expExceeds(f32[0], mid)) break;
  }
  u32[0] = b - 1;
  const lastNonZero = f32[0];
  u32[0] = b;
  const firstZero = f32[0];
  assert.equal(expf(lastNonZero), 2 ** -149);
  assert.equal(expf(firstZero), 0);
  assert.equal(expf(-Infinity), 0);
  assert.ok(Object.is(expf(-3.4028234663852886e38), 0));
  assert.ok(Number.isNaN(expf(NaN)));
  // the smallest normal and the subnormal range are reached
  assert.equal(f32Bits(expf(Math.fround(Math.log(2 ** -126)))) >>> 23, 0);
});

test("the exact e^x oracle agrees with Math.exp away from the decision point (fixed seed)", () => {
  let a = 12345;
  for (let k = 0; k < 200; k++) {
    a = (Math.imul(a, 1103515245) + 12345) >>> 0;
    const x = Math.fround((a / 2 ** 32 - 0.6) * 180);
    const y = Math.exp(x);
    assert.equal(expExceeds(x, y * (1 - 1e-12)), true, `seed 12345, x = ${x}`);
    assert.equal(expExceeds(x, y * (1 + 1e-12)), false, `seed 12345, x = ${x}`);
  }
});

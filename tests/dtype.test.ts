/**
 * The bit-exact codecs of core/dtype.ts (spec/quant.md §1): exhaustive round trips over every code, and the
 * rounding, saturation and NaN rules at their edges.
 * @module
 */
import assert from "node:assert/strict";
import {
  decodeBf16,
  decodeE2m1,
  decodeE4m3,
  decodeFp16,
  decodeUe8m0,
  encodeBf16,
  encodeE2m1,
  encodeE4m3,
  encodeFp16,
} from "../mod.ts";
import { f32FromBits } from "../core/dtype.ts";
import { test } from "./harness.ts";

const f = Math.fround;

test("e4m3 decode then encode returns every non-NaN byte", () => {
  for (let c = 0; c < 256; c++) {
    if ((c & 0x7f) === 0x7f) continue;
    assert.equal(encodeE4m3(decodeE4m3(c)), c, `byte 0x${c.toString(16)}`);
  }
  assert.ok(Number.isNaN(decodeE4m3(0x7f)) && Number.isNaN(decodeE4m3(0xff)));
  assert.equal(decodeE4m3(0x7e), 448);
  assert.equal(decodeE4m3(0x01), 2 ** -9);
});

test("e4m3 encode rounds ties to even, saturates, keeps the sign of zero and drops the sign of NaN", () => {
  // Midpoint between 1 (0x38) and 1.125 (0x39) goes to the even mantissa 0x38; between 1.125 and 1.25 to 0x3a.
  assert.equal(encodeE4m3(1.0625), 0x38);
  assert.equal(encodeE4m3(1.1875), 0x3a);
  assert.equal(encodeE4m3(f(1.0625 + 2 ** -20)), 0x39);
  assert.equal(encodeE4m3(460), 0x7e);
  assert.equal(encodeE4m3(1e9), 0x7e);
  assert.equal(encodeE4m3(-Infinity), 0xfe);
  assert.equal(encodeE4m3(-0), 0x80);
  assert.equal(encodeE4m3(f(-1e-9)), 0x80);
  assert.equal(encodeE4m3(NaN), 0x7f);
  assert.equal(encodeE4m3(f(2 ** -10)), 0x00); // half of the smallest subnormal: tie to even (0)
  assert.equal(encodeE4m3(f(3 * 2 ** -10)), 0x02); // 1.5 subnormal steps: tie to even (2)
  assert.equal(encodeE4m3(f(2 ** -6 - 2 ** -11)), 0x08); // rounds up into the first normal
});

test("e2m1 encode follows the table of spec/quant.md §1.3 on every boundary", () => {
  const cases: [number, number][] = [
    [0.25, 0], [f(0.25 + 2 ** -20), 1], [0.75, 2], [f(0.75 - 2 ** -20), 1], [1.25, 2], [f(1.25 + 2 ** -20), 3],
    [1.75, 4], [2.5, 4], [f(2.5 + 2 ** -20), 5], [3.5, 6], [5, 6], [f(5 + 2 ** -20), 7], [Infinity, 7], [1e30, 7],
  ];
  for (const [v, code] of cases) {
    assert.equal(encodeE2m1(v), code, `+${v}`);
    assert.equal(encodeE2m1(-v), code | 8, `-${v}`);
  }
  assert.equal(encodeE2m1(-0), 8);
  assert.equal(encodeE2m1(NaN), 7);
  for (let n = 0; n < 16; n++) assert.equal(encodeE2m1(decodeE2m1(n)), n);
});

test("bf16 decode then encode returns every non-NaN code, and NaN encodes to 0x7FC0", () => {
  for (let b = 0; b < 65536; b++) {
    const v = decodeBf16(b);
    if (Number.isNaN(v)) continue;
    assert.equal(encodeBf16(v), b);
  }
  assert.equal(encodeBf16(NaN), 0x7fc0);
  assert.equal(encodeBf16(f32FromBits(0xffc00001)), 0x7fc0);
});

test("bf16 encode rounds to nearest even on the 16 dropped bits", () => {
  assert.equal(encodeBf16(f32FromBits(0x3f808000)), 0x3f80); // tie, even stays
  assert.equal(encodeBf16(f32FromBits(0x3f818000)), 0x3f82); // tie, odd rounds up
  assert.equal(encodeBf16(f32FromBits(0x3f808001)), 0x3f81);
  assert.equal(encodeBf16(f32FromBits(0x7f7fffff)), 0x7f80); // overflow to +Inf
  assert.equal(encodeBf16(f32FromBits(0x80000001)), 0x8000); // -subnormal rounds to -0
});

test("fp16 decode then encode returns every code, with IEEE rounding at the edges", () => {
  for (let b = 0; b < 65536; b++) {
    const v = decodeFp16(b);
    if (Number.isNaN(v)) continue;
    assert.equal(encodeFp16(f(v)), b, `0x${b.toString(16)}`);
  }
  assert.equal(encodeFp16(65520), 0x7c00);
  assert.equal(encodeFp16(f(65519.99)), 0x7bff);
  assert.equal(encodeFp16(2 ** -25), 0x0000); // tie to even (0)
  assert.equal(encodeFp16(f(3 * 2 ** -25)), 0x0002);
  assert.equal(encodeFp16(f(1 + 2 ** -11)), 0x3c00);
  assert.equal(encodeFp16(-NaN) & 0x7e00, 0x7e00);
});

test("ue8m0 decodes by the bit rule: 0 is +0, 255 is +Inf", () => {
  assert.equal(decodeUe8m0(127), 1);
  assert.equal(decodeUe8m0(0), 0);
  assert.equal(decodeUe8m0(255), Infinity);
  assert.equal(decodeUe8m0(1), 2 ** -126);
});

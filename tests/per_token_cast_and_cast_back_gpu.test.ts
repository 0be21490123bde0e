/**
 * perTokenCastAndCastBack's kernel selection and its `_r1` kernel (`tk_per_token_cast_and_cast_back__bf16_e4m3_g128_r1`,
 * one row per 512-thread block; docs/perf-notes/perf10-pcb.md) against the CPU reference, byte for byte on the whole
 * allocation (padding between rows must come back untouched): raw bf16 patterns (NaN, ±Inf, ±0, subnormals, huge
 * values), whole groups of NaN / Inf / zeros, every scale flag, widths up to the form's 8192 (dead chunks), aligned
 * row strides wider than H, one row, 0 rows, 4001 × 7168; the views it leaves to the `_g<N>` kernels (odd row stride,
 * base off 16 bytes, H > 8192, other groups, fp32, e2m1). Every launch asserts its symbol and its PDL attribute
 * (`_r1`: on while `config.pdl`; `_g<N>`: never), with config.pdl on and off; in-place launches back to back (each
 * launch must read what the previous one wrote). Main's option matrix is in elem_gpu.test.ts. Skipped without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, HostTensor, perTokenCastAndCastBack, type PerTokenCastAndCastBackOptions } from "../mod.ts";
import { config } from "../core/config.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { castAndCastBackLastLaunch, usesRowForm } from "../ops/quant/per_token_cast_and_cast_back.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, storageBytes, uploadView, withPdl } from "./gpu_util.ts";

type Opts = PerTokenCastAndCastBackOptions;
const FLAGS: [string, Partial<Opts>][] = [["plain", {}], ["roundSf", { roundSf: true }], ["e4m3Sf", { useE4m3Sf: true }]];

/**
 * A bf16 `[T, H]` view with row stride `stride` starting `offset` elements into its storage: raw 16-bit patterns
 * (every NaN payload, ±Inf, subnormals, ±0) mixed with moderate values; some groups of 128 all NaN, all ±Inf, all
 * zeros, or all subnormal. Padding holds raw patterns too.
 */
function rawBf16(rand: () => number, T: number, H: number, stride = H, offset = 0): HostTensor {
  const n = offset + (T === 0 ? 0 : (T - 1) * stride + H);
  const b = new Uint16Array(Math.max(n, 1));
  for (let i = 0; i < b.length; i++) {
    const r = rand();
    if (r < 0.4) b[i] = Math.floor(rand() * 65536);
    else b[i] = (Math.floor(rand() * 2) << 15) | ((0x3c00 + Math.floor(rand() * 0x800)) & 0x7fff); // |v| ≈ 2^-7 … 2^9
  }
  const SPECIAL = [0x7fc0, 0xffc1, 0x7f81, 0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x807f, 0x7f7f];
  for (let t = 0; t < T; t++) {
    for (let g = 0; g < H / 128; g++) {
      const kind = Math.floor(rand() * 12);
      if (kind >= SPECIAL.length) continue;
      const base = offset + t * stride + g * 128;
      for (let j = 0; j < 128; j++) b[base + j] = kind === 7 ? Math.floor(rand() * 0x80) | (Math.floor(rand() * 2) << 15) : SPECIAL[kind];
    }
  }
  return new HostTensor(b, "bf16", [T, H], [stride, 1], offset);
}

/**
 * In place on both backends; compares the whole storage. `rowForm`: whether the launch must take `_r1` (with the PDL
 * attribute while config.pdl is on) rather than `_<dtype>_<fmt>_g<N>` (never with it); both are asserted on the
 * launch header sent.
 */
function compare(x: HostTensor, o: Opts, label: string, rowForm: boolean): void {
  const cpu = new HostTensor(x.data.slice(), x.dtype, x.shape, x.strides, x.offset);
  const dx = uploadView(x);
  try {
    assert.equal(usesRowForm(dx, o.fmt, o.numPerChannels), rowForm, `${label}: form`);
    perTokenCastAndCastBack(cpu, o);
    assert.equal(perTokenCastAndCastBack(dx, o), dx, `${label}: returns x`);
    const symbol = `tk_per_token_cast_and_cast_back__${x.dtype}_${o.fmt}_g${o.numPerChannels}${rowForm ? "_r1" : ""}`;
    const want = { fn: kernelFunction("test", { kind: "cuda", index: 0 }, symbol), pdl: rowForm && config.pdl };
    assert.deepEqual(castAndCastBackLastLaunch(), want, `${label}: ${symbol}, PDL attribute ${want.pdl}`);
    assertBytesEqual(readAllocation(dx), storageBytes(cpu), label);
  } finally {
    dispose(dx);
  }
}

for (const pdl of [false, true]) {
  gpuTest(`perTokenCastAndCastBack _r1 = reference: raw bf16 patterns, groups of NaN / Inf / 0 / subnormals, every flag, H 128 … 8192, aligned strides, PDL ${pdl ? "on" : "off"} (seed ${9100 + +pdl})`, () => {
    const rand = rng(9100 + +pdl);
    withPdl(pdl, () => {
      for (const [T, H] of [[1, 128], [3, 256], [37, 640], [16, 1024], [9, 2048], [5, 4096], [33, 7168], [7, 8064], [12, 8192]]) {
        for (const stride of [H, H + 8, H + 64]) {
          const x = rawBf16(rand, T, H, stride);
          for (const [name, flags] of FLAGS) compare(x, { fmt: "e4m3", numPerChannels: 128, ...flags }, `${T}x${H}/${stride} ${name}`, true);
        }
      }
      // one row: its stride is never used (any value)
      compare(rawBf16(rand, 1, 7168, 7169), { fmt: "e4m3", numPerChannels: 128 }, "1x7168/7169", true);
    });
  });
}

for (const pdl of [true, false]) {
  gpuTest(`perTokenCastAndCastBack: views _r1 leaves to the _g<N> kernels = reference, launched without the PDL attribute, config.pdl ${pdl ? "on" : "off"} (seed ${9110 + +!pdl})`, () => {
    const rand = rng(9110 + +!pdl);
    withPdl(pdl, () => {
      for (const [name, flags] of FLAGS) {
        const o: Opts = { fmt: "e4m3", numPerChannels: 128, ...flags };
        compare(rawBf16(rand, 33, 7168, 7169), o, `odd stride ${name}`, false);
        compare(rawBf16(rand, 33, 7168, 7172), o, `8-byte stride ${name}`, false);
        compare(rawBf16(rand, 9, 7168, 7168, 1), o, `base +2 bytes ${name}`, false);
        compare(rawBf16(rand, 9, 7168, 7176, 4), o, `base +8 bytes ${name}`, false);
        compare(rawBf16(rand, 5, 8320), o, `H 8320 ${name}`, false);
        compare(rawBf16(rand, 17, 7168), { ...o, numPerChannels: 64 }, `groups of 64 ${name}`, false);
        compare(rawBf16(rand, 17, 7168), { ...o, fmt: "e2m1" }, `e2m1 ${name}`, false);
        compare(randomInput(rand, 17, 7168, "fp32"), o, `fp32 ${name}`, false);
      }
    });
  });
}

gpuTest("perTokenCastAndCastBack: config.pdl is on by default; 0 rows: no launch, x untouched", () => {
  assert.equal(config.pdl, true, "config.pdl is on by default");
  withPdl(true, () => {
    const x = new HostTensor(new Uint16Array([0x3f80, 0x7fc0]), "bf16", [0, 7168], [7168, 1]);
    const dx = uploadView(x);
    try {
      assert.equal(perTokenCastAndCastBack(dx, { fmt: "e4m3", numPerChannels: 128 }), dx);
      assertBytesEqual(readAllocation(dx), storageBytes(x), "0 rows");
    } finally {
      dispose(dx);
    }
  });
});

for (const pdl of [false, true]) {
  gpuTest(`perTokenCastAndCastBack _r1 = reference at full size: 4001 × 7168, raw patterns and the roofline's values, PDL ${pdl ? "on" : "off"} (seed ${9120 + +pdl})`, () => {
    const rand = rng(9120 + +pdl);
    withPdl(pdl, () => {
      compare(rawBf16(rand, 4001, 7168), { fmt: "e4m3", numPerChannels: 128 }, "4001x7168 raw", true);
      compare(randomInput(rand, 4001, 7168, "bf16"), { fmt: "e4m3", numPerChannels: 128 }, "4001x7168", true);
    });
  });
}

gpuTest("perTokenCastAndCastBack _r1 back to back in place (PDL on): each launch reads the previous one's writes (seed 9130)", () => {
  const rand = rng(9130);
  withPdl(true, () => {
    for (const [T, H] of [[4001, 7168], [2, 1024]]) {
      const x = rawBf16(rand, T, H);
      const cpu = new HostTensor(x.data.slice(), x.dtype, x.shape, x.strides, x.offset);
      const dx = uploadView(x) as DeviceTensor;
      try {
        // the flags change between calls, so a launch that read x before the previous launch's writes would differ
        const seq: Opts[] = [
          { fmt: "e4m3", numPerChannels: 128 },
          { fmt: "e4m3", numPerChannels: 128, roundSf: true },
          { fmt: "e4m3", numPerChannels: 128, useE4m3Sf: true },
          { fmt: "e4m3", numPerChannels: 128 },
          { fmt: "e4m3", numPerChannels: 128, roundSf: true },
        ];
        for (let rep = 0; rep < 4; rep++) {
          for (const o of seq) {
            perTokenCastAndCastBack(cpu, o);
            perTokenCastAndCastBack(dx, o);
          }
        }
        assertBytesEqual(readAllocation(dx), storageBytes(cpu), `${T}x${H}: 20 launches`);
      } finally {
        dispose(dx);
      }
    }
  });
});

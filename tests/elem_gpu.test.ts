/**
 * The CUDA kernels of the element-wise casts against the CPU reference, byte for byte on every byte of every output
 * allocation, on fresh random inputs from printed seeds: `cast` (element conversion, RN) and its stochastic form
 * (`stochasticCast`, `cast` with `stochasticRounding`), `perTokenCast` with `stochasticCast`,
 * `perTokenCastAndCastBack` (also against its conformance vectors and the device composition of its parts) and
 * `unpackFromE2m1fnX2`; statistics of stochastic rounding on the device. These ops read no value inside a device
 * tensor as an index or a count, so they have no DEVICE_VALUE condition. Skipped, and counted as skipped, without a
 * GPU.
 * @module
 */
import assert from "node:assert/strict";
import {
  cast,
  castBack,
  type DeviceTensor,
  type DType,
  HostTensor,
  perTokenCast,
  type PerTokenCastOptions,
  perTokenCastAndCastBack,
  type Quantized,
  stochasticCast,
  type Tensor,
  tensor,
  toHost,
  unpackFromE2m1fnX2,
  zeros,
} from "../mod.ts";
import { decodeBf16, decodeE4m3, decodeFp16, encodeBf16, f32FromBits } from "../core/dtype.ts";
import { alignedForm } from "../ops/quant/elem_launch.ts";
import { caseName, loadGolden, logicalBytes, opOptions } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, storageBytes, up, uploadView } from "./gpu_util.ts";

type ElemDtype = "fp32" | "bf16" | "fp16" | "e4m3";
const ELEM: readonly ElemDtype[] = ["fp32", "bf16", "fp16", "e4m3"];
const SR_PAIRS: readonly [ElemDtype, "bf16" | "fp16" | "e4m3"][] = [["fp32", "bf16"], ["fp32", "fp16"], ["fp32", "e4m3"], ["bf16", "e4m3"], ["fp16", "e4m3"]];

/** fp32 values that matter for casts: both zeros, ±Inf, a NaN, format limits, ties, subnormals of every target. */
const EDGE_F32 = [
  0, -0, Infinity, -Infinity, NaN, 448, -448, 464, 463.99, 480, 65504, 65519.99, 65520, -65536, 2 ** -6, 2 ** -7, 2 ** -9, 2 ** -10,
  2 ** -14, 2 ** -24, 2 ** -25, 3 * 2 ** -26, 2 ** -126, 2 ** -133, 2 ** -149, -(2 ** -149), 1.0625, 1.1875, 3.4e38, -3.4e38, 1 + 2 ** -8, 1 + 2 ** -11,
];

/**
 * `n` random source elements of `dtype` (storage `n + pad`, the view starts at `pad`): raw random patterns over
 * every magnitude, the edge values, quiet NaNs only in the one pattern the CPU reference keeps (fp32 0x7FC00000, bf16
 * 0x7FC0; fp16 NaNs with any payload and e4m3's two NaN codes are all canonical on both sides).
 */
function randomElements(rand: () => number, dtype: ElemDtype, n: number, pad = 0): HostTensor {
  const total = n + pad;
  const f = new Float32Array(total);
  for (let i = 0; i < total; i++) {
    const r = rand();
    if (r < 0.1) f[i] = EDGE_F32[Math.floor(rand() * EDGE_F32.length)] * (rand() < 0.5 ? 1 : -1);
    else if (r < 0.5) f[i] = f32FromBits(Math.floor(rand() * 2 ** 32));
    else f[i] = Math.fround((rand() * 2 - 1) * 2 ** (rand() * 60 - 40));
    if (f[i] !== f[i]) f[i] = NaN;
  }
  if (dtype === "fp32") {
    const u = new Uint32Array(f.buffer);
    for (let i = 0; i < total; i++) if (f[i] !== f[i]) u[i] = 0x7fc00000;
    return new HostTensor(f, dtype, [n], [1], pad);
  }
  if (dtype === "bf16") return new HostTensor(Uint16Array.from(f, (v) => encodeBf16(v)), dtype, [n], [1], pad);
  if (dtype === "fp16") return new HostTensor(Uint16Array.from(f, () => Math.floor(rand() * 65536)), dtype, [n], [1], pad);
  return new HostTensor(Uint8Array.from(f, () => Math.floor(rand() * 256)), dtype, [n], [1], pad);
}

/**
 * Runs `f` on the host tensor and on its device copy (view kept); with `withOut` (1-D `x`, `f` passing `out` on) also
 * into a preallocated device output view one element into a larger allocation (unaligned vector accesses).
 */
function compareElementwise(x: HostTensor, dtype: DType, f: (t: Tensor, out?: Tensor) => Tensor, label: string, withOut = false): void {
  const cpu = f(x) as HostTensor;
  const dx = uploadView(x);
  const gpu = f(dx);
  try {
    sameAllocation(gpu, cpu, label);
    if (!withOut || x.numel === 0) return;
    const backing = zeros([x.numel + 1], dtype, { device: 0 }) as DeviceTensor;
    const outView = backing.slice(0, 1, x.numel + 1);
    assert.equal(f(dx, outView), outView, `${label}: returns out`);
    const all = readAllocation(backing);
    const eb = all.length / (x.numel + 1);
    assert.ok(all.subarray(0, eb).every((b) => b === 0), `${label}: out view: the element before it was written`);
    assertBytesEqual(all.subarray(eb), storageBytes(cpu), `${label} (out view at +1 element)`);
    dispose(backing, outView);
  } finally {
    dispose(gpu, dx);
  }
}

const SIZES = [0, 1, 3, 4, 8, 12, 40, 1000, 4099 * 4, 65536 + 36];

// ---- cast: element conversion, round to nearest --------------------------------------------------------------

for (const from of ELEM) {
  const seed = 7100 + ELEM.indexOf(from);
  gpuTest(`cast kernel = reference: ${from} → fp32, bf16, fp16, e4m3 (RN), sizes ${SIZES}, aligned and unaligned (seed ${seed})`, () => {
    const rand = rng(seed);
    for (const to of ELEM) {
      for (const n of SIZES) {
        for (const pad of n > 64 ? [0, 1] : [0]) {
          const x = randomElements(rand, from, n, pad);
          compareElementwise(x, to, (t, out) => cast(t, { dtype: to, out }) as Tensor, `${from}→${to} n=${n} +${pad}`, true);
        }
      }
      const m = randomElements(rand, from, 6 * 35).view([6, 5, 7]);
      compareElementwise(m, to, (t) => cast(t, { dtype: to }) as Tensor, `${from}→${to} [6, 5, 7]`);
    }
  });
}

gpuTest("cast kernel = reference at full size: bf16 → e4m3 and fp32 → bf16, 4001 × 7168 (seed 7200)", () => {
  const rand = rng(7200);
  for (const [from, to] of [["bf16", "e4m3"], ["fp32", "bf16"]] as const) {
    const x = randomElements(rand, from, 4001 * 7168).view([4001, 7168]);
    compareElementwise(x, to, (t) => cast(t, { dtype: to }) as Tensor, `${from}→${to} 4001x7168`);
  }
});

// ---- stochastic rounding ----------------------------------------------------------------------------------------

for (const [from, to] of SR_PAIRS) {
  const seed = 7300 + SR_PAIRS.findIndex((p) => p[0] === from && p[1] === to);
  gpuTest(`stochasticCast kernel = reference: ${from} → ${to}, seeds and offsets, aligned and unaligned (seed ${seed})`, () => {
    const rand = rng(seed);
    for (const n of SIZES.filter((s) => s % 4 === 0)) {
      for (const [s, off] of [[0n, 0n], [12345n, 4n], [0xffffffffn, 0x1_0000_0004n]] as const) {
        for (const pad of n > 64 ? [0, 1, 4] : [0]) {
          const x = randomElements(rand, from, n, pad);
          compareElementwise(x, to, (t, out) => stochasticCast(t, { dtype: to, seed: s, offset: off, out }), `SR ${from}→${to} n=${n} seed ${s} offset ${off} +${pad}`, true);
        }
      }
      const x = randomElements(rand, from, n);
      compareElementwise(x, to, (t) => cast(t, { dtype: to, stochasticRounding: true }) as Tensor, `cast SR ${from}→${to} n=${n}`);
    }
  });
}

gpuTest("stochasticCast kernel = reference at full size: bf16 → e4m3, 4001 × 7168 (seed 7400)", () => {
  const x = randomElements(rng(7400), "bf16", 4001 * 7168).view([4001, 7168]);
  compareElementwise(x, "e4m3", (t) => stochasticCast(t, { dtype: "e4m3", seed: 99n }), "SR bf16→e4m3 4001x7168");
});

// ---- aligned-only forms (cast.cu `tk_cast__bf16_e4m3[_sr]_a`; docs/perf-notes/perf9-cast.md) ------------------------
// bf16 → e4m3 takes `_a` whenever x and out are on a chunk boundary (so the full-size tests above run it too) and the
// plain kernel otherwise; fp32 → e4m3 and fp32 → bf16 have no `_a` form and take the plain kernel either way.

const A_PAIRS: readonly [ElemDtype, "bf16" | "e4m3"][] = [["bf16", "e4m3"], ["fp32", "e4m3"], ["fp32", "bf16"]];
/** Sizes with every tail length (numel % 8), one or several grid-stride steps, and an SR-legal subset. */
const A_SIZES = [0, 1, 3, 4, 7, 8, 9, 12, 15, 40, 1000, 1004, 4099 * 4, 65536 + 36, 65536 + 39, 1048576 + 5, 3 * 1048576 + 4];

for (const [from, to] of A_PAIRS) {
  const seed = 7450 + A_PAIRS.findIndex((p) => p[0] === from && p[1] === to);
  const hasA = from === "bf16";
  const kernels = hasA ? "_a on a chunk boundary, the plain kernel off it" : "the plain kernel on and off a chunk boundary (no _a form)";
  gpuTest(`cast / stochasticCast kernels = reference: ${from} → ${to}, every tail, ${kernels} (seed ${seed})`, () => {
    const rand = rng(seed);
    for (const n of A_SIZES) {
      // pad 0 and 8 elements: x on a chunk boundary; pad 1: off it. The out view of compareElementwise is off it too.
      for (const pad of n > 64 ? [0, 8, 1] : [0]) {
        const x = randomElements(rand, from, n, pad);
        const dx = uploadView(x);
        const probe = zeros([Math.max(n, 1)], to, { device: 0 }) as DeviceTensor;
        assert.equal(alignedForm(dx, probe), hasA && pad !== 1, `${from}→${to} n=${n} +${pad}: form selection`);
        dispose(dx, probe);
        compareElementwise(x, to, (t, out) => cast(t, { dtype: to, out }) as Tensor, `${from}→${to} n=${n} +${pad}`, true);
        if (n % 4 === 0) {
          for (const [s, off] of [[0n, 0n], [0xffffffffn, 0x1_0000_0004n]] as const) {
            compareElementwise(x, to, (t, out) => stochasticCast(t, { dtype: to, seed: s, offset: off, out }), `SR ${from}→${to} n=${n} seed ${s} +${pad}`, true);
          }
        }
      }
    }
    // a multi-dimensional view and the cast option form of SR
    const m = randomElements(rand, from, 6 * 5 * 8).view([6, 5, 8]);
    compareElementwise(m, to, (t) => cast(t, { dtype: to }) as Tensor, `${from}→${to} [6, 5, 8]`);
    compareElementwise(m, to, (t) => cast(t, { dtype: to, stochasticRounding: true, seed: 3n }) as Tensor, `cast SR ${from}→${to} [6, 5, 8]`);
  });
}

gpuTest("stochasticCast on the device: chunks cast with their offsets give the bytes of the whole (seed 7401)", () => {
  const x = uploadView(randomElements(rng(7401), "fp32", 4096));
  const whole = stochasticCast(x, { dtype: "e4m3", seed: 5n }) as DeviceTensor;
  const a = stochasticCast(x.slice(0, 0, 1024), { dtype: "e4m3", seed: 5n }) as DeviceTensor;
  const b = stochasticCast(x.slice(0, 1024, 4096), { dtype: "e4m3", seed: 5n, offset: 1024n }) as DeviceTensor;
  const w = readAllocation(whole);
  assertBytesEqual(readAllocation(a), w.subarray(0, 1024), "first chunk");
  assertBytesEqual(readAllocation(b), w.subarray(1024), "second chunk");
  dispose(x, whole, a, b);
});

/** Mean and the set of codes of `n` stochastic casts of one value, decoded. */
async function srSample(v: number, from: "fp32", to: "bf16" | "fp16" | "e4m3", n: number, seed: bigint): Promise<{ mean: number; codes: Set<number> }> {
  const x = uploadView(tensor(new Float32Array(n).fill(v), [n], from));
  const y = stochasticCast(x, { dtype: to, seed }) as DeviceTensor;
  const h = await toHost(y);
  dispose(x, y);
  const d = h.data as Uint16Array | Uint8Array;
  const dec = to === "bf16" ? decodeBf16 : to === "fp16" ? decodeFp16 : decodeE4m3;
  const codes = new Set<number>();
  let sum = 0;
  for (let i = 0; i < n; i++) {
    codes.add(d[i]);
    sum += dec(d[i]);
  }
  return { mean: sum / n, codes };
}

gpuTest("stochastic rounding on the device is unbiased: the mean of 2^20 casts of one value is within 6σ of it, only the two neighbouring codes appear", async () => {
  const n = 2 ** 20;
  // v = lo + p·q with p a multiple of 2^-n: the probability of rounding up is exactly p (§7.3)
  const cases: { to: "bf16" | "fp16" | "e4m3"; lo: number; q: number; p: number }[] = [
    { to: "e4m3", lo: 1, q: 2 ** -3, p: 77 / 256 },
    { to: "e4m3", lo: -(2 ** -7), q: -(2 ** -9), p: 200 / 256 },
    { to: "e4m3", lo: 240, q: 16, p: 3 / 256 },
    { to: "bf16", lo: 1, q: 2 ** -7, p: 12345 / 65536 },
    { to: "fp16", lo: 3, q: 2 ** -9, p: 40000 / 65536 },
  ];
  for (const c of cases) {
    const v = Math.fround(c.lo + c.p * c.q);
    assert.equal(v, c.lo + c.p * c.q, "the test value is exact in binary32");
    const { mean, codes } = await srSample(v, "fp32", c.to, n, 3n);
    const sigma = Math.abs(c.q) * Math.sqrt((c.p * (1 - c.p)) / n);
    assert.ok(Math.abs(mean - v) <= 6 * sigma, `${c.to} ${v}: mean ${mean}, expected ${v} ± ${6 * sigma}`);
    assert.equal(codes.size, 2, `${c.to} ${v}: codes ${[...codes].map((x) => x.toString(16))}`);
  }
});

// ---- perTokenCast with stochasticCast ------------------------------------------------------------------------

type SfConfig = Pick<PerTokenCastOptions, "useTmaAlignedColMajorSf" | "roundSf" | "usePackedUe8m0" | "useE4m3Sf">;
const SF_CONFIGS: [string, SfConfig][] = [
  ["fp32", {}],
  ["fp32-round", { roundSf: true }],
  ["fp32-col", { useTmaAlignedColMajorSf: true }],
  ["packed-col", { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }],
  ["e4m3sf-row", { useE4m3Sf: true }],
];

/** perTokenCast with stochasticCast on both backends: data and sf allocations byte for byte; sf = the RN call's. */
function compareSrPerToken(x: HostTensor | Quantized, o: PerTokenCastOptions, label: string): void {
  const so = { ...o, stochasticCast: true };
  const [cd, cs] = perTokenCast(x, so);
  const dx = up(x);
  const [gd, gs] = perTokenCast(dx, so);
  const [, rs] = perTokenCast(dx, o);
  try {
    sameAllocation(gd, cd, `${label} data`);
    sameAllocation(gs, cs, `${label} sf`);
    assertBytesEqual(readAllocation(gs as DeviceTensor), readAllocation(rs as DeviceTensor), `${label} sf = RN sf`);
  } finally {
    dispose(gd, gs, rs, dx);
  }
}

for (const dtype of ["fp32", "bf16"] as const) {
  for (const fmt of ["e4m3", "e2m1"] as const) {
    const seed = 7500 + (dtype === "fp32" ? 0 : 10) + (fmt === "e4m3" ? 0 : 1);
    gpuTest(`perTokenCast stochasticCast kernel = reference: ${dtype} → ${fmt}, 16/32/64/128 channels and whole rows, sf layouts (seed ${seed})`, () => {
      const rand = rng(seed);
      for (const [T, H] of [[0, 128], [1, 64], [33, 576], [257, 2048], [9, 7168]]) {
        const stride = T % 2 ? H + 64 : H;
        const x = randomInput(rand, T, H, dtype, stride);
        for (const npc of [16, 32, 64, 128, H]) {
          const [name, sfo] = SF_CONFIGS[Math.floor(rand() * SF_CONFIGS.length)];
          compareSrPerToken(x, { fmt, numPerChannels: npc, ...sfo }, `${T}x${H}/${stride} ${npc} ${name}`);
        }
      }
    });
  }
}

gpuTest("perTokenCast stochasticCast kernel = reference re-quantizing e4m3 and e2m1 inputs (seed 7550)", () => {
  const rand = rng(7550);
  for (const inFmt of ["e4m3", "e2m1"] as const) {
    const [T, H] = [33, 1024];
    const codes = Uint8Array.from({ length: inFmt === "e4m3" ? T * H : (T * H) / 2 }, () => {
      const c = Math.floor(rand() * 256);
      return inFmt === "e4m3" && (c & 0x7f) === 0x7f ? c ^ 1 : c;
    });
    const data = tensor(codes, [T, inFmt === "e4m3" ? H : H / 2], inFmt === "e4m3" ? "e4m3" : "e2m1x2");
    const sf = tensor(Float32Array.from({ length: T * (H / 32) }, () => Math.fround(2 ** (rand() * 20 - 10))), [T, H / 32], "fp32");
    for (const fmt of ["e4m3", "e2m1"] as const) {
      compareSrPerToken([data, sf], { fmt, numPerChannels: 128, xBlockSize: [1, 32] }, `requant ${inFmt} → ${fmt}`);
    }
  }
});

gpuTest("perTokenCast stochasticCast kernel = reference at full size: bf16 → e4m3, 4001 × 7168, 128 channels (seed 7560)", () => {
  compareSrPerToken(randomInput(rng(7560), 4001, 7168, "bf16"), { fmt: "e4m3", numPerChannels: 128 }, "4001x7168");
});

// ---- perTokenCastAndCastBack --------------------------------------------------------------------------------

const CB_FLAGS: [string, { roundSf?: boolean; useE4m3Sf?: boolean }][] = [["plain", {}], ["roundSf", { roundSf: true }], ["e4m3Sf", { useE4m3Sf: true }]];

/** In place on both backends; compares the whole storage (padding between rows must come back untouched). */
function compareCastAndBack(x: HostTensor, o: Parameters<typeof perTokenCastAndCastBack>[1], label: string): void {
  const cpu = new HostTensor(x.data.slice(), x.dtype, x.shape, x.strides, x.offset);
  const dx = uploadView(x);
  try {
    perTokenCastAndCastBack(cpu, o);
    assert.equal(perTokenCastAndCastBack(dx, o), dx, `${label}: returns x`);
    assertBytesEqual(readAllocation(dx), storageBytes(cpu), label);
  } finally {
    dispose(dx);
  }
}

for (const dtype of ["fp32", "bf16"] as const) {
  for (const fmt of ["e4m3", "e2m1"] as const) {
    const seed = 7600 + (dtype === "fp32" ? 0 : 10) + (fmt === "e4m3" ? 0 : 1);
    gpuTest(`perTokenCastAndCastBack kernel = reference: ${dtype}, ${fmt}, 16/32/64/128 channels, plain/roundSf/e4m3Sf, strided rows (seed ${seed})`, () => {
      const rand = rng(seed);
      for (const [T, H] of [[0, 128], [1, 64], [33, 640], [257, 2048], [9, 7168]]) {
        for (const stride of T > 64 ? [H + 1] : [H, H + 64, H + 1]) {
          const x = randomInput(rand, T, H, dtype, stride);
          for (const npc of [16, 32, 64, 128].filter((n) => H % n === 0)) {
            for (const [name, flags] of CB_FLAGS) compareCastAndBack(x, { fmt, numPerChannels: npc, ...flags }, `${T}x${H}/${stride} ${npc} ${name}`);
          }
        }
      }
    });
  }
}

gpuTest("perTokenCastAndCastBack kernel = reference at full size: bf16 and fp32, e4m3 [1, 128], 4001 × 7168 (seed 7650)", () => {
  const rand = rng(7650);
  for (const dtype of ["bf16", "fp32"] as const) compareCastAndBack(randomInput(rand, 4001, 7168, dtype), { fmt: "e4m3", numPerChannels: 128 }, `${dtype} 4001x7168`);
});

gpuTest("perTokenCastAndCastBack on the device = castBack(perTokenCast(x)) on the device (seed 7660)", async () => {
  const rand = rng(7660);
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const fmt of ["e4m3", "e2m1"] as const) {
      for (const [name, flags] of CB_FLAGS) {
        const x = uploadView(randomInput(rand, 65, 1024, dtype));
        const q = perTokenCast(x, { fmt, numPerChannels: 32, ...flags });
        const back = castBack(q, { fmt: dtype, xBlockSize: [1, 32] }) as DeviceTensor;
        perTokenCastAndCastBack(x, { fmt, numPerChannels: 32, ...flags });
        assertBytesEqual(logicalBytes(await toHost(x)), logicalBytes(await toHost(back)), `${dtype} ${fmt} ${name}`);
        dispose(x, q, back);
      }
    }
  }
});

const castAndBack = loadGolden("quant", "quant_per_token_cast_and_cast_back");
gpuTest("perTokenCastAndCastBack on the device matches every conformance vector with H % numPerChannels = 0", async () => {
  for (const c of castAndBack.cases) {
    const p = c.params as { numPerChannels: number; hidden: number };
    if (p.hidden % p.numPerChannels !== 0) continue;
    const x = uploadView(castAndBack.tensors[`${c.id}.x`]);
    perTokenCastAndCastBack(x, opOptions(c) as never);
    assertBytesEqual(logicalBytes(await toHost(x)), logicalBytes(castAndBack.tensors[`${c.id}.out`]), `vector ${caseName(c)}`);
    dispose(x);
  }
});

// ---- unpackFromE2m1fnX2 ------------------------------------------------------------------------------------

gpuTest("unpackFromE2m1fnX2 kernel = reference: e2m1x2/uint8/int8, fp32/bf16, contiguous, offset, strided and transposed views (seed 7700)", () => {
  const rand = rng(7700);
  for (const src of ["e2m1x2", "uint8", "int8"] as const) {
    for (const dtype of ["fp32", "bf16"] as const) {
      const views: HostTensor[] = [];
      for (const n of [0, 1, 7, 8, 9, 4096 + 5]) {
        const b = Uint8Array.from({ length: n + 3 }, () => Math.floor(rand() * 256));
        const data = src === "int8" ? new Int8Array(b.buffer) : b;
        views.push(new HostTensor(data, src, [n], [1]), new HostTensor(data, src, [n], [1], 3));
      }
      const b = Uint8Array.from({ length: 6 * 5 * 40 }, () => Math.floor(rand() * 256));
      const data = src === "int8" ? new Int8Array(b.buffer) : b;
      const m = new HostTensor(data, src, [6, 5, 40], [200, 40, 1]);
      views.push(m, m.slice(2, 3, 37), m.slice(1, 1, 4), m.transpose(), new HostTensor(data, src, [6, 20], [40, 2]));
      views.push(new HostTensor(data, src, [4, 1, 5, 8], [50, 999, 10, 1]), new HostTensor(data, src, [3, 2, 4], [-40, 100, 1], 120));
      for (const v of views) {
        compareElementwise(v, dtype, (t) => unpackFromE2m1fnX2(t, { dtype }), `${src}→${dtype} [${v.shape}] strides [${v.strides}] +${v.offset}`);
      }
    }
  }
});

// ---- staging: host tensors with backend cuda ---------------------------------------------------------------

gpuTest("host tensors with backend cuda run the kernels and come back equal to the CPU reference (seed 7800)", () => {
  const rand = rng(7800);
  const x = randomElements(rand, "fp32", 1024);
  assertBytesEqual(storageBytes(cast(x, { dtype: "e4m3", backend: "cuda" }) as HostTensor), storageBytes(cast(x, { dtype: "e4m3" }) as HostTensor), "cast");
  assertBytesEqual(
    storageBytes(stochasticCast(x, { dtype: "bf16", seed: 1n, backend: "cuda" }) as HostTensor),
    storageBytes(stochasticCast(x, { dtype: "bf16", seed: 1n }) as HostTensor),
    "stochasticCast",
  );
  const codes = tensor(Uint8Array.from({ length: 100 }, () => Math.floor(rand() * 256)), [100], "e2m1x2");
  assertBytesEqual(storageBytes(unpackFromE2m1fnX2(codes, { backend: "cuda" }) as HostTensor), storageBytes(unpackFromE2m1fnX2(codes) as HostTensor), "unpack");
  const h = randomInput(rand, 17, 256, "bf16", 300);
  const a = new HostTensor(h.data.slice(), h.dtype, h.shape, h.strides, h.offset);
  const b = new HostTensor(h.data.slice(), h.dtype, h.shape, h.strides, h.offset);
  assert.equal(perTokenCastAndCastBack(a, { fmt: "e4m3", numPerChannels: 64, backend: "cuda" }), a);
  perTokenCastAndCastBack(b, { fmt: "e4m3", numPerChannels: 64 });
  assertBytesEqual(storageBytes(a), storageBytes(b), "perTokenCastAndCastBack (padding columns untouched)");
  const [d1, s1] = perTokenCast(h, { fmt: "e2m1", numPerChannels: 32, stochasticCast: true, backend: "cuda" }) as [HostTensor, HostTensor];
  const [d2, s2] = perTokenCast(h, { fmt: "e2m1", numPerChannels: 32, stochasticCast: true }) as [HostTensor, HostTensor];
  assertBytesEqual(storageBytes(d1), storageBytes(d2), "perTokenCast SR data");
  assertBytesEqual(storageBytes(s1), storageBytes(s2), "perTokenCast SR sf");
});

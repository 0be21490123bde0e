/**
 * The CUDA kernels of the per-channel family (perChannelCast, perChannelCastFused, perChannelCastAndTranspose,
 * batchedTransposeWeightSf) against the CPU reference, byte for byte over every byte of every output allocation
 * (token-packing padding included), on fresh random inputs from printed seeds; the compositions the spec states;
 * the conformance vectors through the device path; the guard of the device-resident gather (DESIGN §6). Skipped,
 * and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import {
  batchedTransposeWeightSf,
  createStream,
  type DeviceTensor,
  HostTensor,
  perChannelCast,
  perChannelCastAndTranspose,
  perChannelCastFused,
  perTokenCast,
  type PerTokenCastOptions,
  type Quantized,
  type Tensor,
  tensor,
  TkError,
  toDevice,
  toHost,
} from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { contiguousHost } from "../core/tensor.ts";
import { launchCount } from "../ffi/cuda.ts";
import { loadGolden, logicalBytes, opOptions } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, readAllocation, sameAllocation, storageBytes, up } from "./gpu_util.ts";

const PC = { fmt: "e4m3" } as const;
type SfCfg = { roundSf?: boolean; usePackedUe8m0?: boolean };
const SF_CFGS: [string, SfCfg][] = [["fp32", {}], ["fp32-round", { roundSf: true }], ["packed", { roundSf: true, usePackedUe8m0: true }]];

/**
 * A random `[T, H]` input for per-channel casts: each column has its own magnitude (2^-20 … 2^20), and columns
 * cycle through edge cases — all ±0, all below the amax clamp, exact e4m3 rounding ties, one 3e38 entry, sparse
 * NaN and ±Inf — so that every scale path and every code is exercised.
 */
function randomColumns(rand: () => number, T: number, H: number, dtype: "fp32" | "bf16"): HostTensor {
  const colScale = Array.from({ length: H }, () => 2 ** Math.floor(rand() * 40 - 20));
  const v = new Float32Array(T * H);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      const r = rand();
      const kind = j % 17;
      let x: number;
      if (kind === 3) x = r < 0.5 ? -0 : 0;
      else if (kind === 5) x = (r - 0.5) * 1e-30;
      else if (kind === 7) x = (Math.floor(rand() * 64) - 32) * 0.5 + 0.25;
      else if (kind === 11 && t % 97 === 5) x = r < 0.5 ? 3e38 : -3e38;
      else if (kind === 13 && t % 211 === 7) x = r < 0.3 ? NaN : r < 0.6 ? Infinity : -Infinity;
      else x = (r - 0.5) * 8 * colScale[j] * (1 + 7 * rand());
      v[t * H + j] = Math.fround(x);
    }
  }
  if (dtype === "fp32") return tensor(v, [T, H], "fp32");
  return tensor(Uint16Array.from(v, encodeBf16), [T, H], "bf16");
}

/** A quantized `[e4m3 codes, sf]` pair: a per-token cast of random values (sf layout per `o`), some codes random. */
function randomQuantized(rand: () => number, T: number, H: number, o: PerTokenCastOptions): Quantized {
  const [data, sf] = perTokenCast(randomColumns(rand, T, H, "fp32"), o);
  const d = (data as HostTensor).data as Uint8Array;
  for (let i = 0; i < d.length; i++) if (rand() < 0.01) d[i] = Math.floor(rand() * 256); // NaN codes 0x7F/0xFF too
  return [data, sf];
}

/** A gather of `n` rows from `T` input rows, about one in five negative (a zero row). */
function randomPositions(rand: () => number, n: number, T: number): HostTensor {
  return tensor(Int32Array.from({ length: n }, () => (rand() < 0.2 ? -1 - Math.floor(rand() * 3) : Math.floor(rand() * T))), [n], "int32");
}

/** Rows `pos[p]` of a contiguous 2-D host tensor (zeros for negative entries). */
function gatherRows(t: HostTensor, pos: HostTensor): HostTensor {
  const W = t.shape[1];
  const idx = pos.data as Int32Array;
  const Ctor = (t.data as Float32Array).constructor as new (n: number) => Float32Array;
  const out = new Ctor(idx.length * W);
  idx.forEach((r, p) => {
    if (r >= 0) out.set((t.data as Float32Array).subarray(r * W, r * W + W), p * W);
  });
  return tensor(out, [idx.length, W], t.dtype);
}

/** Runs a per-channel op on host tensors (the CPU reference) and on device copies; compares both allocations. */
function compare(label: string, cpu: () => Quantized, gpu: () => Quantized, inputs: unknown[]): void {
  const [cd, cs] = cpu();
  const [gd, gs] = gpu();
  try {
    sameAllocation(gd, cd, `${label} data`);
    sameAllocation(gs, cs, `${label} sf`);
    assert.deepEqual([...gd.shape, ...gd.strides, ...gs.shape, ...gs.strides], [...cd.shape, ...cd.strides, ...cs.shape, ...cs.strides], `${label} geometry`);
  } finally {
    dispose(gd, gs, cd, cs, inputs);
  }
}

// ---- perChannelCast ----------------------------------------------------------------------------------------

for (const dtype of ["fp32", "bf16"] as const) {
  for (const r of [32, 128]) {
    for (const [name, cfg] of SF_CFGS) {
      const seed = 1000 * (dtype === "fp32" ? 1 : 2) + 10 * r + SF_CFGS.findIndex((c) => c[0] === name);
      gpuTest(`perChannelCast kernel = reference: ${dtype}, numPerTokens ${r}, ${name} sf, 128x128 … 640x1152 (seed ${seed})`, () => {
        const rand = rng(seed);
        for (const [T, H] of [[128, 128], [256, 384], [640, 1152], [0, 256]]) {
          const x = randomColumns(rand, T, H, dtype);
          const o = { ...PC, numPerTokens: r, ...cfg };
          const dx = up(x) as DeviceTensor;
          compare(`${T}x${H}`, () => perChannelCast(x, o), () => perChannelCast(dx, o), [dx]);
        }
      });
    }
  }
}

gpuTest("perChannelCast kernel = reference at full size: bf16 4096x7168, numPerTokens 128 (seed 77)", () => {
  const x = randomColumns(rng(77), 4096, 7168, "bf16");
  const dx = up(x) as DeviceTensor;
  compare("4096x7168", () => perChannelCast(x, { ...PC, numPerTokens: 128 }), () => perChannelCast(dx, { ...PC, numPerTokens: 128 }), [dx]);
});

type InCfg = [string, PerTokenCastOptions["useTmaAlignedColMajorSf"], Pick<PerTokenCastOptions, "roundSf" | "usePackedUe8m0" | "useE4m3Sf">];
const IN_SF: InCfg[] = [
  ["fp32 row-major", false, {}],
  ["fp32 column-major", true, { roundSf: true }],
  ["e4m3 row-major", false, { useE4m3Sf: true }],
  ["e4m3 column-major", true, { useE4m3Sf: true }],
  ["packed row-major", false, { roundSf: true, usePackedUe8m0: true }],
  ["packed column-major", true, { roundSf: true, usePackedUe8m0: true }],
];
for (const npc of [32, 128]) {
  for (const [name, tma, sfo] of IN_SF) {
    const seed = 3000 + npc + IN_SF.findIndex((c) => c[0] === name);
    gpuTest(`perChannelCast kernel = reference on a re-quantized e4m3 input, numPerChannels ${npc}, ${name} input scales (seed ${seed})`, () => {
      const rand = rng(seed);
      for (const [T, H, r, cfg] of [[256, 512, 32, SF_CFGS[0][1]], [384, 1024, 128, SF_CFGS[2][1]], [128, 256, 128, SF_CFGS[1][1]]] as const) {
        const q = randomQuantized(rand, T, H, { fmt: "e4m3", numPerChannels: npc, useTmaAlignedColMajorSf: tma, ...sfo });
        const o = { ...PC, numPerTokens: r, numPerChannels: npc, ...cfg };
        const dq = up(q) as Quantized;
        compare(`${T}x${H} r${r}`, () => perChannelCast(q, o), () => perChannelCast(dq, o), [dq]);
      }
    });
  }
}

gpuTest("perChannelCast of bf16 = reference on every bf16 bit pattern (NaN, ±Inf, ±0, subnormals): numPerTokens 32 (base kernel) and 128 (_pa)", () => {
  // x[t][j] = pattern (t · 128 + j) ^ salt with the rows permuted, as for the transposed cast below
  const v = new Uint16Array(512 * 128).map((_, i) => ((((i >> 7) * 389) % 512) * 128 + (i & 127)) ^ 0x1234);
  const x = tensor(v, [512, 128], "bf16");
  for (const r of [32, 128]) {
    const o = { ...PC, numPerTokens: r, roundSf: r === 32 };
    const dx = up(x) as DeviceTensor;
    compare(`r${r}`, () => perChannelCast(x, o), () => perChannelCast(dx, o), [dx]);
  }
});

// ---- perChannelCastFused ---------------------------------------------------------------------------------

for (const dtype of ["fp32", "bf16", "e4m3"] as const) {
  const seed = 5000 + ["fp32", "bf16", "e4m3"].indexOf(dtype);
  gpuTest(`perChannelCastFused kernel = reference: ${dtype} input, gathers from 1, 127, 129 and 4001 tokens, partial last blocks (seed ${seed})`, () => {
    const rand = rng(seed);
    for (const [T, H, n] of [[1, 128, 16], [127, 256, 144], [129, 1024, 256], [4001, 1152, 4016], [256, 64, 48], [256, 192, 0]]) {
      if (dtype === "e4m3" && H % 128 !== 0) continue;
      for (const roundSf of [false, true]) {
        const pos = randomPositions(rand, n, T);
        const x: Tensor | Quantized = dtype === "e4m3"
          ? randomQuantized(rand, T, H, { fmt: "e4m3", numPerChannels: 128, roundSf })
          : randomColumns(rand, T, H, dtype);
        const o = { ...PC, numPerTokens: 128, roundSf, ...(dtype === "e4m3" ? { numPerChannels: 128 } : {}) };
        const dx = up(x);
        const dpos = toDevice(pos);
        compare(`${T}→${n}x${H} roundSf ${roundSf}`, () => perChannelCastFused(x, { ...o, posToToken: pos }), () => perChannelCastFused(dx, { ...o, posToToken: dpos }), [dx, dpos]);
      }
    }
  });
}

gpuTest("perChannelCastFused kernel = reference without a gather (T % 128 == 0), fp32 and bf16 (seed 5100)", () => {
  const rand = rng(5100);
  for (const dtype of ["fp32", "bf16"] as const) {
    const x = randomColumns(rand, 384, 640, dtype);
    const dx = up(x) as DeviceTensor;
    compare(dtype, () => perChannelCastFused(x, { ...PC, numPerTokens: 128 }), () => perChannelCastFused(dx, { ...PC, numPerTokens: 128 }), [dx]);
  }
});

gpuTest("perChannelCastFused kernel = reference at full size: bf16 gather of 4000 rows from 4001 x 7168 (seed 5200)", () => {
  const rand = rng(5200);
  const x = randomColumns(rand, 4001, 7168, "bf16");
  const pos = randomPositions(rand, 4000, 4001);
  const dx = up(x) as DeviceTensor;
  const dpos = toDevice(pos);
  compare("4001→4000x7168", () => perChannelCastFused(x, { ...PC, numPerTokens: 128, posToToken: pos }), () => perChannelCastFused(dx, { ...PC, numPerTokens: 128, posToToken: dpos }), [dx, dpos]);
});

gpuTest("perChannelCastFused on the device equals perChannelCast of the gathered rows on the device (seed 5300)", () => {
  const rand = rng(5300);
  for (const dtype of ["fp32", "bf16"] as const) {
    const x = randomColumns(rand, 300, 512, dtype);
    const pos = randomPositions(rand, 256, 300);
    const dx = up(x) as DeviceTensor;
    const dpos = toDevice(pos);
    const dg = up(gatherRows(x, pos)) as DeviceTensor;
    compare(`${dtype} fused vs gathered`, () => perChannelCast(dg, { ...PC, numPerTokens: 128 }), () => perChannelCastFused(dx, { ...PC, numPerTokens: 128, posToToken: dpos }), [dx, dpos, dg]);
  }
});

gpuTest("perChannelCastFused: an index ≥ T raises DEVICE_VALUE at the next sync; the row reads as zeros and nothing out of bounds is touched", async () => {
  const rand = rng(5400);
  const x = randomColumns(rand, 200, 256, "bf16");
  const pos = randomPositions(rand, 48, 200);
  const idx = pos.data as Int32Array;
  idx[3] = 200;
  idx[17] = 1 << 30;
  idx[40] = 0x7fffffff;
  const dx = up(x) as DeviceTensor;
  const dpos = toDevice(pos);
  const [d, s] = perChannelCastFused(dx, { ...PC, numPerTokens: 128, posToToken: dpos });
  await assert.rejects(toHost(d), (e: unknown) =>
    e instanceof TkError && e.code === "DEVICE_VALUE" && e.op === "perChannelCastFused" && /3 illegal value\(s\).*posToToken/.test(e.message));
  // The word was cleared; the result is the cast with those rows zero.
  const fixed = tensor(Int32Array.from(idx, (v) => (v >= 200 ? -1 : v)), [48], "int32");
  const [cd, cs] = perChannelCastFused(x, { ...PC, numPerTokens: 128, posToToken: fixed });
  sameAllocation(d, cd, "data");
  sameAllocation(s, cs, "sf");
  dispose(dx, dpos, d, s);
});

gpuTest("perChannelCastFused with an empty gather launches nothing and returns [0, H] data and [0, H] sf", () => {
  const dx = up(randomColumns(rng(5500), 128, 256, "fp32")) as DeviceTensor;
  const dpos = toDevice(tensor(new Int32Array(0), [0], "int32"));
  const before = launchCount();
  const [d, s] = perChannelCastFused(dx, { ...PC, numPerTokens: 128, posToToken: dpos });
  assert.equal(launchCount(), before);
  assert.deepEqual([[...d.shape], [...s.shape]], [[0, 256], [0, 256]]);
  dispose(dx, dpos, d, s);
});

// ---- perChannelCastAndTranspose --------------------------------------------------------------------------

for (const r of [32, 128]) {
  for (const roundSf of [false, true]) {
    const seed = 6000 + r + (roundSf ? 1 : 0);
    gpuTest(`perChannelCastAndTranspose kernel = reference: numPerTokens ${r}, roundSf ${roundSf}, H 64 … 7168 (seed ${seed})`, () => {
      const rand = rng(seed);
      for (const [T, H] of [[128, 64], [256, 192], [384, 320], [128, 7168], [0, 128]]) {
        const x = randomColumns(rand, T, H, "bf16");
        const o = { ...PC, numPerTokens: r, roundSf };
        const dx = up(x) as DeviceTensor;
        compare(`${T}x${H}`, () => perChannelCastAndTranspose(x, o), () => perChannelCastAndTranspose(dx, o), [dx]);
      }
    });
  }
}

gpuTest("perChannelCastAndTranspose = reference on every bf16 bit pattern (NaN, ±Inf, ±0, subnormals): numPerTokens 32 (base kernel) and 128 (_rt)", () => {
  // x[t][j] = pattern (t · 128 + j) ^ salt: each column holds 512 patterns, together all 65536, once with the
  // patterns in order and once with the rows permuted so that NaN and the maxima sit at other row positions
  for (const [salt, mul] of [[0, 1], [0x1234, 389]]) {
    const v = new Uint16Array(512 * 128).map((_, i) => ((((i >> 7) * mul) % 512) * 128 + (i & 127)) ^ salt);
    const x = tensor(v, [512, 128], "bf16");
    for (const r of [32, 128]) {
      const o = { ...PC, numPerTokens: r, roundSf: r === 32 };
      const dx = up(x) as DeviceTensor;
      compare(`r${r} salt ${salt}`, () => perChannelCastAndTranspose(x, o), () => perChannelCastAndTranspose(dx, o), [dx]);
    }
  }
});

gpuTest("perChannelCastAndTranspose on the device is the transpose of perChannelCast on the device (seed 6200)", async () => {
  const x = randomColumns(rng(6200), 512, 1024, "bf16");
  const dx = up(x) as DeviceTensor;
  for (const r of [32, 128]) {
    const [d, s] = perChannelCast(dx, { ...PC, numPerTokens: r, roundSf: true });
    const [dt, st] = perChannelCastAndTranspose(dx, { ...PC, numPerTokens: r, roundSf: true });
    assertBytesEqual(logicalBytes(await toHost(dt)), logicalBytes(contiguousHost((await toHost(d)).transpose())), `r${r} data`);
    assertBytesEqual(readAllocation(st as DeviceTensor), readAllocation(s as DeviceTensor), `r${r} sf`);
    dispose(d, s, dt, st);
  }
  dispose(dx);
});

// ---- staging, streams ------------------------------------------------------------------------------------

gpuTest("per-channel casts of host inputs with backend cuda equal the CPU reference; device inputs with backend cpu equal the kernel", async () => {
  const rand = rng(7000);
  const x = randomColumns(rand, 256, 384, "bf16");
  const pos = randomPositions(rand, 64, 256);
  const runs: [string, (b: "cpu" | "cuda", xx: Tensor, pp: Tensor) => Quantized][] = [
    ["perChannelCast", (backend, xx) => perChannelCast(xx, { ...PC, numPerTokens: 32, roundSf: true, usePackedUe8m0: true, backend })],
    ["perChannelCastFused", (backend, xx, pp) => perChannelCastFused(xx, { ...PC, numPerTokens: 128, posToToken: pp, backend })],
    ["perChannelCastAndTranspose", (backend, xx) => perChannelCastAndTranspose(xx, { ...PC, numPerTokens: 128, backend })],
  ];
  for (const [name, run] of runs) {
    const [cd, cs] = run("cpu", x, pos);
    const [hd, hs] = run("cuda", x, pos);
    assert.ok(hd instanceof HostTensor && hs instanceof HostTensor, `${name}: staged results come back to the host`);
    assertBytesEqual(storageBytes(hd), storageBytes(cd as HostTensor), `${name} staged data`);
    assertBytesEqual(storageBytes(hs), storageBytes(cs as HostTensor), `${name} staged sf`);
    const dx = up(x) as DeviceTensor;
    const dpos = toDevice(pos);
    const [kd, ks] = run("cuda", dx, dpos);
    const [rd, rs] = run("cpu", dx, dpos);
    assertBytesEqual(logicalBytes(await toHost(kd)), logicalBytes(await toHost(rd)), `${name} device data`);
    assertBytesEqual(logicalBytes(await toHost(ks)), logicalBytes(await toHost(rs)), `${name} device sf`);
    dispose(dx, dpos, kd, ks, rd, rs);
  }
});

gpuTest("perChannelCast runs on a created stream and writes preallocated outputs", async () => {
  const s = createStream(0);
  const x = randomColumns(rng(7100), 256, 512, "fp32");
  const dx = toDevice(x, 0, { stream: s });
  const [d0, s0] = perChannelCast(dx, { ...PC, numPerTokens: 128, stream: s });
  const [d1, s1] = perChannelCast(dx, { ...PC, numPerTokens: 128, stream: s, out: { data: d0, sf: s0 } });
  assert.ok(d1 === d0 && s1 === s0);
  await s.synchronize();
  const [cd, cs] = perChannelCast(x, { ...PC, numPerTokens: 128 });
  sameAllocation(d1, cd, "data");
  sameAllocation(s1, cs, "sf");
  dispose(dx, d0, s0);
  s[Symbol.dispose]();
});

// ---- batchedTransposeWeightSf ------------------------------------------------------------------------------

/** Random weight scales: mostly powers of two, with sign and mantissa garbage, ±0, subnormals and non-finite values. */
function randomWeightSf(rand: () => number, shape: number[]): HostTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(n).map(() => {
    const r = rand();
    if (r < 0.02) return r < 0.01 ? -0 : 0;
    if (r < 0.03) return 1e-40;
    if (r < 0.035) return r < 0.0325 ? Infinity : NaN;
    const p = 2 ** Math.floor(rand() * 60 - 30);
    return r < 0.2 ? -p * (1 + rand()) : p;
  });
  return tensor(v, shape, "fp32");
}

for (const bs of [32, 128]) {
  const seed = 8000 + bs;
  gpuTest(`batchedTransposeWeightSf kernel = reference: blockSize ${bs}, dense and grouped, transposeSf1 both ways, out reused (seed ${seed})`, () => {
    const rand = rng(seed);
    const shapes = bs === 128 ? [[2, 3], [3, 7, 5], [1, 1, 1], [56, 16], [4, 56, 16]] : [[8, 20], [2, 12, 4], [4, 4], [3, 36, 12]];
    const sfs = shapes.map((s) => randomWeightSf(rand, s));
    const tr = shapes.map((_, i) => i % 2 === 1);
    const cpu = batchedTransposeWeightSf(sfs, { blockSize: bs, transposeSf1: tr });
    const dsfs = sfs.map((s) => up(s) as DeviceTensor);
    const gpu = batchedTransposeWeightSf(dsfs, { blockSize: bs, transposeSf1: tr });
    gpu.forEach(([g0, g1], i) => {
      const [c0, c1] = cpu[i];
      sameAllocation(g0, c0, `weight ${i} sf0`);
      sameAllocation(g1, c1, `weight ${i} sf1`);
      assert.deepEqual([[...g0.shape], [...g0.strides], [...g1.shape], [...g1.strides]], [[...c0.shape], [...c0.strides], [...c1.shape], [...c1.strides]], `weight ${i} geometry`);
    });
    // rewrite in place: the pairs are overwritten with garbage-free identical contents
    const again = batchedTransposeWeightSf(dsfs, { blockSize: bs, transposeSf1: tr, out: gpu.map(([a, b]) => [a, b] as const) });
    again.forEach(([g0, g1], i) => {
      assert.ok(g0 === gpu[i][0] && g1 === gpu[i][1]);
      sameAllocation(g0, cpu[i][0], `weight ${i} sf0 (out)`);
      sameAllocation(g1, cpu[i][1], `weight ${i} sf1 (out)`);
    });
    dispose(gpu, dsfs);
  });
}

gpuTest("batchedTransposeWeightSf of host scales with backend cuda equals the CPU reference (seed 8200)", () => {
  const sfs = [randomWeightSf(rng(8200), [3, 10, 6])];
  const cpu = batchedTransposeWeightSf(sfs, { blockSize: 128, transposeSf1: [true] });
  const gpu = batchedTransposeWeightSf(sfs, { blockSize: 128, transposeSf1: [true], backend: "cuda" });
  assertBytesEqual(logicalBytes(gpu[0][0] as HostTensor), logicalBytes(cpu[0][0] as HostTensor), "sf0");
  assertBytesEqual(logicalBytes(gpu[0][1] as HostTensor), logicalBytes(cpu[0][1] as HostTensor), "sf1");
});

// ---- conformance vectors through the device path ---------------------------------------------------------

const perChannelVectors = loadGolden("quant", "quant_per_channel_cast");
gpuTest("the quant_per_channel_cast vectors through the device kernels (fused always; plain where H % 128 == 0; transposed for bf16)", async () => {
  const g = perChannelVectors;
  for (const c of g.cases) {
    const p = c.params as { hidden: number; inDtype: string };
    const o = opOptions(c) as { fmt: "e4m3"; numPerTokens: number; roundSf: boolean };
    const x = g.tensors[`${c.id}.x`];
    const dx = up(x) as DeviceTensor;
    const expectData = logicalBytes(g.tensors[`${c.id}.data`]);
    const expectSf = logicalBytes(g.tensors[`${c.id}.sf`]);
    const runs: [string, () => Quantized][] = [["fused", () => perChannelCastFused(dx, o)]];
    if (p.hidden % 128 === 0) runs.push(["plain", () => perChannelCast(dx, o)]);
    for (const [name, run] of runs) {
      const [d, s] = run();
      assertBytesEqual(logicalBytes(await toHost(d)), expectData, `${c.id} ${name} data`);
      assertBytesEqual(logicalBytes(await toHost(s)), expectSf, `${c.id} ${name} sf`);
      dispose(d, s);
    }
    if (p.inDtype === "bf16" && p.hidden % 64 === 0) {
      const [d, s] = perChannelCastAndTranspose(dx, o);
      const back = contiguousHost((await toHost(d)).transpose());
      assertBytesEqual(logicalBytes(back), expectData, `${c.id} transposed data`);
      assertBytesEqual(logicalBytes(await toHost(s)), expectSf, `${c.id} transposed sf`);
      dispose(d, s);
    }
    dispose(dx);
  }
});

const transposeVectors = loadGolden("quant", "quant_batched_transpose_weight_sf");
gpuTest("the quant_batched_transpose_weight_sf vectors through the device kernel", async () => {
  const g = transposeVectors;
  for (const c of g.cases) {
    const p = c.params as { blockSize: number; transposeSf1: boolean[]; sfShapes: number[][] };
    const dsfs = p.sfShapes.map((_, i) => up(g.tensors[`${c.id}.sfs${i}`]) as DeviceTensor);
    const res = batchedTransposeWeightSf(dsfs, { blockSize: p.blockSize, transposeSf1: p.transposeSf1 });
    assert.equal(res.length, dsfs.length);
    for (let i = 0; i < res.length; i++) {
      assertBytesEqual(logicalBytes(await toHost(res[i][0])), logicalBytes(g.tensors[`${c.id}.w${i}Sf0`]), `${c.id} w${i}Sf0`);
      assertBytesEqual(logicalBytes(await toHost(res[i][1])), logicalBytes(g.tensors[`${c.id}.w${i}Sf1`]), `${c.id} w${i}Sf1`);
    }
    dispose(res, dsfs);
  }
});

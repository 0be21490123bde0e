/**
 * The CUDA kernels of applyRotary and randn against their CPU references, byte for byte over every byte of every
 * allocation they touch (elements outside a rotated view included), on fresh random inputs from printed seeds;
 * the conformance vectors through the device path; out-of-range positions (DESIGN §6); randn's bit-identity for
 * the same (seed, offset, index) whatever the size, strides or launch shape (spec/norm-rope-rand.md §C.2, §C.4).
 * Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { encodeBf16, encodeFp16 } from "../core/dtype.ts";
import { contiguousHost, contiguousStrides, DeviceTensor, HostTensor, type Tensor, tensor, toDevice, toHost } from "../core/tensor.ts";
import { config } from "../core/config.ts";
import { launchCount } from "../ffi/cuda.ts";
import { applyRotary } from "../ops/transform/mod.ts";
import { rotaryLaunch, rotaryLaunchTuning } from "../ops/transform/rope.ts";
import { randn, randnLike, setSeed } from "../ops/rand/mod.ts";
import { randnLaunchShape } from "../ops/rand/randn.ts";
import { randnValues } from "../ops/rand/randn.ref.ts";
import { TkError } from "../core/errors.ts";
import { loadGolden } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, readAllocation, storageBytes } from "./gpu_util.ts";

type RDType = "fp32" | "bf16" | "fp16";

/** The device twin of a host view: its whole storage uploaded once, the same shape, strides and offset on it. */
function twin(h: HostTensor, whole: DeviceTensor): DeviceTensor {
  return new DeviceTensor(whole.storage, h.dtype, h.shape, h.strides, h.offset);
}

function uploadStorage(h: HostTensor): DeviceTensor {
  return toDevice(new HostTensor(h.data, h.dtype, [h.data.length], [1]));
}

/**
 * Random storage for rotated tensors: values over many binades with ±0, subnormals of the dtype, exact pairs
 * (a = b, so a·c − b·s cancels where c = s), and for fp16 magnitudes whose rotation overflows to ±Inf. No NaN or
 * Inf inputs (their NaN results have engine-dependent bits on the CPU side; the spec compares them as "both NaN").
 */
function randomStorage(rand: () => number, n: number, dtype: RDType): HostTensor {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = rand();
    const sub = dtype === "fp32" ? 2 ** -140 : dtype === "bf16" ? 2 ** -130 : 2 ** -20;
    const big = dtype === "fp16" ? 60000 : 1e30;
    if (r < 0.03) v[i] = 0;
    else if (r < 0.06) v[i] = -0;
    else if (r < 0.1) v[i] = (rand() - 0.5) * sub;
    else if (r < 0.13) v[i] = (rand() - 0.5) * 2 * big;
    else if (r < 0.25 && i > 0) v[i] = v[i - 1];
    else v[i] = (rand() - 0.5) * 2 ** Math.floor(rand() * 20 - 10);
  }
  if (dtype === "fp32") return tensor(v, [n], "fp32");
  const enc = dtype === "bf16" ? encodeBf16 : encodeFp16;
  return tensor(new Uint16Array(n).map((_, i) => enc(v[i])), [n], dtype);
}

/** A random fp32 cache [R, D] (row stride `stride`): cos/sin-like values, exact 0, ±1, c = s, subnormals. */
function randomCache(rand: () => number, R: number, D: number, stride = D): HostTensor {
  const c = new Float32Array(Math.max(0, (R - 1) * stride + D));
  for (let i = 0; i < c.length; i++) {
    const r = rand();
    c[i] = r < 0.05 ? 0 : r < 0.1 ? (rand() < 0.5 ? 1 : -1) : r < 0.13 ? 2 ** -140 : rand() * 2 - 1;
  }
  for (let row = 0; row < R; row++) if (rand() < 0.3) for (let i = 0; i < D / 2; i++) c[row * stride + D / 2 + i] = c[row * stride + i];
  return tensor(c, [R, D], "fp32", [stride, 1]);
}

interface RotaryCase {
  label: string;
  /** Storage of query (and key, when `k` views it too). */
  qs: HostTensor;
  q: HostTensor;
  ks?: HostTensor;
  k?: HostTensor;
  cache: HostTensor;
  positions?: HostTensor;
  interleaved: boolean;
  conjugate: boolean;
  seqlenOffset: number;
}

/** Runs one case on the CPU (host views, in place) and on the device; compares whole allocations. */
function compareRotary(c: RotaryCase): void {
  const dqs = uploadStorage(c.qs);
  const dks = c.ks && c.ks !== c.qs ? uploadStorage(c.ks) : null;
  const dc = toDevice(c.cache);
  const dp = c.positions ? toDevice(c.positions) : undefined;
  const dq = twin(c.q, dqs);
  const dk = c.k ? twin(c.k, dks ?? dqs) : undefined;
  try {
    const o = { interleaved: c.interleaved, conjugate: c.conjugate, seqlenOffset: c.seqlenOffset };
    applyRotary(c.q, c.cache, { ...o, key: c.k, positions: c.positions });
    const [rq, rk] = applyRotary(dq, dc, { ...o, key: dk, positions: dp });
    assert.ok(rq === dq && rk === (dk ?? null));
    assertBytesEqual(readAllocation(dq), storageBytes(c.qs), `${c.label}: query storage`);
    if (dks && c.ks) assertBytesEqual(readAllocation(dks), storageBytes(c.ks), `${c.label}: key storage`);
  } finally {
    dispose(dq, dk, dqs, dks, dc, dp);
  }
}

function positionsFor(rand: () => number, kind: "none" | "int32" | "int64", shape: number[], R: number, off: number, broadcast: boolean): HostTensor | undefined {
  if (kind === "none") return undefined;
  const n = shape.reduce((a, b) => a * b, 1);
  const vals = Array.from({ length: broadcast ? shape[1] : n }, () => Math.floor(rand() * R) - off);
  const data = kind === "int32" ? Int32Array.from(vals) : BigInt64Array.from(vals.map(BigInt));
  if (broadcast) return tensor(data, shape, kind, [0, 1]); // one row of positions for every batch
  return tensor(data, shape, kind);
}

/** A query/key pair in one of several layouts: contiguous, head-sliced, trailing slice of a wider head, unaligned. */
function makeCase(rand: () => number, label: string, dtype: RDType, D: number, four: boolean, layout: string, posKind: "none" | "int32" | "int64", interleaved: boolean, conjugate: boolean, lead: number[]): RotaryCase {
  const Hq = 1 + Math.floor(rand() * 5);
  const Hk = 1 + Math.floor(rand() * 3);
  const tokens = lead.reduce((a, b) => a * b, 1);
  const width = layout === "mla" ? D + 128 : D;
  const extraHeads = layout === "heads" ? 2 : 0;
  const shift = layout === "unaligned" ? 1 : 0;
  const qs = randomStorage(rand, tokens * (Hq + extraHeads) * width + shift + 3, dtype);
  const qFull = new HostTensor(qs.data, dtype, [...lead, Hq + extraHeads, width], contiguousStrides([...lead, Hq + extraHeads, width]), shift);
  let q = qFull.slice(-2, extraHeads / 2, extraHeads / 2 + Hq);
  if (layout === "mla") q = q.slice(-1, 128, 128 + D);
  // key: its own storage, or (layout "shared") later heads of the query's storage
  let ks: HostTensor, k: HostTensor;
  if (layout === "shared") {
    ks = qs;
    const all = new HostTensor(qs.data, dtype, [...lead, Hq + extraHeads, width], contiguousStrides([...lead, Hq + extraHeads, width]), shift);
    q = all.slice(-2, 0, Math.max(1, Hq - 1));
    k = all.slice(-2, Math.max(1, Hq - 1), Hq);
  } else {
    ks = randomStorage(rand, tokens * Hk * 2 * D + 1, dtype);
    k = new HostTensor(ks.data, dtype, [...lead, Hk, D], contiguousStrides([...lead, Hk, 2 * D]).map((s, i, a) => (i === a.length - 1 ? 1 : s)), layout === "unaligned" ? 1 : 0);
  }
  const R = 3 + Math.floor(rand() * 40);
  const S = lead[lead.length - 1];
  const off = posKind === "none" ? Math.floor(rand() * Math.max(1, R - S + 1)) : Math.floor(rand() * 5) - 2;
  const cache = randomCache(rand, Math.max(R, S + off), D, layout === "unaligned" ? D + 3 : D + (rand() < 0.5 ? 0 : 32));
  const positions = positionsFor(rand, posKind, lead, cache.shape[0], off, four && posKind !== "none" && rand() < 0.5);
  return { label, qs, q, ks, k, cache, positions, interleaved, conjugate, seqlenOffset: off };
}

const LAYOUTS = ["contiguous", "heads", "mla", "unaligned", "shared"];
for (const dtype of ["fp32", "bf16", "fp16"] as const) {
  for (const D of [32, 64, 128, 256]) {
    const seed = 7000 + D * 3 + (dtype === "fp32" ? 0 : dtype === "bf16" ? 1 : 2);
    gpuTest(`applyRotary kernel = reference: ${dtype}, D ${D}, every pairing × conjugate × positions × rank × layout (seed ${seed})`, () => {
      const rand = rng(seed);
      for (const interleaved of [false, true]) {
        for (const conjugate of [false, true]) {
          for (const posKind of ["none", "int32", "int64"] as const) {
            for (const four of [false, true]) {
              for (const layout of LAYOUTS) {
                const lead = four ? [1 + Math.floor(rand() * 3), 1 + Math.floor(rand() * 9)] : [1 + Math.floor(rand() * 17)];
                const label = `seed ${seed} ${dtype} D${D} il=${interleaved} conj=${conjugate} pos=${posKind} ${four ? "4-D" : "3-D"} ${layout} lead ${lead}`;
                compareRotary(makeCase(rand, label, dtype, D, four, layout, posKind, interleaved, conjugate, lead));
              }
            }
          }
        }
      }
      // medium shapes: many tokens and heads (several token passes per block, several head passes per thread)
      for (const [lead, layout] of [[[300], "contiguous"], [[3, 129], "mla"], [[257], "unaligned"]] as [number[], string][]) {
        const c = makeCase(rand, `seed ${seed} ${dtype} D${D} medium ${lead} ${layout}`, dtype, D, lead.length === 2, layout, "int64", rand() < 0.5, false, lead);
        compareRotary(c);
      }
    });
  }
}

gpuTest("applyRotary kernel = reference at full size: MLA [4001, 32, 192] bf16 trailing 64, [4001, 16, 128] fp16, [2001, 16, 256] fp32", () => {
  const rand = rng(4001);
  const samples: [RDType, number, number, number, number, boolean][] = [
    ["bf16", 4001, 32, 192, 64, true],
    ["fp16", 4001, 16, 128, 128, false],
    ["fp32", 2001, 16, 256, 256, true],
  ];
  for (const [dtype, T, H, width, D, interleaved] of samples) {
    const qs = randomStorage(rand, T * H * width, dtype);
    const q = new HostTensor(qs.data, dtype, [T, H, width], [H * width, width, 1]).slice(-1, width - D, width);
    const ks = randomStorage(rand, T * D, dtype);
    const k = new HostTensor(ks.data, dtype, [T, 1, D], [D, D, 1]);
    const cache = randomCache(rand, 8192, D);
    const positions = tensor(BigInt64Array.from({ length: T }, () => BigInt(Math.floor(rand() * 8192))), [T], "int64");
    compareRotary({ label: `full ${dtype} [${T}, ${H}, ${width}] D ${D}`, qs, q, ks, k, cache, positions, interleaved, conjugate: false, seqlenOffset: 0 });
  }
});

gpuTest("applyRotary bf16 with NaN and ±Inf inputs: every non-NaN result = reference, every NaN result 0x7FC0 (both pairings, seed 7700)", () => {
  // the kernel rounds bf16 pairs with the hardware conversion and fixes NaN halves to 0x7FC0 (encode_bf16's NaN)
  const rand = rng(7700);
  const T = 96, H = 8, D = 64;
  for (const interleaved of [false, true]) {
    const qs = randomStorage(rand, T * H * D, "bf16");
    const bits = qs.data as Uint16Array;
    const specials = [0x7fc0, 0xffc0, 0x7f81, 0xffff, 0x7f80, 0xff80];
    for (let i = 0; i < bits.length; i++) if (rand() < 0.02) bits[i] = specials[Math.floor(rand() * specials.length)];
    const q = new HostTensor(qs.data, "bf16", [T, H, D], [H * D, D, 1]);
    const cache = randomCache(rand, T, D);
    const dqs = uploadStorage(qs);
    const dc = toDevice(cache);
    const dq = twin(q, dqs);
    try {
      applyRotary(q, cache, { interleaved });
      applyRotary(dq, dc, { interleaved });
      const got = new Uint16Array(readAllocation(dq).buffer.slice(0));
      let nans = 0;
      for (let i = 0; i < bits.length; i++) {
        const want = bits[i];
        const isNan = (want & 0x7fff) > 0x7f80;
        if (isNan) nans++;
        assert.equal(got[i], isNan ? 0x7fc0 : want, `il=${interleaved} element ${i}: got 0x${got[i].toString(16)}, reference 0x${want.toString(16)}`);
      }
      assert.ok(nans > 0, "the case produces NaN results");
    } finally {
      dispose(dq, dqs, dc);
    }
  }
});

/**
 * The shipped kernel under both settings of its launch tuning (rotaryLaunchTuning: the L2::128B hint on the x loads,
 * and the driver's shared-memory carveout) on many-head views: the bench's MLA view (the other 128 of each 192-wide
 * head must stay bit-identical), NeoX contiguous, lanes with 2 and 3 passes per token, an unaligned view (the
 * synchronous staging), 4-D with broadcast positions, conjugate; more tokens than resident blocks, so the slot ring
 * wraps many times.
 */
gpuTest("applyRotary with and without the L2::128B hint, our carveout and the driver's = reference on many-head views, every pairing, unaligned and 4-D (seed 7800)", () => {
  const rand = rng(7800);
  const settings: [RDType, boolean, number][] = [["bf16", true, 100], ["bf16", false, -1], ["fp16", true, -1]];
  // [lead, heads, width (rotated: the trailing D), D, shift (elements; 1 = unaligned), positions]
  const shapes: [number[], number, number, number, number, "int32" | "int64" | "none"][] = [
    // 1 token per block and ≥ 1400 tokens: ≥ 3 tokens per resident block (3 · SMs of them) on an H200 or a B200
    [[1400], 128, 192, 64, 0, "int32"], // the bench's MLA view
    [[1400], 128, 64, 64, 0, "int64"], // NeoX contiguous
    [[2, 700], 65, 128, 128, 0, "int32"], // L = 32: lanes 0 (3 passes) and 31 (2 passes); 4-D, broadcast positions
    [[1400], 33, 256, 256, 0, "none"], // L = 16: 3 and 2 passes per token
    [[900], 128, 64, 64, 1, "int64"], // unaligned view: element-wise staging
  ];
  const stores = new Map<string, HostTensor>();
  const shape0 = (lead: number[], H: number, width: number) => [...lead, H, width].join("x");
  try {
    for (const [dtype, l2Line, carveout] of settings) {
      rotaryLaunchTuning.l2Line = l2Line;
      rotaryLaunchTuning.carveout = carveout;
      for (const [lead, H, width, D, shift, posKind] of shapes) {
        for (const interleaved of [false, true]) {
          const tokens = lead.reduce((a, b) => a * b, 1);
          // one random storage per (dtype, shape), copied for each setting and pairing (the big ones take seconds)
          const key = `${dtype} ${shape0(lead, H, width)} ${shift}`;
          if (!stores.has(key)) stores.set(key, randomStorage(rand, tokens * H * width + shift, dtype));
          const base = stores.get(key)!;
          const qs = new HostTensor(base.data.slice(), dtype, base.shape, base.strides);
          const shape = [...lead, H, width];
          const q = new HostTensor(qs.data, dtype, shape, contiguousStrides(shape), shift).slice(-1, width - D, width);
          const R = 64 + Math.floor(rand() * 200);
          const cache = randomCache(rand, Math.max(R, lead[lead.length - 1]), D);
          const off = posKind === "none" ? 0 : 1;
          const positions = positionsFor(rand, posKind, lead, cache.shape[0], off, lead.length === 2);
          const conjugate = rand() < 0.5;
          const label = `seed 7800 ${dtype} l2 ${l2Line} carveout ${carveout} [${shape}] D${D} shift ${shift} pos=${posKind} il=${interleaved} conj=${conjugate}`;
          compareRotary({ label, qs, q, cache, positions, interleaved, conjugate, seqlenOffset: off });
        }
      }
    }
  } finally {
    rotaryLaunchTuning.carveout = 100;
    rotaryLaunchTuning.l2Line = true;
  }
  // the grid: one pass of teams per token up to the 3 blocks per SM that fit
  assert.equal(rotaryLaunch(132, 8192, 128, 64, "bf16").grid, 396);
  assert.equal(rotaryLaunch(132, 10, 1, 64, "bf16").grid, 1);
});

gpuTest("applyRotary: an out-of-range position leaves its token unchanged and raises DEVICE_VALUE at the next sync, once per token", async () => {
  const rand = rng(31337);
  for (const kind of ["int32", "int64"] as const) {
    const T = 37, H = 5, D = 64, R = 50, off = 3;
    const qs = randomStorage(rand, T * H * D, "bf16");
    const ks = randomStorage(rand, T * D, "bf16");
    const q = new HostTensor(qs.data, "bf16", [T, H, D], [H * D, D, 1]);
    const k = new HostTensor(ks.data, "bf16", [T, 1, D], [D, D, 1]);
    const cache = randomCache(rand, R, D);
    const good = Array.from({ length: T }, () => Math.floor(rand() * R) - off);
    const badVals = kind === "int32" ? [-4, R - off, 2 ** 31 - 1, -(2 ** 31)] : [-4, R - off, 2 ** 53, -(2 ** 60)];
    const badAt = [0, 5, 17, 36];
    const vals = good.slice();
    badAt.forEach((t, i) => (vals[t] = badVals[i]));
    const data = kind === "int32" ? Int32Array.from(vals) : BigInt64Array.from(vals.map(BigInt));
    const positions = tensor(data, [T], kind);
    // Expected: the reference on the good tokens (bad ones pointed at row 0), then the bad tokens' input bytes.
    const eq = contiguousHost(q), ek = contiguousHost(k);
    const safe = tensor(kind === "int32" ? Int32Array.from(vals.map((v, t) => (badAt.includes(t) ? -off : v))) : BigInt64Array.from(vals.map((v, t) => BigInt(badAt.includes(t) ? -off : v))), [T], kind);
    applyRotary(eq, cache, { key: ek, positions: safe, seqlenOffset: off });
    for (const t of badAt) {
      (eq.data as Uint16Array).set((qs.data as Uint16Array).subarray(t * H * D, (t + 1) * H * D), t * H * D);
      (ek.data as Uint16Array).set((ks.data as Uint16Array).subarray(t * D, (t + 1) * D), t * D);
    }
    const dq = toDevice(q), dk = toDevice(k), dc = toDevice(cache), dp = toDevice(positions);
    applyRotary(dq, dc, { key: dk, positions: dp, seqlenOffset: off });
    await assert.rejects(toHost(dq), (e: unknown) =>
      e instanceof TkError && e.code === "DEVICE_VALUE" && e.op === "applyRotary" && /4 illegal value\(s\).*outside the cache rows/.test(e.message));
    // The word was cleared by that sync: both tensors now read back.
    assertBytesEqual(readAllocation(dq), storageBytes(eq), `${kind}: query`);
    assertBytesEqual(readAllocation(dk), storageBytes(ek), `${kind}: key`);
    // A valid call afterwards runs clean.
    const dsafe = toDevice(safe);
    applyRotary(dq, dc, { positions: dsafe, seqlenOffset: off });
    await toHost(dq);
    dispose(dq, dk, dc, dp, dsafe);
  }
});

gpuTest("applyRotary: empty query and key launch nothing; host tensors on backend cuda and device tensors on backend cpu give the reference's bytes", async () => {
  const rand = rng(99);
  const cache = randomCache(rand, 16, 64);
  const dc = toDevice(cache);
  const n = launchCount();
  const empty = toDevice(tensor(new Uint16Array(0), [0, 4, 64], "bf16"));
  applyRotary(empty, dc, { key: toDevice(tensor(new Uint16Array(0), [0, 1, 64], "bf16")) });
  assert.equal(launchCount(), n);
  const qs = randomStorage(rand, 9 * 3 * 192, "bf16");
  const view = (s: HostTensor) => new HostTensor(s.data, "bf16", [9, 3, 192], [576, 192, 1]).slice(-1, 128, 192);
  const ref = contiguousHost(qs);
  applyRotary(view(ref), cache, { interleaved: true, seqlenOffset: 2 });
  const forced = contiguousHost(qs);
  applyRotary(view(forced), cache, { interleaved: true, seqlenOffset: 2, backend: "cuda" });
  assertBytesEqual(storageBytes(forced), storageBytes(ref), "host tensors, backend cuda");
  const whole = uploadStorage(qs);
  const dv = twin(view(qs), whole);
  applyRotary(dv, dc, { interleaved: true, seqlenOffset: 2, backend: "cpu" });
  assertBytesEqual(readAllocation(dv), storageBytes(ref), "device tensors, backend cpu");
  dispose(dv, whole, dc, empty);
  await Promise.resolve();
});

{
  const g = loadGolden("norm", "rope");
  gpuTest("applyRotary kernel = reference on every case of the rope vectors", () => {
    for (const c of g.cases) {
      const t = (r: string) => g.tensors[`${c.id}.${r}`];
      const p = c.params as { dim: number; interleaved: boolean; conjugate: boolean; seqlenOffset: number; sliceStart?: number };
      const qs = contiguousHost(t("query"));
      const flat = new HostTensor(qs.data, qs.dtype, [qs.data.length], [1]);
      const q = p.sliceStart !== undefined ? qs.slice(-1, p.sliceStart, p.sliceStart + p.dim) : qs;
      const positions = c.inputs.includes("positions") ? t("positions") : undefined;
      compareRotary({ label: `vector ${c.id}`, qs: flat, q, cache: t("cosSin"), positions, interleaved: p.interleaved, conjugate: p.conjugate, seqlenOffset: p.seqlenOffset });
    }
  });
}

// ---- randn ---------------------------------------------------------------------------------------------------

const M64 = (1n << 64n) - 1n;

function sameAsReference(gpu: Tensor, seed: bigint, offset: bigint, label: string): void {
  const cpu = randn([...gpu.shape], { seed, offset, dtype: gpu.dtype as RDType });
  assertBytesEqual(readAllocation(gpu as DeviceTensor), storageBytes(cpu as HostTensor), label);
}

gpuTest("randn kernel = reference on 2^24 fp32 elements (compared in chunks of 2^20)", () => {
  const n = 1 << 24;
  const seed = M64, offset = 7n;
  const g = randn([n], { seed, offset, device: { kind: "cuda", index: 0 } }) as DeviceTensor;
  const bytes = new Uint32Array(readAllocation(g).buffer);
  const chunk = 1 << 20;
  const z = new Float64Array(chunk);
  for (let s = 0; s < n; s += chunk) {
    randnValues(seed, offset, s, chunk, z);
    const want = new Uint32Array(new Float32Array(z).buffer);
    for (let i = 0; i < chunk; i++) {
      if (bytes[s + i] !== want[i]) assert.fail(`element ${s + i}: got 0x${bytes[s + i].toString(16)}, expected 0x${want[i].toString(16)}`);
    }
  }
  dispose(g);
});

gpuTest("randn kernel = reference on 2^24 bf16 elements (the randnLike bf16 path)", () => {
  const g = randn([1 << 24], { seed: 0x9e3779b97f4a7c15n, offset: 3n, dtype: "bf16", device: { kind: "cuda", index: 0 } });
  sameAsReference(g, 0x9e3779b97f4a7c15n, 3n, "bf16 2^24");
  dispose(g);
});

gpuTest("randn kernel = reference for odd sizes, every dtype and several (seed, offset) streams, the known answers included", () => {
  const dev = { kind: "cuda" as const, index: 0 };
  for (const [seed, offset] of [[0n, 0n], [67280421310721n, 1n], [M64, M64], [0x0123456789abcdefn, 3n]] as [bigint, bigint][]) {
    for (const dtype of ["fp32", "bf16", "fp16"] as const) {
      for (const shape of [[0], [1], [3], [5], [2, 3, 7], [4097], [100003]]) {
        const g = randn(shape, { seed, offset, dtype, device: dev });
        sameAsReference(g, seed, offset, `seed ${seed} offset ${offset} ${dtype} [${shape}]`);
        dispose(g);
      }
    }
  }
  const k = randn([8], { seed: 0n, device: dev });
  assert.equal(Array.from(new Uint32Array(readAllocation(k as DeviceTensor).buffer), (v) => v.toString(16)).join(" "), "3f7dbb33 bf6cb6b0 bf1e1b9f bef6d1b2 be1d5357 3e392a6d 3f54ec98 3e4a2da3");
  dispose(k);
});

gpuTest("randn bits do not depend on the launch shape or the SM count", () => {
  const n = 300007;
  const ref = randn([n], { seed: 5n, offset: 9n, device: { kind: "cuda", index: 0 } }) as DeviceTensor;
  const want = readAllocation(ref);
  try {
    // block.x < 33 too: the kernel's 33-entry ln 2 table is then filled in several strides per thread
    for (const [grid, block] of [[1, 32], [7, 64], [1000, 256], [3, 96], [5, 1], [2, 17]]) {
      randnLaunchShape.grid = grid;
      randnLaunchShape.block = block;
      const g = randn([n], { seed: 5n, offset: 9n, device: { kind: "cuda", index: 0 } }) as DeviceTensor;
      assertBytesEqual(readAllocation(g), want, `grid ${grid} block ${block}`);
      dispose(g);
    }
    randnLaunchShape.grid = 0;
    randnLaunchShape.block = 0;
    for (const sms of [1, 7]) {
      config.numSms = sms;
      const g = randn([n], { seed: 5n, offset: 9n, device: { kind: "cuda", index: 0 } }) as DeviceTensor;
      assertBytesEqual(readAllocation(g), want, `numSms ${sms}`);
      dispose(g);
    }
  } finally {
    randnLaunchShape.grid = 0;
    randnLaunchShape.block = 0;
    config.numSms = null;
  }
  sameAsReference(ref, 5n, 9n, "default launch");
  dispose(ref);
});

gpuTest("randn writes strided and unaligned device outs in row-major logical order, leaving the rest of the allocation alone", () => {
  const dev = { kind: "cuda" as const, index: 0 };
  for (const dtype of ["fp32", "bf16", "fp16"] as const) {
    const fill = (n: number) => dtype === "fp32" ? tensor(new Float32Array(n).fill(-7), [n], "fp32") : tensor(new Uint16Array(n).fill(0xabcd), [n], dtype);
    const views: [string, (s: DeviceTensor) => DeviceTensor, number[]][] = [
      ["transposed", (s) => new DeviceTensor(s.storage, dtype, [13, 11], [1, 13]), [13, 11]],
      ["row-sliced", (s) => new DeviceTensor(s.storage, dtype, [9, 5, 3], [40, 6, 2], 1), [9, 5, 3]],
      ["unaligned contiguous", (s) => new DeviceTensor(s.storage, dtype, [3, 101], [101, 1], 1), [3, 101]],
      ["size-1 dims and merges", (s) => new DeviceTensor(s.storage, dtype, [1, 4, 1, 6, 5], [999, 60, 7, 10, 2], 3), [1, 4, 1, 6, 5]],
    ];
    for (const [name, make, shape] of views) {
      const host = fill(400);
      const whole = uploadStorage(host);
      const out = make(whole);
      const r = randn(shape, { seed: 11n, offset: 2n, dtype, out, device: dev });
      assert.equal(r, out);
      // expected: the host storage with the same view written by the reference
      const hv = new HostTensor(host.data, dtype, out.shape, out.strides, out.offset);
      randn(shape, { seed: 11n, offset: 2n, dtype, out: hv });
      assertBytesEqual(readAllocation(out), storageBytes(host), `${dtype} ${name}`);
      dispose(out, whole);
    }
  }
  const big = toDevice(tensor(new Float32Array(2 ** 8), [2 ** 8], "fp32"));
  const seven = new DeviceTensor(big.storage, "fp32", [2, 2, 2, 2, 2, 2, 2], [1, 128, 2, 64, 4, 32, 8]);
  assert.throws(() => randn([2, 2, 2, 2, 2, 2, 2], { seed: 1n, out: seven }), (e: unknown) => e instanceof TkError && e.code === "UNSUPPORTED" && e.arg === "out");
  dispose(seven, big);
});

gpuTest("unseeded device calls follow the global state like host calls; randnLike and the staged backends give the same bits", async () => {
  const dev = { kind: "cuda" as const, index: 0 };
  setSeed(4242);
  const a = randn([1000], { device: dev });
  const b = randnLike(a, {});
  sameAsReference(a, 4242n, 0n, "first unseeded call");
  sameAsReference(b, 4242n, 1n, "second unseeded call (randnLike)");
  assert.ok(b instanceof DeviceTensor && b.isContiguous());
  setSeed(67280421310721);
  const forced = randn([2, 500], { seed: 3n, dtype: "bf16", backend: "cuda" });
  assert.ok(forced instanceof HostTensor);
  assertBytesEqual(storageBytes(forced), storageBytes(randn([2, 500], { seed: 3n, dtype: "bf16" }) as HostTensor), "host result, backend cuda");
  const staged = randn([777], { seed: 3n, dtype: "fp16", device: dev, backend: "cpu" });
  assert.ok(staged instanceof DeviceTensor);
  sameAsReference(staged, 3n, 0n, "device result, backend cpu");
  const n = launchCount();
  const e = randn([0, 5], { seed: 1n, device: dev });
  assert.equal(launchCount(), n);
  assert.deepEqual([...(await toHost(e)).shape], [0, 5]);
  dispose(a, b, staged, e);
});

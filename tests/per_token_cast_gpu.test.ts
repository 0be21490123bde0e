/**
 * The CUDA kernels of the per-token cast family against the CPU reference, byte for byte on every byte of every
 * output allocation (layout padding included), on fresh random inputs from printed seeds; and against the
 * conformance vectors. Also the device runtime (copies, streams, device info) and the device error word
 * (DESIGN §6). Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import {
  castBack,
  createStream,
  deviceInfo,
  DeviceTensor,
  HostTensor,
  perTokenCast,
  perTokenCastBack,
  type PerTokenCastOptions,
  perTokenCastWithPrecomputedSf,
  perTokenCastWithSfOnly,
  type Quantized,
  tensor,
  TkError,
  toDevice,
  toHost,
  zeros,
} from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { guardSelftest } from "../ops/runtime/guard_selftest.ts";
import { launchCount } from "../ffi/cuda.ts";
import { config } from "../core/config.ts";
import { deviceRuntime } from "../core/tensor.ts";
import { perTokenLastLaunch } from "../ops/quant/per_token_cast.ts";
import { caseInput, caseName, checkQuantized, loadGolden, logicalBytes, opOptions } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, samePair, SF_LAYOUTS, storageBytes, up, uploadView, withPdl } from "./gpu_util.ts";
import { nanQuadRows, ptcFn, withSpecials, withSrEdges } from "./per_token_rows.ts";

const SF_CONFIGS = SF_LAYOUTS;
const TOKENS = [0, 1, 33, 257];
const HIDDEN = [576, 2048, 7168];

/** Runs one cast on both backends and compares data and sf allocations byte for byte. */
function compareCast(x: HostTensor | Quantized, o: PerTokenCastOptions, label: string): void {
  const c = perTokenCast(x, o);
  const dx = up(x);
  try {
    samePair(perTokenCast(dx, o), c, label);
  } finally {
    dispose(dx);
  }
}

gpuTest("device info names an sm_90a/sm_100a device whose kernels ship", () => {
  const info = deviceInfo(0);
  console.log(`device 0: ${info.name}, ${info.arch}, ${info.smCount} SMs, ${(info.totalMemory / 2 ** 30).toFixed(0)} GiB`);
  assert.ok(info.smCount > 0 && info.totalMemory > 0 && info.freeMemory > 0);
  assert.ok(info.kernelsAvailable, `no kernels for ${info.arch}`);
});

gpuTest("host → device → host copies are exact, strided views stay strided, zeros are zero", async () => {
  const h = tensor(new Float32Array(1000).map((_, i) => i * 1.5 - 7), [10, 100], "fp32");
  const d = toDevice(h);
  const back = await toHost(d);
  assertBytesEqual(logicalBytes(back), logicalBytes(h), "round trip");
  const view = d.slice(1, 10, 30);
  const vb = await toHost(view);
  assertBytesEqual(logicalBytes(vb), logicalBytes(h.slice(1, 10, 30)), "strided view");
  const z = zeros([5, 7], "bf16", { device: 0 }) as DeviceTensor;
  assert.ok(readAllocation(z).every((b) => b === 0));
  dispose(d, view, z);
  await assert.rejects(toHost(d), (e: unknown) => e instanceof TkError && e.code === "DISPOSED");
});

gpuTest("ops run on a created stream and the stream synchronises", async () => {
  const s = createStream(0);
  const x = toDevice(randomInput(rng(7), 64, 2048, "bf16"), 0, { stream: s });
  const [d, f] = perTokenCast(x, { fmt: "e4m3", numPerChannels: 128, stream: s });
  await s.synchronize();
  const [cd, cf] = perTokenCast(await toHost(x), { fmt: "e4m3", numPerChannels: 128 });
  sameAllocation(d, cd, "stream data");
  sameAllocation(f, cf, "stream sf");
  dispose(x, d, f);
  s[Symbol.dispose]();
});

gpuTest("a kernel that meets an illegal device value clamps its access and the next sync throws DEVICE_VALUE", async () => {
  const src = toDevice(tensor(new Float32Array([10, 20, 30, 40]), [4], "fp32"));
  const idx = toDevice(tensor(new Int32Array([3, 0, 4, -1, 2, 1 << 30]), [6], "int32"));
  const out = guardSelftest(idx, src);
  await assert.rejects(toHost(out), (e: unknown) =>
    e instanceof TkError && e.code === "DEVICE_VALUE" && e.op === "guardSelftest" && /3 illegal value\(s\).*index out of range/.test(e.message));
  // The word was cleared: the same buffer now reads back, with 0 where indices were out of range.
  const h = await toHost(out);
  assert.deepEqual([...(h.data as Float32Array)], [40, 10, 0, 0, 30, 0]);
  const ok = guardSelftest(toDevice(tensor(new Int32Array([0, 1]), [2], "int32")), src);
  assert.deepEqual([...((await toHost(ok)).data as Float32Array)], [10, 20]);
  dispose(src, idx, out, ok);
});

for (const dtype of ["fp32", "bf16"] as const) {
  for (const fmt of ["e4m3", "e2m1"] as const) {
    for (const npc of [16, 32, 64, 128]) {
      for (const [sfName, sfo] of SF_CONFIGS) {
        const seed = (dtype === "fp32" ? 1 : 2) * 100000 + (fmt === "e4m3" ? 1 : 2) * 10000 + npc * 10 + SF_CONFIGS.findIndex((c) => c[0] === sfName);
        gpuTest(`perTokenCast kernel = reference: ${dtype} → ${fmt}, ${npc} channels, ${sfName} sf, tokens ${TOKENS}, hidden ${HIDDEN} (seed ${seed})`, () => {
          const rand = rng(seed);
          for (const T of TOKENS) {
            for (const H of HIDDEN) {
              const stride = T % 2 ? H + 64 : H;
              compareCast(randomInput(rand, T, H, dtype, stride), { fmt, numPerChannels: npc, ...sfo }, `${T}x${H}/${stride}`);
            }
          }
        });
      }
    }
  }
}

for (const dtype of ["fp32", "bf16"] as const) {
  gpuTest(`perTokenCast kernel = reference with one scale per row (numPerChannels = H), ${dtype}`, () => {
    const rand = rng(dtype === "fp32" ? 31 : 32);
    for (const [T, H] of [[1, 192], [33, 640], [257, 7168], [5, 16384]]) {
      for (const fmt of ["e4m3", "e2m1"] as const) {
        for (const [, sfo] of SF_CONFIGS.slice(0, 6)) compareCast(randomInput(rand, T, H, dtype, H + 64), { fmt, numPerChannels: H, ...sfo }, `row ${T}x${H}`);
      }
    }
  });
}

/** A random quantized input with scales in a given layout. */
function randomQuantized(rand: () => number, T: number, H: number, inFmt: "e4m3" | "e2m1", bs: [number, number], layout: string): Quantized {
  const codes = new Uint8Array(inFmt === "e4m3" ? T * H : (T * H) / 2);
  for (let i = 0; i < codes.length; i++) {
    let c = Math.floor(rand() * 256);
    if (inFmt === "e4m3" && (c & 0x7f) === 0x7f) c ^= 1; // finite codes
    codes[i] = c;
  }
  const data = tensor(codes, [T, inFmt === "e4m3" ? H : H / 2], inFmt === "e4m3" ? "e4m3" : "e2m1x2");
  const nbm = Math.ceil(T / bs[0]);
  const nbk = Math.ceil(H / bs[1]);
  const packed = layout.startsWith("packed");
  const cols = packed ? Math.ceil(nbk / 4) : nbk;
  const colMajor = layout.endsWith("col");
  const elem = layout.startsWith("e4m3") ? 16 : 4;
  const p = colMajor ? Math.max(1, Math.ceil(nbm / elem) * elem) : 0;
  const n = colMajor ? p * cols : nbm * cols;
  const strides = colMajor ? [1, p] : [cols, 1];
  let sf: HostTensor;
  if (packed) {
    const w = new Int32Array(n);
    for (let i = 0; i < n; i++) w[i] = (Math.floor(rand() * 40 + 100) | (Math.floor(rand() * 40 + 100) << 8) | (Math.floor(rand() * 40 + 100) << 16) | (Math.floor(rand() * 40 + 100) << 24));
    sf = tensor(w, [nbm, cols], "int32", strides);
  } else if (layout.startsWith("e4m3")) {
    const b = new Uint8Array(n).map(() => Math.floor(rand() * 0x7e) + 1);
    sf = tensor(b, [nbm, cols], "e4m3", strides);
  } else {
    const f = new Float32Array(n).map(() => Math.fround(2 ** (rand() * 40 - 20) * (rand() < 0.05 ? 1e30 : 1)));
    sf = tensor(f, [nbm, cols], "fp32", strides);
  }
  return [data, sf];
}

const REQUANT_LAYOUTS = ["fp32-row", "fp32-col", "packed-row", "packed-col", "e4m3-row", "e4m3-col"];
for (const inFmt of ["e4m3", "e2m1"] as const) {
  for (const bs of [[1, 16], [1, 32], [1, 64], [1, 128], [32, 32], [128, 128], [32, 128]] as [number, number][]) {
    gpuTest(`perTokenCast kernel = reference re-quantizing ${inFmt} input with blocks ${bs}, every input sf layout and output config`, () => {
      const rand = rng(1000 + bs[0] * 7 + bs[1] + (inFmt === "e4m3" ? 0 : 500));
      for (const layout of REQUANT_LAYOUTS) {
        for (const [T, H] of [[1, 128], [33, 576], [257, 2048]]) {
          const x = randomQuantized(rand, T, H, inFmt, bs, layout);
          for (const fmt of ["e4m3", "e2m1"] as const) {
            for (const npc of [32, 128]) {
              const [, sfo] = SF_CONFIGS[Math.floor(rand() * SF_CONFIGS.length)];
              compareCast(x, { fmt, numPerChannels: npc, xBlockSize: bs, ...sfo }, `${layout} ${T}x${H} → ${fmt}/${npc}`);
            }
          }
        }
      }
    });
  }
}

gpuTest("perTokenCast kernel = reference at full size: 4001 and 8001 tokens × 7168, strided rows included", () => {
  const rand = rng(4242);
  const sample: [number, "fp32" | "bf16", PerTokenCastOptions, number][] = [
    [4001, "bf16", { fmt: "e4m3", numPerChannels: 128 }, 7168],
    [8001, "bf16", { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }, 7168 + 128],
    [4001, "fp32", { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true }, 7168 + 64],
    [8001, "fp32", { fmt: "e4m3", numPerChannels: 32, useTmaAlignedColMajorSf: true }, 7168],
    [4001, "bf16", { fmt: "e2m1", numPerChannels: 32, roundSf: true }, 8192],
  ];
  for (const [T, dtype, o, stride] of sample) compareCast(randomInput(rand, T, 7168, dtype, stride), o, `${T}x7168 ${JSON.stringify(o)}`);
});

gpuTest("perTokenCastWithSfOnly and perTokenCastWithPrecomputedSf kernels = reference", () => {
  const rand = rng(99);
  for (const [T, H] of [[1, 64], [33, 576], [257, 7168]]) {
    for (const dtype of ["fp32", "bf16"] as const) {
      const x = randomInput(rand, T, H, dtype, H + 64);
      const dx = uploadView(x);
      for (const fmt of ["e4m3", "e2m1"] as const) {
        for (const [name, sfo] of SF_CONFIGS) {
          const o = { fmt, numPerChannels: 32, ...sfo };
          const c = perTokenCastWithSfOnly(x, o);
          const g = perTokenCastWithSfOnly(dx, o);
          sameAllocation(g, c, `sf-only ${name} ${T}x${H}`);
          dispose(g);
        }
        for (const e4m3Sf of [false, true]) {
          const sf = perTokenCastWithSfOnly(x, { fmt, numPerChannels: 64, useE4m3Sf: e4m3Sf });
          const o = { fmt, numPerChannels: 64, useE4m3Sf: e4m3Sf };
          const c = perTokenCastWithPrecomputedSf(x, sf, o);
          const dsf = uploadView(sf as HostTensor);
          const g = perTokenCastWithPrecomputedSf(dx, dsf, o);
          sameAllocation(g, c, `precomputed e4m3Sf=${e4m3Sf} ${T}x${H}`);
          dispose(g, dsf);
        }
      }
      dispose(dx);
    }
  }
});

// groups 0: one scale per row (numPerChannels = H; 576 and 7168 are not powers of two)
gpuTest("perTokenCastBack kernel = reference for every scale layout, 16–128 channels and whole rows", () => {
  const rand = rng(77);
  for (const inFmt of ["e4m3", "e2m1"] as const) {
    for (const groups of [16, 32, 64, 128, 0]) {
      for (const layout of REQUANT_LAYOUTS) {
        for (const [T, H] of [[1, 128], [33, 576], [257, 7168]]) {
          const npc = groups === 0 ? H : groups;
          const x = randomQuantized(rand, T, H, inFmt, [1, npc], layout);
          const dx = up(x) as Quantized;
          for (const fmt of ["fp32", "bf16"] as const) {
            const c = perTokenCastBack(x, { fmt, numPerChannels: npc });
            const g = perTokenCastBack(dx, { fmt, numPerChannels: npc });
            sameAllocation(g, c, `${inFmt}/${npc} ${layout} ${T}x${H} → ${fmt}`);
            dispose(g);
          }
          dispose(dx);
        }
      }
    }
  }
});

gpuTest("preallocated outputs are written in place and no allocation is returned", () => {
  const x = randomInput(rng(5), 300, 2048, "bf16");
  const dx = uploadView(x);
  const data = zeros([300, 2048], "e4m3", { device: 0 }) as DeviceTensor;
  const sf = zeros([300, 16], "fp32", { device: 0 }) as DeviceTensor;
  const [d, s] = perTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, out: { data, sf } });
  assert.equal(d, data);
  assert.equal(s, sf);
  const [cd, cs] = perTokenCast(x, { fmt: "e4m3", numPerChannels: 128 });
  sameAllocation(data, cd, "out data");
  sameAllocation(sf, cs, "out sf");
  dispose(dx, data, sf);
});

gpuTest("host inputs with backend 'cuda' and device inputs with backend 'cpu' give the reference's bytes", async () => {
  const x = randomInput(rng(6), 40, 576, "fp32", 640);
  const o = { fmt: "e2m1", numPerChannels: 32, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const;
  const [cd, cs] = perTokenCast(x, o);
  const [hd, hs] = perTokenCast(x, { ...o, backend: "cuda" });
  assert.ok(hd instanceof HostTensor && hs instanceof HostTensor);
  assertBytesEqual(logicalBytes(hd as HostTensor), logicalBytes(cd as HostTensor), "staged to cuda: data");
  assertBytesEqual(logicalBytes(hs as HostTensor), logicalBytes(cs as HostTensor), "staged to cuda: sf");
  const dx = uploadView(x);
  const [dd, ds] = perTokenCast(dx, { ...o, backend: "cpu" });
  assert.ok(dd instanceof DeviceTensor && ds instanceof DeviceTensor);
  assertBytesEqual(logicalBytes(await toHost(dd)), logicalBytes(cd as HostTensor), "staged to cpu: data");
  dispose(dx, dd, ds);
});

gpuTest("0 tokens launch nothing and return empty outputs in the requested layout", () => {
  const dx = toDevice(tensor(new Uint16Array(0), [0, 512], "bf16"));
  const n = launchCount();
  const [d, s] = perTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true });
  assert.equal(launchCount(), n);
  assert.deepEqual([...d.shape], [0, 512]);
  assert.deepEqual([...s.shape], [0, 4]);
  assert.deepEqual([...s.strides], [1, 1]);
  dispose(dx, d, s);
});

const goldenFiles = ["quant_per_token_cast", "quant_per_token_cast_requant"] as const;
for (const name of goldenFiles) {
  const g = loadGolden("quant", name);
  gpuTest(`perTokenCast kernels match every case of ${name}`, async () => {
    for (const c of g.cases) {
      const x = caseInput(g, c);
      const dx = up(x as HostTensor | Quantized);
      const [d, s] = perTokenCast(dx, opOptions(c) as never);
      checkQuantized(g, c, await toHost(d), await toHost(s), `gpu ${caseName(c)}`);
      dispose(dx, d, s);
    }
  });
}

{
  const g = loadGolden("quant", "quant_cast_back");
  gpuTest("perTokenCastBack kernels match every per-token case of quant_cast_back", async () => {
    for (const c of g.cases) {
      const bs = c.params.xBlockSize as [number, number];
      if (bs[0] !== 1) continue;
      const dx = up(caseInput(g, c) as Quantized) as Quantized;
      const out = perTokenCastBack(dx, { fmt: c.params.fmt as "fp32" | "bf16", numPerChannels: bs[1] });
      assertBytesEqual(logicalBytes(await toHost(out)), logicalBytes(g.tensors[`${c.id}.out`]), `gpu ${c.id} out`);
      dispose(dx, out);
    }
  });
}

gpuTest("repeated calls with one options object follow every change to it, and still refuse bad values", async () => {
  const rand = rng(555);
  const hx = randomInput(rand, 65, 1024, "bf16");
  const hy = randomInput(rand, 65, 1024, "bf16");
  const x = uploadView(hx);
  const y = uploadView(hy);
  const o: PerTokenCastOptions = { fmt: "e4m3", numPerChannels: 128 };
  const check = (dx: DeviceTensor, h: HostTensor, label: string) => {
    for (let i = 0; i < 3; i++) { // the 2nd and 3rd call take the replay path
      const [gd, gs] = perTokenCast(dx, o);
      const [cd, cs] = perTokenCast(h, { ...o, out: undefined });
      sameAllocation(gd, cd, `${label} #${i} data`);
      sameAllocation(gs, cs, `${label} #${i} sf`);
      dispose(gd === o.out?.data ? null : gd, gs);
    }
  };
  check(x, hx, "initial");
  check(y, hy, "other input");
  o.numPerChannels = 32;
  check(y, hy, "numPerChannels 32");
  o.roundSf = true;
  check(y, hy, "roundSf");
  o.usePackedUe8m0 = true;
  o.useTmaAlignedColMajorSf = true;
  check(y, hy, "packed col-major");
  o.fmt = "e2m1";
  check(x, hx, "e2m1");
  const outData = zeros([65, 512], "e2m1x2", { device: 0 }) as DeviceTensor;
  o.out = { data: outData };
  check(x, hx, "out.data");
  o.out = undefined;
  o.numPerChannels = 48;
  assert.throws(() => perTokenCast(x, o), (e: unknown) => e instanceof TkError && e.arg === "numPerChannels");
  o.numPerChannels = 32;
  check(x, hx, "valid again");
  (o as unknown as Record<string, unknown>).numPerChannel = 32;
  assert.throws(() => perTokenCast(x, o), (e: unknown) => e instanceof TkError && e.arg === "numPerChannel");
  delete (o as unknown as Record<string, unknown>).numPerChannel;
  const [d1, s1] = perTokenCast(x, o);
  dispose(d1, s1);
  x.dispose();
  assert.throws(() => perTokenCast(x, o), (e: unknown) => e instanceof TkError && e.code === "DISPOSED");
  dispose(y, outData);
  await Promise.resolve();
});

/** Random per-channel scales `[⌈T/r⌉, H]`: fp32 row-major, or UE8M0 bytes token-packed into int32 `[⌈nbm/4⌉, H]`. */
function perChannelScales(rand: () => number, T: number, H: number, r: number, packed: boolean): HostTensor {
  const nbm = Math.ceil(T / r);
  if (!packed) return tensor(new Float32Array(nbm * H).map(() => Math.fround(2 ** (rand() * 30 - 15))), [nbm, H], "fp32");
  const rows = Math.ceil(nbm / 4);
  const w = new Int32Array(rows * H);
  for (let p = 0; p < rows; p++) {
    for (let k = 0; k < H; k++) {
      let word = 0;
      for (let i = 0; i < 4 && 4 * p + i < nbm; i++) word |= (Math.floor(rand() * 40) + 100) << (8 * i);
      w[p * H + k] = word;
    }
  }
  return tensor(w, [rows, H], "int32");
}

gpuTest("castBack kernel = reference for per-block and per-channel blocks, every scale layout", () => {
  const rand = rng(8080);
  for (const inFmt of ["e4m3", "e2m1"] as const) {
    for (const [T, H] of [[1, 576], [33, 2048], [257, 7168]]) {
      for (const bs of [[32, 32], [128, 128], [32, 128], [128, 32]] as [number, number][]) {
        for (const layout of REQUANT_LAYOUTS) {
          const x = randomQuantized(rand, T, H, inFmt, bs, layout);
          const dx = up(x) as Quantized;
          for (const fmt of ["fp32", "bf16"] as const) {
            const c = castBack(x, { fmt, xBlockSize: bs });
            const g = castBack(dx, { fmt, xBlockSize: bs });
            sameAllocation(g, c, `${inFmt} [${bs}] ${layout} ${T}x${H} → ${fmt}`);
            dispose(g);
          }
          dispose(dx);
        }
      }
      for (const r of [32, 128]) {
        for (const packed of [false, true]) {
          const data = randomQuantized(rand, T, H, inFmt, [1, 128], "fp32-row")[0] as HostTensor;
          const x: Quantized = [data, perChannelScales(rand, T, H, r, packed)];
          const dx = up(x) as Quantized;
          for (const fmt of ["fp32", "bf16"] as const) {
            const c = castBack(x, { fmt, xBlockSize: [r, 1] });
            const g = castBack(dx, { fmt, xBlockSize: [r, 1] });
            sameAllocation(g, c, `${inFmt} [${r}, 1] ${packed ? "token-packed" : "fp32"} ${T}x${H} → ${fmt}`);
            dispose(g);
          }
          dispose(dx);
        }
      }
    }
  }
});

// The packed-pair e2m1 paths (common/e2m1_fast.cuh) at their edges: bf16 subnormal inputs scaled by up to 2^126
// and products below 2^-126 (the bf16x2 arithmetic must keep subnormals), NaN and ±Inf (the scalar fallback),
// values on and one ulp next to e2m1 rounding ties, inverse scales that are and are not powers of two.
gpuTest("perTokenCastWithPrecomputedSf → e2m1 kernel = reference for subnormal, tie, NaN and infinite values and power-of-two scales (seed 4711)", () => {
  const rand = rng(4711);
  const T = 24, H = 512;
  const bits = new Uint16Array(T * H);
  const ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6, 7];
  for (let i = 0; i < bits.length; i++) {
    const r = rand();
    const sign = rand() < 0.5 ? 0x8000 : 0;
    if (r < 0.25) bits[i] = sign | Math.floor(rand() * 0x80); // bf16 subnormal (or ±0)
    else if (r < 0.27) bits[i] = [0x7fc0, 0xffc1, 0x7f80, 0xff80][Math.floor(rand() * 4)]; // NaN, ±Inf
    else if (r < 0.6) bits[i] = sign | (encodeBf16(ties[Math.floor(rand() * ties.length)]) + Math.floor(rand() * 3) - 1); // a tie, ± 1 ulp
    else bits[i] = encodeBf16((rand() * 2 - 1) * 2 ** (rand() * 40 - 20));
  }
  // rows t < exps.length: scale 2^exps[t], and the first half of the row holds ties (± 1 ulp) times that scale
  const exps = [-126, -125, -120, -100, -60, -8, 0, 1, 3, 60, 100, 126];
  for (let t = 0; t < exps.length; t++) {
    for (let j = 0; j < H / 2; j++) bits[t * H + j] = encodeBf16(ties[j % ties.length] * 2 ** exps[t]) + ((j >> 4) % 3) - 1;
  }
  const sf = new Float32Array(T * (H / 32)).map((_, i) => {
    const t = Math.floor(i / (H / 32));
    return t < exps.length ? 2 ** exps[t] : Math.fround(2 ** (rand() * 20 - 10) * (1 + rand()));
  });
  const x = tensor(bits, [T, H], "bf16");
  const s = tensor(sf, [T, H / 32], "fp32");
  const o = { fmt: "e2m1", numPerChannels: 32 } as const;
  const c = perTokenCastWithPrecomputedSf(x, s, o);
  const dx = uploadView(x), ds = uploadView(s);
  const g = perTokenCastWithPrecomputedSf(dx, ds, o);
  sameAllocation(g, c, "e2m1 precomputed edges");
  dispose(dx, ds, g);
});

/**
 * bf16 rows holding every bit pattern: `order` "natural" (aligned chunks of 8 consecutive patterns: no finite
 * pattern shares a chunk with a NaN / ±Inf one, so every finite pattern takes the packed encoders), "shuffled"
 * (random groups), or "anchored": group g's first element sets the scale (a bf16 magnitude sweeping every exponent
 * and mantissa), the others are the patterns with their exponent capped at the anchor's (every sign and mantissa
 * at every exponent below the scale).
 */
function allBf16Rows(rand: () => number, order: "natural" | "shuffled" | "anchored", H: number, npc: number): HostTensor {
  const n = 0x10000;
  const p = new Uint16Array(n).map((_, i) => i);
  if (order === "shuffled") {
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      const t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
  }
  if (order !== "anchored") return tensor(p, [n / H, H], "bf16");
  const out = new Uint16Array(n + (n / (npc - 1) + 1) * npc);
  let k = 0, g = 0;
  for (let i = 0; i < out.length; i++) {
    if (i % npc === 0) {
      const e = g % 0xff, m = Math.floor(g / 0xff) % 0x80; // exponents 0..254, mantissas stepping
      out[i] = (g & 1 ? 0x8000 : 0) | (e << 7) | m;
      g++;
      continue;
    }
    const a = out[i - (i % npc)] & 0x7fff;
    let v = p[k++ % n];
    const ve = (v >> 7) & 0xff;
    if (ve === 0xff) v = (v & 0x807f) | (Math.min(0xfe, a >> 7) << 7); // NaN / Inf patterns → finite ones
    if ((v & 0x7fff) > a) v = (v & 0x807f) | (((a >> 7) & 0xff) << 7); // at most the anchor's exponent
    if ((v & 0x7fff) > a) v = (v & 0x8000) | a;
    out[i] = v;
  }
  const rows = Math.floor(out.length / H);
  return tensor(out.subarray(0, rows * H), [rows, H], "bf16");
}

// Both views here are 16-byte aligned: the roundSf layouts with groups of 32 take `_g32_mxw` (round 26,
// perf26-fp4.md) and NVFP4 `_g16_nvw` (round 29, perf29-nvfp4.md; column-major sf `_g16_nvc`, round 30), all with
// the NaN-propagating amax (NaN / ±Inf lanes in the natural and shuffled orders; `_u4sca` and `_u4`, the forms they
// replace, are checked on every pattern with the knobs off in fp4_26 / nvfp4_29; round 17's `_g16_lw` left in
// trim32), the others `_u4`, roundSf with groups of 16, 64 and 128 included (docs/perf-notes/perf7-fp4.md).
gpuTest("perTokenCast bf16 → e2m1 (_u4sca and _u4) = reference on every bf16 bit pattern: natural, shuffled and anchored rows, NVFP4 and MXFP4 scales (seed 7310)", () => {
  const rand = rng(7310);
  const layouts: [string, PerTokenCastOptions][] = [
    ["nvfp4 e4m3-row", { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true }],
    ["nvfp4 e4m3-col", { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true, useTmaAlignedColMajorSf: true }],
    ["mxfp4 packed-row", { fmt: "e2m1", numPerChannels: 32, roundSf: true, usePackedUe8m0: true }],
    ["mxfp4 packed-col", { fmt: "e2m1", numPerChannels: 32, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true }],
    ["fp32 sf g32", { fmt: "e2m1", numPerChannels: 32 }],
    ["round fp32 g32", { fmt: "e2m1", numPerChannels: 32, roundSf: true }],
    ["round fp32-col g32", { fmt: "e2m1", numPerChannels: 32, roundSf: true, useTmaAlignedColMajorSf: true }],
    ["round fp32 g64", { fmt: "e2m1", numPerChannels: 64, roundSf: true }],
    ["round fp32 g16", { fmt: "e2m1", numPerChannels: 16, roundSf: true }],
    ["packed-col g128", { fmt: "e2m1", numPerChannels: 128, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true }],
  ];
  for (const order of ["natural", "shuffled", "anchored"] as const) {
    for (const [name, o] of layouts) {
      const x = allBf16Rows(rand, order, 4096, o.numPerChannels);
      compareCast(x, o, `${order} ${name}`);
      // the same rows as a strided view (row stride 4096 + 64) with a partial last row set
      const T = x.shape[0], H = 4096 - 64;
      const sv = tensor(x.data as Uint16Array, [T, H], "bf16", [4096, 1]);
      compareCast(sv, o, `${order} ${name} strided ${T}x${H}`);
    }
  }
});

gpuTest("castBack e2m1 → bf16 kernel = reference with power-of-two scales whose products are bf16 subnormals or overflow (seed 4712)", () => {
  const rand = rng(4712);
  const T = 33, H = 1024;
  const data = tensor(new Uint8Array((T * H) / 2).map(() => Math.floor(rand() * 256)), [T, H / 2], "e2m1x2");
  const sf = new Float32Array(T * (H / 32)).map(() => {
    const r = rand();
    if (r < 0.05) return rand() < 0.5 ? 0 : -0;
    const v = 2 ** (-126 + Math.floor(rand() * 30));
    return r < 0.1 ? -v : r < 0.15 ? 2 ** (100 + Math.floor(rand() * 28)) : v; // 2^100..2^127: some products overflow
  });
  const x: Quantized = [data, tensor(sf, [T, H / 32], "fp32")];
  const dx = up(x) as Quantized;
  const c = castBack(x, { fmt: "bf16", xBlockSize: [1, 32] });
  const g = castBack(dx, { fmt: "bf16", xBlockSize: [1, 32] });
  sameAllocation(g, c, "e2m1 → bf16 subnormal products");
  dispose(dx, g);
});

{
  const g = loadGolden("quant", "quant_cast_back");
  gpuTest("castBack kernels match every case of quant_cast_back", async () => {
    for (const c of g.cases) {
      const dx = up(caseInput(g, c) as Quantized) as Quantized;
      const out = castBack(dx, { fmt: c.params.fmt as "fp32" | "bf16", xBlockSize: c.params.xBlockSize as [number, number] });
      assertBytesEqual(logicalBytes(await toHost(out)), logicalBytes(g.tensors[`${c.id}.out`]), `gpu ${c.id} out`);
      dispose(dx, out);
    }
  });
}

/**
 * The default L2 hint of castBack / perTokenCastBack (ops/quant/cast_back.ts: `.L2::256B` on the segmented kernels'
 * code loads for e4m3 → bf16, no bit otherwise) changes no byte: one CPU reference per case, on the segmented kernels
 * (e4m3 → bf16, H ≥ 2048: one item per block; more rows than one wave) and on the row-team ones (which ignore the
 * bits, or take none).
 */
gpuTest("perTokenCastBack and castBack kernels = reference with the default L2 hint (seed 5153)", () => {
  const rand = rng(5153);
  const backs: [number, number, "e4m3" | "e2m1", [number, number], string, "fp32" | "bf16"][] = [
    [600, 7168, "e4m3", [1, 128], "fp32-row", "bf16"], // segmented, .L2::256B
    [600, 7168, "e4m3", [1, 128], "packed-col", "bf16"],
    [257, 7168, "e4m3", [128, 128], "fp32-row", "bf16"],
    [257, 2048, "e4m3", [32, 32], "e4m3-col", "bf16"],
    [257, 7168, "e4m3", [128, 128], "fp32-col", "fp32"], // row-team kernels (no bit)
    [33, 2048, "e2m1", [1, 32], "packed-row", "bf16"],
  ];
  for (const [T, H, inFmt, bs, layout, fmt] of backs) {
    const x = randomQuantized(rand, T, H, inFmt, bs, layout);
    const c = castBack(x, { fmt, xBlockSize: bs });
    const cTok = bs[0] === 1 ? perTokenCastBack(x, { fmt, numPerChannels: bs[1] }) : null;
    const dx = up(x) as Quantized;
    try {
      const label = `${inFmt} [${bs}] ${layout} ${T}x${H} → ${fmt}`;
      const g = castBack(dx, { fmt, xBlockSize: bs });
      sameAllocation(g, c, `castBack ${label}`);
      dispose(g);
      if (cTok) {
        const gt = perTokenCastBack(dx, { fmt, numPerChannels: bs[1] });
        sameAllocation(gt, cTok, `perTokenCastBack ${label}`);
        dispose(gt);
      }
    } finally {
      dispose(dx);
    }
  }
});

gpuTest("perTokenCastWithSfOnly kernels (_sor4: e4m3, groups 32 and 128; _g<N> / _u4 in mode 1 otherwise) = reference: every sf layout, fp32/bf16 → e4m3/e2m1, groups 16–128, tails, strided and unaligned rows, 0 rows, specials (seed 7001)", () => {
  const rand = rng(7001);
  // [T, H, row stride, element offset]: 0 rows; one 64-wide row; unaligned stride (element loads); T % 4 ≠ 0 under
  // the column-major padding; H whose last unit is partial (576, 2048 and 7168 chunks against 512-chunk units)
  const shapes: [number, number, number, number][] = [[0, 576, 576, 0], [1, 64, 64, 0], [3, 576, 577, 1], [33, 7168, 7168 + 64, 0], [130, 2048, 2048, 0], [257, 7168, 7168, 0]];
  for (const [T, H, stride, off] of shapes) {
    for (const dtype of ["fp32", "bf16"] as const) {
      let x = withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, dtype, stride));
      if (off > 0) x = x.slice(0, 0, T).slice(1, off, H + off) as HostTensor;
      const dx = uploadView(x);
      try {
        for (const fmt of ["e4m3", "e2m1"] as const) {
          for (const npc of [16, 32, 64, 128]) {
            for (const [name, sfo] of SF_LAYOUTS) {
              const o = { fmt, numPerChannels: npc, ...sfo };
              const c = perTokenCastWithSfOnly(x, o);
              const g = perTokenCastWithSfOnly(dx, o);
              try {
                sameAllocation(g, c, `sf-only ${dtype} → ${fmt} ${npc} ${name} ${T}x${H} stride ${stride} offset ${off}`);
              } finally {
                dispose(g);
              }
            }
          }
        }
      } finally {
        dispose(dx);
      }
    }
  }
});

gpuTest("perTokenCastWithSfOnly _sor4 at full size (8001 row groups: each block walks several, the grid wraps): 8001 × 7168 bf16, groups of 128 with fp32 and packed column-major sf, groups of 32 with packed row-major sf (seed 7002)", () => {
  const rand = rng(7002);
  const x = randomInput(rand, 8001, 7168, "bf16");
  const dx = uploadView(x);
  try {
    const opts = [
      { fmt: "e4m3", numPerChannels: 128 },
      { fmt: "e4m3", numPerChannels: 128, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true },
      { fmt: "e4m3", numPerChannels: 32, roundSf: true, usePackedUe8m0: true },
    ] as const;
    for (const o of opts) {
      const c = perTokenCastWithSfOnly(x, o);
      const g = perTokenCastWithSfOnly(dx, o);
      try {
        sameAllocation(g, c, `sf-only 8001x7168 ${JSON.stringify(o)}`);
      } finally {
        dispose(g);
      }
    }
  } finally {
    dispose(dx);
  }
});

gpuTest("perTokenCast _pkl (packed UE8M0 sf with an L2 evict_last policy; other layouts the _g<N> kernels) = reference: fp32/bf16 → e4m3, groups 32 and 128, every sf layout, tails, several rows per block, strided and unaligned rows, 0 rows, specials, long rows (seed 7003)", () => {
  const rand = rng(7003);
  // [T, H, row stride, element offset]: 4001 × 576 bf16 walks ~4 rows per team with two teams a block; 8001 × 7168
  // ~8 rows per block; H = 73728 at N = 32: 576 sf words a row
  const shapes: [number, number, number, number][] = [[0, 576, 576, 0], [1, 64, 64, 0], [3, 576, 577, 1], [33, 7168, 7168 + 64, 0], [130, 2048, 2048, 0], [4001, 576, 576, 0], [3, 73728, 73728, 0]];
  const big: [number, number, number, number] = [8001, 7168, 7168 + 128, 0];
  for (const [T, H, stride, off] of [...shapes, big]) {
    for (const dtype of ["fp32", "bf16"] as const) {
      if (T === big[0] && dtype === "fp32") continue;
      let x = withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, dtype, stride));
      if (off > 0) x = x.slice(0, 0, T).slice(1, off, H + off) as HostTensor;
      const dx = uploadView(x);
      try {
        for (const npc of [32, 128]) {
          for (const [name, sfo] of SF_LAYOUTS) {
            if (T === big[0] && ((name !== "packed-col" && name !== "packed-row") || npc !== 128)) continue;
            const o = { fmt: "e4m3", numPerChannels: npc, ...sfo } as const;
            samePair(perTokenCast(dx, o), perTokenCast(x, o), `${dtype} ${npc} ${name} ${T}x${H} stride ${stride} offset ${off}`);
          }
        }
      } finally {
        dispose(dx);
      }
    }
  }
});

/**
 * perTokenCastWithSfOnly's aligned-only `_g128_sor4_a` (the default for bf16 views whose base and row stride are
 * multiples of 16 bytes; docs/perf-notes/perf9-ptc.md): bf16 → e4m3, groups of 128, every scale layout (fp32 row /
 * column-major with and without roundSf, packed UE8M0 row / column-major, e4m3 scales), tails (H = 64: one partial
 * unit; 576 / 2048 / 7168: partial last units; T % 4 ≠ 0 under the column-major padding; several rows per block and
 * the grid wrapping at 8001 rows), specials, 0 rows; views whose x base or row stride is not a multiple of 16 bytes
 * fall back to `_g128_sor4` (and give the same bytes); x at a 16-byte offset takes `_a`. Each launch's symbol is
 * checked (perTokenLastLaunch).
 */
gpuTest("perTokenCastWithSfOnly _g128_sor4_a (aligned bf16 views) = reference: bf16 → e4m3 groups of 128, every sf layout, tails, specials, 0 rows, 16-byte-offset views, unaligned views falling back to _g128_sor4, the symbol each view takes (seed 9001)", () => {
  const rand = rng(9001);
  // [T, H, row stride, element offset]: stride 577 (1154 bytes) and offsets 1 / 4 (2 / 8 bytes): unaligned, fall back;
  // offset 8 (16 bytes) and stride 7168 + 64: aligned, `_a`
  const shapes: [number, number, number, number][] = [
    [0, 576, 576, 0], [1, 64, 64, 0], [3, 576, 577, 1], [5, 2048, 2048 + 8, 4], [7, 2048, 2048 + 8, 8], [33, 7168, 7168 + 64, 0],
    [130, 2048, 2048, 0], [4001, 576, 576, 0], [257, 7168, 7168, 0], [8001, 7168, 7168 + 128, 0],
  ];
  for (const [T, H, stride, off] of shapes) {
    let x = withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, "bf16", stride));
    if (off > 0) x = x.slice(0, 0, T).slice(1, off, H + off) as HostTensor;
    const dx = uploadView(x);
    const aligned = off % 8 === 0 && stride % 8 === 0; // 16 bytes of bf16
    try {
      for (const [name, sfo] of SF_LAYOUTS) {
        if (T === 8001 && name !== "fp32" && name !== "packed-col") continue;
        const o = { fmt: "e4m3", numPerChannels: 128, ...sfo } as const;
        const label = `_sor4_a bf16 128 ${name} ${T}x${H} stride ${stride} offset ${off}`;
        const cs = perTokenCastWithSfOnly(x, o);
        const gs = perTokenCastWithSfOnly(dx, o);
        try {
          if (T > 0) assert.equal(perTokenLastLaunch().fn, ptcFn(aligned ? "bf16_e4m3_g128_sor4_a" : "bf16_e4m3_g128_sor4"), `${label}: symbol`);
          sameAllocation(gs, cs, label);
        } finally {
          dispose(gs);
        }
      }
    } finally {
      dispose(dx);
    }
  }
});

// ---- programmatic dependent launch (config.pdl; docs/perf-notes/perf9-pdl.md) ------------------------------------

/**
 * Which symbol each launch takes and whether it carries the PDL attribute: config.pdl on (the default):
 * `_g128_pdl` / `_g128_pkl_pdl` with it; off: `_g128` / `_g128_pkl`, no attribute; launches the PDL forms do not
 * cover (fp32 input, groups of 32, e2m1, stochasticCast, sf only) keep their symbols and no attribute either way. The
 * replay path (same options object) follows a change of config.pdl.
 */
gpuTest("perTokenCast PDL selection: config.pdl on (the default) runs _g128_pdl / _g128_pkl_pdl with the PDL attribute, off runs _g128 / _g128_pkl without it, other launches unchanged, the replay path follows config.pdl", async () => {
  const x = toDevice(randomInput(rng(9101), 8, 256, "bf16"));
  const x32 = toDevice(randomInput(rng(9102), 8, 256, "fp32"));
  const fp32 = { fmt: "e4m3", numPerChannels: 128 } as const;
  const packed = { fmt: "e4m3", numPerChannels: 128, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const;
  const expect = (label: string, suffix: string, pdl: boolean) => {
    const l = perTokenLastLaunch();
    assert.equal(l.fn, ptcFn(suffix), `${label}: symbol ${suffix}`);
    assert.equal(l.pdl, pdl, `${label}: PDL attribute ${pdl}`);
  };
  try {
    assert.equal(config.pdl, true, "config.pdl is on by default");
    for (const on of [true, false]) {
      await withPdl(on, () => {
        const label = `config.pdl ${on}`;
        dispose(perTokenCast(x, fp32));
        expect(`${label} fp32 sf`, on ? "bf16_e4m3_g128_pdl" : "bf16_e4m3_g128", on);
        dispose(perTokenCast(x, packed));
        expect(`${label} packed`, on ? "bf16_e4m3_g128_pkl_pdl" : "bf16_e4m3_g128_pkl", on);
        dispose(perTokenCast(x, { fmt: "e4m3", numPerChannels: 128, useE4m3Sf: true }));
        expect(`${label} e4m3 sf`, on ? "bf16_e4m3_g128_pdl" : "bf16_e4m3_g128", on);
        dispose(perTokenCast(x32, fp32));
        expect(`${label} fp32 input`, "fp32_e4m3_g128", false);
        dispose(perTokenCast(x, { fmt: "e4m3", numPerChannels: 32 }));
        expect(`${label} groups of 32`, "bf16_e4m3_g32", false);
        dispose(perTokenCast(x, { fmt: "e2m1", numPerChannels: 128 }));
        expect(`${label} e2m1`, "bf16_e2m1_g128_u4", false);
        dispose(perTokenCast(x, { ...fp32, stochasticCast: true }));
        expect(`${label} stochasticCast`, "bf16_e4m3_g128_sr_wu12", on);
        dispose(perTokenCastWithSfOnly(x, fp32));
        expect(`${label} sf only`, "bf16_e4m3_g128_sor4_a", false);
      });
    }
    // the replay path (same x, same options object): a change of config.pdl takes the full path
    const o = { ...fp32 };
    await withPdl(false, () => {
      dispose(perTokenCast(x, o), perTokenCast(x, o));
      expect("replay, config.pdl off", "bf16_e4m3_g128", false);
      config.pdl = true;
      dispose(perTokenCast(x, o));
      expect("replay, config.pdl turned on", "bf16_e4m3_g128_pdl", true);
      dispose(perTokenCast(x, o));
      expect("replay, config.pdl on again", "bf16_e4m3_g128_pdl", true);
      config.pdl = false;
      dispose(perTokenCast(x, o));
      expect("replay, config.pdl turned off", "bf16_e4m3_g128", false);
    });
  } finally {
    dispose(x, x32);
  }
});

/**
 * `_g128_pdl` / `_g128_pkl_pdl` (config.pdl on, the default) and `_g128` / `_g128_pkl` (config.pdl off) = reference:
 * bf16 → e4m3, groups of 128, every sf layout, tails (H = 64: one partial unit; 576 / 2048 / 7168: partial last units;
 * T % 4 ≠ 0 under the column-major padding), several rows per block and the grid wrapping (4001 × 576, 8001 × 7168),
 * strided and unaligned rows, specials, 0 rows; each case twice (the second call takes the replay path).
 */
gpuTest("perTokenCast _g128_pdl / _g128_pkl_pdl (config.pdl on) and _g128 / _g128_pkl (off) = reference: bf16 → e4m3 groups of 128, every sf layout, tails, several rows per block, strided and unaligned rows, 0 rows, specials, replay (seed 9102)", async () => {
  const rand = rng(9102);
  const shapes: [number, number, number, number][] = [
    [0, 576, 576, 0], [1, 64, 64, 0], [3, 576, 577, 1], [33, 7168, 7168 + 64, 0], [130, 2048, 2048, 0], [4001, 576, 576, 0],
    [8001, 7168, 7168 + 128, 0],
  ];
  for (const [T, H, stride, off] of shapes) {
    let x = withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, "bf16", stride));
    if (off > 0) x = x.slice(0, 0, T).slice(1, off, H + off) as HostTensor;
    const dx = uploadView(x);
    try {
      for (const [name, sfo] of SF_LAYOUTS) {
        if (T === 8001 && name !== "fp32" && name !== "packed-col") continue;
        const o = { fmt: "e4m3", numPerChannels: 128, ...sfo } as const;
        const c = perTokenCast(x, o);
        for (const on of [true, false]) {
          await withPdl(on, () => {
            const label = `${on ? "_pdl" : "config.pdl off"} bf16 128 ${name} ${T}x${H} stride ${stride} offset ${off}`;
            samePair(perTokenCast(dx, o), c, label);
            if (T > 0) assert.equal(perTokenLastLaunch().pdl, on, `${label}: launched with PDL ${on}`);
            samePair(perTokenCast(dx, o), c, `${label} (again)`);
          });
        }
      }
    } finally {
      dispose(dx);
    }
  }
});

/** A host bf16 `[T, W / 2]` tensor holding the bytes of a contiguous host `[T, W]` e4m3 tensor. */
function bytesAsBf16(t: HostTensor): HostTensor {
  const [T, W] = t.shape;
  const b = logicalBytes(t).slice();
  return tensor(new Uint16Array(b.buffer), [T, W / 2], "bf16") as HostTensor;
}

/**
 * PDL chains on one stream, nothing synchronised in between, where the previous grid is itself a PDL perTokenCast
 * (it lets its dependents start at its own start): a buffer B is first written by cast 1 (its data output), then
 * read by cast 2 as a bf16 x (read after write), then written by cast 3 (write after cast 2's read) and by cast 4
 * (write after write, same data and sf outputs). Cast 2's result must be the cast of cast 1's bytes, B and the sf
 * cast 4's. Then a run of back-to-back casts writing the same outputs (the replay path), the last one with another
 * input. fp32 and packed column-major sf (`_g128_pdl`, `_g128_pkl_pdl`), 2048 × 7168 (launches of ~13 µs) and 37 ×
 * 7168 (launches of a few µs), three rounds each.
 */
gpuTest("perTokenCast with PDL on one stream: read after a PDL cast's write, write after its read, write after write, back-to-back casts into the same outputs = reference (seed 9103)", async () => {
  const rand = rng(9103);
  await withPdl(true, async () => {
    const s = createStream(0);
    try {
      for (const T of [2048, 37]) {
        const H = 7168;
        const hx = [0, 1, 2].map(() => withSpecials(randomInput(rand, T, H, "bf16")));
        for (const [name, sfo] of SF_LAYOUTS.filter(([n]) => n === "fp32" || n === "packed-col")) {
          const o = { fmt: "e4m3", numPerChannels: 128, ...sfo } as const;
          // reference
          const c1 = perTokenCast(hx[0], o);
          const c2 = perTokenCast(bytesAsBf16(c1[0] as HostTensor), o);
          const c4 = perTokenCast(hx[2], o);
          const c5 = perTokenCast(hx[1], o);
          for (let round = 0; round < 3; round++) {
            const label = `PDL chain ${T}x${H} ${name} round ${round}`;
            const dx = hx.map((h) => toDevice(h, 0, { stream: s }) as DeviceTensor);
            const B = zeros([T * H], "uint8", { device: 0, stream: s }) as DeviceTensor;
            const bData = new DeviceTensor(B.storage, "e4m3", [T, H], [H, 1], 0);
            const bX = new DeviceTensor(B.storage, "bf16", [T, H / 2], [H / 2, 1], 0);
            const outs: unknown[] = [];
            try {
              // device, one stream, no synchronisation in between
              const [, sf1] = perTokenCast(dx[0], { ...o, stream: s, out: { data: bData } }); // writes B
              const r2 = perTokenCast(bX, { ...o, stream: s }); // reads B
              const [, sf3] = perTokenCast(dx[1], { ...o, stream: s, out: { data: bData } }); // writes B
              perTokenCast(dx[2], { ...o, stream: s, out: { data: bData, sf: sf3 } }); // writes B and sf3 again
              assert.equal(perTokenLastLaunch().pdl, true, `${label}: launched with PDL`);
              outs.push(sf1, r2, sf3);
              await s.synchronize();
              sameAllocation(sf1, c1[1], `${label}: cast 1 sf`);
              samePair(r2, c2, `${label}: cast 2 (read of cast 1's data)`);
              assertBytesEqual(readAllocation(bData), logicalBytes(c4[0] as HostTensor), `${label}: B after cast 4`);
              sameAllocation(sf3, c4[1], `${label}: sf after cast 4`);
              // back-to-back casts into the same outputs (same options object: the replay path), then another input
              const same = { ...o, stream: s, out: { data: bData, sf: sf3 } };
              for (let i = 0; i < 5; i++) perTokenCast(dx[round % 3], same);
              perTokenCast(dx[1], { ...o, stream: s, out: { data: bData, sf: sf3 } });
              await s.synchronize();
              assertBytesEqual(readAllocation(bData), logicalBytes(c5[0] as HostTensor), `${label}: B after the back-to-back run`);
              sameAllocation(sf3, c5[1], `${label}: sf after the back-to-back run`);
            } finally {
              await s.synchronize();
              dispose(dx, outs, bData, bX, B);
            }
          }
        }
      }
    } finally {
      s[Symbol.dispose]();
    }
  });
});

/**
 * PDL casts whose previous stream operation is not a PDL cast: perTokenCastBack (a kernel launched without the
 * attribute, without griddepcontrol, before round 10; since docs/perf-notes/perf10-pdl.md its segmented kernel is
 * itself a PDL launch while config.pdl is set) writing x, and a device copy into x; each followed at once by a cast of x,
 * fresh outputs, four rounds alternating the inputs (fp32 sf twice, packed column-major sf twice), 2048 × 7168, one
 * stream, nothing synchronised in between. Every cast must see the x written just before it.
 */
gpuTest("perTokenCast with PDL right after a kernel (perTokenCastBack) or a copy writing x on the same stream = reference of the new x (seed 9104)", async () => {
  const rand = rng(9104);
  await withPdl(true, async () => {
    const s = createStream(0);
    try {
      const T = 2048, H = 7168;
      const o = { fmt: "e4m3", numPerChannels: 128 } as const;
      const po = { fmt: "e4m3", numPerChannels: 128, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const;
      const src = [0, 1].map(() => withSpecials(randomInput(rand, T, H, "bf16")));
      const q = [0, 1].map(() => perTokenCast(randomInput(rand, T, H, "bf16"), o) as [HostTensor, HostTensor]);
      const back = q.map((p) => perTokenCastBack(p, { fmt: "bf16", numPerChannels: 128 }) as HostTensor);
      const dsrc = src.map((h) => toDevice(h, 0, { stream: s }) as DeviceTensor);
      const dq = q.map((p) => [toDevice(p[0], 0, { stream: s }), toDevice(p[1], 0, { stream: s })] as [DeviceTensor, DeviceTensor]);
      const x = zeros([T, H], "bf16", { device: 0, stream: s }) as DeviceTensor;
      const rt = deviceRuntime("test");
      const results: { r: [DeviceTensor, DeviceTensor]; expect: HostTensor; opts: PerTokenCastOptions; label: string }[] = [];
      const refs = new Map<HostTensor, Map<PerTokenCastOptions, Quantized>>(); // one CPU cast per (input, options)
      const ref = (h: HostTensor, opts: PerTokenCastOptions): Quantized => {
        const m = refs.get(h) ?? refs.set(h, new Map()).get(h)!;
        return m.get(opts) ?? m.set(opts, perTokenCast(h, opts)).get(opts)!;
      };
      try {
        for (let i = 0; i < 4; i++) {
          const k = i % 2;
          const opts = i < 2 ? o : po;
          perTokenCastBack(dq[k], { fmt: "bf16", numPerChannels: 128, out: x, stream: s });
          results.push({ r: perTokenCast(x, { ...opts, stream: s }) as [DeviceTensor, DeviceTensor], expect: back[k], opts, label: `after perTokenCastBack ${i}` });
          rt.copyDtoD(x.device, x.addr, dsrc[k].addr, T * H * 2, s);
          results.push({ r: perTokenCast(x, { ...opts, stream: s }) as [DeviceTensor, DeviceTensor], expect: src[k], opts, label: `after a copy ${i}` });
        }
        await s.synchronize();
        for (const { r, expect, opts, label } of results) samePair(r, ref(expect, opts), label);
      } finally {
        await s.synchronize();
        dispose(dsrc, dq, x);
      }
    } finally {
      s[Symbol.dispose]();
    }
  });
});

// ---- perTokenCast with stochasticCast: the warp units, _g128_sr_wu12 (docs/perf-notes/perf10-ptsr.md, perf12-sr.md)

/**
 * perTokenCast bf16 → e4m3 with stochasticCast = the CPU reference (stochastic.ref.ts) through both kernels:
 * `_g128_sr_wu12` (x base, row stride and data base multiples of 16 bytes) and `_g128_sr` (any other view); sf = the RN
 * call's. First the NaN cases (the 1 × 64 row that failed on the first GPU run, NaNs of every pattern in quads with
 * other values, a group whose e4m3 sf byte is 0: inv = +Inf and 0·Inf products), each on an aligned view and on a
 * view one element off; then every sf layout; H = 64 (one warp unit, 8 live chunks of 128), 576 / 2048 (partial last
 * units), 7168 (7 whole units a row), 73728 (72 units); T % 4 ≠ 0 under the column-major padding; 0 rows (only the
 * padding, or nothing); several units per warp and the grid wrapping (4001 × 7168: 28007 units over 1056 blocks);
 * strided rows (7168 + 64 and 7168 + 128: aligned); views whose base or row stride is not a multiple of 16 bytes
 * (stride 577, offsets of 2 and 8 bytes) and data outputs at an 8-byte offset take `_g128_sr`, x or data at a
 * 16-byte offset `_g128_sr_wu12`; specials and SR edge values; config.pdl on and off (the PDL attribute follows it on
 * `_g128_sr_wu12`, never on `_g128_sr`); every call twice (the replay path keeps the form).
 */
gpuTest("perTokenCast stochasticCast = reference through _g128_sr_wu12 and _g128_sr: NaN quads of every pattern, inv = +Inf, bf16 → e4m3 groups of 128, every sf layout, tails, 0 rows, 4001 × 7168, strided and 16-byte-offset views, unaligned views and outputs, specials, PDL on / off, replay (seeds 10101, 10102)", async () => {
  {
    const early: [string, HostTensor, { roundSf?: true; useE4m3Sf?: true }][] = [
      ["1x64 specials (seed 10101)", withSrEdges(withSpecials(randomInput(rng(10101), 1, 64, "bf16", 64))), {}],
      ["1x64 NaN quads", nanQuadRows(1, 64), {}],
      ["5x1024 NaN quads", nanQuadRows(5, 1024), {}],
      ["3x7168 NaN quads roundSf", nanQuadRows(3, 7168), { roundSf: true }],
      ["3x7168 NaN quads e4m3 sf", nanQuadRows(3, 7168), { useE4m3Sf: true }],
    ];
    const tiny = new Uint16Array(2 * 128).map((_, j) => [0x0000, 0x8000, 0x0001, 0x8033, 0x7fc0, 0x0002][j % 6]);
    early.push(["2x128 inv +Inf (e4m3 sf byte 0)", tensor(tiny, [2, 128], "bf16"), { useE4m3Sf: true }]);
    for (const [what, x0, extra] of early) {
      const [T, H] = x0.shape;
      // the same rows, one element off a 16-byte boundary (row stride H + 1): `_g128_sr`
      const off = new HostTensor(new Uint16Array(T * (H + 1) + 1), "bf16", [T, H], [H + 1, 1], 1);
      for (let t = 0; t < T; t++) {
        for (let j = 0; j < H; j++) (off.data as Uint16Array)[1 + t * (H + 1) + j] = (x0.data as Uint16Array)[x0.offset + t * x0.strides[0] + j];
      }
      const savedClamp = config.amaxClamp["e4m3/e4m3sf"];
      if (what.includes("inv +Inf")) config.amaxClamp["e4m3/e4m3sf"] = 448 * 2 ** -126;
      try {
        for (const [x, kernel] of [[x0, "bf16_e4m3_g128_sr_wu12"], [off, "bf16_e4m3_g128_sr"]] as const) {
          const dx = uploadView(x);
          try {
            for (const [name, sfo] of SF_LAYOUTS) {
              if (extra.useE4m3Sf && !sfo.useE4m3Sf) continue;
              if (extra.roundSf && !sfo.roundSf) continue;
              const o = { fmt: "e4m3", numPerChannels: 128, stochasticCast: true, ...sfo, ...extra } as const;
              const c = perTokenCast(x, o);
              await withPdl(true, () => {
                const label = `SR ${what} ${name} (${kernel})`;
                samePair(perTokenCast(dx, o), c, label);
                assert.equal(perTokenLastLaunch().fn, ptcFn(kernel), `${label}: symbol`);
              });
            }
          } finally {
            dispose(dx);
          }
        }
      } finally {
        config.amaxClamp["e4m3/e4m3sf"] = savedClamp;
      }
    }
  }
  for (const seed of [10101, 10102]) {
    const rand = rng(seed);
    // [T, H, row stride, element offset]
    const shapes: [number, number, number, number][] = seed === 10101
      ? [
        [0, 7168, 7168, 0], [1, 64, 64, 0], [3, 576, 577, 1], [5, 2048, 2048 + 8, 4], [7, 2048, 2048 + 8, 8], [33, 7168, 7168 + 64, 0],
        [130, 2048, 2048, 0], [257, 576, 576, 0], [3, 73728, 73728, 0], [4001, 7168, 7168, 0],
      ]
      : [[2, 64, 128, 8], [9, 7168, 7168 + 128, 0], [66, 1024, 1024, 0], [4001, 7168, 7168 + 64, 0]];
    for (const [T, H, stride, off] of shapes) {
      let x = withSrEdges(withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, "bf16", stride)));
      if (off > 0) x = x.slice(0, 0, T).slice(1, off, H + off) as HostTensor;
      const dx = uploadView(x);
      const aligned = off % 8 === 0 && stride % 8 === 0; // 16 bytes of bf16
      try {
        for (const [name, sfo] of SF_LAYOUTS) {
          if (T === 4001 && name !== (seed === 10101 ? "fp32" : "packed-col")) continue;
          const o = { fmt: "e4m3", numPerChannels: 128, stochasticCast: true, ...sfo } as const;
          const c = perTokenCast(x, o);
          const rn = perTokenCast(x, { ...o, stochasticCast: false });
          assertBytesEqual(storageBytes(c[1] as HostTensor), storageBytes(rn[1] as HostTensor), `${name} ${T}x${H}: reference sf = the RN call's`);
          for (const on of T === 4001 || name.startsWith("fp32") || name === "packed-col" ? [true, false] : [true]) {
            await withPdl(on, () => {
              const label = `_sr_wu bf16 128 SR ${name} ${T}x${H} stride ${stride} offset ${off} pdl ${on}`;
              samePair(perTokenCast(dx, o), c, label);
              if (T > 0) {
                const l = perTokenLastLaunch();
                assert.equal(l.fn, ptcFn(aligned ? "bf16_e4m3_g128_sr_wu12" : "bf16_e4m3_g128_sr"), `${label}: symbol`);
                assert.equal(l.pdl, aligned && on, `${label}: PDL attribute`);
              }
              samePair(perTokenCast(dx, o), c, `${label} (again)`);
            });
          }
        }
      } finally {
        dispose(dx);
      }
    }
  }
  // data outputs at a byte offset of 8 (falls back to _g128_sr) and 16 (_g128_sr_wu), fp32 and packed sf
  const x = withSrEdges(withSpecials(randomInput(rng(10103), 70, 7168, "bf16")));
  const dx = uploadView(x);
  try {
    for (const dataOff of [8, 16]) {
      for (const [name, sfo] of SF_LAYOUTS.filter(([n]) => n === "fp32" || n === "packed-col")) {
        const o = { fmt: "e4m3", numPerChannels: 128, stochasticCast: true, ...sfo } as const;
        const [cd, cs] = perTokenCast(x, o);
        const whole = zeros([70 * 7168 + dataOff], "e4m3", { device: 0 }) as DeviceTensor;
        const data = new DeviceTensor(whole.storage, "e4m3", [70, 7168], [7168, 1], dataOff);
        whole.dispose();
        const [, s] = perTokenCast(dx, { ...o, out: { data } });
        const label = `_sr_wu data offset ${dataOff} ${name}`;
        try {
          assert.equal(perTokenLastLaunch().fn, ptcFn(dataOff === 16 ? "bf16_e4m3_g128_sr_wu12" : "bf16_e4m3_g128_sr"), `${label}: symbol`);
          assertBytesEqual(logicalBytes(await toHost(data)), logicalBytes(cd as HostTensor), label);
          sameAllocation(s, cs, `${label} sf`);
        } finally {
          dispose(data, s);
        }
      }
    }
  } finally {
    dispose(dx);
  }
});

/**
 * GPU test of `tk_per_token_cast__bf16_e4m3_g128_psr4` (per_token_cast_ps25.cu, perTokenLaunchTuning.
 * precomputedRing; the default since the twentieth run; docs/perf-notes/perf25-ptps.md): perTokenCastWithPrecomputedSf bf16 → e4m3 with 128
 * columns a scale through a warp's 2-stage cp.async ring, against the CPU reference (per_token_cast.ref.ts) byte for
 * byte on the whole data allocation, for the ring and for the knob off (main's `_g128`): fp32 scales (NaN, ±Inf,
 * ±0, subnormal, huge, negative) and e4m3 scales (every byte), x with NaN / ±Inf / −0 / subnormal rows and every bf16
 * pattern, 1 row, widths that end inside a warp unit or a scale group (64, 192, 576, 960, 2112, 3072, 7232), row
 * counts 1 … 130, persistent grids of 1 … 3 CTAs (the warp-grid-stride walk across rows), views on and off a 16-byte
 * boundary (x +8 / +4 elements, row strides H + 8 / H + 4, out +16 / +8 bytes, one row of an odd stride), the options
 * left to main's kernels with the knob on (64, 32 and 16 columns a scale, fp32 x, e2m1 output, one scale a row, 0
 * rows), config.pdl on and off (the ring carries the PDL attribute iff config.pdl and precomputedRingPdl), 4001 × 7168
 * against the CPU and 16384 × 7168 against the knob off. The launched symbol and the PDL flag are asserted at every
 * launch (perTokenLastLaunch), so a silent fallback fails. Skips without a GPU, as the other GPU tests.
 * @module
 */
import assert from "node:assert/strict";
import { HostTensor, perTokenCastWithPrecomputedSf, type Tensor, tensor } from "../mod.ts";
import { config } from "../core/config.ts";
import type { DeviceTensor } from "../core/tensor.ts";
import { launchCount } from "../ffi/cuda.ts";
import { perTokenLastLaunch, perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import {
  dispose,
  randomInput,
  readAllocation,
  sameAllocation,
  shuffledBf16Patterns,
  storageBytes,
  uploadView,
  withPdl,
} from "./gpu_util.ts";
import { ptcFn, withSpecials } from "./per_token_rows.ts";

const MAIN = "bf16_e4m3_g128";

/** The settings every case runs: the ring and the knob off. */
const FORMS: readonly { name: string; ring: 0 | 4; sym: string }[] = [
  { name: "psr4", ring: 4, sym: "bf16_e4m3_g128_psr4" },
  { name: "off", ring: 0, sym: MAIN },
];

/** Runs f with perTokenLaunchTuning's ring knobs and config.numSms = sms; restores all of them. */
function withRing<R>(ring: 0 | 4, f: () => R, blocksPerSm = 0, sms: number | null = null, ringPdl = true): R {
  const prev = { ...perTokenLaunchTuning };
  const prevSms = config.numSms;
  Object.assign(perTokenLaunchTuning, {
    precomputedRing: ring,
    precomputedRingBlocksPerSm: blocksPerSm,
    precomputedRingPdl: ringPdl,
  });
  config.numSms = sms;
  try {
    return f();
  } finally {
    Object.assign(perTokenLaunchTuning, prev);
    config.numSms = prevSms;
  }
}

/** A random binary32 scale: most of them normal of either sign, some 0, −0, NaN, ±Inf, subnormal or huge. */
function fp32Scale(rand: () => number): number {
  const r = rand();
  if (r < 0.03) return [0, -0, NaN, Infinity, -Infinity, 1e-40, 3e38, 2 ** -126][Math.floor(rand() * 8)];
  return Math.fround((rand() < 0.5 ? -1 : 1) * 2 ** (rand() * 40 - 20) * (1 + rand()));
}

/** Row-major scales [T, ⌈H / 128⌉]: fp32 (fp32Scale) or e4m3 (every byte value). */
function scales(rand: () => number, T: number, H: number, e4m3: boolean): HostTensor {
  const nbk = Math.ceil(H / 128);
  return e4m3
    ? tensor(Uint8Array.from({ length: T * nbk }, () => Math.floor(rand() * 256)), [T, nbk], "e4m3")
    : tensor(Float32Array.from({ length: T * nbk }, () => fp32Scale(rand)), [T, nbk], "fp32");
}

/** bf16 x [T, H] with specials, from element `offset` of its buffer, row stride `stride`. */
function xView(rand: () => number, T: number, H: number, offset = 0, stride = H): HostTensor {
  const base = withSpecials(randomInput(rand, T, H, "bf16", stride));
  if (offset === 0) return base;
  const d = new Uint16Array(offset + base.data.length);
  d.set(base.data as Uint16Array, offset);
  return new HostTensor(d, "bf16", [T, H], [stride, 1], offset);
}

/** A zeroed e4m3 [T, H] output from byte `offset` of its allocation (host), its device twin and the host one. */
function outPair(T: number, H: number, offset: number): [DeviceTensor, HostTensor] {
  const h = new HostTensor(new Uint8Array(offset + T * H + 16), "e4m3", [T, H], [H, 1], offset);
  return [uploadView(new HostTensor(new Uint8Array(h.data.length), "e4m3", [T, H], [H, 1], offset)), h];
}

/** Asserts the last launch: symbol `sym` and the PDL flag a ring carries (config.pdl) or `_g128`'s (none). */
function launched(sym: string, label: string): void {
  const l = perTokenLastLaunch();
  assert.equal(l.fn, ptcFn(sym), `${label}: symbol ${sym}`);
  const ring = sym.includes("_psr");
  assert.equal(l.pdl, ring && config.pdl && perTokenLaunchTuning.precomputedRingPdl, `${label}: PDL flag`);
}

/**
 * x (host view) and sf through every form × config.pdl: the whole data allocation against the CPU reference, into a
 * fresh output and into `out` views at byte offsets `outOffsets`. With `ringTaken` false (an x view off a 16-byte
 * boundary) every form must launch `_g128`; an out off a 16-byte boundary too.
 */
function checkAll(
  x: HostTensor,
  sf: HostTensor,
  label: string,
  ringTaken = true,
  outOffsets: readonly number[] = [],
): void {
  const [T, H] = x.shape;
  const o = { fmt: "e4m3", numPerChannels: 128, useE4m3Sf: sf.dtype === "e4m3" } as const;
  const want = perTokenCastWithPrecomputedSf(x, sf, o) as HostTensor;
  const dx = uploadView(x), ds = uploadView(sf);
  try {
    for (const f of FORMS) {
      for (const pdl of [false, true]) {
        withPdl(pdl, () =>
          withRing(f.ring, () => {
            const l = `${label} ${f.name} pdl ${pdl}`;
            const got = perTokenCastWithPrecomputedSf(dx, ds, o);
            if (T > 0) launched(ringTaken ? f.sym : MAIN, l);
            sameAllocation(got, want, l);
            dispose(got);
            for (const off of outOffsets) {
              const [dOut, hOut] = outPair(T, H, off);
              perTokenCastWithPrecomputedSf(x, sf, { ...o, out: hOut });
              perTokenCastWithPrecomputedSf(dx, ds, { ...o, out: dOut });
              launched(ringTaken && off % 16 === 0 ? f.sym : MAIN, `${l} out +${off}`);
              assertBytesEqual(readAllocation(dOut), storageBytes(hOut), `${l} out +${off}`);
              dispose(dOut);
            }
          }));
      }
    }
  } finally {
    dispose(dx, ds);
  }
}

gpuTest("25101 perTokenCastWithPrecomputedSf ring: shapes × fp32 / e4m3 scales, against the CPU", () => {
  const shapes: [number, number][] = [
    [1, 64],
    [1, 128],
    [3, 192],
    [2, 576],
    [5, 960],
    [3, 1024],
    [37, 2112],
    [130, 3072],
    [129, 4096],
    [2, 7168],
    [7, 7232],
  ];
  let seed = 25101;
  for (const [T, H] of shapes) {
    for (const e4m3 of [false, true]) {
      const rand = rng(seed++);
      checkAll(xView(rand, T, H), scales(rand, T, H, e4m3), `${T}x${H} ${e4m3 ? "e4m3" : "fp32"} sf`);
    }
  }
});

gpuTest("25102 every bf16 pattern through the ring", () => {
  const rand = rng(25102);
  const T = 16, H = 4096;
  const x = randomInput(rand, T, H, "bf16");
  (x.data as Uint16Array).set(shuffledBf16Patterns(rand), 0);
  // power-of-two scales (exact products) and arbitrary ones (rounded products), then e4m3 scale bytes
  const pow2 = tensor(Float32Array.from({ length: T * (H / 128) }, () => 2 ** Math.floor(rand() * 40 - 20)), [
    T,
    H / 128,
  ], "fp32");
  checkAll(x, pow2, "patterns pow2 sf");
  checkAll(x, scales(rand, T, H, false), "patterns fp32 sf");
  checkAll(x, scales(rand, T, H, true), "patterns e4m3 sf");
});

gpuTest("25103 persistent grids of 1 … 3 CTAs: the warp-grid-stride walk across rows and units", () => {
  let seed = 25103;
  for (const [T, H] of [[37, 2112], [130, 3072], [9, 7168], [11, 7232]] as const) {
    const rand = rng(seed++);
    const x = xView(rand, T, H), sf = scales(rand, T, H, seed % 2 === 0);
    const o = { fmt: "e4m3", numPerChannels: 128, useE4m3Sf: sf.dtype === "e4m3" } as const;
    const want = perTokenCastWithPrecomputedSf(x, sf, o);
    const dx = uploadView(x), ds = uploadView(sf);
    try {
      for (const f of FORMS.filter((f) => f.ring !== 0)) {
        for (const [bps, sms] of [[1, 1], [2, 1], [1, 3], [3, 2]] as const) {
          const l = `${T}x${H} ${f.name} ${bps} CTA/SM × ${sms} SMs`;
          const got = withRing(f.ring, () => perTokenCastWithPrecomputedSf(dx, ds, o), bps, sms);
          launched(f.sym, l);
          sameAllocation(got, want, l);
          dispose(got);
        }
      }
    } finally {
      dispose(dx, ds);
    }
  }
});

gpuTest("25104 views: 16-byte aligned ones take the ring, the others _g128", () => {
  let seed = 25104;
  const H = 2112, T = 19;
  // x offset (elements), row stride, whether the ring may run; out at +0, +8 (fallback) and +16 bytes
  const cases: [number, number, boolean][] = [[0, H, true], [8, H, true], [4, H, false], [0, H + 8, true], [
    0,
    H + 4,
    false,
  ], [8, H + 72, true]];
  for (const [off, stride, ring] of cases) {
    const rand = rng(seed++);
    checkAll(xView(rand, T, H, off, stride), scales(rand, T, H, false), `x +${off} stride ${stride}`, ring, [0, 8, 16]);
  }
  // one row whose stride H + 4 is no multiple of 8 elements (a valid [1, H] view): _g128
  const rand = rng(seed);
  checkAll(xView(rand, 1, H, 0, H + 4), scales(rand, 1, H, true), "1 row stride H+4", false, [16]);
});

gpuTest("25105 the options the ring does not take keep main's kernels with the knob on; 0 rows launch nothing", () => {
  const rand = rng(25105);
  const T = 5, H = 256;
  const xb = xView(rand, T, H);
  const xf = randomInput(rand, T, H, "fp32");
  const cases: [string, HostTensor, Record<string, unknown>, string][] = [
    ["64 columns", xb, { fmt: "e4m3", numPerChannels: 64 }, "bf16_e4m3_g64"],
    ["32 columns", xb, { fmt: "e4m3", numPerChannels: 32 }, "bf16_e4m3_g32"],
    ["16 columns", xb, { fmt: "e4m3", numPerChannels: 16, useE4m3Sf: true }, "bf16_e4m3_g16"],
    ["fp32 x", xf, { fmt: "e4m3", numPerChannels: 128 }, "fp32_e4m3_g128"],
    ["e2m1", xb, { fmt: "e2m1", numPerChannels: 128 }, "bf16_e2m1_g128_u4"],
    ["one scale a row", xb, { fmt: "e4m3", numPerChannels: H }, "bf16_e4m3_row"],
  ];
  for (const [name, x, o, sym] of cases) {
    const nbk = Math.ceil(H / (o.numPerChannels as number));
    const sf = o.useE4m3Sf
      ? tensor(Uint8Array.from({ length: T * nbk }, () => Math.floor(rand() * 256)), [T, nbk], "e4m3")
      : tensor(Float32Array.from({ length: T * nbk }, () => fp32Scale(rand)), [T, nbk], "fp32");
    const want = perTokenCastWithPrecomputedSf(x, sf, o as never);
    const dx = uploadView(x), ds = uploadView(sf);
    try {
      for (const f of FORMS) {
        withPdl(true, () =>
          withRing(f.ring, () => {
            const got = perTokenCastWithPrecomputedSf(dx, ds, o as never);
            launched(sym, `${name} ${f.name}`);
            sameAllocation(got, want, `${name} ${f.name}`);
            dispose(got);
          }));
      }
    } finally {
      dispose(dx, ds);
    }
  }
  const e = uploadView(tensor(new Uint16Array(0), [0, 7168], "bf16"));
  const s = uploadView(tensor(new Float32Array(0), [0, 56], "fp32"));
  for (const f of FORMS) {
    const before = launchCount();
    const got = withRing(f.ring, () => perTokenCastWithPrecomputedSf(e, s, { fmt: "e4m3", numPerChannels: 128 }));
    assert.equal(launchCount(), before, `0 rows ${f.name}: no launch`);
    assert.deepEqual([...got.shape], [0, 7168]);
    dispose(got);
  }
  dispose(e, s);
});

gpuTest("25106 4001 × 7168 against the CPU; 16384 × 7168 ring against the knob off", () => {
  const rand = rng(25106);
  checkAll(xView(rand, 4001, 7168), scales(rand, 4001, 7168, false), "4001x7168 fp32 sf");
  const T = 16384, H = 7168;
  const x = uploadView(randomInput(rand, T, H, "bf16"));
  const sf = uploadView(scales(rand, T, H, false));
  const o = { fmt: "e4m3", numPerChannels: 128 } as const;
  try {
    const ref = withRing(0, () => perTokenCastWithPrecomputedSf(x, sf, o));
    launched(MAIN, "16384 off");
    const want = readAllocation(ref as DeviceTensor);
    dispose(ref);
    for (const f of FORMS.filter((f) => f.ring !== 0)) {
      const got: Tensor = withRing(f.ring, () => perTokenCastWithPrecomputedSf(x, sf, o));
      launched(f.sym, `16384 ${f.name}`);
      assertBytesEqual(readAllocation(got as DeviceTensor), want, `16384x7168 ${f.name}`);
      dispose(got);
    }
  } finally {
    dispose(x, sf);
  }
});

/**
 * Round 16 (docs/perf-notes/perf16-pcf.md): perChannelCastFused of an e4m3 input through
 * `tk_per_channel_cast__e4m3_r128_sm` (perChannelLaunchTuning.stagedE4m3: the tile staged in shared memory) against
 * the CPU reference, byte for byte on both output allocations, with the kernel that ran checked after every device
 * call: gathers from 1, 127, 129, 300 and 4001 tokens with partial last blocks (16, 112, 144, 4016 rows), repeated and
 * out-of-order indices, negative entries (zero rows), no gather, roundSf off / on, every input-scale layout the op
 * accepts (fp32 row-major; column-major where T = 1 or H = 128), preallocated outputs, every e4m3 code (NaN 0x7F /
 * 0xFF, subnormals, ±0) with special scales (0, subnormal, huge, ±Inf, NaN, negative), bad indices counted once
 * each, and the full bench width (3000 → 3008 × 7168). The knob off runs the base kernel. Since round 19 `_sm` runs
 * only with pipelinedE4m3 "" (the default is `_pw`, tests/pcf19_gpu.test.ts): every call here sets it so. Skipped,
 * and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, type HostTensor, perChannelCastFused, perTokenCast, type Quantized, tensor, TkError, toDevice, toHost } from "../mod.ts";
import { perChannelLastSymbol, perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, sameAllocation, up } from "./gpu_util.ts";

const SM = "tk_per_channel_cast__e4m3_r128_sm";
const BASE = "tk_per_channel_cast__e4m3_r128";

/** Runs f with stagedE4m3 = `on` and pipelinedE4m3 "" (round 19's default `_pw` would run otherwise); restores both. */
function withKnob<T>(on: boolean, f: () => T): T {
  const prev = { ...perChannelLaunchTuning };
  perChannelLaunchTuning.stagedE4m3 = on;
  perChannelLaunchTuning.pipelinedE4m3 = "";
  try {
    return f();
  } finally {
    Object.assign(perChannelLaunchTuning, prev);
  }
}

/** Random fp32 `[T, H]` values: per-column magnitudes 2^-20 … 2^20, some ±0, tiny, huge, NaN and ±Inf entries. */
function randomValues(rand: () => number, T: number, H: number): HostTensor {
  const colScale = Array.from({ length: H }, () => 2 ** Math.floor(rand() * 40 - 20));
  const v = new Float32Array(T * H);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      const r = rand();
      const kind = j % 17;
      let x: number;
      if (kind === 3) x = r < 0.5 ? -0 : 0;
      else if (kind === 5) x = (r - 0.5) * 1e-30;
      else if (kind === 11 && t % 97 === 5) x = r < 0.5 ? 3e38 : -3e38;
      else if (kind === 13 && t % 211 === 7) x = r < 0.3 ? NaN : r < 0.6 ? Infinity : -Infinity;
      else x = (r - 0.5) * 8 * colScale[j] * (1 + 7 * rand());
      v[t * H + j] = Math.fround(x);
    }
  }
  return tensor(v, [T, H], "fp32");
}

/** An e4m3 `[data, sf]` pair (per-token cast of random values, 1% of the codes random bytes incl. NaN codes). */
function randomQuantized(rand: () => number, T: number, H: number, colMajor: boolean): Quantized {
  const [data, sf] = perTokenCast(randomValues(rand, T, H), { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: colMajor });
  const d = (data as HostTensor).data as Uint8Array;
  for (let i = 0; i < d.length; i++) if (rand() < 0.01) d[i] = Math.floor(rand() * 256);
  return [data, sf];
}

/** `n` indices into `T` rows: random with repeats, ~1 in 5 negative, a reversed run, a run of one repeated row. */
function positions(rand: () => number, n: number, T: number): HostTensor {
  const idx = Int32Array.from({ length: n }, () => (rand() < 0.2 ? -1 - Math.floor(rand() * 3) : Math.floor(rand() * T)));
  for (let p = 0; p < Math.min(n, 24); p++) idx[p] = (T - 1 - p + T) % T; // out of order: descending
  for (let p = 24; p < Math.min(n, 40); p++) idx[p] = Math.floor(T / 2); // one row repeated
  return tensor(idx, [n], "int32");
}

/** CPU reference vs the device (knob on), both allocations byte for byte; the kernel `sym` ran. */
function check(label: string, q: Quantized, pos: HostTensor | null, roundSf: boolean, sym: string, on = true, preallocated = false): void {
  const o = { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128, roundSf } as const;
  const [cd, cs] = perChannelCastFused(q, { ...o, ...(pos ? { posToToken: pos } : {}) });
  const dq = up(q) as Quantized;
  const dpos = pos ? toDevice(pos) : null;
  const out = preallocated
    ? { data: up(tensor(new Uint8Array(cd.shape[0] * cd.shape[1]).fill(0xa5), [...cd.shape], "e4m3")) as DeviceTensor, sf: up(tensor(new Float32Array(cs.shape[0] * cs.shape[1]).fill(-7), [...cs.shape], "fp32")) as DeviceTensor }
    : undefined;
  const [gd, gs] = withKnob(on, () => perChannelCastFused(dq, { ...o, ...(dpos ? { posToToken: dpos } : {}), ...(out ? { out } : {}) }));
  try {
    assert.equal(perChannelLastSymbol(), sym, `${label}: ${sym} ran`);
    sameAllocation(gd, cd, `${label} data`);
    sameAllocation(gs, cs, `${label} sf`);
  } finally {
    dispose(gd, gs, cd, cs, dq, dpos);
  }
}

gpuTest("_sm (stagedE4m3) = reference: gathers from 1 / 127 / 129 / 300 / 4001 tokens, tails, repeats, out of order, zero rows, roundSf, sf layouts, preallocated out (seed 16001)", () => {
  const rand = rng(16001);
  const cases: [number, number, number][] = [[1, 128, 16], [1, 384, 16], [127, 256, 112], [127, 128, 144], [129, 1024, 144], [300, 512, 256], [4001, 1152, 4016], [129, 128, 16]];
  let n = 0;
  for (const [T, H, out] of cases) {
    for (const roundSf of [false, true]) {
      // column-major input scales are accepted where T = 1 or H = 128
      for (const colMajor of T === 1 || H === 128 ? [false, true] : [false]) {
        const q = randomQuantized(rand, T, H, colMajor);
        check(`${T}→${out}x${H} roundSf ${roundSf} sf ${colMajor ? "col" : "row"}-major`, q, positions(rand, out, T), roundSf, SM, true, n++ % 3 === 0);
      }
    }
  }
});

gpuTest("_sm = reference without a gather (T % 128 == 0) and with an identity gather of a partial block (seed 16002)", () => {
  const rand = rng(16002);
  for (const [T, H] of [[128, 128], [384, 640 - 128], [256, 1152]]) {
    for (const roundSf of [false, true]) check(`${T}x${H} no gather roundSf ${roundSf}`, randomQuantized(rand, T, H, false), null, roundSf, SM);
  }
  const q = randomQuantized(rand, 200, 256, false);
  check("identity gather 200→176", q, tensor(Int32Array.from({ length: 176 }, (_, p) => p), [176], "int32"), false, SM);
});

gpuTest("_sm = reference on every e4m3 code with special input scales (0, subnormal, huge, ±Inf, NaN, negative) (seed 16003)", () => {
  const rand = rng(16003);
  const T = 512, H = 256;
  // row t, column j: code (t + 7j) mod 256 — every code in every column, NaN codes 0x7F / 0xFF, subnormals, ±0
  const codes = Uint8Array.from({ length: T * H }, (_, i) => ((i / H | 0) + 7 * (i % H)) & 0xff);
  const specials = [0, -0, 1e-40, 3e38, Infinity, -Infinity, NaN, -2.5, 1, 2 ** -20, 448];
  const sf = Float32Array.from({ length: T * (H / 128) }, (_, i) => (i % 13 === 0 ? specials[(i / 13 | 0) % specials.length] : 2 ** Math.floor(rand() * 30 - 15) * (1 + rand())));
  const q: Quantized = [tensor(codes, [T, H], "e4m3"), tensor(sf, [T, H / 128], "fp32")];
  for (const roundSf of [false, true]) {
    check(`all codes roundSf ${roundSf} gather`, q, positions(rand, 400, T), roundSf, SM);
    check(`all codes roundSf ${roundSf} no gather`, q, null, roundSf, SM);
  }
});

gpuTest("_sm = reference at the bench width: 3000 → 3008 × 7168 gathered by (p · 7919) mod T (seed 16004)", () => {
  const rand = rng(16004);
  const T = 3000, H = 7168;
  const q = randomQuantized(rand, T, H, false);
  const pos = tensor(Int32Array.from({ length: 3008 }, (_, p) => (p * 7919) % T), [3008], "int32");
  check("3000→3008x7168", q, pos, false, SM);
  check("3000→3008x7168 knob off", q, pos, false, BASE, false);
});

gpuTest("_sm: an index ≥ T raises DEVICE_VALUE once per bad entry; those rows read as zeros (seed 16005)", async () => {
  const rand = rng(16005);
  const T = 200, H = 384;
  const q = randomQuantized(rand, T, H, false);
  const pos = positions(rand, 272, T); // three blocks: a bad entry in the first and in the partial last one
  const idx = pos.data as Int32Array;
  idx[3] = T;
  idx[130] = 1 << 30;
  idx[260] = 0x7fffffff;
  const dq = up(q) as Quantized;
  const dpos = toDevice(pos);
  const [d, s] = withKnob(true, () => perChannelCastFused(dq, { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128, posToToken: dpos }));
  assert.equal(perChannelLastSymbol(), SM);
  await assert.rejects(toHost(d), (e: unknown) =>
    e instanceof TkError && e.code === "DEVICE_VALUE" && e.op === "perChannelCastFused" && /3 illegal value\(s\).*posToToken/.test(e.message));
  const fixed = tensor(Int32Array.from(idx, (v) => (v >= T ? -1 : v)), [272], "int32");
  const [cd, cs] = perChannelCastFused(q, { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128, posToToken: fixed });
  sameAllocation(d, cd, "data");
  sameAllocation(s, cs, "sf");
  dispose(dq, dpos, d, s);
});

gpuTest("stagedE4m3 is on by default: with pipelinedE4m3 \"\" _sm runs; off, the base kernel runs (seed 16006)", () => {
  const rand = rng(16006);
  const T = 300, H = 512;
  const q = randomQuantized(rand, T, H, false);
  const pos = positions(rand, 272, T) // a multiple of 16, as posToToken must be;
  assert.equal(perChannelLaunchTuning.stagedE4m3, true);
  const o = { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128, roundSf: false } as const;
  const [cd, cs] = perChannelCastFused(q, { ...o, posToToken: pos });
  const dq = up(q) as Quantized;
  const dpos = toDevice(pos);
  try {
    const [gd, gs] = withKnob(perChannelLaunchTuning.stagedE4m3, () => perChannelCastFused(dq, { ...o, posToToken: dpos }));
    assert.equal(perChannelLastSymbol(), SM, "stagedE4m3's default");
    sameAllocation(gd, cd, "default data");
    sameAllocation(gs, cs, "default sf");
    dispose(gd, gs);
  } finally {
    dispose(dq, dpos, cd, cs);
  }
  check("knob off", q, pos, false, BASE, false);
});

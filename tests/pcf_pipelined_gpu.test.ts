/**
 * perChannelCastFused of an e4m3 input with the knob perChannelLaunchTuning.pipelinedE4m3 pinned to each of its values
 * against the CPU reference, byte for byte on both output allocations, with the kernel that ran checked after every
 * device call: "_pr" runs round 20's 128 × 512 form `tk_per_channel_cast__e4m3_r128_pr` (docs/perf-notes/perf20-pcf.md;
 * each CTA walks a contiguous run of tiles; the default since round 20), "" the base kernel
 * `tk_per_channel_cast__e4m3_r128` (round 19's "_pw", `tk_per_channel_cast__e4m3_r128_pw`, docs/perf-notes/
 * perf19-pcf.md, was a third setting until trim24 removed it). Gathers from 1, 127, 129, 300 and 4001 tokens with partial last blocks, repeated
 * and out-of-order indices, negative entries (zero rows), no gather, roundSf off / on, every input-scale layout the op
 * accepts (fp32 row-major; column-major where T = 1 or H = 128), preallocated outputs, H = 128 / 384 / 512 / 640 /
 * 1152 / 2048 / 7168 (128-column halves and quarters beyond H in the last tile), every e4m3 code with special scales,
 * bad indices counted once each, grids of 1, 3 and all SMs (many tiles per CTA: `_pr`'s ring wraps many times, its
 * runs start and end inside a row block and cross row blocks), an unaligned x view (the base kernel runs whatever the
 * knob), the default (`_pr` runs), and the bench shape 16384 × 7168 (the two forms equal). Each test runs round 19's
 * data (seeds 19001 … 19006) and round 20's (20001 … 20006); this file merges tests/pcf19_gpu.test.ts and
 * tests/pcf20_gpu.test.ts. Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { config } from "../core/config.ts";
import { type DeviceTensor, HostTensor, perChannelCastFused, type Quantized, tensor, toDevice } from "../mod.ts";
import { perChannelLastSymbol, perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { toColMajor } from "./golden.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, gatherPositions, sameAllocation, up } from "./gpu_util.ts";
import { checkBadIndices } from "./per_channel_fused_util.ts";

type Form = "" | "_pr";
/** The default first, then the base kernel (knob ""). */
const FORMS = ["_pr", ""] as const;
const symOf = (form: Form) => `tk_per_channel_cast__e4m3_r128${form}`;

/** Runs f with pipelinedE4m3 = `form` and config.numSms = `sms`; restores both. */
function withTuning<T>(form: Form, sms: number | null, f: () => T): T {
  const prev = { ...perChannelLaunchTuning };
  const prevSms = config.numSms;
  perChannelLaunchTuning.pipelinedE4m3 = form;
  config.numSms = sms;
  try {
    return f();
  } finally {
    Object.assign(perChannelLaunchTuning, prev);
    config.numSms = prevSms;
  }
}

const SPECIAL_SCALES = [0, -0, 1e-40, 3e38, Infinity, -Infinity, NaN, -2.5, 448, 2 ** -126];

/**
 * An e4m3 `[data, sf]` pair: random codes (every code, NaN 0x7F / 0xFF included), row scales 2^-15 … 2^15 with a
 * special scale (0, −0, subnormal, huge, ±Inf, NaN, negative) every 29th; sf column-major when `colMajor`.
 */
function randomQuantized(rand: () => number, T: number, H: number, colMajor: boolean): Quantized {
  const codes = Uint8Array.from({ length: T * H }, () => Math.floor(rand() * 256));
  const sf = Float32Array.from({ length: T * (H / 128) }, (_, i) =>
    i % 29 === 11 ? SPECIAL_SCALES[(i / 29 | 0) % SPECIAL_SCALES.length] : 2 ** Math.floor(rand() * 30 - 15) * (1 + rand()));
  const s = tensor(sf, [T, H / 128], "fp32") as HostTensor;
  return [tensor(codes, [T, H], "e4m3"), colMajor ? toColMajor(s) : s];
}

interface Run {
  form: Form;
  sms?: number | null;
  preallocated?: boolean;
  sym?: string;
}

/** The device result of `q` (uploaded with its layout) under `run`, compared with `want`; the kernel checked. */
function deviceMatches(label: string, q: Quantized, pos: HostTensor | null, roundSf: boolean, want: Quantized, run: Run): void {
  const o = { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128, roundSf } as const;
  const dq = up(q) as Quantized;
  const dpos = pos ? toDevice(pos) : null;
  const [cd, cs] = want;
  const out = run.preallocated
    ? { data: up(tensor(new Uint8Array(cd.shape[0] * cd.shape[1]).fill(0xa5), [...cd.shape], "e4m3")) as DeviceTensor, sf: up(tensor(new Float32Array(cs.shape[0] * cs.shape[1]).fill(-7), [...cs.shape], "fp32")) as DeviceTensor }
    : undefined;
  const [gd, gs] = withTuning(run.form, run.sms ?? null, () => perChannelCastFused(dq, { ...o, ...(dpos ? { posToToken: dpos } : {}), ...(out ? { out } : {}) }));
  try {
    const sym = run.sym ?? symOf(run.form);
    assert.equal(perChannelLastSymbol(), sym, `${label}: ${sym} ran`);
    sameAllocation(gd, cd, `${label} data`);
    sameAllocation(gs, cs, `${label} sf`);
  } finally {
    dispose(gd, gs, dq, dpos);
  }
}

/** CPU reference of `q` gathered by `pos`, then every run of `runs` against it. */
function check(label: string, q: Quantized, pos: HostTensor | null, roundSf: boolean, runs: readonly Run[]): void {
  const want = perChannelCastFused(q, { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128, roundSf, ...(pos ? { posToToken: pos } : {}) });
  try {
    for (const run of runs) deviceMatches(`${label} ${run.form} sms ${run.sms ?? "all"}${run.preallocated ? " out" : ""}`, q, pos, roundSf, want, run);
  } finally {
    dispose(...want);
  }
}

gpuTest("each form = reference: gathers from 1 / 127 / 129 / 300 / 4001 tokens, tails, repeats, zero rows, roundSf, sf layouts, preallocated out, 1 / 3 / all SMs (seeds 19001, 20001)", () => {
  const rounds: [number, [number, number, number][]][] = [
    [19001, [[1, 128, 16], [1, 384, 16], [127, 256, 112], [127, 128, 144], [129, 1152, 144], [129, 384, 272], [4001, 1152, 4016]]],
    [20001, [[1, 128, 16], [1, 640, 16], [127, 256, 112], [127, 128, 144], [129, 1152, 144], [129, 384, 272], [300, 2048, 400], [4001, 1152, 4016]]],
  ];
  let n = 0;
  for (const [seed, cases] of rounds) {
    const rand = rng(seed);
    for (const [T, H, out] of cases) {
      for (const roundSf of [false, true]) {
        for (const colMajor of T === 1 || H === 128 ? [false, true] : [false]) {
          // 9 runs a case: every 4th preallocated, so each form and grid size meets preallocated outputs
          const runs = FORMS.flatMap((form) => [null, 1, 3].map((sms) => ({ form, sms, preallocated: n++ % 4 === 0 })));
          check(`${seed} ${T}→${out}x${H} roundSf ${roundSf} sf ${colMajor ? "col" : "row"}-major`, randomQuantized(rand, T, H, colMajor), gatherPositions(rand, out, T), roundSf, runs);
        }
      }
    }
  }
});

gpuTest("each form = reference without a gather (T % 128 == 0) and with an identity gather of a partial block (seeds 19002, 20002)", () => {
  const rounds: [number, [number, number][]][] = [
    [19002, [[128, 128], [384, 640], [256, 1152], [1024, 2048]]],
    [20002, [[128, 128], [384, 640], [256, 1152], [1024, 2048], [640, 7168]]],
  ];
  const runs = FORMS.flatMap((form) => [{ form, sms: null }, { form, sms: 1 }]);
  for (const [seed, shapes] of rounds) {
    const rand = rng(seed);
    for (const [T, H] of shapes) {
      for (const roundSf of [false, true]) check(`${seed} ${T}x${H} no gather roundSf ${roundSf}`, randomQuantized(rand, T, H, false), null, roundSf, runs);
    }
    const q = randomQuantized(rand, 200, 384, false);
    check(`${seed} identity gather 200→176`, q, tensor(Int32Array.from({ length: 176 }, (_, p) => p), [176], "int32") as HostTensor, false, runs);
  }
});

gpuTest("each form = reference on every e4m3 code in every column with special input scales (seeds 19003, 20003)", () => {
  const runs = FORMS.flatMap((form) => [{ form, sms: null }, { form, sms: 1 }]);
  for (const [seed, H] of [[19003, 384], [20003, 640]]) {
    const rand = rng(seed);
    const T = 512;
    // row t, column j: code (t + 7j) mod 256
    const codes = Uint8Array.from({ length: T * H }, (_, i) => ((i / H | 0) + 7 * (i % H)) & 0xff);
    const sf = Float32Array.from({ length: T * (H / 128) }, (_, i) => (i % 13 === 0 ? SPECIAL_SCALES[(i / 13 | 0) % SPECIAL_SCALES.length] : 2 ** Math.floor(rand() * 30 - 15) * (1 + rand())));
    const q: Quantized = [tensor(codes, [T, H], "e4m3"), tensor(sf, [T, H / 128], "fp32")];
    for (const roundSf of [false, true]) {
      check(`${seed} all codes x${H} roundSf ${roundSf} gather`, q, gatherPositions(rand, 400, T), roundSf, runs);
      check(`${seed} all codes x${H} roundSf ${roundSf} no gather`, q, null, roundSf, runs);
    }
  }
});

gpuTest("each form: an index ≥ T raises DEVICE_VALUE once per bad entry, in a first and in a prefetched tile; those rows read as zeros (seeds 19004, 20004)", async () => {
  for (const [seed, H] of [[19004, 384], [20004, 1152]]) {
    const rand = rng(seed);
    const q = randomQuantized(rand, 200, H, false);
    await checkBadIndices(rand, q, { numPerChannels: 128 }, FORMS, withTuning, symOf, `${seed} x${H}`);
  }
});

gpuTest("_pr is the default; each knob runs its form; for an unaligned x view every knob falls back to the base kernel (seeds 19005, 20005)", () => {
  assert.equal(perChannelLaunchTuning.pipelinedE4m3, "_pr");
  for (const [seed, H] of [[19005, 512], [20005, 1152]]) {
    const rand = rng(seed);
    const T = 300;
    const [x, sf] = randomQuantized(rand, T, H, false) as [HostTensor, HostTensor];
    const pos = gatherPositions(rand, 272, T);
    check(`${seed} x${H} default and knobs`, [x, sf], pos, false, [{ form: perChannelLaunchTuning.pipelinedE4m3, sym: symOf("_pr") }, ...FORMS.map((form) => ({ form }))]);
    // the same codes one byte into their storage: x's device address is not a multiple of 16
    const shifted = new Uint8Array(T * H + 1);
    shifted.set(x.data as Uint8Array, 1);
    const xv = new HostTensor(shifted, "e4m3", [T, H], [H, 1], 1);
    const base = symOf("");
    check(`${seed} x${H} unaligned x`, [xv, sf], pos, true, FORMS.map((form) => ({ form, sym: base })));
  }
});

gpuTest("_pr = base = reference at the bench shape: 16384 × 7168 gathered by (p · 7919) mod T, zero rows (seeds 19006, 20006)", () => {
  const T = 16384, H = 7168;
  for (const seed of [19006, 20006]) {
    const rand = rng(seed);
    const codes = new Uint8Array(T * H);
    for (let i = 0; i < codes.length; i += 4) {
      const w = Math.floor(rand() * 2 ** 32);
      codes[i] = w & 0xff;
      codes[i + 1] = (w >>> 8) & 0xff;
      codes[i + 2] = (w >>> 16) & 0xff;
      codes[i + 3] = w >>> 24;
    }
    const sf = Float32Array.from({ length: T * (H / 128) }, () => 2 ** Math.floor(rand() * 30 - 15) * (1 + rand()));
    const q: Quantized = [tensor(codes, [T, H], "e4m3"), tensor(sf, [T, H / 128], "fp32")];
    const pos = tensor(Int32Array.from({ length: T }, (_, p) => (p % 1001 === 7 ? -1 : (p * 7919) % T)), [T], "int32") as HostTensor;
    check(`${seed} 16384x7168`, q, pos, false, FORMS.map((form) => ({ form })));
  }
});

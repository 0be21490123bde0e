/**
 * perChannelCastFused of a bf16 input with the knob perChannelLaunchTuning.pipelinedBf16 pinned to each of its values
 * against the CPU reference, byte for byte on both output allocations, with the kernel that ran checked after every
 * device call: "_rg" (the default since the twentieth run) runs round 25's ring `tk_per_channel_cast__bf16_r128_rg` (docs/perf-notes/perf25-pcfb.md:
 * persistent grid, thread-private 3-stage cp.async ring, 2 CTAs per SM), "" the base kernel
 * `tk_per_channel_cast__bf16_r128`. Covers what the op accepts under the knob's conditions (x and data 16-byte
 * aligned, H % 8 == 0): gathers from 1, 50, 127, 129, 300 and 4001 tokens into 16 … 4016 rows (partial last blocks),
 * repeated and out-of-order indices, negative entries (zero rows), no gather and an identity gather, H = 8 … 7168
 * (last column tiles cut at H % 128 = 8 … 120), roundSf off / on (the op's only sf options: fp32 row-major scales),
 * preallocated outputs, grids of 1, 3 and all SMs (many tiles per CTA: the ring wraps many times and a CTA's tiles
 * cross row blocks), every bf16 bit pattern, bad indices counted once each; and the fallbacks: H % 8 != 0, an
 * unaligned x or data view and an fp32 input run the base kernels whatever the knob; the default (`_rg` runs
 * gathered calls, the base kernel ungathered ones: ringUngathered, off since the twenty-first run); the bench shape
 * 16384 × 7168. Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { config } from "../core/config.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { type DeviceTensor, HostTensor, perChannelCastFused, type Quantized, tensor, toDevice, toHost } from "../mod.ts";
import { perChannelLastSymbol, perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { logicalBytes } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, gatherPositions, sameAllocation, storageBytes, up, uploadView } from "./gpu_util.ts";
import { checkBadIndices } from "./per_channel_fused_util.ts";

type Form = "" | "_rg";
const FORMS = ["_rg", ""] as const;
const BASE = "tk_per_channel_cast__bf16_r128";
const RG = "tk_per_channel_cast__bf16_r128_rg";
const symOf = (form: Form) => `${BASE}${form}`;

/** Runs f with pipelinedBf16 = `form` and config.numSms = `sms`; restores both. */
function withTuning<T>(form: Form, sms: number | null, f: () => T): T {
  const prev = { ...perChannelLaunchTuning };
  const prevSms = config.numSms;
  perChannelLaunchTuning.pipelinedBf16 = form;
  // the ungathered calls of the tests below run the ring too (the default keeps them on the base kernel: test 25007)
  perChannelLaunchTuning.ringUngathered = form === "_rg";
  config.numSms = sms;
  try {
    return f();
  } finally {
    Object.assign(perChannelLaunchTuning, prev);
    config.numSms = prevSms;
  }
}

/**
 * A random bf16 `[T, H]`: each column its own magnitude (2^-20 … 2^20); columns cycle through ±0, values below the
 * amax clamp, e4m3 rounding ties, a 3e38 entry, sparse NaN / ±Inf, and every 19th row scaled by 2^-100 (subnormal
 * codes after the cast).
 */
function randomBf16(rand: () => number, T: number, H: number): HostTensor {
  const colScale = Array.from({ length: H }, () => 2 ** Math.floor(rand() * 40 - 20));
  const v = new Uint16Array(T * H);
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
      else x = (r - 0.5) * 8 * colScale[j] * (1 + 7 * rand()) * (t % 19 === 4 ? 2 ** -100 : 1);
      v[t * H + j] = encodeBf16(Math.fround(x));
    }
  }
  return tensor(v, [T, H], "bf16") as HostTensor;
}

interface Run {
  form: Form;
  sms?: number | null;
  preallocated?: boolean;
  sym?: string;
}

/** The device result of `x` (uploaded with its layout) under `run`, compared with `want`; the kernel checked. */
function deviceMatches(label: string, x: HostTensor, pos: HostTensor | null, roundSf: boolean, want: Quantized, run: Run): void {
  const o = { fmt: "e4m3", numPerTokens: 128, roundSf } as const;
  const dx = uploadView(x);
  const dpos = pos ? toDevice(pos) : null;
  const [cd, cs] = want;
  const out = run.preallocated
    ? {
      data: up(tensor(new Uint8Array(cd.shape[0] * cd.shape[1]).fill(0xa5), [...cd.shape], "e4m3")) as DeviceTensor,
      sf: up(tensor(new Float32Array(cs.shape[0] * cs.shape[1]).fill(-7), [...cs.shape], "fp32")) as DeviceTensor,
    }
    : undefined;
  const [gd, gs] = withTuning(run.form, run.sms ?? null, () => perChannelCastFused(dx, { ...o, ...(dpos ? { posToToken: dpos } : {}), ...(out ? { out } : {}) }));
  try {
    const sym = run.sym ?? symOf(run.form);
    assert.equal(perChannelLastSymbol(), sym, `${label}: ${sym} ran`);
    if (out) assert.ok(gd === out.data && gs === out.sf, `${label}: the preallocated outputs are returned`);
    sameAllocation(gd, cd, `${label} data`);
    sameAllocation(gs, cs, `${label} sf`);
  } finally {
    dispose(gd, gs, dx, dpos);
  }
}

/** CPU reference of `x` gathered by `pos`, then every run of `runs` against it. */
function check(label: string, x: HostTensor, pos: HostTensor | null, roundSf: boolean, runs: readonly Run[]): void {
  const want = perChannelCastFused(x, { fmt: "e4m3", numPerTokens: 128, roundSf, ...(pos ? { posToToken: pos } : {}) });
  for (const run of runs) deviceMatches(`${label} roundSf ${roundSf} ${run.form || "base"} sms ${run.sms ?? "all"}${run.preallocated ? " out" : ""}`, x, pos, roundSf, want, run);
}

gpuTest("each form = reference: gathers from 1 … 4001 tokens into 16 … 4016 rows, H 8 … 7168, repeats, zero rows, roundSf, preallocated out, 1 / 3 / all SMs (seed 25001)", () => {
  const cases: [number, number, number][] = [
    [1, 128, 16], [1, 8, 16], [50, 7168, 48], [127, 256, 112], [127, 120, 144], [129, 1000, 144], [129, 384, 272],
    [300, 2048, 400], [300, 136, 1040], [4001, 1152, 4016],
  ];
  const rand = rng(25001);
  let n = 0;
  for (const [T, H, out] of cases) {
    const x = randomBf16(rand, T, H);
    const pos = gatherPositions(rand, out, T);
    for (const roundSf of [false, true]) {
      // every 3rd run preallocated, so each form and grid size meets preallocated outputs
      const runs = FORMS.flatMap((form) => [null, 1, 3].map((sms) => ({ form, sms, preallocated: n++ % 3 === 0 })));
      check(`25001 ${T}→${out}x${H}`, x, pos, roundSf, runs);
    }
  }
});

gpuTest("each form = reference without a gather (T % 128 == 0) and with an identity gather of a partial block (seed 25002)", () => {
  const rand = rng(25002);
  const runs = FORMS.flatMap((form) => [{ form, sms: null }, { form, sms: 1 }, { form, sms: 3 }]);
  for (const [T, H] of [[128, 128], [128, 8], [384, 640], [256, 1160], [1024, 2048], [640, 7168]]) {
    const x = randomBf16(rand, T, H);
    for (const roundSf of [false, true]) check(`25002 ${T}x${H} no gather`, x, null, roundSf, runs);
  }
  const x = randomBf16(rand, 200, 384);
  check("25002 identity gather 200→176", x, tensor(Int32Array.from({ length: 176 }, (_, p) => p), [176], "int32") as HostTensor, false, runs);
});

gpuTest("each form = reference on every bf16 bit pattern (NaN, ±Inf, ±0, subnormals), gathered in two row orders, 1 / all SMs", () => {
  // x[t][j] = pattern (t · 128 + j) ^ salt: each column holds 512 patterns, together all 65536; gathered once in order
  // and once permuted (with zero rows), so that NaN and the maxima sit at other row positions
  const v = new Uint16Array(512 * 128).map((_, i) => i);
  for (const [salt, mul] of [[0, 1], [0x1234, 389]]) {
    const x = tensor(v.map((p) => p ^ salt), [512, 128], "bf16") as HostTensor;
    const pos = tensor(Int32Array.from({ length: 528 }, (_, p) => (p >= 512 || (mul !== 1 && p % 37 === 3) ? -1 : (p * mul) % 512)), [528], "int32") as HostTensor;
    for (const roundSf of [false, true]) check(`patterns salt ${salt}`, x, pos, roundSf, FORMS.flatMap((form) => [{ form, sms: null }, { form, sms: 1 }]));
  }
});

gpuTest("each form: an index ≥ T raises DEVICE_VALUE once per bad entry, in a first and in a prefetched tile; those rows read as zeros (seed 25004)", async () => {
  const rand = rng(25004);
  const H = 1152;
  await checkBadIndices(rand, randomBf16(rand, 200, H), {}, FORMS, withTuning, symOf, `25004 x${H}`);
});

gpuTest("_rg is the default; H % 8 != 0, an unaligned x or data view and an fp32 input run the base kernels whatever the knob (seed 25005)", async () => {
  assert.equal(perChannelLaunchTuning.pipelinedBf16, "_rg");
  const rand = rng(25005);
  const T = 300, H = 1152;
  const x = randomBf16(rand, T, H);
  const pos = gatherPositions(rand, 272, T);
  check("25005 default", x, pos, false, [{ form: perChannelLaunchTuning.pipelinedBf16, sym: RG }]);
  // H % 8 == 4: a 16-byte piece would straddle the end of a row
  for (const h of [4, 100]) check(`25005 x${h}`, randomBf16(rand, 129, h), gatherPositions(rand, 144, 129), true, FORMS.map((form) => ({ form, sym: BASE })));
  // the same values one element into their storage: x's device address is not a multiple of 16
  const shifted = new Uint16Array(T * H + 1);
  shifted.set(x.data as Uint16Array, 1);
  check("25005 unaligned x", new HostTensor(shifted, "bf16", [T, H], [H, 1], 1), pos, true, FORMS.map((form) => ({ form, sym: BASE })));
  // data one byte into its allocation
  const [cd, cs] = perChannelCastFused(x, { fmt: "e4m3", numPerTokens: 128, posToToken: pos });
  const dx = up(x) as DeviceTensor;
  const dpos = toDevice(pos);
  for (const form of FORMS) {
    const data = uploadView(new HostTensor(new Uint8Array(272 * H + 16).fill(0xa5), "e4m3", [272, H], [H, 1], 1));
    const [gd, gs] = withTuning(form, null, () => perChannelCastFused(dx, { fmt: "e4m3", numPerTokens: 128, posToToken: dpos, out: { data } }));
    assert.equal(perChannelLastSymbol(), BASE, `unaligned data ${form}`);
    assertBytesEqual(logicalBytes(await toHost(gd) as HostTensor), storageBytes(cd as HostTensor), `unaligned data ${form} data`);
    sameAllocation(gs, cs, `unaligned data ${form} sf`);
    dispose(gd, gs);
  }
  dispose(dx, dpos);
  // an fp32 input: the fp32 base kernel
  const xf = tensor(Float32Array.from({ length: 129 * 256 }, () => (rand() - 0.5) * 1000), [129, 256], "fp32") as HostTensor;
  check("25005 fp32", xf, gatherPositions(rand, 144, 129), false, FORMS.map((form) => ({ form, sym: "tk_per_channel_cast__fp32_r128" })));
});

gpuTest("_rg = base = reference at the bench shape: 16384 × 7168 gathered by (p · 7919) mod T, zero rows (seed 25006)", () => {
  const T = 16384, H = 7168;
  const rand = rng(25006);
  const v = new Uint16Array(T * H);
  for (let i = 0; i < v.length; i++) v[i] = encodeBf16(Math.fround((rand() - 0.5) * 2 ** ((i % H) % 23 - 11)));
  const pos = tensor(Int32Array.from({ length: T }, (_, p) => (p % 1001 === 7 ? -1 : (p * 7919) % T)), [T], "int32") as HostTensor;
  check("25006 16384x7168", tensor(v, [T, H], "bf16") as HostTensor, pos, false, FORMS.map((form) => ({ form })));
});

gpuTest("by default an ungathered call runs the base kernel and a gathered one _rg; ringUngathered on runs _rg ungathered (seed 25007)", () => {
  assert.equal(perChannelLaunchTuning.ringUngathered, false, "ringUngathered is off by default");
  const rand = rng(25007);
  const x = randomBf16(rand, 256, 1152);
  const want = perChannelCastFused(x, { fmt: "e4m3", numPerTokens: 128 });
  const dx = up(x) as DeviceTensor;
  try {
    for (const [on, sym] of [[false, BASE], [true, RG]] as const) {
      const prev: boolean = perChannelLaunchTuning.ringUngathered;
      perChannelLaunchTuning.ringUngathered = on;
      try {
        const [gd, gs] = perChannelCastFused(dx, { fmt: "e4m3", numPerTokens: 128 });
        assert.equal(perChannelLastSymbol(), sym, `ringUngathered ${on}: ${sym} ran`);
        sameAllocation(gd, want[0], `ringUngathered ${on} data`);
        sameAllocation(gs, want[1], `ringUngathered ${on} sf`);
        dispose(gd, gs);
      } finally {
        perChannelLaunchTuning.ringUngathered = prev;
      }
    }
  } finally {
    dispose(dx);
  }
  check("25007 gathered default", x, gatherPositions(rand, 208, 256), false, [{ form: perChannelLaunchTuning.pipelinedBf16, sym: RG }]);
});

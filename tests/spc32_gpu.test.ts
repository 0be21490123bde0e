/**
 * Round 32's `_an` form of `swigluForwardAndPerChannelCastAndTranspose` (`swigluPerChannelLaunchTuning.alignedNoClamp`:
 * `tk_swiglu_per_channel_cast__bf16_an`, docs/perf-notes/perf32-spc.md) against the CPU reference and against the
 * knob-off kernels, byte for byte over both whole output allocations, with the launched symbol checked for every
 * call: numPerTokens 32 and 128, both layouts (R and the layout are run-time values of the one `_an` kernel),
 * roundSf both ways, inputs with NaN, ±Inf, ±0 and gates outside the silu table's window (the activation's NaN
 * pattern is not canonicalised in `_an`); clamps (6.5, 0.1, a subnormal, 3e38, 0, −2.5) and an unaligned x view fall
 * back to the knob-off kernel with the knob on; H from 64 to 7168 (numPerTokens 32: one partial 256-column tile,
 * partial last tiles), 128 to 16384 rows, the grid at 1, 3 and all SMs (CTAs walking several tiles, with
 * column-tile steps that wrap) and `_an` on main's grid (`anGrid: "main"`), every bf16 gate pattern, and the bench shape 16384 × 7168 (the three roofline
 * variants and numPerTokens 32 untransposed: `_an` = knob off). Seeds 32001 … 32006. Skipped, and counted as
 * skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { config, type DeviceTensor, HostTensor, tensor } from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import {
  swigluForwardAndPerChannelCastAndTranspose as fused,
  type SwigluForwardAndPerChannelCastAndTransposeOptions,
  swigluPerChannelLastSymbol,
  swigluPerChannelLaunchTuning,
} from "../ops/quant/swiglu_per_channel.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";
import { randomX } from "./swiglu_per_channel_util.ts";

type Opts = SwigluForwardAndPerChannelCastAndTransposeOptions;

const AN = "tk_swiglu_per_channel_cast__bf16_an";
const BASE = { fmt: "e4m3" } as const;
/** `_an` takes only calls without a clamp; every clamp runs the knob-off kernel whatever the knob. */
const CLAMPS = [undefined, 6.5, 0.1, 1e-40, 3e38, 0, -2.5];

/** The knob-off kernel of an option set. */
function baseSymbol(o: Opts): string {
  return o.withoutTranspose ? `tk_swiglu_per_channel_cast__bf16_r${o.numPerTokens}` : `tk_swiglu_per_channel_cast_and_transpose__bf16_r${o.numPerTokens}`;
}

/** The kernel the knob on runs for an aligned x: `_an` without a clamp, else the knob-off kernel. */
function onSymbol(o: Opts): string {
  return o.clampValue === undefined ? AN : baseSymbol(o);
}

/** Runs `f` with the knob at `on`, `_an`'s grid at `grid` and config.numSms at `sms`; restores all three. */
function withForm<R>(on: boolean, sms: number | null, f: () => R, grid: "wave" | "main" = "wave"): R {
  const prev = { ...swigluPerChannelLaunchTuning };
  const prevSms = config.numSms;
  swigluPerChannelLaunchTuning.alignedNoClamp = on;
  swigluPerChannelLaunchTuning.anGrid = grid;
  config.numSms = sms;
  try {
    return f();
  } finally {
    Object.assign(swigluPerChannelLaunchTuning, prev);
    config.numSms = prevSms;
  }
}

/**
 * The op on the device with the knob on (expecting `sym`) and off (its layout's kernel), both compared with the CPU
 * reference (`ref`, computed once per option set) over both whole allocations.
 */
function check(label: string, ref: [HostTensor, HostTensor], dx: DeviceTensor, o: Opts, sym: string, sms: number | null, grid: "wave" | "main" = "wave"): void {
  for (const [on, want] of [[true, sym], [false, baseSymbol(o)]] as const) {
    const [d, s] = withForm(on, sms, () => fused(dx, o), grid) as [DeviceTensor, DeviceTensor];
    try {
      assert.equal(swigluPerChannelLastSymbol(), want, `${label} an=${on}: launched kernel`);
      assertBytesEqual(readAllocation(d), storageBytes(ref[0]), `${label} an=${on} data`);
      assertBytesEqual(readAllocation(s), storageBytes(ref[1]), `${label} an=${on} sf`);
    } finally {
      dispose(d, s);
    }
  }
}

/** CPU reference of an option set (a host input runs it). */
function reference(x: HostTensor, o: Opts): [HostTensor, HostTensor] {
  return fused(x, o) as [HostTensor, HostTensor];
}

for (const numPerTokens of [32, 128] as const) {
  for (const withoutTranspose of [false, true]) {
    const seed = 32001 + (numPerTokens === 32 ? 0 : 2) + (withoutTranspose ? 1 : 0);
    gpuTest(`an = reference = knob off: numPerTokens ${numPerTokens}, withoutTranspose ${withoutTranspose}, roundSf both ways, clamps fall back, 128x64 … 1024x7168 at 1 / 3 / all SMs (seed ${seed})`, () => {
      console.log(`spc32 seed ${seed}`);
      assert.equal(swigluPerChannelLaunchTuning.alignedNoClamp, true, "the _an form is on by default (since round 32's A/B)");
      assert.equal(swigluPerChannelLaunchTuning.anGrid, "main", "_an runs main's 12 · SMs grid by default (it won the A/B)");
      const rand = rng(seed);
      // H = 64 … 7168: for numPerTokens 32 (256-column tiles) 64 and 192 are one partial tile, 320 and 1088 end with
      // a partial one; for 128 (64 columns) 5 and 17 column tiles, so 2 or 6 CTAs step across row blocks unevenly
      for (const [T, H] of [[128, 64], [256, 192], [384, 320], [512, 1088], [1024, 7168]]) {
        const x = randomX(rand, T, H);
        const dx = uploadView(x);
        const full = T * H <= 512 * 1088; // the 7168-wide shape: one roundSf and two clamps (its reference costs ~1.5 s)
        for (const roundSf of full ? [false, true] : [false]) {
          for (const clampValue of full ? CLAMPS : CLAMPS.slice(0, 2)) {
            const o = { ...BASE, numPerTokens, withoutTranspose, roundSf, clampValue };
            const ref = reference(x, o);
            // the grid sizes matter for `_an` only; a clamped call runs the knob-off kernel either way
            for (const sms of full && clampValue === undefined ? [1, 3, null] : [null]) {
              check(`${T}x${H} round=${roundSf} clamp=${clampValue} sms=${sms}`, ref, dx, o, onSymbol(o), sms);
            }
            // `_an` on main's grid of 12 · SMs (the A/B's third setting)
            if (clampValue === undefined) check(`${T}x${H} round=${roundSf} grid=main`, ref, dx, o, AN, 3, "main");
          }
        }
        dispose(dx);
      }
    });
  }
}

gpuTest("an: an unaligned x view falls back to the knob-off kernel, with the reference's bytes (seed 32005)", () => {
  const rand = rng(32005);
  const T = 256, H = 320;
  const x = randomX(rand, T, H);
  const dx = uploadView(x);
  // the same values one element into their storage: x's device address is 2 mod 16
  const shifted = new Uint16Array(T * 2 * H + 1);
  shifted.set(x.data as Uint16Array, 1);
  const xv = new HostTensor(shifted, "bf16", [T, 2 * H], [2 * H, 1], 1);
  const dxv = uploadView(xv);
  assert.equal(dxv.addr % 16, 2, "the view is not 16-byte aligned");
  for (const numPerTokens of [32, 128] as const) {
    for (const withoutTranspose of [false, true]) {
      const o = { ...BASE, numPerTokens, withoutTranspose };
      check(`aligned r${numPerTokens} t=${!withoutTranspose}`, reference(x, o), dx, o, AN, null);
      for (const clampValue of [undefined, 6.5]) {
        const o = { ...BASE, numPerTokens, withoutTranspose, roundSf: true, clampValue };
        check(`unaligned r${numPerTokens} t=${!withoutTranspose} clamp=${clampValue}`, reference(xv, o), dxv, o, baseSymbol(o), null);
      }
    }
  }
  dispose(dx, dxv);
});

gpuTest("an = reference for every bf16 gate pattern (the silu table and its fix-ups, NaN gates), with and without clamp", () => {
  // 65536 gates (every pattern once), up = 1.5, in a [256, 2·256] input
  const T = 256, H = 256;
  const v = new Uint16Array(T * 2 * H);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      v[t * 2 * H + j] = (t * H + j) & 0xffff;
      v[t * 2 * H + H + j] = encodeBf16(1.5);
    }
  }
  const x = tensor(v, [T, 2 * H], "bf16");
  const dx = uploadView(x);
  for (const clampValue of [undefined, 3.3]) {
    for (const numPerTokens of [32, 128] as const) {
      for (const withoutTranspose of [false, true]) {
        const o = { ...BASE, numPerTokens, withoutTranspose, clampValue };
        check(`all gates clamp=${clampValue} r${numPerTokens} t=${!withoutTranspose}`, reference(x, o), dx, o, onSymbol(o), null);
      }
    }
  }
  dispose(dx);
});

gpuTest("an at 16384 rows: = reference at 16384 × 512, = knob off at the bench shape 16384 × 7168 for every R and layout (seed 32006)", () => {
  const rand = rng(32006);
  const x = randomX(rand, 16384, 512);
  const dx = uploadView(x);
  for (const numPerTokens of [32, 128] as const) {
    for (const withoutTranspose of [false, true]) {
      const o = { ...BASE, numPerTokens, withoutTranspose, roundSf: withoutTranspose };
      check(`16384x512 r${numPerTokens} t=${!withoutTranspose}`, reference(x, o), dx, o, AN, null);
    }
  }
  dispose(dx);
  // the bench shape, compared between the two forms on the device (no CPU reference: 117 M elements; the tests above
  // pin the per-element operations): bench/cases_swiglu_per_channel.ts's mixed patterns (random sign, exponent
  // fields 0x78 … 0x87), every 4099th element a special (±0, ±Inf, NaN, a gate outside the table's window)
  const SPECIALS = [0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x4400, 0xc400];
  const bv = new Uint16Array(16384 * 2 * 7168);
  for (let i = 0; i < bv.length; i++) {
    const h = Math.imul(i, 0x9e3779b1) >>> 0;
    bv[i] = i % 4099 === 0 ? SPECIALS[(i / 4099) % SPECIALS.length] : ((h >>> 31) << 15) | (0x3c00 + ((h >>> 8) & 0x7ff));
  }
  const big = tensor(bv, [16384, 2 * 7168], "bf16");
  const dbig = uploadView(big);
  for (const [numPerTokens, withoutTranspose] of [[128, false], [32, false], [128, true], [32, true]] as const) {
    const o = { ...BASE, numPerTokens, withoutTranspose };
    const [bd, bs] = withForm(false, null, () => fused(dbig, o)) as [DeviceTensor, DeviceTensor];
    assert.equal(swigluPerChannelLastSymbol(), baseSymbol(o));
    const [sd, ss] = withForm(true, null, () => fused(dbig, o)) as [DeviceTensor, DeviceTensor];
    assert.equal(swigluPerChannelLastSymbol(), AN);
    assertBytesEqual(readAllocation(sd), readAllocation(bd), `16384x7168 r${numPerTokens} t=${!withoutTranspose} data`);
    assertBytesEqual(readAllocation(ss), readAllocation(bs), `16384x7168 r${numPerTokens} t=${!withoutTranspose} sf`);
    dispose(bd, bs, sd, ss);
  }
  dispose(dbig);
});

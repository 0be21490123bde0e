/**
 * GPU test of `tk_cast__bf16_e4m3_sr_a12w2` (cast_sr23.cu, castLaunchTuning.srRing "w2"; the default for 5120 … 14336
 * rows, `_sr_a12` elsewhere; docs/perf-notes/perf23-csr.md): stochasticCast bf16
 * → e4m3 with `_sr_a12`'s chunk conversion and tail, a warp's ring of 64-chunk units, each lane converting 2
 * consecutive chunks a step and storing them with one 16-byte store, against the CPU reference (stochastic.ref.ts)
 * byte for byte, for srRing "w2" and 0 (`_sr_a12`): every one of the 65536 bf16 patterns (NaN, ±Inf,
 * subnormals, ±0; NaNs as the one pattern the CPU reference keeps) under 24 quad hashes, chunks of specials (the NaN
 * probe's fallback, in either chunk of a lane's pair), chunk counts around a unit (63, 64, 65), the grid's threads G
 * and the unit laps L of the rings (the prologue's depth S − 1, S and S + 1 laps, several laps), odd chunk counts (a
 * lane's pair with its second chunk past the end: the 8-byte store), under grid caps of 1 and 3 SMs and the device's
 * own, every tail (numel % 8 = 0 or 4, 4 elements alone), three (seed, offset) pairs (offsets ≥ 2^32 included),
 * views on a 16-byte boundary (the wide ring) and off a chunk boundary (the plain `_sr`, knob or not), out views at +1
 * (`_sr`), +8 (8-byte aligned only: `_sr_a12`, the fall-back) and +16 elements (the wide ring), 0 elements, the
 * `cast(…, { stochasticRounding })` form on a 3-D view, the srRingMinRows / srRingMaxRows window, 4001 × 7168 with
 * e4m3 subnormal-range values, grid points, the bf16 just below them, ±448 and beyond, ±Inf, and 16384 × 7168 against
 * `_sr_a12`. The symbol and the PDL flag of every launch are asserted (elementCastLastLaunch), so a silent
 * fallback fails. Skips without a GPU, as the other GPU tests.
 * @module
 */
import assert from "node:assert/strict";
import { cast, type DeviceTensor, type HostTensor, stochasticCast, type Tensor, zeros } from "../mod.ts";
import { config } from "../core/config.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { castLaunchTuning, elementCastLastLaunch } from "../ops/quant/elem_launch.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { bf16Elements as bf16Storage, dispose, plantSrEdges, readAllocation, sameAllocation, storageBytes, uploadView } from "./gpu_util.ts";

const DEVICE = { kind: "cuda", index: 0 } as const;
type Ring = 0 | "w2";
const RINGS: readonly Ring[] = ["w2", 0];

function castFn(suffix: string): number {
  return kernelFunction("test", DEVICE, `tk_cast__bf16_e4m3${suffix}`);
}

/** The aligned form srRing `ring` launches in its row window with out on a 16-byte boundary. */
function alignedSymbol(ring: Ring): string {
  return ring === 0 ? "_sr_a12" : `_sr_a12${ring}`;
}

/** Runs f with castLaunchTuning = { srRing, srRingMinRows, srRingMaxRows } and config.numSms = sms; restores all four. */
function withKnobs<T>(ring: Ring, sms: number | null, f: () => T, maxRows = Infinity, minRows = 0): T {
  const prev = { ...castLaunchTuning };
  const prevSms = config.numSms;
  Object.assign(castLaunchTuning, { srRing: ring, srRingMinRows: minRows, srRingMaxRows: maxRows });
  config.numSms = sms;
  try {
    return f();
  } finally {
    Object.assign(castLaunchTuning, prev);
    config.numSms = prevSms;
  }
}

/** bf16 storage with specials planted (gpu_util.ts bf16Elements). */
const bf16Elements = (rand: () => number, n: number, pad: number, sweeps = 0): HostTensor => bf16Storage(rand, n, pad, sweeps, true);

/**
 * SR bf16 → e4m3 of x on the device under grid cap `sms` for every srRing (the whole row window),
 * the symbol asserted, bytes equal to the CPU reference's; 1-D inputs also into out views at +1 (`_sr`), +8 (8-byte
 * aligned: `_sr_a12` for the wide rings) and +16 elements.
 */
function compareSr(x: HostTensor, label: string, seed: bigint, offset: bigint, aligned: boolean, sms: number | null): void {
  const cpu = stochasticCast(x, { dtype: "e4m3", seed, offset }) as HostTensor;
  const dx = uploadView(x);
  try {
    for (const ring of RINGS) {
      withKnobs(ring, sms, () => {
        const tag = `${label} sms ${sms ?? "device"} srRing ${ring}`;
        const gpu = stochasticCast(dx, { dtype: "e4m3", seed, offset });
        try {
          if (x.numel > 0) {
            const want = aligned ? alignedSymbol(ring) : "_sr";
            assert.equal(elementCastLastLaunch().fn, castFn(want), `${tag}: symbol ${want}`);
            assert.equal(elementCastLastLaunch().pdl, false, `${tag}: no PDL attribute`);
          }
          sameAllocation(gpu, cpu, tag);
        } finally {
          dispose(gpu);
        }
        if (x.numel === 0 || x.shape.length !== 1) return;
        for (const at of [1, 8, 16]) {
          const backing = zeros([x.numel + at], "e4m3", { device: 0 }) as DeviceTensor;
          const outView = backing.slice(0, at, x.numel + at);
          try {
            assert.equal(stochasticCast(dx, { dtype: "e4m3", seed, offset, out: outView }), outView, `${tag}: returns out`);
            const want = at === 1 || !aligned ? "_sr" : at === 8 ? "_sr_a12" : alignedSymbol(ring);
            assert.equal(elementCastLastLaunch().fn, castFn(want), `${tag} out +${at}: symbol ${want}`);
            const all = readAllocation(backing);
            assert.ok(all.subarray(0, at).every((b) => b === 0), `${tag}: out view +${at}: a byte before it was written`);
            assertBytesEqual(all.subarray(at), storageBytes(cpu), `${tag} (out view at +${at} elements)`);
          } finally {
            dispose(outView, backing);
          }
        }
      });
    }
  } finally {
    dispose(dx);
  }
}

const SEEDS: readonly (readonly [bigint, bigint])[] = [[0n, 0n], [12345n, 4n], [0xffffffffn, 0x1_0000_0004n]];

/**
 * Chunk counts (8 elements each) for a grid of G threads (grid cap 4 · sms blocks of 256, reached from 1024 · sms
 * chunks on): a unit's 63, 64, 65 (one warp), around G, and around k unit laps L = 2G (64 chunks a warp, G / 32
 * warps at the cap) for k = 1 … 4 (the prologue's depth S − 1, S and S + 1 of both rings), the odd ones leaving a
 * lane's pair half past the end, and several laps with a partial last one.
 */
function wideChunkCounts(g: number): number[] {
  const out = [1, 2, 3, 63, 64, 65, g - 1, g + 1];
  for (const k of [1, 2, 3, 4]) out.push(2 * k * g - 1, 2 * k * g, 2 * k * g + 33);
  out.push(14 * g + 12345);
  return out;
}

gpuTest("stochasticCast bf16 → e4m3 through _sr_a12w2 (castLaunchTuning.srRing) = reference = _sr_a12: every bf16 pattern under 24 hashes (seed 23101)", () => {
  const rand = rng(23101);
  const all = bf16Elements(rand, 8 * 65536, 0, 8);
  for (const [s, off] of SEEDS) compareSr(all, `every pattern seed ${s} offset ${off}`, s, off, true, null);
});

gpuTest("stochasticCast bf16 → e4m3 through _sr_a12w2: chunk counts around a unit, the grid and the unit laps under grid caps of 1 and 3 SMs, every tail, views on and off a chunk boundary, out views at +1 / +8 / +16 (seed 23102)", () => {
  const rand = rng(23102);
  for (const sms of [1, 3]) {
    for (const [k, chunks] of wideChunkCounts(1024 * sms).entries()) {
      for (const tail of [0, 4]) {
        const n = 8 * chunks + tail;
        // pad 0 / 8: on a 16-byte boundary (the wide ring); pad 1 / 4: off a chunk boundary (`_sr`); rotated
        const pad = [0, 8, 1, 4][(k + tail / 4) % 4];
        const [s, off] = SEEDS[(k + tail) % SEEDS.length];
        compareSr(bf16Elements(rand, n, pad), `n=${n} +${pad} seed ${s} offset ${off}`, s, off, pad % 8 === 0, sms);
      }
    }
  }
  // 4 elements (no chunk: the tail alone) and 0 elements
  for (const [s, off] of SEEDS) compareSr(bf16Elements(rand, 4, 0), `n=4 seed ${s}`, s, off, true, null);
  compareSr(bf16Elements(rand, 0, 0), "0 elements", 0n, 0n, true, null);
});

gpuTest("stochasticCast bf16 → e4m3 through _sr_a12w2: unit laps at the device's own grid, 2^20 + 4 elements, the cast option form on a 3-D view, the defaults (seed 23103)", () => {
  const rand = rng(23103);
  const g = 1024 * config.getNumSms(DEVICE);
  for (const chunks of [g + 3, 4 * g + 1, 6 * g - 1, 27 * g + 5]) compareSr(bf16Elements(rand, 8 * chunks + 4, 0), `n=${8 * chunks + 4}`, 12345n, 4n, true, null);
  for (const pad of [0, 8, 1]) compareSr(bf16Elements(rand, 1048576 + 4, pad, 1), `n=2^20+4 +${pad}`, 0xffffffffn, 0x1_0000_0004n, pad % 8 === 0, null);
  const m = bf16Elements(rand, 6 * 5 * 8, 0).view([6, 5, 8]) as HostTensor;
  const cpu = cast(m, { dtype: "e4m3", stochasticRounding: true, seed: 3n }) as HostTensor;
  const dm = uploadView(m);
  try {
    for (const ring of RINGS) {
      withKnobs(ring, null, () => {
        const gpu = cast(dm, { dtype: "e4m3", stochasticRounding: true, seed: 3n }) as Tensor;
        assert.equal(elementCastLastLaunch().fn, castFn(alignedSymbol(ring)), `cast SR [6, 5, 8] srRing ${ring}: symbol`);
        assert.equal(elementCastLastLaunch().pdl, false, `cast SR [6, 5, 8] srRing ${ring}: no PDL attribute`);
        sameAllocation(gpu, cpu, `cast SR [6, 5, 8] srRing ${ring}`);
        dispose(gpu);
      });
    }
  } finally {
    dispose(dm);
  }
  // the defaults are round 23's: w2 for 5120 … 14336 rows, `_sr_a12` elsewhere
  assert.equal(castLaunchTuning.srRing, "w2", "srRing defaults to w2");
  assert.equal(castLaunchTuning.srRingMinRows, 5120, "srRingMinRows defaults to 5120");
  assert.equal(castLaunchTuning.srRingMaxRows, 14336, "srRingMaxRows defaults to 14336");
});

gpuTest("stochasticCast bf16 → e4m3 through _sr_a12w2 = reference at 4001 × 7168 with e4m3 subnormal-range values, grid points and saturation, and = _sr_a12 at 16384 × 7168 (seed 23104)", () => {
  const rand = rng(23104);
  const x = bf16Elements(rand, 4001 * 7168, 0);
  plantSrEdges(rand, x);
  compareSr(x.view([4001, 7168]) as HostTensor, "4001x7168", 99n, 0n, true, null);
  // the bench shape, device against device (`_sr_a12` = the reference: the test above and tests/csr13_gpu.test.ts)
  const big = bf16Elements(rand, 16384 * 7168, 0).view([16384, 7168]) as HostTensor;
  const db = uploadView(big);
  try {
    const run = (ring: Ring, maxRows = Infinity) =>
      withKnobs(ring, null, () => {
        const y = stochasticCast(db, { dtype: "e4m3", seed: 7n, offset: 0x1_0000_0008n }) as DeviceTensor;
        const want = maxRows >= 16384 ? alignedSymbol(ring) : "_sr_a12";
        assert.equal(elementCastLastLaunch().fn, castFn(want), `16384x7168 srRing ${ring} srRingMaxRows ${maxRows}: symbol ${want}`);
        return y;
      }, maxRows);
    const base = run(0);
    try {
      for (const [ring, maxRows] of [["w2", Infinity], ["w2", 16384], ["w2", 16383]] as const) {
        const y = run(ring, maxRows);
        try {
          sameAllocation(y, base, `16384x7168 srRing ${ring} srRingMaxRows ${maxRows} against _sr_a12`);
        } finally {
          dispose(y);
        }
      }
    } finally {
      dispose(base);
    }
  } finally {
    dispose(db);
  }
});

gpuTest("stochasticCast bf16 → e4m3: srRing w2 takes its form for rows in [srRingMinRows, srRingMaxRows] and _sr_a12 outside, 2-D with and without a tail and an odd chunk count, 1-D and 3-D (seed 23105)", () => {
  const rand = rng(23105);
  const rowsOf = (x: HostTensor) => x.numel / x.shape[x.shape.length - 1];
  // [rows, 7168] (whole units for even rows), [rows, 7172] (odd rows: an odd chunk count and a tail), 1-D, [6, 5, 8]
  const xs: HostTensor[] = [];
  for (const h of [7168, 7172]) for (const rows of [1, 3, 4]) xs.push(bf16Elements(rand, rows * h, 0).view([rows, h]) as HostTensor);
  xs.push(bf16Elements(rand, 1024 * 7 + 4, 0));
  xs.push(bf16Elements(rand, 6 * 5 * 8, 0).view([6, 5, 8]) as HostTensor);
  for (const [k, x] of xs.entries()) {
    const [seed, offset] = SEEDS[k % SEEDS.length];
    const cpu = stochasticCast(x, { dtype: "e4m3", seed, offset }) as HostTensor;
    const dx = uploadView(x);
    try {
      for (const ring of ["w2"] as const) {
        const r = rowsOf(x);
        for (const [lo, hi] of [[0, r], [0, r - 1], [r, Infinity], [r + 1, Infinity]]) {
          withKnobs(ring, null, () => {
            const tag = `[${x.shape.join(", ")}] srRing ${ring} srRingMinRows ${lo} srRingMaxRows ${hi}`;
            const gpu = stochasticCast(dx, { dtype: "e4m3", seed, offset });
            try {
              const want = r >= lo && r <= hi ? alignedSymbol(ring) : "_sr_a12";
              assert.equal(elementCastLastLaunch().fn, castFn(want), `${tag}: symbol ${want}`);
              sameAllocation(gpu, cpu, tag);
            } finally {
              dispose(gpu);
            }
          }, hi, lo);
        }
      }
    } finally {
      dispose(dx);
    }
  }
});

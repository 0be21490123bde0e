/**
 * The A/B check shared by the e2m1 perTokenCast knob tests (tests/fp4_26_gpu.test.ts: `mxfp4Wide`,
 * tests/nvfp4_29_gpu.test.ts: `nvfp4Wide`, tests/fp4c30_gpu.test.ts: `nvfp4ColTiles`; tests/fp4_17_gpu.test.ts,
 * `e2m1LaneWide`, left with that knob in trim32): each view runs through main's kernel (knob off), the form (knob on),
 * replay and the knob off again, byte for byte against the CPU reference, with the launched symbol asserted every time.
 */
import assert from "node:assert/strict";
import {
  type HostTensor,
  perTokenCast,
  type PerTokenCastOptions,
  perTokenCastWithSfOnly,
  type PerTokenCastWithSfOnlyOptions,
} from "../mod.ts";
import { perTokenLastLaunch, perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { rng } from "./harness.ts";
import { dispose, randomInput, sameAllocation, samePair, shuffledBf16Patterns, uploadView, withPdl } from "./gpu_util.ts";
import { ptcFn, withSpecials } from "./per_token_rows.ts";

/** A boolean knob of perTokenLaunchTuning that swaps an e2m1 kernel for a form with the same bytes. */
export type E2m1Knob = "mxfp4Wide" | "nvfp4Wide" | "nvfp4ColTiles";

/**
 * [label, perTokenCast options besides fmt, main's symbol suffix, the symbol suffix with the knob on, and the suffix
 * views that are not 16-byte aligned take with the knob on or off (main's symbol when absent)].
 */
export type KnobLayout = readonly [string, Record<string, unknown>, string, string, string?];

/** [T, H] bf16 rows holding every one of the 65536 bf16 patterns, shuffled (T · H ≥ 65536), rest random finite. */
export function allPatterns(seed: number, T: number, H: number): HostTensor {
  const rand = rng(seed);
  const x = randomInput(rand, T, H, "bf16");
  (x.data as Uint16Array).set(shuffledBf16Patterns(rand), 0);
  return x;
}

/**
 * Runs one view through main's kernel (knob off), the form (knob on; main's kernel where the view is not `aligned`),
 * replay, and the knob off again, PDL off and on (neither form carries the attribute). The caller restores the knob.
 */
export async function checkKnobView(
  knob: E2m1Knob,
  x: HostTensor,
  aligned: boolean,
  what: string,
  layouts: readonly KnobLayout[],
): Promise<void> {
  const dx = uploadView(x);
  const T = x.shape[0];
  try {
    for (const [name, extra, alignedMain, formSym, unaligned] of layouts) {
      const mainSym = aligned ? alignedMain : unaligned ?? alignedMain;
      const o = { fmt: "e2m1", ...extra } as const;
      const c = perTokenCast(x, o as never);
      for (const pdl of [false, true]) {
        await withPdl(pdl, () => {
          const label = `${what} ${name} pdl ${pdl}`;
          perTokenLaunchTuning[knob] = false;
          const main = perTokenCast(dx, o as never);
          if (T > 0) assert.equal(perTokenLastLaunch().fn, ptcFn(mainSym), `${label}: main's symbol`);
          perTokenLaunchTuning[knob] = true;
          const got = perTokenCast(dx, o as never);
          if (T > 0) {
            const l = perTokenLastLaunch();
            assert.equal(l.fn, ptcFn(aligned ? formSym : mainSym), `${label}: symbol`);
            assert.equal(l.pdl, false, `${label}: no PDL attribute`);
          }
          samePair(got, c, label);
          samePair(main, c, `${label} (main's kernel)`);
          samePair(perTokenCast(dx, o as never), c, `${label} (again: replay)`);
          perTokenLaunchTuning[knob] = false;
          samePair(perTokenCast(dx, o as never), c, `${label} (knob off on the replayed options)`);
          if (T > 0) assert.equal(perTokenLastLaunch().fn, ptcFn(mainSym), `${label}: knob off`);
        });
      }
    }
  } finally {
    dispose(dx);
  }
}

/**
 * The view sweep of both tests, one seed each: 0 rows, 1 row, rows whose last warp unit has dead lanes (H = 576, 960,
 * 7168 + 64), dead warps (1 × 64), strided and 16-byte-offset views (the form), unaligned views (main's kernel), and
 * 3000 / 8192 × 7168, where only the layouts named in `large` run (the CPU reference dominates the time). Rows with
 * specials (tests/per_token_rows.ts withSpecials).
 */
export async function sweepKnobViews(
  knob: E2m1Knob,
  seeds: readonly [number, number],
  layouts: readonly KnobLayout[],
  large: readonly [readonly string[], readonly string[]],
): Promise<void> {
  for (const [k, seed] of seeds.entries()) {
    const rand = rng(seed);
    // [T, H, row stride, element offset]
    const shapes: [number, number, number, number][] = k === 0
      ? [[0, 7168, 7168, 0], [1, 64, 64, 0], [1, 7168, 7168, 0], [3, 576, 577, 1], [5, 2048, 2048 + 8, 8], [7, 960, 968, 0],
        [33, 7168 + 64, 7168 + 64, 0], [257, 576, 576, 0], [3, 73728, 73728, 0], [3000, 7168, 7168, 0]]
      : [[2, 64, 128, 8], [9, 7168, 7168 + 128, 0], [66, 1024, 1024, 4], [11, 2048, 2048 + 4, 0], [8192, 7168, 7168, 0]];
    for (const [T, H, stride, off] of shapes) {
      let x = withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, "bf16", stride));
      if (off > 0) x = x.slice(0, 0, T).slice(1, off, H + off) as HostTensor;
      const aligned = off % 8 === 0 && stride % 8 === 0;
      const taken = T >= 3000 ? layouts.filter(([n]) => large[k].includes(n)) : layouts;
      await checkKnobView(knob, x, aligned, `${T}x${H} stride ${stride} offset ${off}`, taken);
    }
  }
}

/**
 * With `knob` on, the options the form does not take keep main's kernels: each of `others` runs its symbol suffix
 * with the CPU reference's bytes, and perTokenCastWithSfOnly of `sfOnly` runs `sfOnlySym` (or anything but
 * `notSym`), on 37 × 2048 bf16 rows with specials from `seed`. The knob is restored.
 */
export function checkKnobLeavesOthers(
  knob: E2m1Knob,
  seed: number,
  others: readonly (readonly [PerTokenCastOptions, string])[],
  sfOnly: PerTokenCastWithSfOnlyOptions,
  sfOnlySym: { is: string } | { not: string },
): void {
  const saved = perTokenLaunchTuning[knob];
  const x = withSpecials(randomInput(rng(seed), 37, 2048, "bf16"));
  const dx = uploadView(x);
  try {
    perTokenLaunchTuning[knob] = true;
    for (const [o, sym] of others) {
      samePair(perTokenCast(dx, o), perTokenCast(x, o), `knob on ${JSON.stringify(o)}`);
      assert.equal(perTokenLastLaunch().fn, ptcFn(sym), `knob on ${JSON.stringify(o)}: symbol`);
    }
    const g = perTokenCastWithSfOnly(dx, sfOnly);
    try {
      sameAllocation(g, perTokenCastWithSfOnly(x, sfOnly), "knob on sf only");
    } finally {
      dispose(g);
    }
    if ("is" in sfOnlySym) assert.equal(perTokenLastLaunch().fn, ptcFn(sfOnlySym.is), "knob on sf only: symbol");
    else assert.notEqual(perTokenLastLaunch().fn, ptcFn(sfOnlySym.not), "knob on sf only: not the form");
  } finally {
    perTokenLaunchTuning[knob] = saved;
    dispose(dx);
  }
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** The bf16 pattern of a value exactly representable in bf16. */
function bf16Of(v: number): number {
  f32[0] = v;
  return u32[0] >>> 16;
}

/** Value of e4m3 byte c (normal: c ≥ 0x08). */
function e4m3Value(c: number): number {
  return (1 + (c & 7) / 8) * 2 ** ((c >> 3) - 7);
}

/**
 * NVFP4 edge rows (tests/nvfp4_29_gpu.test.ts, tests/fp4c30_gpu.test.ts): rows at the ends of the fast path's e4m3
 * bytes [0x08, 0x7D] and on the double-rounding cases: all ±0; subnormal bf16 only; groups with amax in [0.05, 0.15] (around 6 · 2^-6: bytes 0x04 … 0x0C) and in [2300, 2900] (around
 * 6 · 416: bytes 0x7C … 0x7E, saturated above 6 · 464), so fast and scalar groups meet in one lane; near the bf16
 * maximum; groups whose amax is 6 · s for an e4m3 normal s (sf = s exactly) and whose other values are ±m · s for
 * the e2m1 midpoints m (fl32(m · s · fl(1 / s)) lands on m or not, by s: ties to even or not); then random rows.
 * Signs random.
 */
export function edgeRows(seed: number, H: number): HostTensor {
  const rand = rng(seed);
  const x = randomInput(rand, 10, H, "bf16");
  const d = x.data as Uint16Array;
  const sign = () => (rand() < 0.5 ? 0x8000 : 0);
  const mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5];
  for (let j = 0; j < H; j++) {
    d[j] = sign();
    d[H + j] = sign() | (1 + Math.floor(rand() * 0x7f));
    d[4 * H + j] = sign() | (0x7e80 + Math.floor(rand() * 0xff));
  }
  for (let g = 0; g < H / 16; g++) {
    // rows 2 and 3: a group's amax A drawn per group, its other values in [0, A]
    const lo = 0.05 + rand() * 0.1, hi = 2300 + rand() * 600;
    for (let k = 0; k < 16; k++) {
      d[2 * H + 16 * g + k] = sign() | bf16Of(Math.fround(k === 0 ? lo : rand() * lo));
      d[3 * H + 16 * g + k] = sign() | bf16Of(Math.fround(k === 0 ? hi : rand() * hi));
    }
    const s = e4m3Value(0x08 + Math.floor(rand() * (0x7e - 0x08)));
    for (let k = 0; k < 16; k++) {
      d[5 * H + 16 * g + k] = sign() | bf16Of(k === 0 ? 6 * s : mids[Math.floor(rand() * mids.length)] * s);
    }
  }
  return x;
}

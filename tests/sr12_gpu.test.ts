/**
 * GPU test of `_g128_sr_wu12` (per_token_cast_sr12.cu, perTokenLaunchTuning.srScaledEncode; docs/perf-notes/
 * perf12-sr.md): perTokenCast bf16 → e4m3 with stochasticCast, groups of 128, against the CPU reference
 * (stochastic.ref.ts) byte for byte and against main's `_g128_sr_wu` with the knob off, on the bench's shapes,
 * small and odd shapes, 0 rows, strided and 16-byte-offset views (the knob's kernel), unaligned views (main's
 * `_g128_sr`: the knob never applies), NaN quads of every pattern, ±Inf, ±0, subnormals, SR edge values (the scaled
 * e4m3 subnormal range, grid points and just below them, saturation), inv = +Inf. The symbol of every launch is
 * asserted (perTokenLastLaunch), so a silent fallback fails. Skips without a GPU, as the other GPU tests.
 */
import assert from "node:assert/strict";
import { HostTensor, perTokenCast, tensor } from "../mod.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { config } from "../core/config.ts";
import { perTokenLastLaunch, perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, samePair, SF_LAYOUTS, uploadView, withPdl } from "./gpu_util.ts";

function ptcFn(suffix: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, `tk_per_token_cast__${suffix}`);
}

/** NaN, ±Inf, ±0 and subnormals in rows t ≡ 0 (mod 3) (the per-chunk NaN probe's fallback). */
function withSpecials(x: HostTensor): HostTensor {
  const [T, H] = x.shape;
  const s0 = x.strides[0];
  const sp = [0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0001, 0x8033];
  const d = x.data as Uint16Array;
  for (let t = 0; t < T; t += 3) {
    const kind = (t / 3) % 4; // 0: one NaN in a group, 1: ±Inf, 2: a whole group NaN, 3: subnormals and −0 only
    for (let j = 0; j < H; j++) {
      const i = x.offset + t * s0 + j;
      if (kind === 0 && j % 97 === 5) d[i] = sp[0];
      else if (kind === 1 && j % 131 === 7) d[i] = sp[(j & 1) + 1];
      else if (kind === 2 && j < 128) d[i] = sp[0];
      else if (kind === 3) d[i] = sp[3 + (j % 3)];
    }
  }
  return x;
}

/**
 * Values that reach every branch of the scaled-domain rounding once multiplied by the group's inverse: ±0, bf16
 * subnormals, scaled magnitudes below 2^-6 (binary32 subnormals after the 2^-120 scaling), at the e4m3 grid and just
 * below the next point (the carry of R into the exponent), 448 (saturation), groups of tiny values (sf at the
 * clamp). Rows t ≡ 1 (mod 3).
 */
function withSrEdges(x: HostTensor): HostTensor {
  const [T, H] = x.shape;
  const s0 = x.strides[0];
  const d = x.data as Uint16Array;
  const edges = [0x0000, 0x8000, 0x0001, 0x807f, 0x3a80, 0xba81, 0x3c00, 0x3bff, 0xbdff, 0x3e00, 0x4000, 0xc3df, 0x0400, 0x3b7f, 0xbb01];
  for (let t = 1; t < T; t += 3) {
    for (let j = 0; j < H; j++) {
      const i = x.offset + t * s0 + j;
      if (Math.floor(t / 3) % 2 === 1 && j % 256 < 128) d[i] = 0x0080 + (j % 7);
      else if (j % 5 === 0) d[i] = edges[(j / 5 + t) % edges.length];
    }
  }
  return x;
}

/** NaNs of several patterns at every position of a quad next to finite values, ±0 and subnormals. */
function nanQuadRows(T: number, H: number): HostTensor {
  const x = randomInput(rng(12109), T, H, "bf16");
  const d = x.data as Uint16Array;
  const nans = [0x7fc0, 0xffc0, 0x7fe5, 0xffa5, 0x7f81, 0xff81];
  const others = [0x0000, 0x8000, 0x0001, 0x8033, 0x3f80, 0xc2f0];
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j += 4) {
      const q = t * (H / 4) + j / 4;
      if (q % 3 === 2) continue;
      d[t * H + j + (q % 4)] = nans[q % nans.length];
      if (q % 5 === 0) d[t * H + j + ((q + 1) % 4)] = nans[(q + 1) % nans.length];
      if (q % 7 === 0) d[t * H + j + ((q + 2) % 4)] = others[q % others.length];
    }
  }
  return x;
}

gpuTest("perTokenCast stochasticCast through _g128_sr_wu12 (srScaledEncode) = reference = _g128_sr_wu: NaN quads, inv = +Inf, every sf layout, 0 rows, tails, 8192 and 16384 × 7168, strided, 16-byte-offset and unaligned views, specials, SR edges, PDL on / off, replay (seeds 12101, 12102)", async () => {
  const saved = perTokenLaunchTuning.srScaledEncode;
  const savedClamp = config.amaxClamp["e4m3/e4m3sf"];
  try {
    const cases: [string, HostTensor, Record<string, unknown>][] = [
      ["1x64 specials", withSrEdges(withSpecials(randomInput(rng(12101), 1, 64, "bf16", 64))), {}],
      ["1x64 NaN quads", nanQuadRows(1, 64), {}],
      ["5x1024 NaN quads", nanQuadRows(5, 1024), {}],
      ["3x7168 NaN quads roundSf", nanQuadRows(3, 7168), { roundSf: true }],
      ["3x7168 NaN quads e4m3 sf", nanQuadRows(3, 7168), { useE4m3Sf: true }],
    ];
    const tiny = new Uint16Array(2 * 128).map((_, j) => [0x0000, 0x8000, 0x0001, 0x8033, 0x7fc0, 0x0002][j % 6]);
    cases.push(["2x128 inv +Inf", tensor(tiny, [2, 128], "bf16"), { useE4m3Sf: true, clampTiny: true }]);
    for (const [what, x, extra] of cases) {
      if (extra.clampTiny) config.amaxClamp["e4m3/e4m3sf"] = 448 * 2 ** -126;
      const dx = uploadView(x);
      try {
        for (const [name, sfo] of SF_LAYOUTS) {
          if (extra.useE4m3Sf && !sfo.useE4m3Sf) continue;
          if (extra.roundSf && !sfo.roundSf) continue;
          const o = { fmt: "e4m3", numPerChannels: 128, stochasticCast: true, ...sfo } as const;
          const c = perTokenCast(x, o);
          await withPdl(true, () => {
            perTokenLaunchTuning.srScaledEncode = true;
            samePair(perTokenCast(dx, o), c, `sr12 ${what} ${name}`);
            assert.equal(perTokenLastLaunch().fn, ptcFn("bf16_e4m3_g128_sr_wu12"), `sr12 ${what} ${name}: symbol`);
            perTokenLaunchTuning.srScaledEncode = false;
          });
        }
      } finally {
        dispose(dx);
        config.amaxClamp["e4m3/e4m3sf"] = savedClamp;
      }
    }
    for (const seed of [12101, 12102]) {
      const rand = rng(seed);
      // [T, H, row stride, element offset]
      const shapes: [number, number, number, number][] = seed === 12101
        ? [[0, 7168, 7168, 0], [1, 64, 64, 0], [3, 576, 577, 1], [5, 2048, 2048 + 8, 8], [7, 960, 968, 0], [33, 7168, 7168 + 64, 0],
          [257, 576, 576, 0], [3, 73728, 73728, 0], [8192, 7168, 7168, 0]]
        : [[2, 64, 128, 8], [9, 7168, 7168 + 128, 0], [66, 1024, 1024, 4], [16384, 7168, 7168, 0]];
      for (const [T, H, stride, off] of shapes) {
        let x = withSrEdges(withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, "bf16", stride)));
        if (off > 0) x = x.slice(0, 0, T).slice(1, off, H + off) as HostTensor;
        const dx = uploadView(x);
        const aligned = off % 8 === 0 && stride % 8 === 0;
        try {
          for (const [name, sfo] of SF_LAYOUTS) {
            if (T >= 8192 && name !== (seed === 12101 ? "fp32" : "packed-col")) continue;
            const o = { fmt: "e4m3", numPerChannels: 128, stochasticCast: true, ...sfo } as const;
            const c = perTokenCast(x, o);
            for (const on of [true, false]) {
              await withPdl(on, () => {
                const label = `sr12 ${name} ${T}x${H} stride ${stride} offset ${off} pdl ${on}`;
                perTokenLaunchTuning.srScaledEncode = false;
                const main = perTokenCast(dx, o);
                if (T > 0) assert.equal(perTokenLastLaunch().fn, ptcFn(aligned ? "bf16_e4m3_g128_sr_wu" : "bf16_e4m3_g128_sr"), `${label}: main's symbol`);
                perTokenLaunchTuning.srScaledEncode = true;
                const got = perTokenCast(dx, o);
                if (T > 0) {
                  const l = perTokenLastLaunch();
                  assert.equal(l.fn, ptcFn(aligned ? "bf16_e4m3_g128_sr_wu12" : "bf16_e4m3_g128_sr"), `${label}: symbol`);
                  assert.equal(l.pdl, aligned && on, `${label}: PDL attribute`);
                }
                samePair(got, c, label);
                samePair(main, c, `${label} (main's kernel)`);
                samePair(perTokenCast(dx, o), c, `${label} (again: replay)`);
                perTokenLaunchTuning.srScaledEncode = false;
                samePair(perTokenCast(dx, o), c, `${label} (knob off on the replayed options)`);
                if (T > 0) assert.equal(perTokenLastLaunch().fn, ptcFn(aligned ? "bf16_e4m3_g128_sr_wu" : "bf16_e4m3_g128_sr"), `${label}: knob off`);
              });
            }
          }
        } finally {
          dispose(dx);
        }
      }
    }
  } finally {
    perTokenLaunchTuning.srScaledEncode = saved;
    config.amaxClamp["e4m3/e4m3sf"] = savedClamp;
  }
});

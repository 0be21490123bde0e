/**
 * GPU test of `_g128_sr_wu12` (per_token_cast_sr12.cu; docs/perf-notes/perf12-sr.md): perTokenCast bf16 → e4m3 with
 * stochasticCast, groups of 128, against the CPU reference (stochastic.ref.ts) byte for byte (until trim24 also
 * against round 10's `_g128_sr_wu`, the knob srScaledEncode's off, both removed), on the bench's shapes, small and odd
 * shapes, 0 rows, strided and 16-byte-offset views (`_g128_sr_wu12`), unaligned views (`_g128_sr`: the warp units
 * never apply), NaN quads of every pattern, ±Inf, ±0, subnormals, SR edge values (the scaled
 * e4m3 subnormal range, grid points and just below them, saturation), inv = +Inf. The symbol of every launch is
 * asserted (perTokenLastLaunch), so a silent fallback fails. Skips without a GPU, as the other GPU tests.
 */
import assert from "node:assert/strict";
import { type HostTensor, perTokenCast, tensor } from "../mod.ts";
import { config } from "../core/config.ts";
import { perTokenLastLaunch } from "../ops/quant/per_token_cast.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, samePair, SF_LAYOUTS, uploadView, withPdl } from "./gpu_util.ts";
import { nanQuadRows, ptcFn, withSpecials, withSrEdges } from "./per_token_rows.ts";

/** The SR edges of per_token_rows.ts plus two more for the scaled-domain rounding (just below 2^-8 and 2^-9·1.0078). */
const SR12_EDGES = [0x3b7f, 0xbb01];

gpuTest("perTokenCast stochasticCast through _g128_sr_wu12 = reference: NaN quads, inv = +Inf, every sf layout, 0 rows, tails, 8192 and 16384 × 7168, strided, 16-byte-offset and unaligned views, specials, SR edges, PDL on / off, replay (seeds 12101, 12102)", async () => {
  const savedClamp = config.amaxClamp["e4m3/e4m3sf"];
  try {
    const cases: [string, HostTensor, Record<string, unknown>][] = [
      ["1x64 specials", withSrEdges(withSpecials(randomInput(rng(12101), 1, 64, "bf16", 64)), SR12_EDGES), {}],
      ["1x64 NaN quads", nanQuadRows(1, 64, 12109), {}],
      ["5x1024 NaN quads", nanQuadRows(5, 1024, 12109), {}],
      ["3x7168 NaN quads roundSf", nanQuadRows(3, 7168, 12109), { roundSf: true }],
      ["3x7168 NaN quads e4m3 sf", nanQuadRows(3, 7168, 12109), { useE4m3Sf: true }],
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
            samePair(perTokenCast(dx, o), c, `sr12 ${what} ${name}`);
            assert.equal(perTokenLastLaunch().fn, ptcFn("bf16_e4m3_g128_sr_wu12"), `sr12 ${what} ${name}: symbol`);
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
        let x = withSrEdges(withSpecials(randomInput(rand, T + (off > 0 ? 1 : 0), H + off, "bf16", stride)), SR12_EDGES);
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
                const got = perTokenCast(dx, o);
                if (T > 0) {
                  const l = perTokenLastLaunch();
                  assert.equal(l.fn, ptcFn(aligned ? "bf16_e4m3_g128_sr_wu12" : "bf16_e4m3_g128_sr"), `${label}: symbol`);
                  assert.equal(l.pdl, aligned && on, `${label}: PDL attribute`);
                }
                samePair(got, c, label);
                samePair(perTokenCast(dx, o), c, `${label} (again: replay)`);
                if (T > 0) assert.equal(perTokenLastLaunch().fn, ptcFn(aligned ? "bf16_e4m3_g128_sr_wu12" : "bf16_e4m3_g128_sr"), `${label}: replay's symbol`);
              });
            }
          }
        } finally {
          dispose(dx);
        }
      }
    }
  } finally {
    config.amaxClamp["e4m3/e4m3sf"] = savedClamp;
  }
});

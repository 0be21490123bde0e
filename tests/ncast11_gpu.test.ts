/**
 * Round 11's residual casts in normForward's two-pass geometry (docs/perf-notes/perf11-ncast.md):
 * `tk_norm_forward__bf16_e4m3_g<N>_tp16c_res`, the default of addRmsnormForwardAndPerTokenCast and of
 * normForwardAndPerTokenCast with a residual on aligned views (`normLaunchTuning.castRowForm` 1; 0 runs the warp
 * rows `_e4m3_g<N>_wr_res`). Against the CPU reference, byte for byte on every output allocation (data, sf, outBf16, rstd,
 * residualOut), with the kernel that ran checked after every device call (a silent fallback fails; without a residual
 * main's `_br4y` still runs): groups of 32 and 128, every sf layout, outBf16 or not, weight or not, outScale 1 / 0.3 /
 * 3e38 / 1e-39, 2-D / 3-D, padded strides, dead pieces and warps, 0 rows, grid caps (a block's later rows), NaN /
 * ±Inf / subnormal / huge rows, the bench's 3000 × 7168 with PDL on and off; unaligned views on main's `_br4` /
 * `_wr_res`; the knob at 0 on `_wr_res`. Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { encodeBf16 } from "../core/dtype.ts";
import { config } from "../core/config.ts";
import { HostTensor, tensor } from "../mod.ts";
import { kernelFunction, launchCount } from "../ffi/cuda.ts";
import { addRmsnormForwardAndPerTokenCast, normForwardAndPerTokenCast, type NormForwardAndPerTokenCastOptions } from "../ops/norm/mod.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { normForwardLastLaunch } from "../ops/norm/norm_forward.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, sameAllocation, sameNormCastOutputs, SF_LAYOUTS_FP32, uploadView } from "./gpu_util.ts";

type CastOpts = Omit<NormForwardAndPerTokenCastOptions, "eps" | "outScale" | "residual">;

/** The function handle of a symbol on device 0. */
function fnOf(sym: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, sym);
}

/** Runs f with the row forms from any row count, `castRowForm` = `form` and grid cap `blocks`; restores the knobs. */
function withCastRow<T>(form: 0 | 1, blocks: number, f: () => T): T {
  const t = normLaunchTuning;
  const prev = [t.castRowForm, t.castBulkRows, t.residualWarpRows, t.forwardBlocksPerSm, t.forwardWarpRowsMinRowsPerSm, t.teamThreads] as const;
  t.castRowForm = form;
  t.castBulkRows = t.residualWarpRows = true;
  t.forwardBlocksPerSm = blocks;
  t.forwardWarpRowsMinRowsPerSm = 0; // the row forms for any row count (the tests' shapes are small)
  t.teamThreads = 0;
  try {
    return f();
  } finally {
    [t.castRowForm, t.castBulkRows, t.residualWarpRows, t.forwardBlocksPerSm, t.forwardWarpRowsMinRowsPerSm, t.teamThreads] = prev;
  }
}

/** `[T, H]` bf16 rows (B = 0; row stride `stride`), or `[B, T, H]` over the same kind of storage. */
function rows(rand: () => number, B: number, T: number, H: number, stride = H): HostTensor {
  const flat = randomInput(rand, Math.max(B, 1) * T, H, "bf16", stride);
  if (B === 0) return flat;
  return new HostTensor(flat.data, "bf16", [B, T, H], [T * stride, stride, 1]);
}

/** A moderate bf16 weight (|v| ≤ 4). */
function moderate(rand: () => number, H: number): HostTensor {
  return tensor(new Uint16Array(H).map(() => encodeBf16(Math.fround((rand() * 2 - 1) * 4))), [H], "bf16");
}

/** A bf16 weight `[H]` at element offset 1 of its storage (not 16-byte aligned). */
function unalignedWeight(rand: () => number, H: number): HostTensor {
  const w = moderate(rand, H + 1);
  return new HostTensor(w.data, "bf16", [H], [1], 1);
}

const NAN16 = [0x7fc0, 0xffc0, 0x7f81, 0xffff];

/** `[T, H]` rows of NaNs (four patterns), ±Inf, subnormals and values near the top of the range, by row kind t % 5. */
function specialRows(rand: () => number, T: number, H: number): HostTensor {
  const b = new Uint16Array(T * H);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      const i = t * H + j;
      const r = rand();
      let f = Math.fround((rand() * 2 - 1) * 4);
      if (t % 5 === 1 && r < 0.05) {
        b[i] = NAN16[i % 4];
        continue;
      } else if (t % 5 === 2 && r < 0.05) f = r < 0.025 ? Infinity : -Infinity;
      else if (t % 5 === 3) f = Math.fround((rand() * 2 - 1) * 1e-40);
      else if (t % 5 === 4) f = Math.fround((rand() * 2 - 1) * 3e38);
      b[i] = encodeBf16(f);
    }
  }
  return tensor(b, [T, H], "bf16");
}

/** A moderate weight with a NaN, ±Inf, ±0, a subnormal and a huge value in its first columns. */
function specialWeight(rand: () => number, H: number): HostTensor {
  const w = new Float32Array(H).map(() => Math.fround((rand() * 2 - 1) * 4));
  [NaN, Infinity, -Infinity, 0, -0, 1e-40, 3e38].forEach((v, k) => (w[2 * k + 1] = v));
  return tensor(new Uint16Array(H).map((_, i) => encodeBf16(w[i])), [H], "bf16");
}

/**
 * normForwardAndPerTokenCast of (x, r, w) on the CPU and on the device (knobs as set by the caller): every output
 * allocation byte for byte; `sym` (when given) the kernel the device call launched.
 */
function compareOn(x: HostTensor, r: HostTensor | undefined, w: HostTensor | null, outScale: number, o: CastOpts, sym: string | null, label: string): void {
  const opts: NormForwardAndPerTokenCastOptions = { ...o, eps: 1e-6, outScale, residual: r };
  const [[cd, cf], cb, cr, cs] = normForwardAndPerTokenCast(x, w, opts);
  const dx = uploadView(x);
  const dr = r ? uploadView(r) : undefined;
  const dw = w ? uploadView(w) : null;
  const n0 = launchCount();
  const [[gd, gf], gb, gr, gs] = normForwardAndPerTokenCast(dx, dw, { ...opts, residual: dr });
  const launched = launchCount() > n0;
  const last = normForwardLastLaunch();
  try {
    if (sym) {
      assert.ok(launched, `${label}: a launch`);
      assert.equal(last.fn, fnOf(sym), `${label}: ${sym} ran`);
      // PDL on the aligned forms only (ops/norm/norm_forward.ts pdlForms); main's unaligned fallbacks launch plainly
      const pdlForm = /_(br4a|br4y|tp16c_res)$/.test(sym);
      assert.equal(last.pdl, config.pdl && pdlForm, `${label}: PDL ${pdlForm ? "as config.pdl" : "off (a plain form)"}`);
    }
    sameNormCastOutputs([[gd, gf], gb, gr, gs], [[cd, cf], cb, cr, cs], !!r, label);
  } finally {
    dispose(gd, gf, gb, gr, r ? gs : null, dx, dr, dw);
  }
}

/**
 * The kernel the default (castRowForm 1) runs for groups of `npc` on aligned views: `_tp16c_res` with a residual (from
 * H > 256), main's `_br4y` without.
 */
function SYM(npc: number, res: boolean): string {
  return `tk_norm_forward__bf16_e4m3_g${npc}${res ? "_tp16c_res" : "_br4y"}`;
}

gpuTest(`the residual casts by _e4m3_g<N>_tp16c_res (the plain cast by main's _br4y) = reference: groups of 32 and 128, every sf layout, outBf16, weight, outScale, 2-D / 3-D, padded strides, dead pieces and warps, grid caps (seed 11201)`, () => {
  const rand = rng(11201);
  for (const blocks of [0, 1, 3]) {
    withCastRow(1, blocks, () => {
      for (const H of [32, 64, 128, 288, 512, 544, 1056, 2048, 4096, 4224, 5120, 7168, 8192]) {
        for (const npc of [32, 128] as const) {
          if (H % npc) continue;
          for (const [name, sf] of SF_LAYOUTS_FP32) {
            for (const res of [false, true]) {
              const weight = blocks === 0 ? rand() < 0.8 : rand() < 0.5;
              const withOutBf16 = rand() < 0.5;
              const B = rand() < 0.3 ? 2 : 0;
              const T = B ? 5 : 13;
              const stride = H + (rand() < 0.5 ? 0 : 8 * Math.ceil(rand() * 8));
              const outScale = rand() < 0.5 ? 1 : 0.3;
              const x = rows(rand, B, T, H, stride);
              const r = res ? rows(rand, B, T, H, stride + (rand() < 0.5 ? 0 : 8)) : undefined;
              const w = weight ? moderate(rand, H) : null;
              // (the residual casts run the warp rows' slot from H > 256 only; below, main's team kernel)
              const sym = res && H <= 256 ? null : SYM(npc, res);
              const label = `tp16c blocks/SM ${blocks} ${name} g${npc} B ${B} T ${T} H ${H} stride ${stride} res ${res} weight ${weight} outScale ${outScale} outBf16 ${withOutBf16}`;
              compareOn(x, r, w, outScale, { fmt: "e4m3", numPerChannels: npc, withOutBf16, ...sf }, sym, label);
            }
          }
        }
      }
    });
  }
});

gpuTest(`addRmsnormForwardAndPerTokenCast by _e4m3_g<N>_tp16c_res (the default) = reference, residual updated in place; 0 rows; unaligned views on _br4 / _wr_res; castRowForm 0 on _wr_res (seed 11202)`, () => {
  const rand = rng(11202);
  assert.equal(normLaunchTuning.castRowForm, 1, "castRowForm defaults to 1 (_tp16c_res)");
  withCastRow(1, 0, () => {
    for (const H of [288, 1024, 7168, 8192]) {
      for (const npc of [32, 128] as const) {
        if (H % npc) continue;
        for (const [name, sf] of SF_LAYOUTS_FP32) {
          const x = rows(rand, 0, 17, H);
          const r = rows(rand, 0, 17, H);
          const w = moderate(rand, H);
          const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, ...sf } as const;
          // (upload first: the CPU call updates the host residual r in place)
          const dx = uploadView(x);
          const dr = uploadView(r);
          const dw = uploadView(w);
          const [cd, cf] = addRmsnormForwardAndPerTokenCast(x, r, w, o);
          const [gd, gf] = addRmsnormForwardAndPerTokenCast(dx, dr, dw, o);
          const label = `addRmsnorm H ${H} g${npc} ${name}`;
          try {
            assert.equal(normForwardLastLaunch().fn, fnOf(SYM(npc, true)), `${label}: ${SYM(npc, true)} ran`);
            sameAllocation(gd, cd, `${label} data`);
            sameAllocation(gf, cf, `${label} sf`);
            sameAllocation(dr, r, `${label} residual`);
          } finally {
            dispose(gd, gf, dx, dr, dw);
          }
        }
      }
    }
    // a block's later rows: grid capped at one block per SM, more rows than blocks
    withCastRow(1, 1, () => {
      for (const res of [false, true]) {
        const o = { fmt: "e4m3", numPerChannels: 128, withOutBf16: true, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true } as const;
        compareOn(rows(rand, 0, 700, 1152), res ? rows(rand, 0, 700, 1152) : undefined, moderate(rand, 1152), 1, o, SYM(128, res), `grid cap 1/SM 700x1152 res ${res}`);
      }
    });
    // 0 rows: no launch, empty outputs as the reference's
    for (const res of [false, true]) {
      const x = rows(rand, 0, 0, 512);
      const r = res ? rows(rand, 0, 0, 512) : undefined;
      compareOn(x, r, moderate(rand, 512), 1, { fmt: "e4m3", numPerChannels: 128, roundSf: true }, null, `0 rows res ${res}`);
    }
    // unaligned views fall back to main's kernels (and give the reference's bytes)
    const H = 1024;
    for (const npc of [32, 128] as const) {
      const o = { fmt: "e4m3", numPerChannels: npc, withOutBf16: true, roundSf: true } as const;
      const w = moderate(rand, H);
      const wu = unalignedWeight(rand, H);
      const xs = rows(rand, 0, 9, H, H + 1);
      compareOn(xs, undefined, w, 1, o, `tk_norm_forward__bf16_e4m3_g${npc}_br4`, `x stride H+1 g${npc}`);
      compareOn(rows(rand, 0, 9, H), undefined, wu, 1, o, `tk_norm_forward__bf16_e4m3_g${npc}_br4`, `unaligned weight g${npc}`);
      compareOn(rows(rand, 0, 9, H), rows(rand, 0, 9, H, H + 1), w, 1, o, `tk_norm_forward__bf16_e4m3_g${npc}_wr_res`, `residual stride H+1 g${npc}`);
      compareOn(rows(rand, 0, 9, H), rows(rand, 0, 9, H), wu, 1, o, `tk_norm_forward__bf16_e4m3_g${npc}_wr_res`, `residual, unaligned weight g${npc}`);
    }
  });
  // castRowForm 0: main's forms (the plain cast _br4y, the residual cast the warp rows _wr_res)
  withCastRow(0, 0, () => {
    for (const npc of [32, 128] as const) {
      const o = { fmt: "e4m3", numPerChannels: npc, roundSf: true, usePackedUe8m0: true } as const;
      compareOn(rows(rand, 0, 9, 1024), undefined, moderate(rand, 1024), 1, o, `tk_norm_forward__bf16_e4m3_g${npc}_br4y`, `castRowForm 0 g${npc}: _br4y`);
      compareOn(rows(rand, 0, 9, 1024), rows(rand, 0, 9, 1024), moderate(rand, 1024), 1, o, `tk_norm_forward__bf16_e4m3_g${npc}_wr_res`, `castRowForm 0 g${npc}: _wr_res`);
    }
  });
});

gpuTest(`_e4m3_g<N>_tp16c_res = reference on NaNs, ±Inf, ±0, subnormals, overflowing and subnormal outputs: special weight or none, outScale 1 / 3e38 / 1e-39, every sf layout (seed 11203)`, () => {
  const rand = rng(11203);
  const T = 10;
  withCastRow(1, 0, () => {
    for (const H of [640, 7168]) {
      for (const outScale of [1, 3e38, 1e-39]) {
        const x = specialRows(rand, T, H);
        const r = specialRows(rand, T, H);
        const w = specialWeight(rand, H);
        for (const npc of [32, 128] as const) {
          for (const [name, sf] of SF_LAYOUTS_FP32) {
            for (const ww of [w, null]) {
              for (const res of [false, true]) {
                const label = `special ${T}x${H} outScale ${outScale} g${npc} ${name} weight ${!!ww} res ${res}`;
                compareOn(x, res ? r : undefined, ww, outScale, { fmt: "e4m3", numPerChannels: npc, withOutBf16: rand() < 0.5, ...sf }, SYM(npc, res), label);
              }
            }
          }
        }
      }
    }
  });
});

gpuTest(`_e4m3_g128_tp16c_res at the bench's shape: 3000 × 7168, packed UE8M0 TMA-aligned sf, outBf16 on and off, PDL on and off (seed 11204)`, () => {
  const rand = rng(11204);
  const saved = config.pdl;
  try {
    withCastRow(1, 0, () => {
      for (const pdl of [true, false]) {
        config.pdl = pdl;
        for (const res of [false, true]) {
          for (const withOutBf16 of [false, true]) {
            const x = rows(rand, 0, 3000, 7168);
            const r = res ? rows(rand, 0, 3000, 7168) : undefined;
            const o = { fmt: "e4m3", numPerChannels: 128, withOutBf16, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true } as const;
            compareOn(x, r, moderate(rand, 7168), 1, o, SYM(128, res), `3000x7168 res ${res} outBf16 ${withOutBf16} pdl ${pdl}`);
          }
        }
      }
    });
  } finally {
    config.pdl = saved;
  }
});

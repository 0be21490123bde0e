/**
 * Programmatic dependent launch (docs/perf-notes/perf10-pdl.md, landed in round 10). Kernels that issue
 * griddepcontrol.launch_dependents first and griddepcontrol.wait before their first access to memory another grid may
 * write, and the launches that carry the PDL attribute while `config.pdl` is set (measured faster on the H200):
 *   normForward `_tp16hr`; normForwardAndPerTokenCast `_e4m3_g<N>_br4y`; addRmsnormForwardAndPerTokenCast (and
 *   normForwardAndPerTokenCast with a residual) `_e4m3_g<N>_tp16c_res` (round 11's default; with
 *   normLaunchTuning.castRowForm 0: the plain `_e4m3_g<N>_wr_res`); SwiGLU's aligned-only forms (swigluForward
 *   `_a` / `_an`, swigluForwardAndPerTokenCast `_g128_anl`, swigluBackward `_a`); castBack / perTokenCastBack's
 *   segmented kernel `tk_cast_back_seg__e4m3_bf16`; perBlockCastWithSfOnly (every `tk_per_block_cast__*`).
 * Never with the attribute: the element casts (cast, stochasticCast: their PDL forms lost and were not landed),
 * perBlockCast and perBlockCastWithPrecomputedSf (the same per-block kernels, griddepcontrol without effect on a
 * plain launch: they tied or lost), and every fallback kernel (unaligned views, row-team castBack, main's SwiGLU).
 * These tests check which launches carry the attribute, the bytes against the CPU reference with `config.pdl` on and
 * off (one CPU reference for both; the option matrix at small sizes, one 4001 × 7168 case per op), and chains of
 * such launches on one stream with nothing synchronised in between (read after write, write after read, write after
 * write). Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import {
  addRmsnormForwardAndPerTokenCast,
  cast,
  castBack,
  createStream,
  type DeviceTensor,
  empty,
  HostTensor,
  normForward,
  normForwardAndPerTokenCast,
  perBlockCast,
  perBlockCastWithPrecomputedSf,
  perBlockCastWithSfOnly,
  perTokenCast,
  perTokenCastBack,
  type Quantized,
  swigluBackward,
  swigluForward,
  swigluForwardAndPerTokenCast,
  tensor,
  toDevice,
} from "../mod.ts";
import { config } from "../core/config.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { normForwardLastLaunch } from "../ops/norm/norm_forward.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import { swigluLastLaunch } from "../ops/quant/swiglu_launch.ts";
import { elementCastLastLaunch } from "../ops/quant/elem_launch.ts";
import { castBackLastLaunch } from "../ops/quant/cast_back.ts";
import { perTokenLastLaunch } from "../ops/quant/per_token_cast.ts";
import { perBlockLastLaunch } from "../ops/quant/per_block_cast.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, SF_LAYOUTS_FP32, storageBytes, uploadView, withPdl } from "./gpu_util.ts";


/** Rows enough for the norm row forms on any H200-class device (16 rows per SM, up to 144 SMs). */
const ROWS = 2304;

/** The function handle of a symbol on device 0. */
function fnOf(sym: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, sym);
}

/** Moderate bf16 values (|v| ≤ 4), e.g. weights. */
function moderate(rand: () => number, shape: number[]): HostTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return tensor(new Uint16Array(n).map(() => encodeBf16(Math.fround((rand() * 2 - 1) * 4))), shape, "bf16");
}

/** A copy of the bf16 tensor `t` one element into its storage: a view off its 16-byte alignment. */
function offAlignment(t: HostTensor): HostTensor {
  const src = t.data as Uint16Array;
  const pad = new Uint16Array(src.length + 1);
  pad.set(src, 1);
  return new HostTensor(pad, t.dtype, t.shape, t.strides, 1);
}

/** Expert prefix sums over T rows, E experts, alignment A (the §11.2 contract holds). */
function psumOf(rand: () => number, T: number, E: number, A: number): HostTensor {
  const p = new Int32Array(E);
  let start = 0;
  for (let e = 0; e < E; e++) {
    const cap = e === E - 1 ? T : Math.floor(T / A) * A;
    const n = Math.floor(rand() * Math.max(0, Math.min(cap - start, Math.ceil((2 * T) / E))));
    p[e] = start + n;
    start = Math.ceil(p[e] / A) * A;
  }
  return tensor(p, [E], "int32");
}

/** Compares rows `real` of two allocations of `rowBytes` a row. */
function sameRows(gpu: Uint8Array, cpu: Uint8Array, real: Uint8Array, rowBytes: number, label: string): void {
  for (let t = 0; t < real.length; t++) {
    if (real[t]) assertBytesEqual(gpu.subarray(t * rowBytes, (t + 1) * rowBytes), cpu.subarray(t * rowBytes, (t + 1) * rowBytes), `${label} row ${t}`);
  }
}

const PACKED = { roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const;

/** The full-size case of every op (one per op, not per option: the CPU references dominate the file's time). */
const FULL = [4001, 7168] as const;

/**
 * Which launches carry the PDL attribute. With config.pdl on: normForward on aligned views (`_tp16hr`), the norm
 * casts on aligned views (`_br4y`, `_tp16c_res`; `_wr_res`, plain, with castRowForm 0), SwiGLU's aligned-only forms (`_a`, `_an`, `_g128_anl`), castBack /
 * perTokenCastBack e4m3 → bf16 with H / 8 ≥ 256 (the segmented kernel), perBlockCastWithSfOnly. Never: their
 * fallbacks (unaligned views: `_rr4_l2`, `_br4`, `_wr_res`, SwiGLU's main kernels; castBack's row teams), the
 * element casts (`tk_cast__bf16_e4m3_a` / `_sr_a12` and the unaligned ones), perBlockCast and
 * perBlockCastWithPrecomputedSf; nothing with config.pdl off.
 */
gpuTest("PDL selection: _tp16hr, _br4y, _tp16c_res, SwiGLU's aligned forms (_g128_anl included), castBack's segmented kernel and perBlockCastWithSfOnly carry the PDL attribute while config.pdl is set; their fallbacks, the element casts, perBlockCast, perBlockCastWithPrecomputedSf and every launch with config.pdl off do not (seed 10001)", async () => {
  const rand = rng(10001);
  const H = 512;
  const x = randomInput(rand, ROWS, H, "bf16");
  const xs = randomInput(rand, ROWS, H + 1, "bf16"); // rows H + 1 apart: not 16-byte rows
  const xu = new HostTensor(xs.data, "bf16", [ROWS, H], [H + 1, 1], 0);
  const w = moderate(rand, [H]);
  const res = randomInput(rand, ROWS, H, "bf16");
  const dx = uploadView(x), dxu = uploadView(xu), dw = uploadView(w);
  const sx = randomInput(rand, 64, 2 * H, "bf16");
  const dsx = uploadView(sx), dsxu = uploadView(offAlignment(sx));
  const sdy = uploadView(randomInput(rand, 64, H, "bf16"));
  // the casts: 128 rows × 2048 (castBack's segmented kernel: H / 8 ≥ 256) and × 512 (its row teams)
  const cx = randomInput(rand, 128, 2048, "bf16");
  const dcx = uploadView(cx), dcxu = uploadView(offAlignment(cx));
  const dcs = uploadView(randomInput(rand, 128, 512, "bf16"));
  const outs: unknown[] = [];
  try {
    assert.equal(config.pdl, true, "config.pdl is on by default");
    for (const on of [true, false]) {
      await withPdl(on, () => {
        const tag = `config.pdl ${on}`;
        outs.push(normForward(dx, dw, { eps: 1e-6 }));
        assert.deepEqual(normForwardLastLaunch(), { fn: fnOf("tk_norm_forward__bf16_tp16hr"), pdl: on }, `${tag}: normForward aligned → _tp16hr`);
        outs.push(normForward(dxu, dw, { eps: 1e-6 }));
        assert.deepEqual(normForwardLastLaunch(), { fn: fnOf("tk_norm_forward__bf16_rr4_l2"), pdl: false }, `${tag}: normForward unaligned → _rr4_l2, plain`);
        for (const npc of [32, 128] as const) {
          const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, ...PACKED } as const;
          outs.push(normForwardAndPerTokenCast(dx, dw, o));
          assert.equal(normForwardLastLaunch().pdl, on, `${tag}: cast ${npc} aligned (_br4y)`);
          outs.push(normForwardAndPerTokenCast(dxu, dw, o));
          assert.equal(normForwardLastLaunch().pdl, false, `${tag}: cast ${npc} unaligned (_br4), plain`);
          const dr = uploadView(res);
          outs.push(addRmsnormForwardAndPerTokenCast(dx, dr, dw, o), dr);
          assert.deepEqual(normForwardLastLaunch(), { fn: fnOf(`tk_norm_forward__bf16_e4m3_g${npc}_tp16c_res`), pdl: on }, `${tag}: addRmsnorm ${npc} aligned (_tp16c_res, the default)`);
          normLaunchTuning.castRowForm = 0;
          try {
            const dr0 = uploadView(res);
            outs.push(addRmsnormForwardAndPerTokenCast(dx, dr0, dw, o), dr0);
            assert.deepEqual(normForwardLastLaunch(), { fn: fnOf(`tk_norm_forward__bf16_e4m3_g${npc}_wr_res`), pdl: false }, `${tag}: addRmsnorm ${npc} aligned, castRowForm 0 (_wr_res, plain)`);
          } finally {
            normLaunchTuning.castRowForm = 1;
          }
          const dru = uploadView(offAlignment(res));
          outs.push(addRmsnormForwardAndPerTokenCast(dx, dru, dw, o), dru);
          assert.equal(normForwardLastLaunch().pdl, false, `${tag}: addRmsnorm ${npc} residual off alignment (_wr_res), plain`);
        }
        outs.push(swigluForward(dsx, { fmt: "bf16" }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_forward__bf16_bf16_an"), pdl: on }, `${tag}: swigluForward _an`);
        outs.push(swigluForward(dsx, { fmt: "bf16", clampValue: 7 }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_forward__bf16_bf16_a"), pdl: on }, `${tag}: swigluForward _a`);
        outs.push(swigluForward(dsxu, { fmt: "bf16" }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_forward__bf16_bf16"), pdl: false }, `${tag}: swigluForward unaligned, plain`);
        outs.push(swigluForwardAndPerTokenCast(dsx, { fmt: "e4m3", numPerChannels: 128 }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_forward__bf16_e4m3_g128_anl"), pdl: on }, `${tag}: forward+cast _anl`);
        outs.push(swigluForwardAndPerTokenCast(dsx, { fmt: "e4m3", numPerChannels: 128, clampValue: 7 }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_forward__bf16_e4m3_g128"), pdl: false }, `${tag}: forward+cast with clamp, plain`);
        outs.push(swigluBackward(dsx, sdy, { fmt: "bf16" }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_backward__bf16_bf16_a"), pdl: on }, `${tag}: swigluBackward _a`);
        outs.push(swigluBackward(dsxu, sdy, { fmt: "bf16" }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_backward__bf16_bf16"), pdl: false }, `${tag}: swigluBackward unaligned, plain`);
        // the element casts: never the attribute (aligned `_a` / `_sr_a12` or not)
        for (const [dv, al] of [[dcx, true], [dcxu, false]] as const) {
          outs.push(cast(dv, { dtype: "e4m3" }));
          assert.deepEqual(elementCastLastLaunch(), { fn: fnOf(`tk_cast__bf16_e4m3${al ? "_a" : ""}`), pdl: false }, `${tag}: cast aligned ${al}, plain`);
          outs.push(cast(dv, { dtype: "e4m3", stochasticRounding: true, seed: 3n }));
          assert.deepEqual(elementCastLastLaunch(), { fn: fnOf(`tk_cast__bf16_e4m3_sr${al ? "_a12" : ""}`), pdl: false }, `${tag}: SR cast aligned ${al}, plain`);
        }
        // castBack / perTokenCastBack: the segmented kernel (H = 2048) with the attribute, the row teams (H = 512)
        // without; perBlockCast (their 128 × 128 input) without
        for (const [dv, seg] of [[dcx, true], [dcs, false]] as const) {
          const sym = fnOf(`tk_cast_back${seg ? "_seg" : ""}__e4m3_bf16`);
          const dq = perTokenCast(dv, { fmt: "e4m3", numPerChannels: 128 }) as Quantized;
          outs.push(dq);
          outs.push(perTokenCastBack(dq, { fmt: "bf16", numPerChannels: 128 }));
          assert.deepEqual(castBackLastLaunch(), { fn: sym, pdl: on && seg }, `${tag}: perTokenCastBack, segmented ${seg}`);
          outs.push(castBack(dq, { fmt: "bf16", xBlockSize: [1, 128] }));
          assert.deepEqual(castBackLastLaunch(), { fn: sym, pdl: on && seg }, `${tag}: castBack [1, 128], segmented ${seg}`);
          const db = perBlockCast(dv, { fmt: "e4m3", blockSize: [128, 128] });
          outs.push(db);
          assert.equal(perBlockLastLaunch().pdl, false, `${tag}: perBlockCast, plain`);
          outs.push(castBack(db, { fmt: "bf16", xBlockSize: [128, 128] }));
          assert.deepEqual(castBackLastLaunch(), { fn: sym, pdl: on && seg }, `${tag}: castBack [128, 128], segmented ${seg}`);
        }
        // the per-block casts: one kernel for the three ops, the attribute decided per op
        for (const bs of [[128, 128], [32, 32]] as const) {
          const o = { fmt: "e4m3", blockSize: bs } as const;
          const sym = fnOf(`tk_per_block_cast__bf16_e4m3_${bs[0]}x${bs[1]}`);
          const g = perBlockCast(dcx, o);
          outs.push(g);
          assert.deepEqual(perBlockLastLaunch(), { fn: sym, pdl: false }, `${tag}: perBlockCast ${bs}, plain`);
          outs.push(perBlockCastWithSfOnly(dcx, o));
          assert.deepEqual(perBlockLastLaunch(), { fn: sym, pdl: on }, `${tag}: perBlockCastWithSfOnly ${bs}`);
          outs.push(perBlockCastWithPrecomputedSf(dcx, g[1], o));
          assert.deepEqual(perBlockLastLaunch(), { fn: sym, pdl: false }, `${tag}: perBlockCastWithPrecomputedSf ${bs}, plain`);
        }
      });
    }
  } finally {
    dispose(outs, dx, dxu, dw, dsx, dsxu, sdy, dcx, dcxu, dcs);
  }
});

/**
 * Bytes = CPU reference with config.pdl on and off (each CPU reference computed once, the device op run with
 * config.pdl on, then off) for every PDL launch: normForward `_tp16hr` (weight or not, outScale 1 / 0.3, padded
 * strides, H with dead pieces), the norm casts `_br4y` (groups of 32 / 128, fp32 and packed sf, outBf16) and
 * `_tp16c_res` (addRmsnorm, residual updated in place; round 11's default, `_wr_res`, plain, with castRowForm 0), SwiGLU forward `_a` / `_an`, forward+cast `_g128_anl` (`_g128_anrt`
 * at 7168) and backward `_a` with a psum layout (padding rows), weights, clamp; castBack / perTokenCastBack's segmented kernel
 * (per-token and 128 × 128 blocks); perBlockCastWithSfOnly (bf16 and fp32, 128 × 128 and 32 × 32 blocks, fp32 and
 * packed sf). The option matrix at small sizes, one case per op at 4001 × 7168 (4096 × 7168 for the per-block ones).
 */
gpuTest("PDL forms = reference with config.pdl on and off: normForward _tp16hr, normForwardAndPerTokenCast _br4y, addRmsnormForwardAndPerTokenCast _tp16c_res, SwiGLU forward / forward+cast _anl, _anrt / backward aligned forms, castBack's segmented kernel, perBlockCastWithSfOnly (seed 10002)", async () => {
  const rand = rng(10002);
  /** Runs the device op `f` with config.pdl on, then off; `check` compares (and disposes) its result. */
  const both = async <R>(f: () => R, check: (r: R, tag: string) => void, pdlOf: () => boolean, label: string) => {
    for (const on of [true, false]) {
      await withPdl(on, () => {
        const r = f();
        assert.equal(pdlOf(), on, `${label} config.pdl ${on}: PDL attribute`);
        check(r, `${label} config.pdl ${on}`);
      });
    }
  };
  const normPdl = () => normForwardLastLaunch().pdl;
  const swPdl = () => swigluLastLaunch().pdl;
  const cbPdl = () => castBackLastLaunch().pdl;
  const pbPdl = () => perBlockLastLaunch().pdl;
  for (const [T, H, full] of [[ROWS, 528, false], [ROWS, 1024, false], [FULL[0], FULL[1], true]] as const) {
    const tag = `${T}x${H}`;
    // normForward (_tp16hr)
    for (const weight of full ? [true] : [true, false]) {
      for (const outScale of full ? [1] : [1, 0.3]) {
        const x = randomInput(rand, T, H, "bf16", H + 8 * (outScale === 1 ? 0 : 2));
        const w = weight ? moderate(rand, [H]) : null;
        const [co, cr] = normForward(x, w, { eps: 1e-6, outScale });
        const dx = uploadView(x), dw = w ? uploadView(w) : null;
        await both(() => normForward(dx, dw, { eps: 1e-6, outScale }), ([go, gr], t) => {
          sameAllocation(go, co, `${t} out`);
          sameAllocation(gr, cr, `${t} rstd`);
          dispose(go, gr);
        }, normPdl, `${tag} normForward weight ${weight} outScale ${outScale}`);
        dispose(dx, dw);
      }
    }
    // normForwardAndPerTokenCast (_br4y) and addRmsnormForwardAndPerTokenCast (_tp16c_res)
    for (const npc of full ? [128] as const : [32, 128] as const) {
      if (H % npc !== 0) continue; // the casts' groups divide the hidden size
      const layouts = full ? [["packed", PACKED] as const] : [...SF_LAYOUTS_FP32.slice(0, 1), ["packed", PACKED] as const];
      for (const [name, sf] of layouts) {
        const x = randomInput(rand, T, H, "bf16");
        const w = moderate(rand, [H]);
        const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, withOutBf16: npc === 32, ...sf } as const;
        const label = `${tag} normForwardAndPerTokenCast ${npc} ${name}`;
        const c = normForwardAndPerTokenCast(x, w, o);
        const dx = uploadView(x), dw = uploadView(w);
        await both(() => normForwardAndPerTokenCast(dx, dw, o), (g, t) => {
          sameAllocation(g[0][0], c[0][0], `${t} data`);
          sameAllocation(g[0][1], c[0][1], `${t} sf`);
          if (c[1]) sameAllocation(g[1], c[1], `${t} outBf16`);
          sameAllocation(g[2], c[2], `${t} rstd`);
          dispose(g[0], g[1], g[2]);
        }, normPdl, label);
        // addRmsnorm: x + residual, the residual updated in place (a fresh device copy for each run)
        const r = randomInput(rand, T, H, "bf16");
        const hr = new HostTensor((r.data as Uint16Array).slice(), "bf16", r.shape, r.strides, 0);
        const oa = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, ...sf } as const;
        const ca = addRmsnormForwardAndPerTokenCast(x, hr, w, oa);
        await both(() => {
          const dr = uploadView(r);
          return [addRmsnormForwardAndPerTokenCast(dx, dr, dw, oa), dr] as const;
        }, ([ga, dr], t) => {
          sameAllocation(ga[0], ca[0], `${t} data`);
          sameAllocation(ga[1], ca[1], `${t} sf`);
          sameAllocation(dr, hr, `${t} residual (in place)`);
          dispose(ga, dr);
        }, normPdl, `${label} addRmsnorm`);
        dispose(dx, dw);
      }
    }
    // SwiGLU aligned forms (H a multiple of 128 for the cast); at full size one case a form: the clamp (forward
    // `_a`, backward `_a`) and no clamp (forward+cast `_anl`; `_anrt` at H = 7168)
    const Hs = H === 528 ? 512 : H;
    for (const clamp of [false, true]) {
      const A = 16;
      const x = randomInput(rand, T, 2 * Hs, "bf16");
      const dy = randomInput(rand, T, Hs, "bf16");
      const psum = psumOf(rand, T, 5, A);
      const wts = tensor(Float32Array.from({ length: T }, () => Math.fround(rand() * 2)), [T], "fp32");
      const co = { psumNumTokensPerExpert: psum, tokenAlignment: A, topkWeights: wts, clampValue: clamp ? 7 : undefined };
      const dco = { ...co, psumNumTokensPerExpert: uploadView(psum), topkWeights: uploadView(wts) };
      const real = swigluRealRows("t", T, psum, A);
      const dx = uploadView(x), ddy = uploadView(dy);
      const label = `${tag} swiglu clamp ${clamp}`;
      if (!full || clamp) {
        const cf = swigluForward(x, { fmt: "bf16", ...co }) as HostTensor;
        await both(() => swigluForward(dx, { fmt: "bf16", ...dco }) as DeviceTensor, (gf, t) => {
          sameRows(readAllocation(gf), storageBytes(cf), real, Hs * 2, `${t} forward`);
          dispose(gf);
        }, swPdl, `${label} forward`);
      }
      if (!clamp) {
        const [cd] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, ...PACKED, ...co });
        await both(() => swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, ...PACKED, ...dco }), ([gd, gs], t) => {
          // H = 7168: the row form `_anrt` (swigluLaunchTuning.rowForm, the default; perf11-swr,
          // perf17-swl), else `_anl`
          const form = Hs === 7168 ? "_anrt" : "_anl";
          assert.equal(swigluLastLaunch().fn, fnOf(`tk_swiglu_forward__bf16_e4m3_g128${form}`), `${t} forward+cast ${form}`);
          sameRows(readAllocation(gd as DeviceTensor), storageBytes(cd as HostTensor), real, Hs, `${t} forward+cast data`);
          dispose(gd, gs);
        }, swPdl, `${label} forward+cast`);
      }
      if (!full || clamp) {
        const cb = swigluBackward(x, dy, { fmt: "bf16", ...co, doRecompute: true });
        await both(() => swigluBackward(dx, ddy, { fmt: "bf16", ...dco, doRecompute: true }), (gb, t) => {
          for (let i = 0; i < 3; i++) {
            assert.equal(gb[i] === null, cb[i] === null, `${t} backward output ${i} presence`);
            if (cb[i]) assertBytesEqual(readAllocation(gb[i] as DeviceTensor), storageBytes(cb[i] as HostTensor), `${t} backward output ${i}`);
          }
          dispose(gb);
        }, swPdl, `${label} backward`);
      }
      dispose(dx, ddy, dco.psumNumTokensPerExpert, dco.topkWeights);
    }
  }
  // castBack / perTokenCastBack e4m3 → bf16, the segmented kernel (H / 8 ≥ 256): 37 × 2048 and the full size; the
  // quantized input is the CPU's, uploaded
  for (const [T, H] of [[37, 2048], FULL] as const) {
    const tag = `${T}x${H}`;
    const x = randomInput(rand, T, H, "bf16");
    const q = perTokenCast(x, { fmt: "e4m3", numPerChannels: 128 }) as Quantized;
    const dq: Quantized = [uploadView(q[0] as HostTensor), uploadView(q[1] as HostTensor)];
    const cb = perTokenCastBack(q, { fmt: "bf16", numPerChannels: 128 }) as HostTensor;
    await both(() => perTokenCastBack(dq, { fmt: "bf16", numPerChannels: 128 }) as DeviceTensor, (g, t) => {
      assert.equal(castBackLastLaunch().fn, fnOf("tk_cast_back_seg__e4m3_bf16"), `${t} segmented kernel`);
      sameAllocation(g, cb, t);
      dispose(g);
    }, cbPdl, `${tag} perTokenCastBack`);
    await both(() => castBack(dq, { fmt: "bf16", xBlockSize: [1, 128] }) as DeviceTensor, (g, t) => {
      sameAllocation(g, cb, t); // [1, 128] blocks: perTokenCastBack's 128 channels
      dispose(g);
    }, cbPdl, `${tag} castBack [1, 128]`);
    dispose(dq);
  }
  // castBack [128, 128] and perBlockCastWithSfOnly (T a multiple of 128): small sizes, then 4096 × 7168
  for (const [T, H, full] of [[256, 512, false], [128, 2048, false], [4096, 7168, true]] as const) {
    for (const dt of full ? ["bf16"] as const : ["bf16", "fp32"] as const) {
      const x = randomInput(rand, T, H, dt);
      const dx = uploadView(x);
      for (const bs of full ? [[128, 128]] as const : [[128, 128], [32, 32]] as const) {
        for (const [name, sfo] of full ? [["packed", PACKED] as const] : [["fp32", {}] as const, ["packed", PACKED] as const]) {
          const o = { fmt: "e4m3", blockSize: bs, ...sfo } as const;
          const cs = perBlockCastWithSfOnly(x, o);
          await both(() => perBlockCastWithSfOnly(dx, o), (gs, t) => {
            sameAllocation(gs, cs, t);
            dispose(gs);
          }, pbPdl, `${T}x${H} ${dt} ${bs.join("x")} ${name} perBlockCastWithSfOnly`);
        }
      }
      if (dt === "bf16" && H / 8 >= 256) {
        const q = perBlockCast(x, { fmt: "e4m3", blockSize: [128, 128] });
        const dq: Quantized = [uploadView(q[0] as HostTensor), uploadView(q[1] as HostTensor)];
        const cb = castBack(q, { fmt: "bf16", xBlockSize: [128, 128] }) as HostTensor;
        await both(() => castBack(dq, { fmt: "bf16", xBlockSize: [128, 128] }) as DeviceTensor, (g, t) => {
          assert.equal(castBackLastLaunch().fn, fnOf("tk_cast_back_seg__e4m3_bf16"), `${t} segmented kernel`);
          sameAllocation(g, cb, t);
          dispose(g);
        }, cbPdl, `${T}x${H} castBack [128, 128]`);
        dispose(dq);
      }
      dispose(dx);
    }
  }
});


/**
 * Chains on one stream, nothing synchronised in between, every launch a PDL one (each lets its dependents start at
 * its own start): op 1 normForward writes A; op 2 normForward reads A (read after a PDL write) and writes B; op 3
 * normForwardAndPerTokenCast reads B; op 4 normForward writes A again (write after op 2's read); op 5
 * addRmsnormForwardAndPerTokenCast reads A (op 4's) and updates B in place (write after op 3's read); op 6
 * swigluForward reads A as x [T, 2 · H/2] and writes Y; op 7 swigluBackward reads A and Y (as dy) and writes G;
 * op 8 swigluForwardAndPerTokenCast reads G; op 9 swigluForward reads G and writes Y again (write after op 7's
 * read, after op 6's write); op 10 normForward writes A a third time (after ops 5–7 read it). Every output must be
 * the CPU chain's. Then ten back-to-back normForward into the same outputs and one more with another input. One
 * round at 2304 × 1024 and one at 2304 × 7168 (normForward's row forms, and so PDL, need 16 rows a SM: 2112 on an
 * H200; at 1024 rows it runs the team kernels, launched plainly).
 */
gpuTest("PDL chains on one stream: norm and SwiGLU launches reading and overwriting each other's outputs without synchronisation = the CPU chain (seed 10003)", async () => {
  const rand = rng(10003);
  await withPdl(true, async () => {
    const s = createStream(0);
    try {
      // one round a shape: two rounds at 4001 × 7168 (the CPU chain) did not finish in 150 s on a loaded H200 host
      for (const [T, H] of [[ROWS, 1024], [ROWS, 7168]] as const) {
        const Hs = H / 2;
        for (let round = 0; round < 1; round++) {
          const label = `PDL chain ${T}x${H} round ${round}`;
          const hx = [0, 1, 2].map(() => randomInput(rand, T, H, "bf16"));
          const hw = moderate(rand, [H]);
          const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: 128, ...PACKED } as const;
          // the CPU chain
          type Three = [HostTensor, HostTensor, HostTensor];
          const [a1, r1] = normForward(hx[0], hw, { eps: 1e-6 }) as Three;
          const [b2, r2] = normForward(a1, hw, { eps: 1e-6, outScale: 0.5 }) as Three;
          const c3 = normForwardAndPerTokenCast(b2, hw, o);
          const [a4, r4] = normForward(hx[1], null, { eps: 1e-6 }) as Three;
          const b5 = new HostTensor((b2.data as Uint16Array).slice(), "bf16", b2.shape, b2.strides, 0);
          const c5 = addRmsnormForwardAndPerTokenCast(a4, b5, hw, o);
          const y6 = swigluForward(a4, { fmt: "bf16" }) as HostTensor;
          const g7 = swigluBackward(a4, y6, { fmt: "bf16" });
          const c8 = swigluForwardAndPerTokenCast(g7[0] as HostTensor, { fmt: "e4m3", numPerChannels: 128 });
          const y9 = swigluForward(g7[0] as HostTensor, { fmt: "bf16" }) as HostTensor;
          const [a10, r10] = normForward(hx[2], hw, { eps: 1e-6 }) as Three;
          const [a11, r11] = normForward(hx[1], hw, { eps: 1e-6 }) as Three;
          // the device chain
          const dx = hx.map((h) => toDevice(h, 0, { stream: s }) as DeviceTensor);
          const dw = toDevice(hw, 0, { stream: s }) as DeviceTensor;
          const Y = empty([T, Hs], "bf16", { device: 0, stream: s }) as DeviceTensor;
          const keep: unknown[] = [];
          try {
            type DThree = [DeviceTensor, DeviceTensor, DeviceTensor];
            const [A, rA] = normForward(dx[0], dw, { eps: 1e-6, stream: s }) as DThree;
            keep.push(A, rA);
            await s.synchronize();
            sameAllocation(A, a1, `${label}: op 1 out`);
            sameAllocation(rA, r1, `${label}: op 1 rstd`);
            // from here on, nothing synchronised until every op is enqueued
            const [B, rB] = normForward(A, dw, { eps: 1e-6, outScale: 0.5, stream: s }) as DThree;
            const q3 = normForwardAndPerTokenCast(B, dw, { ...o, stream: s });
            normForward(dx[1], null, { eps: 1e-6, stream: s, out: { out: A, rstd: rA } });
            const q5 = addRmsnormForwardAndPerTokenCast(A, B, dw, { ...o, stream: s });
            swigluForward(A, { fmt: "bf16", stream: s, out: Y });
            const G = swigluBackward(A, Y, { fmt: "bf16", stream: s });
            const q8 = swigluForwardAndPerTokenCast(G[0] as DeviceTensor, { fmt: "e4m3", numPerChannels: 128, stream: s });
            // (op 9 reads G and rewrites Y: the copy of op 6's Y that op 7 read is checked through G)
            swigluForward(G[0] as DeviceTensor, { fmt: "bf16", stream: s, out: Y });
            const [, rA10] = normForward(dx[2], dw, { eps: 1e-6, stream: s, out: { out: A } }) as DThree;
            keep.push(B, rB, q3[0], q3[2], q5, G, q8, rA10);
            assert.equal(normForwardLastLaunch().pdl, true, `${label}: normForward launched with PDL`);
            await s.synchronize();
            sameAllocation(rB, r2, `${label}: op 2 rstd (read of op 1's A)`);
            sameAllocation(q3[0][0], c3[0][0], `${label}: op 3 data (read of op 2's B)`);
            sameAllocation(q3[0][1], c3[0][1], `${label}: op 3 sf`);
            sameAllocation(rA, r4, `${label}: op 4 rstd`);
            sameAllocation(B, b5, `${label}: B after op 5 (in place)`);
            sameAllocation(q5[0], c5[0], `${label}: op 5 data (read of op 4's A)`);
            sameAllocation(q5[1], c5[1], `${label}: op 5 sf`);
            sameAllocation(G[0], g7[0], `${label}: op 7 xGrad (reads of op 4's A, op 6's Y)`);
            sameAllocation(q8[0], c8[0], `${label}: op 8 data`);
            sameAllocation(q8[1], c8[1], `${label}: op 8 sf`);
            sameAllocation(Y, y9, `${label}: Y after op 9`);
            sameAllocation(A, a10, `${label}: A after op 10`);
            sameAllocation(rA10, r10, `${label}: op 10 rstd`);
            // back-to-back normForward into the same outputs (same options object), then another input
            const same = { eps: 1e-6, stream: s, out: { out: A, rstd: rA10 } };
            for (let i = 0; i < 10; i++) normForward(dx[i % 3], dw, same);
            normForward(dx[1], dw, same);
            await s.synchronize();
            sameAllocation(A, a11, `${label}: A after the back-to-back run`);
            sameAllocation(rA10, r11, `${label}: rstd after the back-to-back run`);
          } finally {
            await s.synchronize();
            dispose(keep, dx, dw, Y);
          }
        }
      }
    } finally {
      s[Symbol.dispose]();
    }
  });
});

/**
 * Chains of casts on one stream without synchronisation, config.pdl on: perTokenCast writes (D, S) (a PDL
 * `_g128_pdl`), perTokenCastBack reads them into Y (PDL, read after write), cast reads Y into E (a plain launch
 * after a PDL one, read after write), perTokenCast writes (D, S) again (write after castBack's read),
 * perTokenCastBack rewrites Y (write after cast's read), stochastic cast rewrites E (write after write); 1024 and
 * 37 rows × 7168. Then perBlockCast (plain) writes (D, S) in 128 × 128 blocks, castBack reads them into Y (PDL),
 * perBlockCastWithSfOnly (PDL) reads that Y into a fresh sf, perBlockCast rewrites (D, S) from Y (write after
 * castBack's read), castBack rewrites Y (write after the reads of Y); 1024 and 128 rows × 7168. Each output = the
 * CPU chain's. One round a shape.
 */
gpuTest("PDL chains on one stream: perTokenCast, perTokenCastBack / castBack (segmented), cast, perBlockCast and perBlockCastWithSfOnly reading and overwriting each other's outputs without synchronisation = the CPU chain (seed 10004)", async () => {
  const rand = rng(10004);
  const pt = { fmt: "e4m3", numPerChannels: 128 } as const;
  await withPdl(true, async () => {
    const s = createStream(0);
    try {
      for (const T of [1024, 37]) {
        const H = 7168;
        const label = `PDL cast chain ${T}x${H}`;
        const hx = [0, 1].map(() => randomInput(rand, T, H, "bf16"));
        const q1 = perTokenCast(hx[0], pt) as Quantized;
        const y2 = perTokenCastBack(q1, { fmt: "bf16", numPerChannels: 128 }) as HostTensor;
        const e3 = cast(y2, { dtype: "e4m3" }) as HostTensor;
        const q4 = perTokenCast(hx[1], pt) as Quantized;
        const y5 = perTokenCastBack(q4, { fmt: "bf16", numPerChannels: 128 }) as HostTensor;
        const e6 = cast(y5, { dtype: "e4m3", stochasticRounding: true, seed: 5n }) as HostTensor;
        const dx = hx.map((h) => toDevice(h, 0, { stream: s }) as DeviceTensor);
        const D = empty([T, H], "e4m3", { device: 0, stream: s }) as DeviceTensor;
        const Y = empty([T, H], "bf16", { device: 0, stream: s }) as DeviceTensor;
        const E = empty([T, H], "e4m3", { device: 0, stream: s }) as DeviceTensor;
        const keep: unknown[] = [];
        try {
          const [, S] = perTokenCast(dx[0], { ...pt, stream: s, out: { data: D } }) as Quantized;
          keep.push(S);
          assert.equal(perTokenLastLaunch().pdl, true, `${label}: perTokenCast with PDL`);
          perTokenCastBack([D, S], { fmt: "bf16", numPerChannels: 128, stream: s, out: Y });
          assert.equal(castBackLastLaunch().pdl, true, `${label}: perTokenCastBack with PDL`);
          cast(Y, { dtype: "e4m3", stream: s, out: E });
          assert.equal(elementCastLastLaunch().pdl, false, `${label}: cast without PDL`);
          await s.synchronize();
          sameAllocation(S, q1[1], `${label}: sf 1`);
          sameAllocation(Y, y2, `${label}: Y (read of D, S)`);
          sameAllocation(E, e3, `${label}: E (read of Y)`);
          perTokenCast(dx[0], { ...pt, stream: s, out: { data: D, sf: S } });
          perTokenCastBack([D, S], { fmt: "bf16", numPerChannels: 128, stream: s, out: Y });
          cast(Y, { dtype: "e4m3", stream: s, out: E });
          perTokenCast(dx[1], { ...pt, stream: s, out: { data: D, sf: S } });
          perTokenCastBack([D, S], { fmt: "bf16", numPerChannels: 128, stream: s, out: Y });
          cast(Y, { dtype: "e4m3", stochasticRounding: true, seed: 5n, stream: s, out: E });
          await s.synchronize();
          sameAllocation(D, q4[0], `${label}: D after the second input`);
          sameAllocation(S, q4[1], `${label}: S after the second input`);
          sameAllocation(Y, y5, `${label}: Y after the second input`);
          sameAllocation(E, e6, `${label}: E after the SR cast`);
        } finally {
          await s.synchronize();
          dispose(keep, dx, D, Y, E);
        }
      }
      for (const T of [1024, 128]) {
        const H = 7168;
        const label = `PDL per-block chain ${T}x${H}`;
        const o = { fmt: "e4m3", blockSize: [128, 128] } as const;
        const cb = { fmt: "bf16", xBlockSize: [128, 128] } as const;
        const hx = randomInput(rand, T, H, "bf16");
        const q1 = perBlockCast(hx, o);
        const y2 = castBack(q1, cb) as HostTensor;
        const s3 = perBlockCastWithSfOnly(y2, o);
        const q4 = perBlockCast(y2, o);
        const y5 = castBack(q4, cb) as HostTensor;
        const dx = toDevice(hx, 0, { stream: s }) as DeviceTensor;
        const Y = empty([T, H], "bf16", { device: 0, stream: s }) as DeviceTensor;
        const keep: unknown[] = [];
        try {
          const [D, S] = perBlockCast(dx, { ...o, stream: s });
          keep.push(D, S);
          assert.equal(perBlockLastLaunch().pdl, false, `${label}: perBlockCast without PDL`);
          castBack([D, S], { ...cb, stream: s, out: Y });
          assert.equal(castBackLastLaunch().pdl, true, `${label}: castBack with PDL`);
          const S3 = perBlockCastWithSfOnly(Y, { ...o, stream: s });
          keep.push(S3);
          assert.equal(perBlockLastLaunch().pdl, true, `${label}: perBlockCastWithSfOnly with PDL`);
          perBlockCast(Y, { ...o, stream: s, out: { data: D, sf: S } });
          castBack([D, S], { ...cb, stream: s, out: Y });
          await s.synchronize();
          sameAllocation(S3, s3, `${label}: sf only of castBack's Y`);
          sameAllocation(D, q4[0], `${label}: D after the second cast (read of castBack's Y)`);
          sameAllocation(S, q4[1], `${label}: S after the second cast`);
          sameAllocation(Y, y5, `${label}: Y after the second castBack`);
        } finally {
          await s.synchronize();
          dispose(keep, dx, Y);
        }
      }
    } finally {
      s[Symbol.dispose]();
    }
  });
});

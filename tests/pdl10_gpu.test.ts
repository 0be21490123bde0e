/**
 * Programmatic dependent launch of the norm forward and SwiGLU kernels (docs/perf-notes/perf10-pdl.md): the kernels
 * `_tp16hr` (normForward), `_e4m3_g<N>_br4a` (normForwardAndPerTokenCast), `_e4m3_g<N>_wr_resa`
 * (addRmsnormForwardAndPerTokenCast, and normForwardAndPerTokenCast with a residual) and SwiGLU's aligned-only forms
 * (`_a`, `_an`) issue griddepcontrol.launch_dependents first and griddepcontrol.wait before their first global access,
 * and are launched with the PDL attribute while `config.pdl` is set. These tests check which launches carry the
 * attribute, the bytes against the CPU reference with `config.pdl` on and off, and chains of such launches on one
 * stream with nothing synchronised in between (read after write, write after read, write after write). Skipped, and
 * counted as skipped, without a GPU.
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
import { normForwardLastLaunch } from "../ops/norm/norm_forward.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import { swigluLastLaunch } from "../ops/quant/swiglu_launch.ts";
import { elementCastLastLaunch } from "../ops/quant/elem_launch.ts";
import { castBackLastLaunch } from "../ops/quant/cast_back.ts";
import { perTokenLastLaunch } from "../ops/quant/per_token_cast.ts";
import { perBlockLastLaunch } from "../ops/quant/per_block_cast.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, SF_LAYOUTS_FP32, storageBytes, uploadView } from "./gpu_util.ts";

/** Rows enough for the norm row forms on any H200-class device (16 rows per SM, up to 144 SMs). */
const ROWS = 2304;

/** Runs `f` with config.pdl set as given, restoring it after. */
async function withPdl<R>(on: boolean, f: () => R | Promise<R>): Promise<R> {
  const saved = config.pdl;
  config.pdl = on;
  try {
    return await f();
  } finally {
    config.pdl = saved;
  }
}

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

/**
 * Which launches carry the PDL attribute: with config.pdl on, normForward on aligned views (`_tp16hr`), the norm casts
 * on aligned views (`_br4a`, `_wr_resa`) and the SwiGLU aligned-only forms; never main's other forms (unaligned views:
 * `_rr4_l2`, `_br4`, `_wr_res`; SwiGLU main kernels); nothing with config.pdl off.
 */
gpuTest("PDL selection (round 10): _tp16hr, _br4a, _wr_resa and SwiGLU's aligned forms carry the PDL attribute while config.pdl is set, their unaligned fallbacks and every launch with config.pdl off do not (seed 10001)", async () => {
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
          assert.equal(normForwardLastLaunch().pdl, on, `${tag}: cast ${npc} aligned (_br4a)`);
          outs.push(normForwardAndPerTokenCast(dxu, dw, o));
          assert.equal(normForwardLastLaunch().pdl, false, `${tag}: cast ${npc} unaligned (_br4), plain`);
          const dr = uploadView(res);
          outs.push(addRmsnormForwardAndPerTokenCast(dx, dr, dw, o), dr);
          assert.equal(normForwardLastLaunch().pdl, on, `${tag}: addRmsnorm ${npc} aligned (_wr_resa)`);
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
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_forward__bf16_e4m3_g128_an"), pdl: on }, `${tag}: forward+cast _an`);
        outs.push(swigluForwardAndPerTokenCast(dsx, { fmt: "e4m3", numPerChannels: 128, clampValue: 7 }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_forward__bf16_e4m3_g128"), pdl: false }, `${tag}: forward+cast with clamp, plain`);
        outs.push(swigluBackward(dsx, sdy, { fmt: "bf16" }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_backward__bf16_bf16_a"), pdl: on }, `${tag}: swigluBackward _a`);
        outs.push(swigluBackward(dsxu, sdy, { fmt: "bf16" }));
        assert.deepEqual(swigluLastLaunch(), { fn: fnOf("tk_swiglu_backward__bf16_bf16"), pdl: false }, `${tag}: swigluBackward unaligned, plain`);
      });
    }
  } finally {
    dispose(outs, dx, dxu, dw, dsx, dsxu, sdy);
  }
});

/**
 * Bytes = CPU reference with config.pdl on and off for every changed kernel: normForward `_tp16hr` (weight or not,
 * outScale 1 / 0.3, H with dead pieces, 3-D, padded strides, a grid walked grid-stride is the host's choice only
 * with knobs, so the default one block per row), the norm casts `_br4a` (groups of 32 / 128, fp32 and packed sf,
 * outBf16) and `_wr_resa` (addRmsnorm, residual updated in place), SwiGLU forward `_a` / `_an`, forward+cast `_an`
 * and backward `_a` with a psum layout (padding rows), weights, clamp; at ROWS × H and at 4001 × 7168.
 */
gpuTest("PDL forms (round 10) = reference with config.pdl on and off: normForward _tp16hr, normForwardAndPerTokenCast _br4a, addRmsnormForwardAndPerTokenCast _wr_resa, SwiGLU forward / forward+cast / backward aligned forms (seed 10002)", async () => {
  const rand = rng(10002);
  for (const on of [true, false]) {
    await withPdl(on, () => {
      for (const [T, H] of [[ROWS, 528], [ROWS, 1024], [4001, 7168]] as const) {
        const tag = `config.pdl ${on} ${T}x${H}`;
        // normForward (_tp16hr)
        for (const weight of [true, false]) {
          for (const outScale of [1, 0.3]) {
            const x = randomInput(rand, T, H, "bf16", H + 8 * (outScale === 1 ? 0 : 2));
            const w = weight ? moderate(rand, [H]) : null;
            const [co, cr] = normForward(x, w, { eps: 1e-6, outScale });
            const dx = uploadView(x), dw = w ? uploadView(w) : null;
            const [go, gr] = normForward(dx, dw, { eps: 1e-6, outScale });
            assert.equal(normForwardLastLaunch().pdl, on, `${tag} normForward PDL`);
            sameAllocation(go, co, `${tag} normForward weight ${weight} outScale ${outScale} out`);
            sameAllocation(gr, cr, `${tag} normForward rstd`);
            dispose(go, gr, dx, dw);
          }
        }
        // normForwardAndPerTokenCast (_br4a) and addRmsnormForwardAndPerTokenCast (_wr_resa)
        for (const npc of [32, 128] as const) {
          if (H % npc !== 0) continue; // the casts' groups divide the hidden size
          for (const [name, sf] of [...SF_LAYOUTS_FP32.slice(0, 1), ["packed", PACKED] as const]) {
            const x = randomInput(rand, T, H, "bf16");
            const w = moderate(rand, [H]);
            const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, withOutBf16: npc === 32, ...sf } as const;
            const c = normForwardAndPerTokenCast(x, w, o);
            const dx = uploadView(x), dw = uploadView(w);
            const g = normForwardAndPerTokenCast(dx, dw, o);
            assert.equal(normForwardLastLaunch().pdl, on, `${tag} cast PDL`);
            const label = `${tag} normForwardAndPerTokenCast ${npc} ${name}`;
            sameAllocation(g[0][0], c[0][0], `${label} data`);
            sameAllocation(g[0][1], c[0][1], `${label} sf`);
            if (c[1]) sameAllocation(g[1], c[1], `${label} outBf16`);
            sameAllocation(g[2], c[2], `${label} rstd`);
            // addRmsnorm: x + residual, residual updated in place
            const r = randomInput(rand, T, H, "bf16");
            const hr = new HostTensor((r.data as Uint16Array).slice(), "bf16", r.shape, r.strides, 0);
            const dr = uploadView(r);
            const oa = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, ...sf } as const;
            const ca = addRmsnormForwardAndPerTokenCast(x, hr, w, oa);
            const ga = addRmsnormForwardAndPerTokenCast(dx, dr, dw, oa);
            assert.equal(normForwardLastLaunch().pdl, on, `${tag} addRmsnorm PDL`);
            sameAllocation(ga[0], ca[0], `${label} addRmsnorm data`);
            sameAllocation(ga[1], ca[1], `${label} addRmsnorm sf`);
            sameAllocation(dr, hr, `${label} addRmsnorm residual (in place)`);
            dispose(g[0], g[1], g[2], ga, dx, dw, dr);
          }
        }
        // SwiGLU aligned forms (H a multiple of 128 only for the cast)
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
          const cf = swigluForward(x, { fmt: "bf16", ...co }) as HostTensor;
          const gf = swigluForward(dx, { fmt: "bf16", ...dco }) as DeviceTensor;
          assert.equal(swigluLastLaunch().pdl, on, `${label} forward PDL`);
          sameRows(readAllocation(gf), storageBytes(cf), real, Hs * 2, `${label} forward`);
          if (!clamp) {
            const [cd, cs] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, ...PACKED, ...co });
            const [gd, gs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, ...PACKED, ...dco });
            assert.equal(swigluLastLaunch().pdl, on, `${label} forward+cast PDL`);
            sameRows(readAllocation(gd as DeviceTensor), storageBytes(cd as HostTensor), real, Hs, `${label} forward+cast data`);
            dispose(gd, gs);
          }
          const cb = swigluBackward(x, dy, { fmt: "bf16", ...co, doRecompute: true });
          const gb = swigluBackward(dx, ddy, { fmt: "bf16", ...dco, doRecompute: true });
          assert.equal(swigluLastLaunch().pdl, on, `${label} backward PDL`);
          for (let i = 0; i < 3; i++) {
            assert.equal(gb[i] === null, cb[i] === null, `${label} backward output ${i} presence`);
            if (cb[i]) assertBytesEqual(readAllocation(gb[i] as DeviceTensor), storageBytes(cb[i] as HostTensor), `${label} backward output ${i}`);
          }
          dispose(gf, gb, dx, ddy, dco.psumNumTokensPerExpert, dco.topkWeights);
        }
      }
    });
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
 * the CPU chain's. Then ten back-to-back normForward into the same outputs and one more with another input. Two
 * shapes, two rounds.
 */
gpuTest("PDL chains on one stream (round 10): norm and SwiGLU launches reading and overwriting each other's outputs without synchronisation = the CPU chain (seed 10003)", async () => {
  const rand = rng(10003);
  await withPdl(true, async () => {
    const s = createStream(0);
    try {
      for (const [T, H] of [[ROWS, 1024], [4001, 7168]] as const) {
        const Hs = H / 2;
        for (let round = 0; round < 2; round++) {
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
 * The element casts `tk_cast__bf16_e4m3_a` / `_sr_a` and castBack's segmented kernel `tk_cast_back_seg__e4m3_bf16`:
 * which launches carry the PDL attribute (config.pdl on: these; off: none; unaligned views and the row-team
 * castBack kernels: never), bytes = reference with config.pdl on and off, and a chain on one stream without
 * synchronisation: perTokenCast writes (D, S) (a PDL `_g128_pdl`), perTokenCastBack reads them into Y (read after
 * write), cast reads Y into E (read after write), perTokenCast writes (D, S) again (write after castBack's read),
 * perTokenCastBack rewrites Y (write after cast's read), stochastic cast rewrites E (write after write); each =
 * the CPU chain's. 2048 and 37 rows × 7168, two rounds.
 */
gpuTest("PDL (round 10) of the element casts _a / _sr_a and castBack's segmented kernel: selection, bytes = reference with config.pdl on and off, a chain with perTokenCast on one stream (seed 10004)", async () => {
  const rand = rng(10004);
  const pt = { fmt: "e4m3", numPerChannels: 128 } as const;
  for (const on of [true, false]) {
    await withPdl(on, () => {
      for (const [T, H] of [[37, 7168], [2048, 7168], [33, 512]] as const) {
        const tag = `config.pdl ${on} ${T}x${H}`;
        const x = randomInput(rand, T, H, "bf16");
        const dx = uploadView(x), dxu = uploadView(offAlignment(x));
        // element casts: aligned (_a, _sr_a: PDL while on) and one element off alignment (plain kernels, no PDL)
        for (const [dv, al] of [[dx, true], [dxu, false]] as const) {
          const c = cast(x, { dtype: "e4m3" }) as HostTensor;
          const g = cast(dv, { dtype: "e4m3" }) as DeviceTensor;
          assert.deepEqual(elementCastLastLaunch(), { fn: fnOf(`tk_cast__bf16_e4m3${al ? "_a" : ""}`), pdl: on && al }, `${tag} cast aligned ${al}`);
          sameAllocation(g, c, `${tag} cast aligned ${al}`);
          const cs = cast(x, { dtype: "e4m3", stochasticRounding: true, seed: 11n }) as HostTensor;
          const gs = cast(dv, { dtype: "e4m3", stochasticRounding: true, seed: 11n }) as DeviceTensor;
          assert.deepEqual(elementCastLastLaunch(), { fn: fnOf(`tk_cast__bf16_e4m3_sr${al ? "_a" : ""}`), pdl: on && al }, `${tag} SR cast aligned ${al}`);
          sameAllocation(gs, cs, `${tag} SR cast aligned ${al}`);
          dispose(g, gs);
        }
        // castBack e4m3 → bf16: segmented (H / 8 ≥ 256: PDL while on) or row teams (H = 512: plain); per-token and
        // 128 × 128 blocks
        const q = perTokenCast(x, pt) as Quantized;
        const dq = perTokenCast(dx, pt) as Quantized;
        const cb = perTokenCastBack(q, { fmt: "bf16", numPerChannels: 128 }) as HostTensor;
        const gb = perTokenCastBack(dq, { fmt: "bf16", numPerChannels: 128 }) as DeviceTensor;
        const segK = H / 8 >= 256;
        assert.deepEqual(castBackLastLaunch(), { fn: fnOf(`tk_cast_back${segK ? "_seg" : ""}__e4m3_bf16`), pdl: on && segK }, `${tag} perTokenCastBack`);
        sameAllocation(gb, cb, `${tag} perTokenCastBack`);
        const cb2 = castBack(q, { fmt: "bf16", xBlockSize: [1, 128] }) as HostTensor;
        const gb2 = castBack(dq, { fmt: "bf16", xBlockSize: [1, 128] }) as DeviceTensor;
        assert.equal(castBackLastLaunch().pdl, on && segK, `${tag} castBack PDL`);
        sameAllocation(gb2, cb2, `${tag} castBack`);
        dispose(dx, dxu, dq, gb, gb2);
      }
    });
  }
  // the chain
  await withPdl(true, async () => {
    const s = createStream(0);
    try {
      for (const T of [2048, 37]) {
        const H = 7168;
        for (let round = 0; round < 2; round++) {
          const label = `PDL cast chain ${T}x${H} round ${round}`;
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
            assert.equal(elementCastLastLaunch().pdl, true, `${label}: cast with PDL`);
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
      }
    } finally {
      s[Symbol.dispose]();
    }
  });
});

/**
 * perBlockCast's kernels (every `tk_per_block_cast__*`, all with the griddepcontrol prologue): the PDL attribute on
 * every launch while config.pdl is set and on none otherwise; bytes = reference with config.pdl on and off (bf16
 * and fp32 input, 128 × 128 and 32 × 32 blocks, fp32 and packed UE8M0 sf, sf only, precomputed sf, a grid walked
 * grid-stride at 1024 × 7168); a chain on one stream without synchronisation: perBlockCast writes (D, S), castBack
 * reads them into Y (a PDL segmented kernel), perBlockCast reads Y and rewrites (D, S) (write after castBack's
 * read), castBack rewrites Y (write after perBlockCast's read); each = the CPU chain's.
 */
gpuTest("PDL (round 10) of perBlockCast's kernels: selection, bytes = reference with config.pdl on and off, a chain with castBack on one stream (seed 10005)", async () => {
  const rand = rng(10005);
  for (const on of [true, false]) {
    await withPdl(on, () => {
      for (const [T, H] of [[256, 512], [1024, 7168]] as const) {
        for (const dt of ["bf16", "fp32"] as const) {
          const x = randomInput(rand, T, H, dt);
          const dx = uploadView(x);
          for (const bs of [[128, 128], [32, 32]] as const) {
            for (const sfo of [{}, PACKED]) {
              const o = { fmt: "e4m3", blockSize: bs, ...sfo } as const;
              const tag = `config.pdl ${on} ${T}x${H} ${dt} ${bs.join("x")} ${JSON.stringify(sfo)}`;
              const c = perBlockCast(x, o);
              const g = perBlockCast(dx, o);
              assert.equal(perBlockLastLaunch().pdl, on, `${tag}: PDL attribute`);
              sameAllocation(g[0], c[0], `${tag} data`);
              sameAllocation(g[1], c[1], `${tag} sf`);
              const cs = perBlockCastWithSfOnly(x, o);
              const gs = perBlockCastWithSfOnly(dx, o);
              assert.equal(perBlockLastLaunch().pdl, on, `${tag}: sf only PDL attribute`);
              sameAllocation(gs, cs, `${tag} sf only`);
              dispose(g, gs);
            }
            const tag = `config.pdl ${on} ${T}x${H} ${dt} ${bs.join("x")} precomputed`;
            const [, hsf] = perBlockCast(x, { fmt: "e4m3", blockSize: bs });
            const dsf = uploadView(hsf as HostTensor);
            const cp = perBlockCastWithPrecomputedSf(x, hsf, { fmt: "e4m3", blockSize: bs });
            const gp = perBlockCastWithPrecomputedSf(dx, dsf, { fmt: "e4m3", blockSize: bs });
            assert.equal(perBlockLastLaunch().pdl, on, `${tag}: PDL attribute`);
            sameAllocation(gp, cp, tag);
            dispose(gp, dsf);
          }
          dispose(dx);
        }
      }
    });
  }
  await withPdl(true, async () => {
    const s = createStream(0);
    try {
      for (const T of [1024, 128]) {
        const H = 7168;
        for (let round = 0; round < 2; round++) {
          const label = `PDL per-block chain ${T}x${H} round ${round}`;
          const o = { fmt: "e4m3", blockSize: [128, 128] } as const;
          const cb = { fmt: "bf16", xBlockSize: [128, 128] } as const;
          const hx = randomInput(rand, T, H, "bf16");
          const q1 = perBlockCast(hx, o);
          const y2 = castBack(q1, cb) as HostTensor;
          const q3 = perBlockCast(y2, o);
          const y4 = castBack(q3, cb) as HostTensor;
          const dx = toDevice(hx, 0, { stream: s }) as DeviceTensor;
          const Y = empty([T, H], "bf16", { device: 0, stream: s }) as DeviceTensor;
          const keep: unknown[] = [];
          try {
            const [D, S] = perBlockCast(dx, { ...o, stream: s });
            keep.push(D, S);
            castBack([D, S], { ...cb, stream: s, out: Y });
            perBlockCast(Y, { ...o, stream: s, out: { data: D, sf: S } });
            castBack([D, S], { ...cb, stream: s, out: Y });
            assert.equal(castBackLastLaunch().pdl, true, `${label}: castBack with PDL`);
            await s.synchronize();
            sameAllocation(D, q3[0], `${label}: D after the second cast (read of castBack's Y)`);
            sameAllocation(S, q3[1], `${label}: S after the second cast`);
            sameAllocation(Y, y4, `${label}: Y after the second castBack`);
            void y2;
          } finally {
            await s.synchronize();
            dispose(keep, dx, Y);
          }
        }
      }
    } finally {
      s[Symbol.dispose]();
    }
  });
});

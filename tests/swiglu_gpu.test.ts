/**
 * The CUDA kernels of the SwiGLU family against the CPU reference, byte for byte (every byte of every output
 * allocation; the forward's padding rows, which §8.4 leaves unwritten, are masked), on fresh random inputs from
 * printed seeds; the device expf against the JS one; the counters; and the psum guard (DESIGN §6). Skipped, and
 * counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import {
  castBack,
  createStream,
  type DeviceTensor,
  type Tensor,
  HostTensor,
  perTokenCast,
  swigluBackward,
  swigluBackwardAndPerTokenCast,
  swigluForward,
  swigluForwardAndPerTokenCast,
  tensor,
  TkError,
  toDevice,
  toHost,
} from "../mod.ts";
import { deviceRuntime } from "../core/tensor.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { expf } from "../ops/quant/expf.ref.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import { launchExpfCheck, type SwigluLaunch, swigluFormSuffix, swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { asCodes, caseName, type GoldenCase, type GoldenFile, loadGolden, logicalBytes, maskExcludedRows, swigluCaseOptions } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomPsum, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";

const SEED = Number(Date.now() % 1_000_000);

/** A random [T, W] fp32 / bf16 input: normal values of mixed magnitude with ±0, large gates, NaN and ±Inf. */
function randomX(rand: () => number, T: number, W: number, dtype: "fp32" | "bf16"): HostTensor {
  const v = new Float32Array(T * W);
  for (let i = 0; i < v.length; i++) {
    const r = rand();
    const scale = [1, 4, 20, 100, 1e-3][i % 5];
    v[i] = r < 0.002 ? NaN : r < 0.004 ? Infinity : r < 0.006 ? -Infinity : r < 0.02 ? 0 : r < 0.03 ? -0 : Math.fround((rand() * 2 - 1) * scale);
  }
  if (dtype === "fp32") return tensor(v, [T, W], "fp32");
  const b = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) b[i] = encodeBf16(v[i]);
  return tensor(b, [T, W], "bf16");
}

function weights(rand: () => number, T: number): HostTensor {
  return tensor(Float32Array.from({ length: T }, () => Math.fround(rand() * 2)), [T], "fp32");
}

/** Compares the rows `real` of a [T, …] allocation (element bytes `eb`, `rowElems` per row). */
function sameRows(gpu: Uint8Array, cpu: Uint8Array, real: Uint8Array, rowBytes: number, label: string): void {
  for (let t = 0; t < real.length; t++) {
    if (!real[t]) continue;
    assertBytesEqual(gpu.subarray(t * rowBytes, (t + 1) * rowBytes), cpu.subarray(t * rowBytes, (t + 1) * rowBytes), `${label} row ${t}`);
  }
}

/** Compares the sf entries of rows `real` (any strides; storage elements of 4 bytes). */
function sameSfRows(gpu: Uint8Array, cpu: HostTensor, real: Uint8Array, label: string): void {
  const c = storageBytes(cpu);
  const [s0, s1] = cpu.strides;
  for (let t = 0; t < real.length; t++) {
    if (!real[t]) continue;
    for (let k = 0; k < cpu.shape[1]; k++) {
      const o = 4 * (t * s0 + k * s1);
      assertBytesEqual(gpu.subarray(o, o + 4), c.subarray(o, o + 4), `${label} sf [${t}, ${k}]`);
    }
  }
}

gpuTest("the device expf equals the JS expf on a large random sample and on dense ranges", () => {
  const rand = rng(SEED);
  console.log(`swiglu expf seed ${SEED}`);
  const xs: number[] = [];
  const u = new Uint32Array(1 << 22);
  for (let i = 0; i < u.length; i++) u[i] = (rand() * 2 ** 32) >>> 0;
  const f = new Float32Array(u.buffer);
  const dense = [0, 1, -1, 0.34657, -0.34657, 1.03972, -1.03972, 88.72, -87.33, -103.97, 3.7e-9, -3.7e-9, 20, -20];
  const b = new Float32Array(1), bu = new Uint32Array(b.buffer);
  for (const c of dense) {
    b[0] = c;
    const base = bu[0];
    for (let i = -(1 << 17); i < 1 << 17; i++) {
      bu[0] = (base + i) >>> 0;
      xs.push(b[0]);
    }
  }
  const all = new Float32Array(f.length + xs.length);
  all.set(f);
  all.set(xs, f.length);
  const x = toDevice(tensor(all, [all.length], "fp32"));
  const y = toDevice(tensor(new Float32Array(all.length), [all.length], "fp32"));
  launchExpfCheck(x.device, deviceRuntime("test").defaultStream(x.device), x, y);
  const got = new Uint32Array(readAllocation(y).buffer);
  const want = new Float32Array(all.length);
  for (let i = 0; i < all.length; i++) want[i] = expf(all[i]);
  const wu = new Uint32Array(want.buffer);
  let bad = 0;
  for (let i = 0; i < all.length; i++) {
    const nan = (wu[i] & 0x7fffffff) > 0x7f800000;
    if (nan ? (got[i] & 0x7fffffff) <= 0x7f800000 : got[i] !== wu[i]) {
      if (bad++ < 5) console.log(`expf(${all[i]}) device ${got[i].toString(16)} js ${wu[i].toString(16)}`);
    }
  }
  dispose(x, y);
  assert.equal(bad, 0, `${bad} expf mismatches`);
});

gpuTest("the backward's branch-free reciprocal (recip.cuh) equals div_rn: every b in [1, 2), dense ranges, random patterns", () => {
  // tk_swiglu_recip_check writes 0xffffffff where recip_rn_n and div_rn differ; both must also equal fround(1 / x)
  // (binary32 / binary32 through binary64 is correctly rounded).
  const rand = rng(SEED);
  const xs: number[] = [];
  const b = new Float32Array(1), bu = new Uint32Array(b.buffer);
  for (let u = 0x3f800000; u < 0x40000000; u++) {
    bu[0] = u;
    xs.push(b[0]);
  }
  const dense = [0x7d800000, 0x7e800000, 0x7f000000, 0x7f7fffff, 0x3f800000, 0x00800000, 0x00000001, 0x3f000000];
  for (const c of dense) {
    for (let i = -(1 << 12); i < 1 << 12; i++) {
      bu[0] = (c + i) >>> 0;
      xs.push(b[0]);
    }
  }
  for (const v of [0, -0, Infinity, -Infinity, NaN, -1, -(2 ** 124), 2 ** 124, 2 ** 126, 1.5]) xs.push(v);
  for (let i = 0; i < 1 << 20; i++) {
    bu[0] = (rand() * 2 ** 32) >>> 0;
    xs.push(b[0]);
  }
  const all = new Float32Array(xs);
  const x = toDevice(tensor(all, [all.length], "fp32"));
  const y = toDevice(tensor(new Float32Array(all.length), [all.length], "fp32"));
  launchExpfCheck(x.device, deviceRuntime("test").defaultStream(x.device), x, y, "tk_swiglu_recip_check");
  const got = new Uint32Array(readAllocation(y).buffer);
  const want = new Float32Array(all.length);
  for (let i = 0; i < all.length; i++) want[i] = 1 / all[i];
  const wu = new Uint32Array(want.buffer);
  let bad = 0;
  for (let i = 0; i < all.length; i++) {
    const nan = (wu[i] & 0x7fffffff) > 0x7f800000;
    if (nan ? (got[i] & 0x7fffffff) <= 0x7f800000 : got[i] !== wu[i]) {
      if (bad++ < 5) console.log(`1/${all[i]} device ${got[i].toString(16)} js ${wu[i].toString(16)}`);
    }
  }
  dispose(x, y);
  assert.equal(bad, 0, `${bad} reciprocal mismatches`);
});

const SHAPES: [number, number][] = [[0, 128], [1, 64], [37, 192], [133, 1024]];

interface Opts {
  psum?: boolean;
  weights?: boolean;
  scale?: boolean;
  clamp?: boolean;
}
const OPTS: Opts[] = [{}, { psum: true }, { weights: true, scale: true }, { clamp: true }, { psum: true, weights: true, scale: true, clamp: true }];

function common(rand: () => number, T: number, o: Opts, A: number) {
  return {
    psumNumTokensPerExpert: o.psum && T > 0 ? randomPsum(rand, T, 5, A) : undefined,
    tokenAlignment: A,
    topkWeights: o.weights ? weights(rand, T) : undefined,
    routedScalingFactor: o.scale ? 1.5 : undefined,
    clampValue: o.clamp ? 7 : undefined,
  };
}

/** A copy of the bf16 tensor `t` (offset 0) one element into its storage: a view off its 16-byte alignment. */
function offAlignment(t: HostTensor): HostTensor {
  const src = t.data as Uint16Array;
  const pad = new Uint16Array(src.length + 1);
  pad.set(src, 1);
  return new HostTensor(pad, t.dtype, t.shape, t.strides, 1);
}

function onDevice<T extends Record<string, unknown>>(o: T): T {
  const r: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) r[k] = v instanceof HostTensor ? uploadView(v) : v;
  return r as T;
}

gpuTest("swigluForward and swigluForwardAndPerTokenCast equal the CPU reference byte for byte (real rows), counters too", () => {
  const seed = SEED + 1;
  console.log(`swiglu forward seed ${seed}`);
  const rand = rng(seed);
  for (const [T, H] of SHAPES) {
    for (const dt of ["fp32", "bf16"] as const) {
      for (const o of OPTS) {
        const A = [1, 4, 16][Math.floor(rand() * 3)];
        const x = randomX(rand, T, 2 * H, dt);
        const co = common(rand, T, o, A);
        const real = swigluRealRows("t", T, co.psumNumTokensPerExpert ?? null, A);
        const dx = uploadView(x);
        const dco = onDevice(co);
        for (const fmt of ["fp32", "bf16"] as const) {
          const label = `fwd ${dt}→${fmt} T=${T} H=${H} ${JSON.stringify(o)} A=${A}`;
          const hc = o.clamp ? tensor(new BigInt64Array([1n, 2n, 3n, 4n]), [4], "int64") : undefined;
          const dc = hc ? uploadView(hc) : undefined;
          const cpu = swigluForward(x, { fmt, ...co, clampedCount: hc }) as HostTensor;
          const gpu = swigluForward(dx, { fmt, ...dco, clampedCount: dc }) as DeviceTensor;
          sameRows(readAllocation(gpu), storageBytes(cpu), real, H * (fmt === "fp32" ? 4 : 2), label);
          if (hc && dc) assertBytesEqual(readAllocation(dc), storageBytes(hc), `${label} counts`);
          dispose(gpu, dc);
        }
        for (const N of [32, 128] as const) {
          if (H % N) continue;
          for (const sfo of [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { roundSf: true, usePackedUe8m0: true }, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }]) {
            const label = `fwd+cast ${dt} N=${N} ${JSON.stringify(sfo)} T=${T} H=${H} ${JSON.stringify(o)} A=${A}`;
            const [cd, cs] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: N, ...sfo, ...co });
            const [gd, gs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: N, ...sfo, ...dco });
            sameRows(readAllocation(gd as DeviceTensor), storageBytes(cd as HostTensor), real, H, `${label} data`);
            const gsb = readAllocation(gs as DeviceTensor);
            sameSfRows(gsb, cs as HostTensor, real, label);
            // column-major alignment rows beyond T are 0 on both sides
            const cb = storageBytes(cs as HostTensor);
            if (!o.psum) assertBytesEqual(gsb, cb, `${label} sf allocation`);
            dispose(gd, gs);
          }
        }
        dispose(dx, Object.values(dco));
      }
    }
  }
});

gpuTest("swigluBackward and swigluBackwardAndPerTokenCast equal the CPU reference on every byte of every output", () => {
  const seed = SEED + 2;
  console.log(`swiglu backward seed ${seed}`);
  const rand = rng(seed);
  for (const [T, H] of SHAPES) {
    for (const o of OPTS) {
      for (const rec of [false, true]) {
        const A = [1, 4, 16][Math.floor(rand() * 3)];
        const co = { ...common(rand, T, o, A), doRecompute: rec };
        const dco = onDevice(co);
        for (const dt of ["fp32", "bf16"] as const) {
          const x = randomX(rand, T, 2 * H, dt);
          const dy = randomX(rand, T, H, dt);
          const dx = uploadView(x), ddy = uploadView(dy);
          for (const fmt of ["fp32", "bf16"] as const) {
            const label = `bwd ${dt}→${fmt} T=${T} H=${H} ${JSON.stringify(o)} rec=${rec} A=${A}`;
            const c = swigluBackward(x, dy, { fmt, ...co });
            const g = swigluBackward(dx, ddy, { fmt, ...dco });
            for (let i = 0; i < 3; i++) {
              assert.equal(g[i] === null, c[i] === null, `${label} output ${i} presence`);
              if (c[i]) assertBytesEqual(readAllocation(g[i] as DeviceTensor), storageBytes(c[i] as HostTensor), `${label} output ${i}`);
            }
            dispose(g);
          }
          dispose(dx, ddy);
        }
        // e4m3 input with fp32 row scales
        for (const N of [32, 128] as const) {
          if (H % N) continue;
          const q = tensor(Uint8Array.from({ length: T * 2 * H }, () => Math.floor(rand() * 256)), [T, 2 * H], "e4m3");
          const qsf = tensor(Float32Array.from({ length: (T * 2 * H) / N }, () => Math.fround(2 ** (rand() * 8 - 4))), [T, (2 * H) / N], "fp32");
          const dq = uploadView(q), dqsf = uploadView(qsf);
          for (const gdt of ["bf16", "fp32"] as const) {
            const dy = randomX(rand, T, H, gdt);
            const ddy = uploadView(dy);
            for (const sfo of [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { roundSf: true, usePackedUe8m0: true }, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }]) {
              const label = `bwd+cast dy=${gdt} N=${N} ${JSON.stringify(sfo)} T=${T} H=${H} ${JSON.stringify(o)} rec=${rec}`;
              const [cx, [cq, cs], cw, ca] = swigluBackwardAndPerTokenCast([q, qsf], dy, { fmt: "e4m3", numPerChannels: N, ...sfo, ...co });
              const [gx, [gq, gs], gw, ga] = swigluBackwardAndPerTokenCast([dq, dqsf], ddy, { fmt: "e4m3", numPerChannels: N, ...sfo, ...dco });
              const pairs: [unknown, unknown, string][] = [[gx, cx, "xGrad"], [gq, cq, "xGradQ"], [gs, cs, "xGradSf"], [gw, cw, "weightGrad"], [ga, ca, "actOut"]];
              for (const [gg, cc, name] of pairs) {
                assert.equal(gg === null, cc === null, `${label} ${name} presence`);
                if (cc) assertBytesEqual(readAllocation(gg as DeviceTensor), storageBytes(cc as HostTensor), `${label} ${name}`);
              }
              dispose(gx, gq, gs, gw, ga);
            }
            dispose(ddy);
          }
          dispose(dq, dqsf);
        }
        dispose(Object.values(dco));
      }
    }
  }
});

gpuTest("every bf16 gate pattern (the silu and e^(-g) tables of the bf16 kernels): forward, forward+cast and backward equal the CPU reference, with and without clamp", () => {
  // 65536 gates (every pattern once) in a [256, 2·256] input, ups 1.5 or −0.75 by column, dy 1.25, row weights
  const T = 256, H = 256;
  const v = new Uint16Array(T * 2 * H);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      v[t * 2 * H + j] = (t * H + j) & 0xffff;
      v[t * 2 * H + H + j] = encodeBf16(j % 2 ? -0.75 : 1.5);
    }
  }
  const x = tensor(v, [T, 2 * H], "bf16");
  const dy = tensor(new Uint16Array(T * H).fill(encodeBf16(1.25)), [T, H], "bf16");
  const w = tensor(Float32Array.from({ length: T }, (_, t) => Math.fround(0.5 + t / 256)), [T], "fp32");
  const dx = uploadView(x), ddy = uploadView(dy), dw = uploadView(w);
  // bf16 → bf16 and forward+cast run the aligned-only forms (forward `_an` without a clamp, `_a` with one; backward
  // `_a`; forward+cast `_an` without a clamp, main's kernel with one), bf16 → fp32 main's kernels
  for (const clampValue of [undefined, 3.3]) {
    const label = `all gates clamp=${clampValue}`;
    for (const fmt of ["fp32", "bf16"] as const) {
      for (const weighted of [false, true]) {
        const cpu = swigluForward(x, { fmt, clampValue, topkWeights: weighted ? w : undefined }) as HostTensor;
        const gpu = swigluForward(dx, { fmt, clampValue, topkWeights: weighted ? dw : undefined }) as DeviceTensor;
        assertBytesEqual(readAllocation(gpu), storageBytes(cpu), `${label} forward ${fmt} weighted=${weighted}`);
        dispose(gpu);
      }
      const c = swigluBackward(x, dy, { fmt, clampValue, topkWeights: w, doRecompute: true });
      const g = swigluBackward(dx, ddy, { fmt, clampValue, topkWeights: dw, doRecompute: true });
      for (let i = 0; i < 3; i++) {
        assert.equal(g[i] === null, c[i] === null, `${label} backward ${fmt} output ${i} presence`);
        if (c[i]) assertBytesEqual(readAllocation(g[i] as DeviceTensor), storageBytes(c[i] as HostTensor), `${label} backward ${fmt} output ${i}`);
      }
      dispose(g);
    }
    const [cd, cs] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, clampValue });
    const [gd, gs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, clampValue });
    assertBytesEqual(readAllocation(gd as DeviceTensor), storageBytes(cd as HostTensor), `${label} forward+cast data`);
    assertBytesEqual(readAllocation(gs as DeviceTensor), storageBytes(cs as HostTensor), `${label} forward+cast sf`);
    dispose(gd, gs);
  }
  dispose(dx, ddy, dw);
});

gpuTest("full-size samples: 4001 tokens × 7168, bf16, 5 experts (alignment 128), weights, scaling and clamp", () => {
  const seed = SEED + 3;
  console.log(`swiglu full-size seed ${seed}`);
  const rand = rng(seed);
  const T = 4001, H = 7168;
  const x = randomX(rand, T, 2 * H, "bf16");
  const co = common(rand, T, { psum: true, weights: true, scale: true, clamp: true }, 128);
  const real = swigluRealRows("t", T, co.psumNumTokensPerExpert ?? null, 128);
  const dx = uploadView(x), dco = onDevice(co);
  const [cd] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, ...co });
  const [gd, gs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, ...dco });
  sameRows(readAllocation(gd as DeviceTensor), storageBytes(cd as HostTensor), real, H, "full fwd+cast data");
  const dy = randomX(rand, T, H, "bf16");
  const ddy = uploadView(dy);
  const c = swigluBackward(x, dy, { fmt: "bf16", ...co, doRecompute: true });
  const g = swigluBackward(dx, ddy, { fmt: "bf16", ...dco, doRecompute: true });
  for (let i = 0; i < 3; i++) assertBytesEqual(readAllocation(g[i] as DeviceTensor), storageBytes(c[i] as HostTensor), `full bwd output ${i}`);
  dispose(dx, ddy, gd, gs, g, Object.values(dco));
});

gpuTest("a broken psum raises DEVICE_VALUE at the next sync, and the kernels stay in bounds", async () => {
  const x = toDevice(randomX(rng(7), 8, 128, "fp32"));
  const dy = toDevice(randomX(rng(8), 8, 64, "fp32"));
  // [psum, faulting experts, condition texts the error must name] (T = 8, A = 4; a zero condition slot fails)
  const BELOW = "is below the aligned start of expert e", BEYOND = "exceeds the rows of x";
  const cases: [number[], number, string[]][] = [
    [[4, 2], 1, [BELOW]],
    [[3, 100], 1, [BEYOND]],
    [[-5, 4], 1, [BELOW]],
    [[0x7fffffff, -0x80000000], 2, [BELOW, BEYOND]],
  ];
  const named = (op: string, n: number, texts: string[]) => (e: unknown) => {
    assert.ok(e instanceof TkError && e.code === "DEVICE_VALUE" && e.op === op, String(e));
    assert.ok(e.message.includes(`met ${n} illegal value(s)`), e.message);
    for (const t of texts) assert.ok(e.message.includes(t), `${e.message} should name "${t}"`);
    assert.ok(!e.message.includes("unspecified"), e.message);
    return true;
  };
  for (const [bad, n, texts] of cases) {
    const psum = toDevice(tensor(new Int32Array(bad), [2], "int32"));
    const out = swigluForward(x, { fmt: "fp32", psumNumTokensPerExpert: psum, tokenAlignment: 4 });
    await assert.rejects(toHost(out), named("swigluForward", n, texts));
    const [gx] = swigluBackward(x, dy, { fmt: "fp32", psumNumTokensPerExpert: psum, tokenAlignment: 4 });
    await assert.rejects(toHost(gx), named("swigluBackward", n, texts));
    await toHost(gx); // the word was cleared
    dispose(psum, out, gx);
  }
  dispose(x, dy);
});

// ---- the conformance vectors through the device path (host tensors, backend "cuda": the staged path) -----------

function goldenCheck(g: GoldenFile, c: GoldenCase, role: string, got: Tensor | null): void {
  assert.ok(got instanceof HostTensor, `${c.id} ${role}: expected a host result`);
  assertBytesEqual(maskExcludedRows(g, c, role, got), logicalBytes(g.tensors[`${c.id}.${role}`]), `device ${c.id} ${role}`);
}

gpuTest("the SwiGLU vectors pass through the device path (forward, forward+cast, backward, backward+cast)", () => {
  const fwd = loadGolden("quant", "quant_swiglu_forward");
  for (const c of fwd.cases) {
    const o: Record<string, unknown> = { backend: "cuda", ...swigluCaseOptions(fwd, c) };
    goldenCheck(fwd, c, "out", swigluForward(fwd.tensors[`${c.id}.x`], o as never));
    if (o.clampedCount) goldenCheck(fwd, c, "clampedCountOut", o.clampedCount as Tensor);
  }
  const fcast = loadGolden("quant", "quant_swiglu_forward_and_per_token_cast");
  for (const c of fcast.cases) {
    const o: Record<string, unknown> = { backend: "cuda", ...swigluCaseOptions(fcast, c) };
    const [data, sf] = swigluForwardAndPerTokenCast(fcast.tensors[`${c.id}.x`], o as never);
    goldenCheck(fcast, c, "data", data);
    goldenCheck(fcast, c, "sf", sf);
    if (o.clampedCount) goldenCheck(fcast, c, "clampedCountOut", o.clampedCount as Tensor);
  }
  const bwd = loadGolden("quant", "quant_swiglu_backward");
  for (const c of bwd.cases) {
    const [xGrad, weightGrad, actOut] = swigluBackward(bwd.tensors[`${c.id}.x`], bwd.tensors[`${c.id}.actXGrad`], { backend: "cuda", ...swigluCaseOptions(bwd, c) } as never);
    goldenCheck(bwd, c, "xGrad", xGrad);
    assert.equal(weightGrad === null, !c.outputs.includes("weightGrad"), `${caseName(c)}: weightGrad presence`);
    assert.equal(actOut === null, !c.outputs.includes("actOut"), `${caseName(c)}: actOut presence`);
    if (weightGrad) goldenCheck(bwd, c, "weightGrad", weightGrad);
    if (actOut) goldenCheck(bwd, c, "actOut", actOut);
  }
  const bcast = loadGolden("quant", "quant_swiglu_backward_and_per_token_cast");
  for (const c of bcast.cases) {
    const x: [Tensor, Tensor] = [asCodes(bcast.tensors[`${c.id}.xData`], "e4m3"), bcast.tensors[`${c.id}.xSf`]];
    const [xGrad, [q, sf], weightGrad, actOut] = swigluBackwardAndPerTokenCast(x, bcast.tensors[`${c.id}.actXGrad`], { backend: "cuda", ...swigluCaseOptions(bcast, c) } as never);
    goldenCheck(bcast, c, "xGrad", xGrad);
    goldenCheck(bcast, c, "xGradQ", q);
    goldenCheck(bcast, c, "xGradSf", sf);
    assert.equal(weightGrad === null, !c.outputs.includes("weightGrad"), `${caseName(c)}: weightGrad presence`);
    assert.equal(actOut === null, !c.outputs.includes("actOut"), `${caseName(c)}: actOut presence`);
    if (weightGrad) goldenCheck(bcast, c, "weightGrad", weightGrad);
    if (actOut) goldenCheck(bcast, c, "actOut", actOut);
  }
});

gpuTest("staged calls (host tensors, backend cuda) add to a host clampedCount and keep a given out's padding rows", () => {
  const rand = rng(SEED + 4);
  const T = 20, H = 128;
  const x = randomX(rand, T, 2 * H, "fp32");
  const psum = tensor(new Int32Array([5, 13]), [2], "int32");
  const o = { psumNumTokensPerExpert: psum, tokenAlignment: 8, clampValue: 3 };
  const hc = tensor(new BigInt64Array([10n, 20n, 30n, 40n]), [4], "int64");
  const hc2 = tensor(new BigInt64Array([10n, 20n, 30n, 40n]), [4], "int64");
  const out = tensor(new Float32Array(T * H).fill(7), [T, H], "fp32");
  const out2 = tensor(new Float32Array(T * H).fill(7), [T, H], "fp32");
  swigluForward(x, { fmt: "fp32", ...o, clampedCount: hc, out });
  swigluForward(x, { fmt: "fp32", ...o, clampedCount: hc2, out: out2, backend: "cuda" });
  assertBytesEqual(storageBytes(out2), storageBytes(out), "staged out");
  assertBytesEqual(storageBytes(hc2), storageBytes(hc), "staged counts");
});

gpuTest("a device output with a row stride, an unaligned device x and a stream: same bytes as the CPU", async () => {
  const rand = rng(SEED + 5);
  const T = 33, H = 192;
  const x = randomX(rand, T, 2 * H, "bf16");
  // an x view one element into its storage: not 16-byte aligned, so the element-wise fallback runs
  const xv = uploadView(offAlignment(x));
  const wide = tensor(new Float32Array(T * (H + 64)).fill(5), [T, H + 64], "fp32");
  const view = new HostTensor(wide.data, "fp32", [T, H], [H + 64, 1], 0);
  const dview = uploadView(view);
  const cpu = swigluForward(x, { fmt: "fp32", out: view });
  const stream = createStream(0);
  swigluForward(xv, { fmt: "fp32", out: dview, stream });
  await stream.synchronize();
  assertBytesEqual(readAllocation(dview), storageBytes(cpu as HostTensor), "strided out");
  const [cd] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 32 });
  const [gd, gs] = swigluForwardAndPerTokenCast(xv, { fmt: "e4m3", numPerChannels: 32 });
  assertBytesEqual(readAllocation(gd as DeviceTensor), storageBytes(cd as HostTensor), "unaligned x cast data");
  dispose(xv, dview, gd, gs);
  stream[Symbol.dispose]();
});

gpuTest("swigluBackwardAndPerTokenCast with e4m3 x and bf16 dy views off their vector alignment: same bytes as the CPU", () => {
  // The staged step loads (cp.async into shared memory) fall back to element loads for such views.
  const rand = rng(SEED + 7);
  const T = 37, H = 384;
  const q = tensor(Uint8Array.from({ length: T * 2 * H }, () => Math.floor(rand() * 256)), [T, 2 * H], "e4m3");
  const qsf = tensor(Float32Array.from({ length: (T * 2 * H) / 32 }, () => Math.fround(2 ** (rand() * 8 - 4))), [T, (2 * H) / 32], "fp32");
  const dy = randomX(rand, T, H, "bf16");
  const qpad = new Uint8Array(T * 2 * H + 3);
  qpad.set(q.data as Uint8Array, 3);
  const dypad = new Uint16Array(T * H + 1);
  dypad.set(dy.data as Uint16Array, 1);
  const dq = uploadView(new HostTensor(qpad, "e4m3", [T, 2 * H], [2 * H, 1], 3));
  const ddy = uploadView(new HostTensor(dypad, "bf16", [T, H], [H, 1], 1));
  const dqsf = uploadView(qsf);
  const co = { psumNumTokensPerExpert: randomPsum(rand, T, 5, 4), tokenAlignment: 4, topkWeights: weights(rand, T), doRecompute: true };
  const dco = onDevice(co);
  for (const N of [32, 128] as const) {
    const sf = N === 32 ? qsf : tensor(Float32Array.from({ length: (T * 2 * H) / 128 }, () => Math.fround(2 ** (rand() * 8 - 4))), [T, (2 * H) / 128], "fp32");
    const dsf = N === 32 ? dqsf : uploadView(sf);
    const [cx, [cq, cs], cw, ca] = swigluBackwardAndPerTokenCast([q, sf], dy, { fmt: "e4m3", numPerChannels: N, ...co });
    const [gx, [gq, gs], gw, ga] = swigluBackwardAndPerTokenCast([dq, dsf], ddy, { fmt: "e4m3", numPerChannels: N, ...dco });
    const pairs: [unknown, unknown, string][] = [[gx, cx, "xGrad"], [gq, cq, "xGradQ"], [gs, cs, "xGradSf"], [gw, cw, "weightGrad"], [ga, ca, "actOut"]];
    for (const [gg, cc, name] of pairs) {
      assert.equal(gg === null, cc === null, `N=${N} ${name} presence`);
      if (cc) assertBytesEqual(readAllocation(gg as DeviceTensor), storageBytes(cc as HostTensor), `unaligned bwd+cast N=${N} ${name}`);
    }
    dispose(gx, gq, gs, gw, ga);
    if (N === 128) dispose(dsf);
  }
  dispose(dq, ddy, dqsf, Object.values(dco));
});

gpuTest("on the device, the fused ops equal the composition of their parts", () => {
  const seed = SEED + 6;
  console.log(`swiglu device composition seed ${seed}`);
  const rand = rng(seed);
  const T = 77, H = 512;
  const dx = uploadView(randomX(rand, T, 2 * H, "bf16"));
  const dw = uploadView(weights(rand, T));
  const o = { topkWeights: dw, routedScalingFactor: 0.75, clampValue: 5 };
  for (const N of [32, 128] as const) {
    for (const sfo of [{}, { roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true }]) {
      const [fd, fs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: N, ...sfo, ...o });
      const v = swigluForward(dx, { fmt: "fp32", ...o });
      const [pd, ps] = perTokenCast(v, { fmt: "e4m3", numPerChannels: N, ...sfo });
      assertBytesEqual(readAllocation(fd as DeviceTensor), readAllocation(pd as DeviceTensor), `fwd N=${N} data`);
      assertBytesEqual(readAllocation(fs as DeviceTensor), readAllocation(ps as DeviceTensor), `fwd N=${N} sf`);
      dispose(fd, fs, v, pd, ps);
    }
  }
  // backward: castBack(x) → swigluBackward(fp32) → perTokenCast over the 2H columns
  for (const N of [32, 128] as const) {
    const q = uploadView(tensor(Uint8Array.from({ length: T * 2 * H }, () => Math.floor(rand() * 256)), [T, 2 * H], "e4m3"));
    const qsf = uploadView(tensor(Float32Array.from({ length: (T * 2 * H) / N }, () => Math.fround(2 ** (rand() * 6 - 3))), [T, (2 * H) / N], "fp32"));
    const dy = uploadView(randomX(rand, T, H, "fp32"));
    const [gx, [gq, gs], gw, ga] = swigluBackwardAndPerTokenCast([q, qsf], dy, { fmt: "e4m3", numPerChannels: N, roundSf: true, doRecompute: true, ...o });
    const xf = castBack([q, qsf], { fmt: "fp32", xBlockSize: [1, N] });
    const [px, pw, pa] = swigluBackward(xf, dy, { fmt: "fp32", doRecompute: true, ...o });
    const [bx] = swigluBackward(xf, dy, { fmt: "bf16", ...o });
    const [pq, ps] = perTokenCast(px, { fmt: "e4m3", numPerChannels: N, roundSf: true });
    assertBytesEqual(readAllocation(gx as DeviceTensor), readAllocation(bx as DeviceTensor), `bwd N=${N} xGrad`);
    assertBytesEqual(readAllocation(gq as DeviceTensor), readAllocation(pq as DeviceTensor), `bwd N=${N} xGradQ`);
    assertBytesEqual(readAllocation(gs as DeviceTensor), readAllocation(ps as DeviceTensor), `bwd N=${N} xGradSf`);
    assertBytesEqual(readAllocation(gw as DeviceTensor), readAllocation(pw as DeviceTensor), `bwd N=${N} weightGrad`);
    const [ba] = swigluBackward(xf, dy, { fmt: "bf16", doRecompute: true, ...o }).slice(2);
    assertBytesEqual(readAllocation(ga as DeviceTensor), readAllocation(ba as DeviceTensor), `bwd N=${N} actOut`);
    dispose(q, qsf, dy, gx, gq, gs, gw, ga, xf, px, pw, pa, bx, pq, ps, ba);
  }
  dispose(dx, dw);
});

// ---- the aligned-only kernel forms (`_a`, `_an`, `_anl`; docs/perf-notes/perf9-swiglu.md, perf10-swc.md) -----------

gpuTest("the aligned-only forms (_a, _an, _anl) are the default where the views allow them, main's kernels take x off alignment: the form and the bytes over the option matrix", () => {
  const seed = SEED + 8;
  console.log(`swiglu aligned forms seed ${seed}`);
  const rand = rng(seed);
  const OPTS_A: Opts[] = [...OPTS, { psum: true, weights: true }];
  for (const aligned of [true, false]) {
    for (const [T, H] of SHAPES) {
      for (const o of OPTS_A) {
        const A = [1, 4, 16][Math.floor(rand() * 3)];
        const x = randomX(rand, T, 2 * H, "bf16");
        const co = common(rand, T, o, A);
        const real = swigluRealRows("t", T, co.psumNumTokensPerExpert ?? null, A);
        const dx = uploadView(aligned ? x : offAlignment(x));
        const dco = onDevice(co);
        const withClamp = o.clamp === true;
        const place = aligned ? "aligned" : "x off alignment";
        {
          const label = `${place} fwd bf16→bf16 T=${T} H=${H} ${JSON.stringify(o)} A=${A}`;
          const hc = withClamp ? tensor(new BigInt64Array([1n, 2n, 3n, 4n]), [4], "int64") : undefined;
          const dc = hc ? uploadView(hc) : undefined;
          const cpu = swigluForward(x, { fmt: "bf16", ...co, clampedCount: hc }) as HostTensor;
          const gpu = swigluForward(dx, { fmt: "bf16", ...dco, clampedCount: dc }) as DeviceTensor;
          const l = launchOf("swigluForward", "tk_swiglu_forward__bf16_bf16", dx, dco, { out: gpu, counts: dc ?? null });
          assert.equal(swigluFormSuffix(l), !aligned ? "" : withClamp ? "_a" : "_an", `${label}: form`);
          sameRows(readAllocation(gpu), storageBytes(cpu), real, H * 2, label);
          if (hc && dc) assertBytesEqual(readAllocation(dc), storageBytes(hc), `${label} counts`);
          dispose(gpu, dc);
        }
        if (H % 128 === 0) {
          for (const sfo of [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }]) {
            const label = `${place} fwd+cast N=128 ${JSON.stringify(sfo)} T=${T} H=${H} ${JSON.stringify(o)} A=${A}`;
            const [cd, cs] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, ...sfo, ...co });
            const [gd, gs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, ...sfo, ...dco });
            const l = launchOf("swigluForwardAndPerTokenCast", "tk_swiglu_forward__bf16_e4m3_g128", dx, dco, { data: gd as DeviceTensor });
            // no `_a` form here: with a clamp, main's kernel; without one the lean cast form `_anl` (perf10-swc)
            assert.equal(swigluFormSuffix(l), aligned && !withClamp ? "_anl" : "", `${label}: form`);
            sameRows(readAllocation(gd as DeviceTensor), storageBytes(cd as HostTensor), real, H, `${label} data`);
            sameSfRows(readAllocation(gs as DeviceTensor), cs as HostTensor, real, label);
            if (!o.psum) assertBytesEqual(readAllocation(gs as DeviceTensor), storageBytes(cs as HostTensor), `${label} sf allocation`);
            dispose(gd, gs);
          }
        }
        for (const rec of [false, true]) {
          const label = `${place} bwd bf16→bf16 T=${T} H=${H} ${JSON.stringify(o)} rec=${rec} A=${A}`;
          const dy = randomX(rand, T, H, "bf16");
          const ddy = uploadView(dy);
          const c = swigluBackward(x, dy, { fmt: "bf16", ...co, doRecompute: rec });
          const g = swigluBackward(dx, ddy, { fmt: "bf16", ...dco, doRecompute: rec });
          const l = launchOf("swigluBackward", "tk_swiglu_backward__bf16_bf16", dx, dco, { dy: ddy, out: g[0] as DeviceTensor, actOut: g[2] as DeviceTensor | null });
          // `_a` with and without a clamp (no `_an` form)
          assert.equal(swigluFormSuffix(l), aligned ? "_a" : "", `${label}: form`);
          for (let i = 0; i < 3; i++) {
            assert.equal(g[i] === null, c[i] === null, `${label} output ${i} presence`);
            if (c[i]) assertBytesEqual(readAllocation(g[i] as DeviceTensor), storageBytes(c[i] as HostTensor), `${label} output ${i}`);
          }
          dispose(g, ddy);
        }
        dispose(dx, Object.values(dco));
      }
    }
  }
});

/** The launch record swigluFormSuffix sees for a call on device inputs (the fields it reads). */
function launchOf(
  op: SwigluLaunch["op"],
  symbol: string,
  x: Tensor,
  dco: { clampValue?: number },
  extra: Partial<SwigluLaunch>,
): SwigluLaunch {
  return { op, symbol, tokens: 0, hidden: 0, x, weights: null, psum: null, tokenAlignment: 1, scale: null, clamp: dco.clampValue ?? null, ...extra };
}

gpuTest("the aligned-only forms at full size, and main's kernels for views off alignment", () => {
  const rand = rng(SEED + 9);
  const T2 = 4001, H2 = 7168;
  const x2 = randomX(rand, T2, 2 * H2, "bf16");
  const dy2 = randomX(rand, T2, H2, "bf16");
  const co2 = { ...common(rand, T2, { psum: true, weights: true }, 128) };
  const real2 = swigluRealRows("t", T2, co2.psumNumTokensPerExpert ?? null, 128);
  const dx2 = uploadView(x2), ddy2 = uploadView(dy2), dco2 = onDevice(co2);
  {
    // full size (the roofline shape), psum layout with padding rows, weights, no clamp: forward `_an`,
    // forward+cast the row form `_anrt` (the default at H = 7168, perf11-swr, perf17-swl) and `_anl` with
    // swigluLaunchTuning.rowForm off (perf10-swc), backward `_a`
    const label = "full size";
    const fwd = swigluForward(x2, { fmt: "bf16", ...co2 }) as HostTensor;
    const gpu = swigluForward(dx2, { fmt: "bf16", ...dco2 }) as DeviceTensor;
    sameRows(readAllocation(gpu), storageBytes(fwd), real2, H2 * 2, `${label} forward`);
    dispose(gpu);
    const cast = swigluForwardAndPerTokenCast(x2, { fmt: "e4m3", numPerChannels: 128, ...co2 });
    for (const rowForm of [true, false]) {
      const form = rowForm ? "_anrt" : "_anl";
      const saved = swigluLaunchTuning.rowForm;
      swigluLaunchTuning.rowForm = rowForm;
      try {
        const [gd, gs] = swigluForwardAndPerTokenCast(dx2, { fmt: "e4m3", numPerChannels: 128, ...dco2 });
        const want = kernelFunction("test", { kind: "cuda", index: 0 }, `tk_swiglu_forward__bf16_e4m3_g128${form}`);
        assert.equal(swigluLastLaunch().fn, want, `${label} forward+cast: ${form} ran`);
        sameRows(readAllocation(gd as DeviceTensor), storageBytes(cast[0] as HostTensor), real2, H2, `${label} forward+cast ${form} data`);
        sameSfRows(readAllocation(gs as DeviceTensor), cast[1] as HostTensor, real2, `${label} forward+cast ${form}`);
        dispose(gd, gs);
      } finally {
        swigluLaunchTuning.rowForm = saved;
      }
    }
    const bwd = swigluBackward(x2, dy2, { fmt: "bf16", ...co2 });
    const g = swigluBackward(dx2, ddy2, { fmt: "bf16", ...dco2 });
    for (let i = 0; i < 2; i++) assertBytesEqual(readAllocation(g[i] as DeviceTensor), storageBytes(bwd[i] as HostTensor), `${label} backward output ${i}`);
    dispose(g);
  }
  {
    // views off their 16-byte alignment: main's kernel (its element-wide fallback) runs, same bytes. x one element
    // in; a forward out with a row stride of 8 bytes mod 16 (with x unaligned, then with x aligned); dy one element in
    const label = "off alignment";
    const Tu = 33, Hu = 192;
    const xu = randomX(rand, Tu, 2 * Hu, "bf16");
    const dxu = uploadView(offAlignment(xu));
    const wide = new Uint16Array(Tu * (Hu + 4)).fill(0x3f80);
    const view = new HostTensor(wide.slice(), "bf16", [Tu, Hu], [Hu + 4, 1], 0);
    const cpuU = swigluForward(xu, { fmt: "bf16", out: view });
    const dxa = uploadView(xu);
    for (const [dxv, what] of [[dxu, "unaligned x"], [dxa, "aligned x"]] as const) {
      const dview = uploadView(new HostTensor(wide, "bf16", [Tu, Hu], [Hu + 4, 1], 0));
      assert.equal(swigluFormSuffix(launchOf("swigluForward", "tk_swiglu_forward__bf16_bf16", dxv, {}, { out: dview })), "", `${what}, strided out: main's kernel`);
      swigluForward(dxv, { fmt: "bf16", out: dview });
      assertBytesEqual(readAllocation(dview), storageBytes(cpuU as HostTensor), `${label}: ${what}, strided out`);
      dispose(dview);
    }
    const dyu = randomX(rand, Tu, Hu, "bf16");
    const ddyu = uploadView(offAlignment(dyu));
    const cu = swigluBackward(xu, dyu, { fmt: "bf16", doRecompute: true });
    const gu = swigluBackward(dxa, ddyu, { fmt: "bf16", doRecompute: true });
    assert.equal(swigluFormSuffix(launchOf("swigluBackward", "tk_swiglu_backward__bf16_bf16", dxa, {}, { dy: ddyu, out: gu[0] as DeviceTensor })), "", "unaligned dy: main's kernel");
    for (let i = 0; i < 3; i++) if (cu[i]) assertBytesEqual(readAllocation(gu[i] as DeviceTensor), storageBytes(cu[i] as HostTensor), `${label}: unaligned dy output ${i}`);
    dispose(dxu, dxa, ddyu, gu);
  }
  dispose(dx2, ddy2, Object.values(dco2));
});

// ---- the lean cast form `_anl` (docs/perf-notes/perf10-swc.md) ----------------------------------------------------

/** A bf16 [T, 2H] input whose 128-column groups of the forward value are the cast's edge cases, by group index. */
function edgeGroupsX(rand: () => number, T: number, H: number): HostTensor {
  const b = new Uint16Array(T * 2 * H);
  const NAN = 0x7fc0, INF = 0x7f80, TINY = 0x0080, HUGE = 0x7f00; // bf16: NaN, +Inf, 2^-126, 2^127
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      const kind = (t * (H / 128) + (j >> 7)) % 9;
      const r = () => encodeBf16(Math.fround((rand() * 2 - 1) * 8));
      let g = r(), u = r();
      if (kind === 1) {
        g = NAN; // every value of the group NaN: amax 0, the clamp's scale, codes of NaN
      } else if (kind === 2) {
        g = 0x0000; // ±0 only
        u = rand() < 0.5 ? 0x8000 : 0x0000;
      } else if (kind === 3 && j % 128 === 37) {
        u = INF; // one +Inf value: amax +Inf (the divisions' slow paths)
      } else if (kind === 4) {
        g = 0x3f80; // subnormal products (silu(1) · ±2^-126)
        u = TINY ^ (rand() < 0.5 ? 0x8000 : 0);
      } else if (kind === 5) {
        g = HUGE; // overflow to +Inf in silu(g) · u (and a gate outside the silu table's window)
        u = HUGE;
      } else if (kind === 6 && j % 128 === 5) {
        g = NAN; // one NaN among finite values: ignored by the amax
      } else if (kind === 7) {
        u = rand() < 0.5 ? 0x8000 | (u & 0x7fff) : u & 0x7fff; // mixed signs
      } else if (kind === 8 && j % 128 === 127) {
        u = encodeBf16(-1000); // the amax at the group's last column, from a negative value
      }
      b[t * 2 * H + j] = g;
      b[t * 2 * H + H + j] = u;
    }
  }
  return tensor(b, [T, 2 * H], "bf16");
}

gpuTest("the lean cast form (_anl) equals the CPU reference: option matrix, sf layouts, edge groups", () => {
  const seed = SEED + 10;
  console.log(`swiglu lean cast form seed ${seed}`);
  const rand = rng(seed);
  const SFO = [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }];
  const OPTS_L: Opts[] = [{}, { psum: true }, { weights: true, scale: true }, { psum: true, weights: true }, { psum: true, weights: true, scale: true }];
  for (const [T, H, edge] of [[0, 128, false], [1, 128, false], [37, 384, false], [133, 1024, false], [45, 1152, true], [260, 256, true]] as const) {
    for (const o of OPTS_L) {
      const A = [1, 4, 16, 128][Math.floor(rand() * 4)];
      const x = edge ? edgeGroupsX(rand, T, H) : randomX(rand, T, 2 * H, "bf16");
      const co = common(rand, T, o, A);
      const real = swigluRealRows("t", T, co.psumNumTokensPerExpert ?? null, A);
      const dx = uploadView(x);
      const dco = onDevice(co);
      for (const sfo of SFO) {
        const [cd, cs] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 128, ...sfo, ...co });
        const label = `lean ${JSON.stringify(sfo)} T=${T} H=${H} ${JSON.stringify(o)} A=${A} edge=${edge}`;
        const [gd, gs] = swigluForwardAndPerTokenCast(dx, { fmt: "e4m3", numPerChannels: 128, ...sfo, ...dco });
        const l = launchOf("swigluForwardAndPerTokenCast", "tk_swiglu_forward__bf16_e4m3_g128", dx, dco, { data: gd as DeviceTensor });
        assert.equal(swigluFormSuffix(l), "_anl", `${label}: form`);
        const bd = readAllocation(gd as DeviceTensor), bs = readAllocation(gs as DeviceTensor);
        sameRows(bd, storageBytes(cd as HostTensor), real, H, `${label} data`);
        sameSfRows(bs, cs as HostTensor, real, label);
        if (!o.psum) {
          assertBytesEqual(bd, storageBytes(cd as HostTensor), `${label} data allocation`);
          assertBytesEqual(bs, storageBytes(cs as HostTensor), `${label} sf allocation`);
        }
        dispose(gd, gs);
      }
      dispose(dx, Object.values(dco));
    }
  }
});

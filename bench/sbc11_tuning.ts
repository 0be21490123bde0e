/**
 * swigluBackwardAndPerTokenCast by main's kernel and by the 16-lane team form (docs/perf-notes/perf11-sbc.md; since
 * round 17 with whole 16-byte output stores, docs/perf-notes/perf17-sbc.md; since round 28 `_t16x`,
 * docs/perf-notes/perf28-sbc.md), in one process: the roofline's case
 * (bench/cases_swiglu.ts: e4m3 x + fp32 scales, bf16 dy → bf16 xGrad + e4m3 groups of 128 + weightGrad, 64 experts,
 * alignment 128, row weights), 8192 and 16384 tokens × 7168. Settings:
 * - "main":    `swigluLaunchTuning.backwardCastForm = "main"`: `tk_swiglu_backward__e4m3_bf16_g128`;
 * - "team16x": `"team16x"` (the default since round 28): `tk_swiglu_backward__e4m3_bf16_g128_t16x`.
 * (Round 28's A/B of `_t16x` against round 17's `_t16w`, bench/sbc28_tuning.ts, left with `_t16w` in trim32.)
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy of 2 GiB, the median of 7
 * repetitions (LeadTimer); the settings interleaved over 5 rounds, the median of the rounds printed. % is of the same
 * run's cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes bench/cases_swiglu.ts counts for this op (what must
 * be read of the real rows plus every output row written), as bench/roofline.ts counts it. The outputs of one call
 * per setting (xGrad, e4m3 data, sf, weightGrad) are compared with main's byte for byte on random inputs (codes of
 * every pattern, scales 2^-4 … 2^4): a difference prints FAIL and the script exits 1.
 *
 * `deno run -A --no-check bench/sbc11_tuning.ts` (or `bun bench/sbc11_tuning.ts`).
 * @module
 */
import process from "node:process";
import { type DeviceTensor, devices, swigluBackwardAndPerTokenCast, type Tensor, tensor, toDevice, toHost } from "../mod.ts";
import { deviceRuntime, type HostTensor } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { psumFor } from "./cases_swiglu.ts";
import { copyRateGBs, DEV, LeadTimer } from "./common.ts";

if (devices().length === 0) {
  console.log("sbc11_tuning needs a CUDA device; none found");
  process.exit(0);
}
const H = 7168;
const E = 64;
const A = 128;
const ROUNDS = 5;
const SETTINGS = ["main", "team16x"] as const;

const rt = deviceRuntime("bench");
const stream = rt.defaultStream(DEV);
const timer = new LeadTimer(); // 20 calls after a 2-GiB lead copy, median of 7
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const saved = swigluLaunchTuning.backwardCastForm;
let failures = 0;

const free = (...ts: unknown[]) => {
  for (const t of ts.flat(2)) if (t && typeof (t as DeviceTensor).dispose === "function") (t as DeviceTensor).dispose();
};
const bytesOf = async (t: Tensor | null) => {
  if (t === null) return new Uint8Array(0);
  const d = ((await toHost(t)) as HostTensor).data;
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
};

try {
  for (const T of [8192, 16384]) {
    const { psum, real } = psumFor(T);
    // the roofline's inputs (bench/cases_swiglu.ts) for the timing
    const q = toDevice(tensor(new Uint8Array(T * 2 * H).map((_, i) => 0x30 + (i % 13)), [T, 2 * H], "e4m3"));
    const qsf = toDevice(tensor(new Float32Array((T * 2 * H) / 128).fill(0.5), [T, (2 * H) / 128], "fp32"));
    const dy = toDevice(tensor(new Uint16Array(T * H).map((_, i) => 0x3e00 + (i % 89)), [T, H], "bf16"));
    const w = toDevice(tensor(new Float32Array(T).fill(0.25), [T], "fp32"));
    const ps = toDevice(tensor(psum, [E], "int32"));
    const opts = { fmt: "e4m3", numPerChannels: 128, psumNumTokensPerExpert: ps, tokenAlignment: A, topkWeights: w } as const;
    const us = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of SETTINGS) {
        swigluLaunchTuning.backwardCastForm = s;
        const t = timer.timeUs(stream, () => free(swigluBackwardAndPerTokenCast([q, qsf], dy, opts)));
        us.set(s, [...(us.get(s) ?? []), t]);
      }
    }
    swigluLaunchTuning.backwardCastForm = saved;
    const bytes = real * (2 * H + (2 * H / 128) * 4 + H * 2 + 4) + T * (2 * H * 2 + 2 * H + (2 * H / 128) * 4 + 4);
    const med = (name: string) => us.get(name)!.sort((a, b) => a - b)[ROUNDS >> 1];
    const base = med("main");
    for (const s of SETTINGS) {
      const v = med(s);
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s === "main" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`swigluBackwardAndPerTokenCast ${T}x${H} e4m3 x, bf16 dy, g128, ${E} experts\t${s.padEnd(7)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    // bytes: random codes (every pattern) and scales, one call per setting, every output against main's
    let seed = T + 1;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
    const rq = toDevice(tensor(new Uint8Array(T * 2 * H).map(() => Math.floor(rand() * 256)), [T, 2 * H], "e4m3"));
    const rs = toDevice(tensor(new Float32Array((T * 2 * H) / 128).map(() => Math.fround(2 ** (rand() * 8 - 4))), [T, (2 * H) / 128], "fp32"));
    const outs: Uint8Array[][] = [];
    for (const s of SETTINGS) {
      swigluLaunchTuning.backwardCastForm = s;
      const r = swigluBackwardAndPerTokenCast([rq, rs], dy, opts);
      swigluLaunchTuning.backwardCastForm = saved;
      outs.push([await bytesOf(r[0]), await bytesOf(r[1][0]), await bytesOf(r[1][1]), await bytesOf(r[2])]);
      free(r);
    }
    const names = ["xGrad", "xGradQ", "xGradSf", "weightGrad"];
    for (let i = 1; i < SETTINGS.length; i++) {
      for (let k = 0; k < names.length; k++) {
        const ref = outs[0][k], got = outs[i][k];
        let bad = -1;
        for (let j = 0; j < ref.length && bad < 0; j++) if (ref[j] !== got[j]) bad = j;
        if (bad >= 0 || got.length !== ref.length) {
          failures++;
          console.log(`FAIL ${T}x${H} ${SETTINGS[i]}: ${names[k]} differs from main's at byte ${bad} (${got[bad]} vs ${ref[bad]})`);
        }
      }
    }
    if (failures === 0) console.log(`${T}x${H}: team16x's outputs equal main's (xGrad, e4m3 data, sf, weightGrad)`);
    free(q, qsf, dy, w, ps, rq, rs);
  }
} finally {
  swigluLaunchTuning.backwardCastForm = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
if (failures > 0) process.exit(1);

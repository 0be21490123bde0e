/**
 * swigluBackwardAndPerTokenCast by the 16-lane team form `_t16` and by round 17's `_t16w` (the default since this
 * A/B: the same form with whole 16-byte output stores through a swizzled shared-memory park; docs/perf-notes/perf17-sbc.md), interleaved in
 * one process on the roofline's case (bench/cases_swiglu.ts: e4m3 x + fp32 scales, bf16 dy → bf16 xGrad + e4m3 groups
 * of 128 + weightGrad, 64 experts, alignment 128, row weights), 8192 and 16384 tokens × 7168. Settings:
 * - "team16":  `swigluLaunchTuning.backwardCastForm = "team16"` `tk_swiglu_backward__e4m3_bf16_g128_t16`;
 * - "team16w": `"team16w"`: `tk_swiglu_backward__e4m3_bf16_g128_t16w`.
 *
 * Each figure: LeadTimer (20 calls after a 2-GiB lead copy, median of 7), settings interleaved over 7 rounds with
 * the order rotated (interleavedMedians), the median printed; % is of the same run's cuMemcpyDtoD for the bytes
 * bench/cases_swiglu.ts counts for this op. Then one call per setting on random inputs (codes of every pattern,
 * scales 2^-4 … 2^4): every output (xGrad, e4m3 data, sf, weightGrad) of team16w against team16's byte for byte; a
 * difference prints FAIL and the script exits 1. Without a GPU it prints a skip line and exits 0.
 *
 * `deno run -A --no-check bench/sbc17_tuning.ts` (or `bun bench/sbc17_tuning.ts`).
 * @module
 */
import { type DeviceTensor, swigluBackwardAndPerTokenCast, type Tensor, tensor, toDevice, toHost } from "../mod.ts";
import type { HostTensor } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { psumFor } from "./cases_swiglu.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians } from "./common.ts";

const { stream, timer, copy } = abStart("sbc17_tuning");
const H = 7168, E = 64, A = 128, ROUNDS = 7;
const SETTINGS = [{ name: "team16", form: "team16" }, { name: "team16w", form: "team16w" }] as const;
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
    const q = toDevice(tensor(new Uint8Array(T * 2 * H).map((_, i) => 0x30 + (i % 13)), [T, 2 * H], "e4m3"));
    const qsf = toDevice(tensor(new Float32Array((T * 2 * H) / 128).fill(0.5), [T, (2 * H) / 128], "fp32"));
    const dy = toDevice(tensor(new Uint16Array(T * H).map((_, i) => 0x3e00 + (i % 89)), [T, H], "bf16"));
    const w = toDevice(tensor(new Float32Array(T).fill(0.25), [T], "fp32"));
    const ps = toDevice(tensor(psum, [E], "int32"));
    const opts = { fmt: "e4m3", numPerChannels: 128, psumNumTokensPerExpert: ps, tokenAlignment: A, topkWeights: w } as const;
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => {
      swigluLaunchTuning.backwardCastForm = s.form;
    }, () => free(swigluBackwardAndPerTokenCast([q, qsf], dy, opts)));
    swigluLaunchTuning.backwardCastForm = saved;
    const bytes = real * (2 * H + (2 * H / 128) * 4 + H * 2 + 4) + T * (2 * H * 2 + 2 * H + (2 * H / 128) * 4 + 4);
    const base = med.get("team16")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.name === "team16" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`swigluBackwardAndPerTokenCast ${T}x${H} e4m3 x, bf16 dy, g128, ${E} experts\t${s.name.padEnd(7)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    // bytes: random codes and scales, one call per setting, every output against team16's
    let seed = T + 17;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
    const rq = toDevice(tensor(new Uint8Array(T * 2 * H).map(() => Math.floor(rand() * 256)), [T, 2 * H], "e4m3"));
    const rs = toDevice(tensor(new Float32Array((T * 2 * H) / 128).map(() => Math.fround(2 ** (rand() * 8 - 4))), [T, (2 * H) / 128], "fp32"));
    const outs: Uint8Array[][] = [];
    for (const s of SETTINGS) {
      swigluLaunchTuning.backwardCastForm = s.form;
      const r = swigluBackwardAndPerTokenCast([rq, rs], dy, opts);
      swigluLaunchTuning.backwardCastForm = saved;
      outs.push([await bytesOf(r[0]), await bytesOf(r[1][0]), await bytesOf(r[1][1]), await bytesOf(r[2])]);
      free(r);
    }
    const names = ["xGrad", "xGradQ", "xGradSf", "weightGrad"];
    for (let k = 0; k < names.length; k++) {
      const bad = firstDifference(outs[0][k], outs[1][k]);
      if (bad >= 0) {
        failures++;
        console.log(`FAIL ${T}x${H} team16w: ${names[k]} differs from team16's at byte ${bad} (${outs[1][k][bad]} vs ${outs[0][k][bad]})`);
      }
    }
    free(q, qsf, dy, w, ps, rq, rs);
  }
} finally {
  swigluLaunchTuning.backwardCastForm = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "sbc17: team16w's outputs equal team16's (xGrad, e4m3 data, sf, weightGrad) at 8192 and 16384 x 7168");

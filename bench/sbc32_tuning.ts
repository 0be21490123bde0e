/**
 * swigluBackwardAndPerTokenCast by main's form, round 28's `_t16x` (the default since its A/B), against round 32's
 * `_t16y` (kernels-src/cuda/swiglu/swiglu_bwd_t16y.cu, docs/perf-notes/perf32-sbc.md: `_t16x` for binary32 sf entries
 * with the slot compute run for every team, the amax's |v| as an operand modifier, the reciprocals' range verdict for
 * b ≥ 1, one copy of the slot and of expf_slow; 789 → 723 warp instructions a step on sm_90a), in one process: the roofline's case (bench/cases_swiglu.ts: e4m3 x + fp32 scales, bf16 dy → bf16 xGrad + e4m3 groups of
 * 128 + weightGrad, 64 experts, alignment 128, row weights) at 8192 and 16384 tokens × 7168. Settings
 * (swigluLaunchTuning.backwardCastForm, restored at the end): "team16x" and "team16y".
 *
 * Each figure: {@link interleavedMedians} over 5 rounds (20 calls after a lead copy, median of 7, per round; rotated
 * order). % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes bench/cases_swiglu.ts counts
 * for this op. Before the timing, one call per setting on the roofline's inputs and one on random inputs (codes of every
 * pattern, NaN included; scales 2^-4 … 2^4 and rows of 2^20; dy with NaN / ±Inf): the launched kernel is checked and
 * every output (xGrad, e4m3 data, sf, weightGrad) is compared byte for byte with team16x's; a difference prints FAIL
 * and the script exits 1. Without a CUDA device: a skip line, exit 0.
 *
 * `deno run -A --no-check bench/sbc32_tuning.ts` (or `bun bench/sbc32_tuning.ts`).
 * @module
 */
import { type DeviceTensor, swigluBackwardAndPerTokenCast, type Tensor, tensor, toDevice } from "../mod.ts";
import { kernelFunction, syncAndCheck } from "../ffi/cuda.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { psumFor } from "./cases_swiglu.ts";
import { abStart, abVerdict, DEV, FirstOutput, hostBytes, interleavedMedians } from "./common.ts";

const { stream, timer, copy } = abStart("sbc32_tuning");
const H = 7168;
const E = 64;
const A = 128;
const ROUNDS = 5;
type Setting = { name: "team16x" | "team16y"; symbol: string };
const SETTINGS: readonly Setting[] = [
  { name: "team16x", symbol: "tk_swiglu_backward__e4m3_bf16_g128_t16x" },
  { name: "team16y", symbol: "tk_swiglu_backward__e4m3_bf16_g128_t16y" },
];
const OUTPUTS = ["xGrad", "xGradQ", "xGradSf", "weightGrad"] as const;
const saved = swigluLaunchTuning.backwardCastForm;
let failures = 0;

const free = (...ts: unknown[]) => {
  for (const t of ts.flat(2)) if (t && typeof (t as DeviceTensor).dispose === "function") (t as DeviceTensor).dispose();
};
const apply = (s: Setting) => void (swigluLaunchTuning.backwardCastForm = s.name);

/** One call per setting on `x`, `xSf`, `dy`: the kernel checked, every output against team16x's. */
async function compare(label: string, x: Tensor, xSf: Tensor, dy: Tensor, opts: Record<string, unknown>): Promise<void> {
  const first = OUTPUTS.map(() => new FirstOutput("team16x"));
  for (const s of SETTINGS) {
    apply(s);
    const r = swigluBackwardAndPerTokenCast([x, xSf], dy, opts as never);
    if (swigluLastLaunch().fn !== kernelFunction("bench", DEV, s.symbol)) {
      failures++;
      console.log(`FAIL ${label} ${s.name}: not ${s.symbol}`);
    }
    const outs = [r[0], r[1][0], r[1][1], r[2]];
    for (let k = 0; k < OUTPUTS.length; k++) {
      const t = outs[k];
      failures += first[k].check(t ? await hostBytes(t as DeviceTensor) : new Uint8Array(0), `${label} ${s.name} ${OUTPUTS[k]}`);
    }
    free(r);
  }
}

try {
  for (const T of [8192, 16384]) {
    const { psum, real } = psumFor(T);
    // the roofline's inputs (bench/cases_swiglu.ts)
    const q = toDevice(tensor(new Uint8Array(T * 2 * H).map((_, i) => 0x30 + (i % 13)), [T, 2 * H], "e4m3"));
    const qsf = toDevice(tensor(new Float32Array((T * 2 * H) / 128).fill(0.5), [T, (2 * H) / 128], "fp32"));
    const dy = toDevice(tensor(new Uint16Array(T * H).map((_, i) => 0x3e00 + (i % 89)), [T, H], "bf16"));
    const w = toDevice(tensor(new Float32Array(T).fill(0.25), [T], "fp32"));
    const ps = toDevice(tensor(psum, [E], "int32"));
    const opts = { fmt: "e4m3", numPerChannels: 128, psumNumTokensPerExpert: ps, tokenAlignment: A, topkWeights: w } as const;
    await compare(`${T}x${H} roofline inputs`, q, qsf, dy, opts);
    // random inputs: codes of every pattern, scales 2^-4 … 2^4 and rows of 2^20 (tmp = +Inf), dy with NaN / ±Inf
    let seed = T + 32;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
    const rq = toDevice(tensor(new Uint8Array(T * 2 * H).map(() => Math.floor(rand() * 256)), [T, 2 * H], "e4m3"));
    const rs = toDevice(tensor(new Float32Array((T * 2 * H) / 128).map((_, i) => Math.floor(i / 112) % 7 === 3 ? 2 ** 20 : Math.fround(2 ** (rand() * 8 - 4))), [T, (2 * H) / 128], "fp32"));
    const rdy = toDevice(tensor(new Uint16Array(T * H).map(() => {
      const r = rand();
      return r < 0.002 ? 0x7fc1 : r < 0.004 ? 0xff80 : ((r < 0.5 ? 0x8000 : 0) | (0x3780 + Math.floor(rand() * 0x1000)));
    }), [T, H], "bf16"));
    await compare(`${T}x${H} random inputs`, rq, rs, rdy, opts);
    free(rq, rs, rdy);

    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, apply, () => free(swigluBackwardAndPerTokenCast([q, qsf], dy, opts)));
    const bytes = real * (2 * H + (2 * H / 128) * 4 + H * 2 + 4) + T * (2 * H * 2 + 2 * H + (2 * H / 128) * 4 + 4);
    const base = med.get("team16x")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.name === "team16x" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`swigluBackwardAndPerTokenCast ${T}x${H} e4m3 x, bf16 dy, g128, ${E} experts\t${s.name}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    free(q, qsf, dy, w, ps);
  }
} finally {
  swigluLaunchTuning.backwardCastForm = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "sbc32_tuning: team16y's outputs equal team16x's (xGrad, e4m3 data, sf, weightGrad) at both sizes");

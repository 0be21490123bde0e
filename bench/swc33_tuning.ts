/**
 * The cast row form with the next row's loads under the current row's cast, `_anrt` (kernels-src/cuda/swiglu/swiglu_rows.cu,
 * docs/perf-notes/perf33-swc.md), against main's `_anrs`, interleaved in one process: the roofline case of
 * swigluForwardAndPerTokenCast (bench/cases_swiglu.ts: bf16 → e4m3, groups of 128, fp32 sf), 8192 and 16384 tokens ×
 * H = 7168, psum over 64 experts (alignment 128), row weights, no clamp. Settings
 * (swigluLaunchTuning.castTailPrefetch, restored at the end): "anrs" off (main's default), "anrt" on. swigluForward
 * (`_anrps`, no setting touches it) runs as a control of the run's drift.
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, rotated order over 5 rounds, the median printed).
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for the bytes bench/roofline.ts counts (real rows of x
 * and the weights read, the real rows' outputs written). Both settings' outputs (the real rows of the data and of the
 * sf) are compared byte for byte on the roofline's input and on random bf16 rows: a difference prints FAIL and exits 1.
 *
 * `deno run -A --no-check bench/swc33_tuning.ts` (or `bun bench/swc33_tuning.ts`).
 * @module
 */
import { type DeviceTensor, swigluForward, swigluForwardAndPerTokenCast } from "../mod.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians } from "./common.ts";
import { abInputs, realBytes } from "./cases_swiglu.ts";

const { stream, timer, copy } = abStart("swc33_tuning");
const H = 7168;
const A = 128;
const ROUNDS = 5;
const SETTINGS: readonly { name: string; on: boolean }[] = [
  { name: "anrs", on: false },
  { name: "anrt", on: true },
];
const OPS = ["swigluForwardAndPerTokenCast", "swigluForward"] as const;
type Op = (typeof OPS)[number];

const saved = { ...swigluLaunchTuning };
let failures = 0;

/** One call of `op` under the current tuning; its outputs (disposable; the forward writes its preallocated out). */
function call(op: Op, c: ReturnType<typeof abInputs>): DeviceTensor[] {
  const common = { psumNumTokensPerExpert: c.ps, tokenAlignment: A, topkWeights: c.w } as const;
  if (op === "swigluForward") {
    swigluForward(c.x, { fmt: "bf16", out: c.y, ...common });
    return [];
  }
  const [d, s] = swigluForwardAndPerTokenCast(c.x, { fmt: "e4m3", numPerChannels: 128, ...common });
  return [d as DeviceTensor, s as DeviceTensor];
}

/** Both settings' cast outputs (the data's real rows, the sf's real rows), compared with main's. */
async function compare(random: boolean, c: ReturnType<typeof abInputs>): Promise<void> {
  const outs: Uint8Array[][] = [];
  for (const s of SETTINGS) {
    swigluLaunchTuning.castTailPrefetch = s.on;
    const o = call("swigluForwardAndPerTokenCast", c);
    const got = await Promise.all(o.map((t) => realBytes(t, c.mask)));
    for (const t of o) t.dispose();
    outs.push(got);
  }
  Object.assign(swigluLaunchTuning, saved);
  for (let k = 0; k < outs[0].length; k++) {
    const bad = firstDifference(outs[1][k], outs[0][k]);
    if (bad >= 0) {
      failures++;
      console.log(`FAIL ${c.T}x${H} ${random ? "random" : "roofline"} input: anrt's output ${k} differs from anrs's at byte ${bad}`);
    }
  }
}

try {
  const r = abInputs(8192, true, true);
  await compare(true, r);
  for (const t of [r.x, r.w, r.ps, r.y]) t?.dispose();
  for (const T of [8192, 16384]) {
    const c = abInputs(T, false, true);
    await compare(false, c);
    for (const op of OPS) {
      const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => void (swigluLaunchTuning.castTailPrefetch = s.on), () => {
        for (const t of call(op, c)) t.dispose();
      });
      Object.assign(swigluLaunchTuning, saved);
      // bench/roofline.ts's bytes (cases_swiglu.ts, cases_more.ts)
      const bytes = c.real * (2 * H * 2 + 4) + (op === "swigluForward" ? c.real * H * 2 : c.real * (H + (H / 128) * 4));
      const base = med.get("anrs")!;
      for (const s of SETTINGS) {
        const v = med.get(s.name)!;
        const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
        const delta = s.name === "anrs" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
        console.log(`${op} ${T}x${H} 64 experts, weights\t${s.name.padEnd(6)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      }
    }
    for (const t of [c.x, c.w, c.ps, c.y]) t?.dispose();
  }
} finally {
  Object.assign(swigluLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "swc33_tuning: anrt's outputs equal anrs's");

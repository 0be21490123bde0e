/**
 * The row-prefetch form `_anrps` (kernels-src/cuda/swiglu/swiglu_rows.cu, docs/perf-notes/perf15-swf.md, perf18-swf.md;
 * round 15's `_anrp` with round 18's expert cursor, `_anrp` itself left in trim24) against
 * main's forms, interleaved in one process: the roofline cases of swigluForwardAndPerTokenCast (bench/cases_swiglu.ts:
 * bf16 → e4m3, groups of 128, fp32 sf) and swigluForward (bench/cases_more.ts: bf16 → bf16 into a preallocated out),
 * 8192 and 16384 tokens × H = 7168, psum over 64 experts (alignment 128), row weights, no clamp. Settings
 * (swigluLaunchTuning.rowPrefetch, restored at the end): "main" off (the forward's `_an`), "anrps" on (the forward's
 * `_anrps`). The cast's `_anrp` lost (fifteenth run) and is not built: its rows run `_anrs` in both settings, a
 * control of the run's drift.
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, rotated order over 5 rounds, the median printed).
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for the bytes bench/roofline.ts counts (real rows of x
 * and the weights read, the real rows' outputs written). Both settings' outputs (real rows: the forward leaves padding
 * rows unwritten) are compared byte for byte on the roofline's input and on random bf16 rows: a difference prints
 * FAIL and exits 1.
 *
 * `deno run -A --no-check bench/swf15_tuning.ts` (or `bun bench/swf15_tuning.ts`).
 * @module
 */
import { type DeviceTensor, swigluForward, swigluForwardAndPerTokenCast } from "../mod.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians } from "./common.ts";
import { abInputs, realBytes } from "./cases_swiglu.ts";

const { stream, timer, copy } = abStart("swf15_tuning");
const H = 7168;
const A = 128;
const ROUNDS = 5;
const SETTINGS: readonly { name: string; on: boolean }[] = [
  { name: "main", on: false },
  { name: "anrps", on: true },
];
const OPS = ["swigluForwardAndPerTokenCast", "swigluForward"] as const;
type Op = (typeof OPS)[number];

const saved = { ...swigluLaunchTuning };
let failures = 0;

/** One call of `op` under the current tuning; its outputs (disposable unless `keep`: the forward's preallocated out). */
function call(op: Op, c: ReturnType<typeof abInputs>): DeviceTensor[] {
  const common = { psumNumTokensPerExpert: c.ps, tokenAlignment: A, topkWeights: c.w } as const;
  if (op === "swigluForward") {
    swigluForward(c.x, { fmt: "bf16", out: c.y, ...common });
    return [];
  }
  const [d, s] = swigluForwardAndPerTokenCast(c.x, { fmt: "e4m3", numPerChannels: 128, ...common });
  return [d as DeviceTensor, s as DeviceTensor];
}

/** Both settings' outputs of one call of `op`, compared with main's (real rows). */
async function compare(op: Op, random: boolean, c: ReturnType<typeof abInputs>): Promise<void> {
  const outs: Uint8Array[][] = [];
  for (const s of SETTINGS) {
    swigluLaunchTuning.rowPrefetch = s.on;
    const o = call(op, c);
    const got = op === "swigluForward" ? [await realBytes(c.y!, c.mask)] : await Promise.all(o.map((t) => realBytes(t, c.mask)));
    for (const t of o) t.dispose();
    outs.push(got);
  }
  Object.assign(swigluLaunchTuning, saved);
  for (let k = 0; k < outs[0].length; k++) {
    const bad = firstDifference(outs[1][k], outs[0][k]);
    if (bad >= 0) {
      failures++;
      console.log(`FAIL ${op} ${c.T}x${H} ${random ? "random" : "roofline"} input: anrps's output ${k} differs from main's at byte ${bad}`);
    }
  }
}

try {
  const r = abInputs(8192, true, true);
  for (const op of OPS) await compare(op, true, r);
  for (const t of [r.x, r.w, r.ps, r.y]) t?.dispose();
  for (const T of [8192, 16384]) {
    const c = abInputs(T, false, true);
    for (const op of OPS) {
      await compare(op, false, c);
      const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => void (swigluLaunchTuning.rowPrefetch = s.on), () => {
        for (const t of call(op, c)) t.dispose();
      });
      Object.assign(swigluLaunchTuning, saved);
      // bench/roofline.ts's bytes (cases_swiglu.ts, cases_more.ts)
      const bytes = c.real * (2 * H * 2 + 4) + (op === "swigluForward" ? c.real * H * 2 : c.real * (H + (H / 128) * 4));
      const base = med.get("main")!;
      for (const s of SETTINGS) {
        const v = med.get(s.name)!;
        const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
        const delta = s.name === "main" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
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
abVerdict(failures, "swf15_tuning: anrps's outputs equal main's");

/**
 * swigluForwardAndPerTokenCast's row form against main's lean cast form, in one process
 * (docs/perf-notes/perf11-swr.md): the roofline case (bench/cases_swiglu.ts: bf16 → e4m3, groups of 128, fp32 sf),
 * 8192 and 16384 tokens × H = 7168, psum over 64 experts (alignment 128), row weights, no clamp. Settings
 * (swigluLaunchTuning.rowForm, restored at the end):
 * - "main": rowForm off: the lean cast form `_anl` (main's before perf11-swr);
 * - "anrs": rowForm on (the default): the row form `_anrs` (round 11's `_anr2` with round 17's expert cursor; `_anr2`
 *   itself left in trim24), a grid of one wave (2 blocks of 448 threads per SM).
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy of 2 GiB (LeadTimer of
 * bench/common.ts), the median of 7 repetitions; the settings interleaved over 5 rounds (rotated order), the median
 * of the rounds printed. % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes
 * bench/roofline.ts counts for the op (real rows of x and the weights read, the real rows' outputs written); Δ is the
 * time against main's. The outputs of both settings (real rows: the forward leaves padding rows unwritten) are
 * compared with main's, on the roofline's input and on random bf16 rows at 8192 tokens: a difference prints FAIL.
 *
 * `deno run -A --no-check bench/swr11_tuning.ts` (or `bun bench/swr11_tuning.ts`).
 * @module
 */
import { type DeviceTensor, swigluForwardAndPerTokenCast } from "../mod.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { abStart, abVerdict } from "./common.ts";
import { abInputs, realBytes } from "./cases_swiglu.ts";

const { stream, timer, copy } = abStart("swr11_tuning");
const H = 7168;
const A = 128;
const ROUNDS = 5;
type Tuning = Partial<typeof swigluLaunchTuning>;
const SETTINGS: readonly { name: string; t: Tuning }[] = [
  { name: "main", t: { rowForm: false } },
  { name: "anrs", t: { rowForm: true } },
];
const OPS = ["swigluForwardAndPerTokenCast"] as const;

const saved = { ...swigluLaunchTuning };
let failures = 0;

/** One call of `op` under the current tuning; its outputs. */
function call(_op: (typeof OPS)[number], c: ReturnType<typeof abInputs>): DeviceTensor[] {
  const common = { psumNumTokensPerExpert: c.ps, tokenAlignment: A, topkWeights: c.w } as const;
  const [d, s] = swigluForwardAndPerTokenCast(c.x, { fmt: "e4m3", numPerChannels: 128, ...common });
  return [d as DeviceTensor, s as DeviceTensor];
}

/** Every setting's outputs of one call against main's (real rows). */
async function compare(T: number, random: boolean, c: ReturnType<typeof abInputs>): Promise<void> {
  for (const op of OPS) {
    let ref: Uint8Array[] | null = null;
    for (const s of SETTINGS) {
      Object.assign(swigluLaunchTuning, s.t);
      const outs = call(op, c);
      const got = await Promise.all(outs.map((t) => realBytes(t, c.mask)));
      for (const t of outs) t.dispose();
      if (ref === null) {
        ref = got;
        continue;
      }
      for (let k = 0; k < got.length; k++) {
        let bad = -1;
        for (let j = 0; j < ref[k].length && bad < 0; j++) if (ref[k][j] !== got[k][j]) bad = j;
        if (bad >= 0 || got[k].length !== ref[k].length) {
          failures++;
          console.log(`FAIL ${op} ${T}x${H} ${random ? "random" : "roofline"} input, ${s.name}: output ${k} differs from main's at byte ${bad}`);
        }
      }
    }
  }
  Object.assign(swigluLaunchTuning, saved);
}

try {
  const r = abInputs(8192, true);
  await compare(8192, true, r);
  for (const t of [r.x, r.w, r.ps]) t.dispose();
  for (const T of [8192, 16384]) {
    const c = abInputs(T, false);
    for (const op of OPS) {
      const us = new Map<string, number[]>();
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < SETTINGS.length; i++) {
          const s = SETTINGS[(i + round) % SETTINGS.length];
          Object.assign(swigluLaunchTuning, s.t);
          const v = timer.timeUs(stream, () => {
            for (const t of call(op, c)) t.dispose();
          });
          us.set(s.name, [...(us.get(s.name) ?? []), v]);
        }
      }
      Object.assign(swigluLaunchTuning, saved);
      // bench/roofline.ts's bytes (cases_swiglu.ts)
      const bytes = c.real * (2 * H * 2 + 4) + c.real * (H + (H / 128) * 4);
      const med = (name: string) => us.get(name)!.sort((a, b) => a - b)[ROUNDS >> 1];
      const base = med("main");
      for (const s of SETTINGS) {
        const v = med(s.name);
        const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
        const delta = s.name === "main" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
        console.log(`${op} ${T}x${H} 64 experts, weights\t${s.name.padEnd(8)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      }
    }
    await compare(T, false, c);
    for (const t of [c.x, c.w, c.ps]) t.dispose();
  }
} finally {
  Object.assign(swigluLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "swr11_tuning: anrs's outputs equal main's");

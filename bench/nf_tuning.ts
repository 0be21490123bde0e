/**
 * A/B of normForward's two-pass forms in one process (docs/perf-notes/perf9-nf.md): the bf16 roofline case of
 * bench/cases_norm.ts ("normForward bf16 weight", 8192 and 16384 tokens × 7168) under each setting of
 * `normLaunchTuning.twoPassForm` (ops/norm/launch.ts): "tp16f" (main's default `_tp16f`), "tp16h" (`_tp16h`: the same
 * geometry and bits with ~14% fewer issued instructions a row: L2 policies made once, pointers once per row with
 * immediate offsets, the weight / outScale branches once per kernel, the NaN test by max.NaN), "tp16hn" (`_tp16hn`:
 * `_tp16h` without cache hints), "tp16hr" (`_tp16hr`: `_tp16h` with x held in registers from its one load, past L1,
 * to step 4).
 * Interleaved over five rounds (form inside case inside round); the median of each is printed as µs and % of the
 * same run's cuMemcpyDtoD. Every form gives the same bits (tests/norm_gpu.test.ts, seed 9961). `deno run -A --no-check
 * bench/nf_tuning.ts` (or `bun bench/nf_tuning.ts`); through tools/ab_pack.sh:
 * `CMD="deno run -A --no-check bench/nf_tuning.ts" bash tools/ab_pack.sh "perf9-nf:tests/norm_gpu.test.ts@normForward"`.
 * @module
 */
import process from "node:process";
import { devices } from "../mod.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { cases } from "./cases_norm.ts";
import { copyRateGBs, deviceTimeUs } from "./common.ts";

if (devices().length === 0) {
  console.log("nf_tuning needs a CUDA device; none found");
  process.exit(0);
}
type Form = typeof normLaunchTuning.twoPassForm;
const FORMS: { form: Form; name: string }[] = [
  { form: "tp16f", name: "tp16f  _tp16f (main, default)" },
  { form: "tp16h", name: "tp16h  _tp16h (hoisted, hints)" },
  { form: "tp16hn", name: "tp16hn _tp16hn (hoisted, no hints)" },
  { form: "tp16hr", name: "tp16hr _tp16hr (hoisted, x in registers)" },
];
const ROUNDS = 5;
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const all = cases();
const fwd = all.filter((c) => c.op === "normForward");
const prev = normLaunchTuning.twoPassForm;
const us = new Map<string, number[]>();
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of fwd) {
      for (const f of FORMS) {
        normLaunchTuning.twoPassForm = f.form;
        const k = `${c.tokens}\t${f.form}`;
        us.set(k, [...(us.get(k) ?? []), deviceTimeUs(c.run, 20, 7)]);
      }
    }
  }
} finally {
  normLaunchTuning.twoPassForm = prev;
}
console.log(`\n${"tokens".padEnd(8)}${"form".padEnd(40)}${"µs (median)".padEnd(14)}${"% of copy".padEnd(11)}vs tp16f (min … max µs)`);
for (const c of fwd) {
  const med = (f: Form) => us.get(`${c.tokens}\t${f}`)!.slice().sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
  const base = med("tp16f");
  for (const f of FORMS) {
    const v = us.get(`${c.tokens}\t${f.form}`)!;
    const m = med(f.form);
    const pct = (100 * c.bytes) / (m * 1e3) / copy.gbps;
    const rel = `${m <= base ? "-" : "+"}${(Math.abs(m / base - 1) * 100).toFixed(1)}%`;
    console.log(
      `${String(c.tokens).padEnd(8)}${f.name.padEnd(40)}${m.toFixed(1).padEnd(14)}${(pct.toFixed(1) + "%").padEnd(11)}${rel.padEnd(9)}(${Math.min(...v).toFixed(1)} … ${Math.max(...v).toFixed(1)})`,
    );
  }
}
all.forEach((c) => c.dispose());

/**
 * A/B of normBackward's launch knobs in one process (docs/perf-notes/perf3-nbw.md): the bf16 roofline cases of
 * bench/cases_norm.ts (8192 and 16384 tokens × 7168; their rows kernel is `_b4swc_unit` since perf11-nbw) under each
 * setting of `normLaunchTuning.backwardFoldPdl` (the 16-warp fold of `.backwardFoldWarps` 16 left in trim24;
 * `.backwardPrefetch` stays "off": only the
 * `_b4` fallback reads it), interleaved over three rounds (the median of each is printed, as µs and % of the same
 * run's cuMemcpyDtoD). `deno run -A --no-check bench/nbw_tuning.ts` (or `bun bench/nbw_tuning.ts`); through
 * tools/ab_pack.sh: `CMD="deno run -A --no-check bench/nbw_tuning.ts" bash tools/ab_pack.sh perf3-nbw@none`.
 * @module
 */
import process from "node:process";
import { devices } from "../mod.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { cases } from "./cases_norm.ts";
import { copyRateGBs, deviceTimeUs } from "./common.ts";

if (devices().length === 0) {
  console.log("nbw_tuning needs a CUDA device; none found");
  process.exit(0);
}
type Setting = { name: string; pdl: boolean };
const SETTINGS: Setting[] = [
  { name: "_b4swc, fold without PDL (default)", pdl: false },
  { name: "_b4swc, fold with PDL", pdl: true },
];
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const all = cases().filter((c) => c.op === "normBackward");
const us = new Map<string, number[]>();
for (let round = 0; round < 3; round++) {
  for (const c of all) {
    for (const s of SETTINGS) {
      normLaunchTuning.backwardFoldPdl = s.pdl;
      const k = `${c.tokens}\t${s.name}`;
      us.set(k, [...(us.get(k) ?? []), deviceTimeUs(c.run, 20, 7)]);
    }
  }
}
normLaunchTuning.backwardFoldPdl = false;
for (const c of all) {
  for (const s of SETTINGS) {
    const v = us.get(`${c.tokens}\t${s.name}`)!.sort((a, b) => a - b)[1];
    const pct = (100 * c.bytes) / (v * 1e3) / copy.gbps;
    console.log(`normBackward ${c.tokens}\t${s.name.padEnd(58)}\t${v.toFixed(1)} µs\t${pct.toFixed(1)}%`);
  }
}
all.forEach((c) => c.dispose());

/**
 * A/B of `cast`'s aligned-only / shape-compiled kernels in one process (docs/perf-notes/perf9-cast.md): the roofline
 * cases of bench/cases_elem.ts (`cast` RN and `stochasticCast` SR: bf16 → e4m3, fp32 → e4m3, fp32 → bf16) under
 * `castLaunchTuning.elemAligned` off (main's `tk_cast__*`) and on (`tk_cast__*_a`), and the generic block-scaled
 * cases of bench/cases_cast_block.ts (bf16 → e4m3 [16, 64], fp16 → e4m3 [1, 128]) under `castLaunchTuning.blockShaped`
 * off (`tk_cast_block_staged__*`) and on (`…_r<R>c<C>_a`), at 8192 and 16384 tokens × 7168, interleaved over five
 * rounds (the median of each is printed, as µs and % of the same run's cuMemcpyDtoD).
 * `deno run -A --no-check bench/cast_tuning.ts` (or `bun bench/cast_tuning.ts`); through tools/ab_pack.sh:
 * `CMD="deno run -A --no-check bench/cast_tuning.ts" bash tools/ab_pack.sh "perf9-cast:tests/elem_gpu.test.ts,tests/cast_block_gpu.test.ts@cast"`.
 * @module
 */
import process from "node:process";
import { devices } from "../mod.ts";
import { castLaunchTuning } from "../ops/quant/elem_launch.ts";
import type { BenchCase } from "./cases.ts";
import { cases as blockCases } from "./cases_cast_block.ts";
import { cases as elemCases } from "./cases_elem.ts";
import { copyRateGBs, deviceTimeUs } from "./common.ts";

if (devices().length === 0) {
  console.log("cast_tuning needs a CUDA device; none found");
  process.exit(0);
}
type Knob = "elemAligned" | "blockShaped";
const ROUNDS = 5;
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const madeElem = elemCases();
const madeBlock = blockCases();
const made = [...madeElem, ...madeBlock];
const elem = madeElem.filter((c) => c.op === "cast" || c.op === "stochasticCast");
const block = madeBlock.filter((c) => c.variant.includes("generic"));
const all: { c: BenchCase; knob: Knob }[] = [...elem.map((c) => ({ c, knob: "elemAligned" as Knob })), ...block.map((c) => ({ c, knob: "blockShaped" as Knob }))];
const us = new Map<string, number[]>();
const key = (c: BenchCase, on: boolean) => `${c.op} ${c.tokens} ${c.variant}\t${on ? "new (_a)" : "main"}`;
for (let round = 0; round < ROUNDS; round++) {
  for (const { c, knob } of all) {
    // alternate which setting runs first, so neither always follows the other
    for (const on of round % 2 === 0 ? [false, true] : [true, false]) {
      castLaunchTuning[knob] = on;
      const k = key(c, on);
      us.set(k, [...(us.get(k) ?? []), deviceTimeUs(c.run, 20, 7)]);
    }
    castLaunchTuning[knob] = false;
  }
}
for (const { c } of all) {
  const row: string[] = [];
  for (const on of [false, true]) {
    const v = us.get(key(c, on))!.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
    const pct = (100 * c.bytes) / (v * 1e3) / copy.gbps;
    row.push(`${v.toFixed(1)} µs ${pct.toFixed(1)}%`);
  }
  console.log(`${`${c.op} ${c.tokens} ${c.variant}`.padEnd(44)}\tmain ${row[0]}\tnew ${row[1]}`);
}
made.forEach((c) => c.dispose());

/**
 * applyRotary's launch forms A/B'd in one process (`deno run -A --no-check bench/rope_tuning.ts`, or
 * `bun bench/rope_tuning.ts`): the roofline cases of bench/cases_rope_randn.ts (MLA 64-of-192 interleaved and
 * [T,128,64] NeoX at 8192 and 16384 tokens) under each setting of `rotaryLaunchTuning` (ops/transform/rope.ts),
 * as µs, % of the 1 GiB cuMemcpyDtoD rate and % of a copy of the same byte count, all from this run. Forms:
 * `s2` the two-slot kernel (the only one built since the 3- and 4-slot forms lost on 2026-11-30), `+l2` the
 * L2::128B hint, `drv` the driver's carveout. `--forms s2,s2+l2` runs a subset; `--json FILE` writes the rows.
 * @module
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { deviceInfo, devices } from "../mod.ts";
import { rotaryLaunchTuning } from "../ops/transform/rope.ts";
import { cases } from "./cases_rope_randn.ts";
import { copyRateGBs, deviceTimeUs } from "./common.ts";

/** Each form: its label and the tuning it sets (fields not named keep their defaults). */
const FORMS: Record<string, Partial<typeof rotaryLaunchTuning>> = {
  "s2-drv": { l2Line: false, carveout: -1 },
  "s2": { l2Line: false },
  "s2+l2": { l2Line: true }, // the default
  "s2+l2-drv": { l2Line: true, carveout: -1 },
};

const args = process.argv.slice(2);
const argOf = (k: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : undefined);
if (devices().length === 0) {
  console.log("bench/rope_tuning.ts needs a CUDA device; none found");
  process.exit(0);
}
const info = deviceInfo(0);
const copy = copyRateGBs(2 ** 30);
console.log(`${info.name} (${info.smCount} SMs): cuMemcpyDtoD 1 GiB ${copy.gbps.toFixed(0)} GB/s = 100%`);
const defaults = { ...rotaryLaunchTuning };
const names = argOf("--forms")?.split(",") ?? Object.keys(FORMS);
const rows: Record<string, unknown>[] = [];
const made = cases();
for (const c of made) if (c.op !== "applyRotary") c.dispose();
const all = made.filter((c) => c.op === "applyRotary");
const sameSize = new Map<number, number>(); // bytes → GB/s of a copy of that many bytes (read + write)
try {
  for (const c of all) {
    if (!sameSize.has(c.bytes)) sameSize.set(c.bytes, copyRateGBs(Math.round(c.bytes / 2)).gbps);
    for (const name of names) {
      const form = FORMS[name];
      if (!form) throw new Error(`unknown form ${name} (have ${Object.keys(FORMS).join(", ")})`);
      Object.assign(rotaryLaunchTuning, defaults, form);
      const us = deviceTimeUs(c.run, 20, 7);
      const gbps = c.bytes / (us * 1e3);
      const row = { op: c.op, tokens: c.tokens, variant: c.variant, form: name, us, gbps, pct_copy: (100 * gbps) / copy.gbps, pct_same_size: (100 * gbps) / sameSize.get(c.bytes)! };
      rows.push(row);
      console.log(`${String(c.tokens).padEnd(7)}${c.variant.padEnd(52)}${name.padEnd(8)}${us.toFixed(1).padStart(8)} µs ${row.pct_copy.toFixed(1).padStart(6)}% of copy ${row.pct_same_size.toFixed(1).padStart(6)}% of same-size copy`);
    }
  }
} finally {
  Object.assign(rotaryLaunchTuning, defaults);
  for (const c of all) c.dispose();
}
const out = argOf("--json");
if (out) writeFileSync(out, JSON.stringify({ device: info.name, copy_gbps: copy.gbps, rows }, null, 2));

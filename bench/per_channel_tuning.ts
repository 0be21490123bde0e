/**
 * perChannelCastAndTranspose's kernel forms A/B'd in one process (`deno run -A --no-check bench/per_channel_tuning.ts`,
 * or `bun bench/per_channel_tuning.ts`): the roofline cases of bench/cases_per_channel.ts (bf16 → e4m3, blocks of
 * 128 tokens, 8192 and 16384 tokens × 7168) under each setting of `perChannelLaunchTuning.transposeForm`
 * (ops/quant/per_channel_cast.ts), as µs, % of the 1 GiB cuMemcpyDtoD rate and % of a copy of the same byte count,
 * all from this run; perChannelCast under each setting of `castForm` likewise. Forms: `base` the measured kernels,
 * `_pa` packed amax + hoisted address math (both ops), `_rt` `_pa` with the transpose done in registers
 * (perChannelCastAndTranspose, numPerTokens 128; perChannelCast runs only base and `_pa`). `--forms base,_pa` runs
 * a subset; `--json FILE` writes the rows.
 * @module
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { deviceInfo, devices } from "../mod.ts";
import { perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { cases } from "./cases_per_channel.ts";
import { copyRateGBs, deviceTimeUs } from "./common.ts";

/** Each form: its label and the knob values it sets (castForm undefined: the form is not for perChannelCast). */
const FORMS: Record<string, { transposeForm: (typeof perChannelLaunchTuning)["transposeForm"]; castForm?: (typeof perChannelLaunchTuning)["castForm"] }> = {
  "base": { transposeForm: "", castForm: "" }, // the defaults
  "_pa": { transposeForm: "_pa", castForm: "_pa" },
  "_rt": { transposeForm: "_rt" },
};

const args = process.argv.slice(2);
const argOf = (k: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : undefined);
if (devices().length === 0) {
  console.log("bench/per_channel_tuning.ts needs a CUDA device; none found");
  process.exit(0);
}
const info = deviceInfo(0);
const copy = copyRateGBs(2 ** 30);
console.log(`${info.name} (${info.smCount} SMs): cuMemcpyDtoD 1 GiB ${copy.gbps.toFixed(0)} GB/s = 100%`);
const prev = { ...perChannelLaunchTuning };
const names = argOf("--forms")?.split(",") ?? Object.keys(FORMS);
for (const name of names) if (!(name in FORMS)) throw new Error(`unknown form ${name} (have ${Object.keys(FORMS).join(", ")})`);
const rows: Record<string, unknown>[] = [];
const made = cases();
for (const c of made) if (c.op !== "perChannelCast" && c.op !== "perChannelCastAndTranspose") c.dispose();
const all = made.filter((c) => c.op === "perChannelCast" || c.op === "perChannelCastAndTranspose");
const sameSize = new Map<number, number>(); // bytes → GB/s of a copy of that many bytes (read + write)
try {
  for (const c of all) {
    if (!sameSize.has(c.bytes)) sameSize.set(c.bytes, copyRateGBs(Math.round(c.bytes / 2)).gbps);
    for (const name of names) {
      const form = FORMS[name];
      if (c.op === "perChannelCast" && form.castForm === undefined) continue;
      Object.assign(perChannelLaunchTuning, prev, form);
      const us = deviceTimeUs(c.run, 20, 7);
      const gbps = c.bytes / (us * 1e3);
      const row = { op: c.op, tokens: c.tokens, variant: c.variant, form: name, us, gbps, pct_copy: (100 * gbps) / copy.gbps, pct_same_size: (100 * gbps) / sameSize.get(c.bytes)! };
      rows.push(row);
      console.log(`${c.op.padEnd(28)}${String(c.tokens).padEnd(7)}${name.padEnd(8)}${us.toFixed(1).padStart(8)} µs ${row.pct_copy.toFixed(1).padStart(6)}% of copy ${row.pct_same_size.toFixed(1).padStart(6)}% of same-size copy`);
    }
  }
} finally {
  Object.assign(perChannelLaunchTuning, prev);
  for (const c of all) c.dispose();
}
const out = argOf("--json");
if (out) writeFileSync(out, JSON.stringify({ device: info.name, copy_gbps: copy.gbps, rows }, null, 2));

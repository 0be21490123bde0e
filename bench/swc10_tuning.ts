/**
 * A/B of swigluForwardAndPerTokenCast's kernel forms in one process (docs/perf-notes/perf10-swc.md): `deno run -A
 * --no-check bench/swc10_tuning.ts` (or `bun bench/swc10_tuning.ts`), optionally `--settings an,anl4,anl3`,
 * `--rounds N` (default 5) and `--json FILE`.
 *
 * The roofline case of swigluForwardAndPerTokenCast (bench/cases_swiglu.ts: bf16 x, e4m3 groups of 128, 64 experts,
 * weights, no clamp) at 8192 and 16384 tokens × 7168 is timed under each setting of `swigluLaunchTuning`
 * (ops/quant/swiglu_launch.ts): "an" = main's `_an` (3 CTAs per SM, 3 column parts), "anl4" = the lean cast form
 * `_anl` at the 4 CTAs per SM its registers allow (4 parts), "anl3" = `_anl` held to 3 CTAs per SM by dynamic shared
 * memory it does not use (4 parts): anl3 against an is the instruction cut, anl4 against anl3 the fourth CTA.
 * swigluForward (bench/cases_more.ts, bf16 → bf16, `_an`) is a control that no setting touches: its figures
 * should agree. The settings are interleaved: every round times every case under every setting, in a rotated
 * order, so that clock and thermal drift fall on all of them alike; the table gives the median over the rounds in
 * µs and as % of the same run's cuMemcpyDtoD rate, and the kernel each setting launched. Every setting gives the
 * same bytes (tests/swiglu_gpu.test.ts).
 * @module
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { deviceInfo, devices } from "../mod.ts";
import { swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import type { BenchCase } from "./cases.ts";
import { cases as swigluCases } from "./cases_swiglu.ts";
import { casesOn } from "./cases_more.ts";
import { copyRateGBs, deviceTimeUs } from "./common.ts";

const SETTINGS = {
  an: { castForm: "an", castCtasPerSm: 4 },
  anl4: { castForm: "anl", castCtasPerSm: 4 },
  anl3: { castForm: "anl", castCtasPerSm: 3 },
} as const;
type Setting = keyof typeof SETTINGS;
const NAMES = Object.keys(SETTINGS) as Setting[];

const args = process.argv.slice(2);
const argOf = (k: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : undefined);
const settings = (argOf("--settings")?.split(",") ?? [...NAMES]).filter((f): f is Setting => {
  const ok = (NAMES as string[]).includes(f);
  if (!ok) console.log(`unknown setting ${f} (${NAMES.join(", ")})`);
  return ok;
});
const rounds = Number(argOf("--rounds") ?? 5);
const jf = argOf("--json");

if (devices().length === 0) {
  console.log("bench/swc10_tuning.ts needs a CUDA device; none found");
  process.exit(0);
}
const info = deviceInfo(0);
const copy = copyRateGBs(2 ** 30);
console.log(`${info.name} (${info.arch}, ${info.smCount} SMs); cuMemcpyDtoD ${copy.gbps.toFixed(0)} GB/s = 100%`);

/** The kernel a setting launches for a case (no clamp, aligned fresh allocations: swigluFormSuffix's answer). */
function kernel(op: string, s: Setting): string {
  if (op === "swigluForward") return "tk_swiglu_forward__bf16_bf16_an";
  return `tk_swiglu_forward__bf16_e4m3_g128_${SETTINGS[s].castForm}`;
}

const all: BenchCase[] = [];
for (const c of casesOn([8192, 16384], 0)) {
  if (c.op === "swigluForward") all.push(c);
  else c.dispose();
}
all.push(...swigluCases()); // all kept for their dispose (the last case of each size frees the shared inputs)
const timed = all.filter((c) => c.op === "swigluForward" || c.op === "swigluForwardAndPerTokenCast");

const times = new Map<string, number[]>(); // `${case index}|${setting}` → µs per round
try {
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < timed.length; i++) {
      for (let k = 0; k < settings.length; k++) {
        const s = settings[(k + r + i) % settings.length];
        Object.assign(swigluLaunchTuning, SETTINGS[s]);
        try {
          const us = deviceTimeUs(timed[i].run, 20, 3);
          const key = `${i}|${s}`;
          times.set(key, [...(times.get(key) ?? []), us]);
        } finally {
          Object.assign(swigluLaunchTuning, SETTINGS.anl4);
        }
      }
    }
  }
} finally {
  for (const c of all) c.dispose();
}

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const rows: Record<string, unknown>[] = [];
console.log(
  `\n${"op".padEnd(32)}${"tokens".padEnd(8)}${"setting".padEnd(9)}${"kernel".padEnd(40)}${"µs".padEnd(10)}% of copy  (rounds: ${rounds})`,
);
for (let i = 0; i < timed.length; i++) {
  const c = timed[i];
  for (const s of settings) {
    const v = times.get(`${i}|${s}`) ?? [];
    if (v.length === 0) continue;
    const us = median(v);
    const pct = (100 * c.bytes) / (us * 1e3) / copy.gbps;
    const k = kernel(c.op, s);
    rows.push({ op: c.op, tokens: c.tokens, variant: c.variant, setting: s, kernel: k, us, min_us: Math.min(...v), pct_copy: pct });
    console.log(`${c.op.padEnd(32)}${String(c.tokens).padEnd(8)}${s.padEnd(9)}${k.padEnd(40)}${us.toFixed(1).padEnd(10)}${pct.toFixed(1)}%`);
  }
}
if (jf) writeFileSync(jf, JSON.stringify({ device: info, copy, rounds, rows }, null, 2));

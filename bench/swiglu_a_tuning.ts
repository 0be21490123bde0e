/**
 * A/B of the SwiGLU aligned-only kernel forms in one process (docs/perf-notes/perf9-swiglu.md): `deno run -A
 * --no-check bench/swiglu_a_tuning.ts` (or `bun bench/swiglu_a_tuning.ts`), optionally `--forms off,a,an`,
 * `--rounds N` (default 5) and `--json FILE`.
 *
 * The roofline cases of swigluForward (bench/cases_more.ts), swigluForwardAndPerTokenCast, swigluBackward and
 * swigluBackwardAndPerTokenCast (bench/cases_swiglu.ts) at 8192 and 16384 tokens × 7168 are timed under each
 * setting of `swigluLaunchTuning.alignedForm` (ops/quant/swiglu_launch.ts): "off" = main's kernels, "a" = the `_a`
 * forms, "an" = the `_an` forms (no clamp compiled; the cases have none). The settings are interleaved: every round
 * times every case under every setting, in a rotated order, so that clock and thermal drift fall on all of them
 * alike; the table gives the median over the rounds in µs and as % of the same run's cuMemcpyDtoD rate, and which
 * kernel each setting launched. swigluBackwardAndPerTokenCast has no aligned-only form (its fallback is a branch,
 * not issued: perf9-swiglu.md) and stays a control: its three figures should agree. Every setting gives the same
 * bits (tests/swiglu_gpu.test.ts).
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

type Form = typeof swigluLaunchTuning.alignedForm;
const FORMS: readonly Form[] = ["off", "a", "an"];

const args = process.argv.slice(2);
const argOf = (k: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : undefined);
const forms = (argOf("--forms")?.split(",") ?? [...FORMS]).filter((f): f is Form => {
  const ok = (FORMS as readonly string[]).includes(f);
  if (!ok) console.log(`unknown form ${f} (${FORMS.join(", ")})`);
  return ok;
});
const rounds = Number(argOf("--rounds") ?? 5);
const jf = argOf("--json");

if (devices().length === 0) {
  console.log("bench/swiglu_a_tuning.ts needs a CUDA device; none found");
  process.exit(0);
}
const info = deviceInfo(0);
const copy = copyRateGBs(2 ** 30);
console.log(`${info.name} (${info.arch}, ${info.smCount} SMs); cuMemcpyDtoD ${copy.gbps.toFixed(0)} GB/s = 100%`);

/** The kernel forms each case's op can use (the kernel symbols of swiglu.cu the cases launch). */
const KERNEL: Record<string, string> = {
  swigluForward: "tk_swiglu_forward__bf16_bf16",
  swigluForwardAndPerTokenCast: "tk_swiglu_forward__bf16_e4m3_g128",
  swigluBackward: "tk_swiglu_backward__bf16_bf16",
  swigluBackwardAndPerTokenCast: "tk_swiglu_backward__e4m3_bf16_g128",
};
/** The suffix a setting launches for the cases (no clamp, aligned fresh allocations): swigluFormSuffix's answer. */
function suffix(op: string, f: Form): string {
  if (f === "off" || op === "swigluBackwardAndPerTokenCast") return "";
  if (op === "swigluForwardAndPerTokenCast") return f === "an" ? "_an" : "";
  return f === "an" ? "_an" : "_a";
}

const all: BenchCase[] = [];
for (const c of casesOn([8192, 16384], 0)) {
  if (c.op === "swigluForward") all.push(c);
  else c.dispose();
}
all.push(...swigluCases());

const times = new Map<string, number[]>(); // `${case index}|${form}` → µs per round
try {
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < all.length; i++) {
      for (let k = 0; k < forms.length; k++) {
        const f = forms[(k + r + i) % forms.length];
        swigluLaunchTuning.alignedForm = f;
        try {
          const us = deviceTimeUs(all[i].run, 20, 3);
          const key = `${i}|${f}`;
          times.set(key, [...(times.get(key) ?? []), us]);
        } finally {
          swigluLaunchTuning.alignedForm = "off";
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
  `\n${"op".padEnd(32)}${"tokens".padEnd(8)}${"form".padEnd(6)}${"kernel".padEnd(44)}${
    "µs".padEnd(10)
  }% of copy  (rounds: ${rounds})`,
);
for (let i = 0; i < all.length; i++) {
  const c = all[i];
  for (const f of forms) {
    const v = times.get(`${i}|${f}`) ?? [];
    if (v.length === 0) continue;
    const us = median(v);
    const pct = (100 * c.bytes) / (us * 1e3) / copy.gbps;
    const kernel = KERNEL[c.op] + suffix(c.op, f);
    rows.push({
      op: c.op,
      tokens: c.tokens,
      variant: c.variant,
      form: f,
      kernel,
      us,
      min_us: Math.min(...v),
      pct_copy: pct,
    });
    console.log(
      `${c.op.padEnd(32)}${String(c.tokens).padEnd(8)}${f.padEnd(6)}${kernel.padEnd(44)}${us.toFixed(1).padEnd(10)}${
        pct.toFixed(1)
      }%`,
    );
  }
}
if (jf) writeFileSync(jf, JSON.stringify({ device: info, copy, rounds, rows }, null, 2));

/**
 * A/B of the RMSNorm forward's launch forms in one process (docs/perf-notes/perf3-norm.md): `deno run -A --no-check
 * bench/norm_tuning.ts` (or `bun bench/norm_tuning.ts`), optionally `--forms a,b` (names below) and `--json FILE`.
 * For each form of bench/norm_forms.ts it sets `normLaunchTuning` (ops/norm/launch.ts), then measures
 *  - the roofline cases of normForward and normForwardAndPerTokenCast (bench/cases_norm.ts, 8192 and 16384 tokens)
 *    and addRmsnormForwardAndPerTokenCast (bench/cases_more.ts) as µs and % of the same run's cuMemcpyDtoD rate;
 *  - the decode case (1 and 64 tokens × 7168, weight) as device time queued behind a copy (bench/decode.ts's figure).
 * Every form gives the same bits (tests/norm_gpu.test.ts compares them all with the CPU reference).
 * @module
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { deviceInfo, type DeviceTensor, devices, empty, normForward, normForwardAndPerTokenCast } from "../mod.ts";
import { applyNormForm, NORM_FORMS, resetNormForm } from "./norm_forms.ts";
import type { BenchCase } from "./cases.ts";
import { cases as normCases } from "./cases_norm.ts";
import { casesOn } from "./cases_more.ts";
import { copyRateGBs, deviceTimeUs, queuedDeviceTimeUs, randomBf16 } from "./common.ts";

const args = process.argv.slice(2);
const argOf = (k: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : undefined);
const forms = argOf("--forms")?.split(",") ?? Object.keys(NORM_FORMS);
const jf = argOf("--json");

if (devices().length === 0) {
  console.log("bench/norm_tuning.ts needs a CUDA device; none found");
  process.exit(0);
}
const info = deviceInfo(0);
const copy = copyRateGBs(2 ** 30);
console.log(`${info.name} (${info.arch}, ${info.smCount} SMs); cuMemcpyDtoD ${copy.gbps.toFixed(0)} GB/s = 100%`);

const rows: Record<string, unknown>[] = [];
for (const form of forms) {
  if (!applyNormForm(form)) {
    console.log(`unknown form ${form} (${Object.keys(NORM_FORMS).join(", ")})`);
    continue;
  }
  try {
    const wanted = ["normForward", "normForwardAndPerTokenCast", "addRmsnormForwardAndPerTokenCast"];
    const all: BenchCase[] = [...normCases(), ...casesOn([8192, 16384], 0)];
    for (const c of all) {
      if (!wanted.includes(c.op)) {
        c.dispose();
        continue;
      }
      try {
        const us = deviceTimeUs(c.run, 20, 7);
        const gbps = c.bytes / (us * 1e3);
        rows.push({ form, op: c.op, tokens: c.tokens, variant: c.variant, us, pct_copy: (100 * gbps) / copy.gbps });
      } finally {
        c.dispose();
      }
    }
    const w = randomBf16(1, 7168, 2).view([7168]);
    for (const T of [1, 64]) {
      const x = randomBf16(T, 7168, 1);
      const out = empty([T, 7168], "bf16", { device: 0 }) as DeviceTensor;
      const rstd = empty([T], "fp32", { device: 0 }) as DeviceTensor;
      const data = empty([T, 7168], "e4m3", { device: 0 }) as DeviceTensor;
      const sf = empty([T, 56], "fp32", { device: 0 }) as DeviceTensor;
      const q = queuedDeviceTimeUs(() => void normForward(x, w, { eps: 1e-6, out: { out, rstd } }));
      rows.push({ form, op: "normForward decode", tokens: T, variant: "bf16 weight, queued", us: q.us, hostBound: q.hostBound });
      const castOpts = { eps: 1e-6, fmt: "e4m3", numPerChannels: 128, out: { data, sf, rstd } } as const;
      const qc = queuedDeviceTimeUs(() => void normForwardAndPerTokenCast(x, w, castOpts));
      rows.push({ form, op: "normForwardAndPerTokenCast decode", tokens: T, variant: "bf16 weight, queued", us: qc.us, hostBound: qc.hostBound });
      for (const t of [x, out, rstd, data, sf]) t.dispose();
    }
    w.dispose();
  } finally {
    resetNormForm();
  }
}

console.log(`\n${"form".padEnd(14)}${"op".padEnd(36)}${"tokens".padEnd(8)}${"µs".padEnd(10)}% of copy`);
for (const r of rows) {
  const pct = r.pct_copy == null ? (r.hostBound ? "(host-bound: ≤)" : "") : `${(r.pct_copy as number).toFixed(1)}%`;
  console.log(`${String(r.form).padEnd(14)}${String(r.op).padEnd(36)}${String(r.tokens).padEnd(8)}${(r.us as number).toFixed(2).padEnd(10)}${pct}`);
}
if (jf) writeFileSync(jf, JSON.stringify({ device: info, copy, rows }, null, 2));

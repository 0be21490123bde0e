/**
 * A/B of perTokenCast's aligned-only kernels in one process (docs/perf-notes/perf9-ptc.md): bf16 → e4m3, groups of
 * 128, fp32 and packed UE8M0 scales (bench/common.ts CASES, as bench/roofline.ts), 4096, 8192 and 16384 tokens ×
 * 7168, under `perTokenLaunchTuning.aligned` false (main's `_g128` / `_g128_pkl`) and true (`_g128_a` /
 * `_g128_pkl_a`), and perTokenCastWithSfOnly with the same scales (`_g128_sor4` against `_g128_sor4_a`),
 * interleaved over five rounds; the median of each is printed as µs and % of the same run's
 * cuMemcpyDtoD (1 GiB, read + write bytes). `deno run -A --no-check bench/ptc_a_tuning.ts` (or `bun
 * bench/ptc_a_tuning.ts`); through tools/ab_pack.sh:
 * `CMD="deno run -A --no-check bench/ptc_a_tuning.ts" bash tools/ab_pack.sh "perf9-ptc:tests/per_token_cast_gpu.test.ts@perTokenCast"`.
 * @module
 */
import process from "node:process";
import { type DeviceTensor, devices, empty, perTokenCast, perTokenCastWithSfOnly } from "../mod.ts";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { CASES, castBytes, copyRateGBs, deviceTimeUs, randomBf16 } from "./common.ts";

if (devices().length === 0) {
  console.log("ptc_a_tuning needs a CUDA device; none found");
  process.exit(0);
}
const SETTINGS = [
  { name: "main (_g128 / _g128_pkl)", aligned: false },
  { name: "aligned (_g128_a / _g128_pkl_a)", aligned: true },
];
const ROUNDS = 5;
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const saved = perTokenLaunchTuning.aligned;
const us = new Map<string, number[]>();
for (const T of [4096, 8192, 16384]) {
  const x = randomBf16(T, 7168);
  const runs = CASES.map((c) => {
    const data = empty([T, 7168], "e4m3", { device: 0 }) as DeviceTensor;
    const [d0, sf] = perTokenCast(x, c.opts);
    d0.dispose();
    const opts = { ...c.opts, out: { data, sf: sf as DeviceTensor } };
    return { c, sfOnly: false, data, sf, run: () => void perTokenCast(x, opts) };
  });
  // perTokenCastWithSfOnly (`_g128_sor4` against `_g128_sor4_a`)
  for (const c of CASES) {
    const { out: _, ...o } = c.opts;
    const sf = perTokenCastWithSfOnly(x, o) as DeviceTensor;
    const opts = { ...o, out: sf };
    runs.push({ c, sfOnly: true, data: null as unknown as DeviceTensor, sf, run: () => void perTokenCastWithSfOnly(x, opts) });
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const r of runs) {
      for (const s of SETTINGS) {
        perTokenLaunchTuning.aligned = s.aligned;
        const k = `${T}\t${r.sfOnly}\t${r.c.name}\t${s.name}`;
        us.set(k, [...(us.get(k) ?? []), deviceTimeUs(r.run, 20, 7)]);
      }
    }
  }
  perTokenLaunchTuning.aligned = saved;
  for (const r of runs) {
    // sf only: x read, no data written
    const bytes = castBytes(T, 7168, !!r.c.opts.usePackedUe8m0) - (r.sfOnly ? T * 7168 : 0);
    const op = r.sfOnly ? "perTokenCastWithSfOnly" : "perTokenCast";
    for (const s of SETTINGS) {
      const v = us.get(`${T}\t${r.sfOnly}\t${r.c.name}\t${s.name}`)!.sort((a, b) => a - b)[ROUNDS >> 1];
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const name = r.sfOnly ? s.name.replace("_g128 / _g128_pkl", "_g128_sor4").replace("_g128_a / _g128_pkl_a", "_g128_sor4_a") : s.name;
      console.log(`${op.padEnd(22)} ${T}x7168 ${r.c.name.padEnd(13)}\t${name.padEnd(34)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%`);
    }
    if (!r.sfOnly) r.data.dispose();
    r.sf.dispose();
  }
  x.dispose();
}
perTokenLaunchTuning.aligned = saved;

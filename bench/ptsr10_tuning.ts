/**
 * A/B of perTokenCast with stochasticCast in one process (docs/perf-notes/perf10-ptsr.md): bf16 → e4m3, groups of
 * 128, fp32 sf (the roofline's case, bench/cases_elem.ts) and packed UE8M0 column-major sf, 8192 and 16384 tokens ×
 * 7168, under three settings interleaved over five rounds:
 * - "main": `perTokenLaunchTuning.srWarpUnits` false — main's `_g128_sr` (row teams of 2-chunk units, no PDL);
 * - "wu": true with `config.pdl` false — `_g128_sr_wu` launched without the PDL attribute (the kernel change alone);
 * - "wu+pdl": true with `config.pdl` true (the library default) — `_g128_sr_wu` with the PDL attribute.
 * The median of each is printed as µs and % of the same run's cuMemcpyDtoD (1 GiB, read + write bytes), with the RN
 * call (`_g128_pdl` / `_g128_pkl_pdl`, config.pdl on) and `stochasticCast` bf16 → e4m3 (`_sr_a`) of the same size
 * beside as the ceilings the brief compares with. `deno run -A --no-check bench/ptsr10_tuning.ts` (or `bun
 * bench/ptsr10_tuning.ts`); through tools/ab_pack.sh:
 * `CMD="deno run -A --no-check bench/ptsr10_tuning.ts" bash tools/ab_pack.sh "perf10-ptsr:tests/per_token_cast_gpu.test.ts@perTokenCast"`.
 * @module
 */
import process from "node:process";
import { type DeviceTensor, devices, empty, perTokenCast, stochasticCast } from "../mod.ts";
import { config } from "../core/config.ts";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { CASES, castBytes, copyRateGBs, deviceTimeUs, randomBf16 } from "./common.ts";

if (devices().length === 0) {
  console.log("ptsr10_tuning needs a CUDA device; none found");
  process.exit(0);
}
const H = 7168;
const SETTINGS = [
  { name: "main (_g128_sr)", wu: false, pdl: false },
  { name: "wu (_g128_sr_wu, no PDL)", wu: true, pdl: false },
  { name: "wu+pdl (_g128_sr_wu, PDL)", wu: true, pdl: true },
] as const;
const ROUNDS = 5;
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const saved = { wu: perTokenLaunchTuning.srWarpUnits, pdl: config.pdl };
const us = new Map<string, number[]>();
const add = (k: string, v: number) => us.set(k, [...(us.get(k) ?? []), v]);
const median = (k: string) => us.get(k)!.sort((a, b) => a - b)[ROUNDS >> 1];
const pct = (bytes: number, v: number) => (100 * bytes) / (v * 1e3) / copy.gbps;
try {
  for (const T of [8192, 16384]) {
    const x = randomBf16(T, H, T);
    const runs = CASES.map((c) => {
      const data = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
      const [d0, sf] = perTokenCast(x, c.opts);
      d0.dispose();
      // one options object per case: the calls after the first take the replay path (as in a loop)
      const sr = { ...c.opts, stochasticCast: true, out: { data, sf: sf as DeviceTensor } };
      const rn = { ...c.opts, out: { data, sf: sf as DeviceTensor } };
      return { c, data, sf: sf as DeviceTensor, sr: () => void perTokenCast(x, sr), rn: () => void perTokenCast(x, rn) };
    });
    const y = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
    for (let round = 0; round < ROUNDS; round++) {
      for (const r of runs) {
        for (const s of SETTINGS) {
          perTokenLaunchTuning.srWarpUnits = s.wu;
          config.pdl = s.pdl;
          add(`${T}\t${r.c.name}\t${s.name}`, deviceTimeUs(r.sr, 20, 7));
        }
        perTokenLaunchTuning.srWarpUnits = saved.wu;
        config.pdl = true;
        add(`${T}\t${r.c.name}\tRN`, deviceTimeUs(r.rn, 20, 7));
      }
      add(`${T}\tstochasticCast`, deviceTimeUs(() => void stochasticCast(x, { dtype: "e4m3", out: y }), 20, 7));
    }
    perTokenLaunchTuning.srWarpUnits = saved.wu;
    config.pdl = saved.pdl;
    for (const r of runs) {
      const bytes = castBytes(T, H, !!r.c.opts.usePackedUe8m0);
      const base = median(`${T}\t${r.c.name}\t${SETTINGS[0].name}`);
      for (const s of SETTINGS) {
        const v = median(`${T}\t${r.c.name}\t${s.name}`);
        const d = s === SETTINGS[0] ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
        console.log(`perTokenCast SR ${T}x${H} ${r.c.name.padEnd(13)}\t${s.name.padEnd(27)}\t${v.toFixed(2)} µs\t${pct(bytes, v).toFixed(1)}%${d}`);
      }
      const v = median(`${T}\t${r.c.name}\tRN`);
      console.log(`perTokenCast RN ${T}x${H} ${r.c.name.padEnd(13)}\t${"(ceiling: RN, config.pdl)".padEnd(27)}\t${v.toFixed(2)} µs\t${pct(bytes, v).toFixed(1)}%`);
      r.data.dispose();
      r.sf.dispose();
    }
    const v = median(`${T}\tstochasticCast`);
    console.log(`stochasticCast ${T}x${H} bf16→e4m3\t${"(ceiling: _sr_a)".padEnd(27)}\t${v.toFixed(2)} µs\t${pct(3 * T * H, v).toFixed(1)}%`);
    y.dispose();
    x.dispose();
  }
} finally {
  perTokenLaunchTuning.srWarpUnits = saved.wu;
  config.pdl = saved.pdl;
}

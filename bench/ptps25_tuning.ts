/**
 * perTokenCastWithPrecomputedSf bf16 + fp32 sf → e4m3 with 128 columns a scale (the roofline case of
 * bench/cases_more.ts: sf from perTokenCastWithSfOnly, a preallocated output): main's `tk_per_token_cast__bf16_e4m3_g128`
 * (per_token_cast.cu, mode 2) against round 25's warp ring `_g128_psr4` (per_token_cast_ps25.cu: a warp's 2-stage
 * cp.async ring, 16-byte copies, 2 pairs of consecutive chunks a lane and one 16-byte store a pair; the 2-chunk
 * `_psr2` of the twentieth run is no longer built;
 * docs/perf-notes/perf25-ptps.md), in one process, at 8192 and 16384 × 7168 (PTPS_TOKENS: others). Settings
 * (perTokenLaunchTuning, restored at the end): "g128" ring off, "psr4" (the default) with the PDL attribute
 * (config.pdl, its default), "psr4-np" launched without it. The ring's grid is its launch bound in CTAs per SM (4;
 * PTPS_RING_BLOCKS: another count).
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy (LeadTimer of bench/common.ts),
 * the median of 7 repetitions; the settings interleaved over 5 rounds (rotated order), the median of the rounds
 * printed. % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for x, the scales and the codes. Every
 * setting's output is compared byte for byte with g128's and its launched symbol checked, at each size: a difference
 * prints FAIL and exits 1. The last lines give the sizes at which each ring setting beat g128. Without a CUDA device:
 * a skip line, exit 0.
 *
 * `deno run -A --no-check bench/ptps25_tuning.ts` (or `bun bench/ptps25_tuning.ts`).
 * @module
 */
import process from "node:process";
import { type DeviceTensor, empty, perTokenCastWithPrecomputedSf, perTokenCastWithSfOnly } from "../mod.ts";
import { config } from "../core/config.ts";
import { kernelFunction, syncAndCheck } from "../ffi/cuda.ts";
import { perTokenLastLaunch, perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { abStart, abVerdict, DEV, FirstOutput, hostBytes, interleavedMedians, randomBf16 } from "./common.ts";

const { stream, timer, copy } = abStart("ptps25_tuning");
const H = 7168;
const TOKENS = (process.env.PTPS_TOKENS ?? "8192,16384").split(",").map(Number);
const RING_BLOCKS = Number(process.env.PTPS_RING_BLOCKS ?? 0);
const ROUNDS = 5;
type Setting = { name: string; ring: 0 | 4; pdl: boolean; symbol: string };
const SETTINGS: readonly Setting[] = [
  { name: "g128", ring: 0, pdl: false, symbol: "tk_per_token_cast__bf16_e4m3_g128" },
  { name: "psr4", ring: 4, pdl: true, symbol: "tk_per_token_cast__bf16_e4m3_g128_psr4" },
  { name: "psr4-np", ring: 4, pdl: false, symbol: "tk_per_token_cast__bf16_e4m3_g128_psr4" },
];

const saved = { ...perTokenLaunchTuning };
let failures = 0;
/** Per ring setting, the sizes at which it beat g128. */
const wins = new Map<string, number[]>();

function apply(s: Setting): void {
  Object.assign(perTokenLaunchTuning, {
    precomputedRing: s.ring,
    precomputedRingBlocksPerSm: RING_BLOCKS,
    precomputedRingPdl: s.pdl,
  });
}

try {
  for (const T of TOKENS) {
    const x = randomBf16(T, H, T + 25);
    const o = { fmt: "e4m3", numPerChannels: 128 } as const;
    const sf = perTokenCastWithSfOnly(x, o) as DeviceTensor;
    const data = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
    const opts = { ...o, out: data };
    const run = () => void perTokenCastWithPrecomputedSf(x, sf, opts);
    const first = new FirstOutput("g128");
    for (const s of SETTINGS) {
      apply(s);
      run();
      const l = perTokenLastLaunch();
      if (l.fn !== kernelFunction("bench", DEV, s.symbol) || l.pdl !== (s.ring !== 0 && s.pdl && config.pdl)) {
        failures++;
        console.log(`FAIL ${T}x${H} ${s.name}: another launch (fn ${l.fn}, pdl ${l.pdl})`);
      }
      failures += first.check(await hostBytes(data), `${T}x${H} ${s.name}`);
    }
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, apply, run);
    const bytes = 3 * T * H + T * (H / 128) * 4;
    const base = med.get("g128")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.ring !== 0 ? `\tΔ ${(v - base).toFixed(2)} µs` : "";
      console.log(
        `perTokenCastWithPrecomputedSf bf16→e4m3 128 fp32 sf ${T}x${H}\t${s.name.padEnd(8)}\t${v.toFixed(2)} µs\t${
          pct.toFixed(1)
        }%${delta}`,
      );
      if (s.ring !== 0 && v < base) wins.set(s.name, [...(wins.get(s.name) ?? []), T]);
    }
    for (const t of [x, sf, data]) t.dispose();
  }
  for (const s of SETTINGS) {
    if (s.ring === 0) continue;
    console.log(`${s.name}: beats g128 at ${(wins.get(s.name) ?? []).join(", ") || "no size"}`);
  }
} finally {
  Object.assign(perTokenLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "ptps25_tuning: the rings' outputs equal g128's at every size");

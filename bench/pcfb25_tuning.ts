/**
 * perChannelCastFused bf16, gathered by the roofline's permutation (bench/cases_more.ts: output row p reads input
 * row (p · 7919) mod T) → e4m3 [128,1], fp32 sf, the roofline's case 'bf16 gathered → e4m3 [128,1]': the base
 * kernel `tk_per_channel_cast__bf16_r128` against round 25's ring `_rg` (docs/perf-notes/perf25-pcfb.md: persistent
 * grid, thread-private 3-stage cp.async ring of 128 × 128 tiles, 2 CTAs per SM), interleaved in one process.
 * Settings: "base" (perChannelLaunchTuning.pipelinedBf16 "") and "rg" ("_rg", the default since the twentieth run). Sizes: PCFB_TOKENS
 * (default "8192,16384") tokens × 7168; PCFB_GATHER=0 measures the op without posToToken (no index read; "rg" with
 * perChannelLaunchTuning.ringUngathered set, which the script sets for both cases).
 *
 * Each figure: {@link interleavedMedians} over 5 rounds (20 calls after a lead copy, median of 7, per round). % is
 * of the same run's cuMemcpyDtoD (1 GiB, read + write) for the roofline's bytes: read 2·T·H + 4·T indices, write
 * T·H codes and (T/128)·H fp32 scales. The output bytes (data and sf) of "rg" are compared with "base"'s; a
 * difference is printed as a failure and the script exits 1 (the loop: bench/per_channel_ab.ts).
 *
 * `deno run -A --no-check bench/pcfb25_tuning.ts` (or `bun bench/pcfb25_tuning.ts`).
 * @module
 */
import process from "node:process";
import { perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { randomBf16 } from "./common.ts";
import { perChannelFusedAB } from "./per_channel_ab.ts";

const TOKENS = (process.env.PCFB_TOKENS ?? "8192,16384").split(",").map(Number);
// PCFB_GATHER=0: the same op without posToToken (every row once, in order)
const GATHER = process.env.PCFB_GATHER !== "0";
// "rg" must run `_rg` without a gather too (ringUngathered: off by default since the twenty-first run; gathered calls
// ignore it)
perChannelLaunchTuning.ringUngathered = true;
await perChannelFusedAB({
  script: "pcfb25_tuning",
  knob: "pipelinedBf16",
  settings: [
    { name: "base", form: "", sym: "tk_per_channel_cast__bf16_r128" },
    { name: "rg", form: "_rg", sym: "tk_per_channel_cast__bf16_r128_rg" },
  ],
  tokens: TOKENS,
  input: (T) => randomBf16(T, 7168, T),
  gather: GATHER,
  extra: {},
  bytes: (T, H) => 2 * T * H + (GATHER ? 4 * T : 0) + T * H + Math.ceil(T / 128) * H * 4,
  label: GATHER ? "bf16 gathered → e4m3 [128,1]" : "bf16 (no gather) → e4m3 [128,1]",
  ok: "pcfb25_tuning: ok (data and sf of base and rg identical)",
});

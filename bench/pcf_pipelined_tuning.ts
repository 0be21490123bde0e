/**
 * perChannelCastFused of an e4m3 input with fp32 [1,128] scales, gathered by the roofline's permutation
 * (bench/cases_more.ts: output row p reads input row (p · 7919) mod T) → e4m3 [128,1], fp32 sf: the base kernel
 * `tk_per_channel_cast__e4m3_r128` and round 20's 128 × 512 form `_pr`
 * (docs/perf-notes/perf20-pcf.md; 1 CTA of 1024 threads per SM, each CTA walking a contiguous run of tiles; the
 * default since round 20), interleaved in one process at 8192 and 16384 tokens × 7168. Settings: "base"
 * (perChannelLaunchTuning.pipelinedE4m3 "") and "pr" ("_pr"). This script merges bench/pcf19_tuning.ts (base against
 * pw) and bench/pcf20_tuning.ts (pw against pr); round 19's "pw" (`_r128_pw`: 128 × 256 tiles, 2 CTAs per SM,
 * docs/perf-notes/perf19-pcf.md) left with its kernel in trim24.
 *
 * Each figure: {@link interleavedMedians} over 5 rounds (20 calls after a lead copy, median of 7, per round). % is
 * of the same run's cuMemcpyDtoD (1 GiB, read + write) for the roofline's bytes: read T·H codes + T·56·4 scales + 4·T
 * indices, write T·H codes + (T/128)·H·4 scales. The output bytes (data and sf) of "pr" are compared with "base"'s;
 * a difference is printed as a failure and the script exits 1 (the loop: bench/per_channel_ab.ts).
 *
 * `deno run -A --no-check bench/pcf_pipelined_tuning.ts` (or `bun bench/pcf_pipelined_tuning.ts`).
 * @module
 */
import { perTokenCast, type Quantized } from "../mod.ts";
import { randomBf16 } from "./common.ts";
import { perChannelFusedAB } from "./per_channel_ab.ts";

await perChannelFusedAB({
  script: "pcf_pipelined_tuning",
  knob: "pipelinedE4m3",
  settings: [
    { name: "base", form: "", sym: "tk_per_channel_cast__e4m3_r128" },
    { name: "pr", form: "_pr", sym: "tk_per_channel_cast__e4m3_r128_pr" },
  ],
  tokens: [8192, 16384],
  input: (T) => {
    const xb = randomBf16(T, 7168, T + 20);
    const q = perTokenCast(xb, { fmt: "e4m3", numPerChannels: 128 }) as Quantized;
    xb.dispose();
    return q;
  },
  gather: true,
  extra: { numPerChannels: 128 },
  bytes: (T, H) => T * H + T * (H / 128) * 4 + 4 * T + T * H + (T / 128) * H * 4,
  label: "e4m3 [1,128] gathered → e4m3 [128,1]",
  ok: "pcf_pipelined_tuning: ok (data and sf of the two forms identical)",
});

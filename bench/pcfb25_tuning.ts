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
 * difference is printed as a failure and the script exits 1.
 *
 * `deno run -A --no-check bench/pcfb25_tuning.ts` (or `bun bench/pcfb25_tuning.ts`).
 * @module
 */
import { type DeviceTensor, perChannelCastFused, tensor } from "../mod.ts";
import { deviceEmptyStrided, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { perChannelLastSymbol, perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { abStart, abVerdict, DEV, firstDifference, hostBytes, interleavedMedians, randomBf16 } from "./common.ts";

const { stream, timer, copy } = abStart("pcfb25_tuning");
const H = 7168;
const ROUNDS = 5;
const TOKENS = (process.env.PCFB_TOKENS ?? "8192,16384").split(",").map(Number);
// PCFB_GATHER=0: the same op without posToToken (every row once, in order)
const GATHER = process.env.PCFB_GATHER !== "0";
// "rg" must run `_rg` without a gather too (ringUngathered: off by default since the twenty-first run; gathered calls
// ignore it)
perChannelLaunchTuning.ringUngathered = true;
const CASE = GATHER ? "bf16 gathered → e4m3 [128,1]" : "bf16 (no gather) → e4m3 [128,1]";
const SETTINGS = [
  { name: "base", form: "", sym: "tk_per_channel_cast__bf16_r128" },
  { name: "rg", form: "_rg", sym: "tk_per_channel_cast__bf16_r128_rg" },
] as const;
const saved = { ...perChannelLaunchTuning };
let failures = 0;

try {
  for (const T of TOKENS) {
    const x = randomBf16(T, H, T);
    const pos = toDevice(tensor(Int32Array.from({ length: T }, (_, p) => (p * 7919) % T), [T], "int32")) as DeviceTensor;
    const tOut = Math.ceil(T / 128);
    const outs = SETTINGS.map(() => ({
      data: deviceEmptyStrided("bench", DEV, [T, H], [H, 1], "e4m3", T * H, stream) as DeviceTensor,
      sf: deviceEmptyStrided("bench", DEV, [tOut, H], [H, 1], "fp32", tOut * H, stream) as DeviceTensor,
    }));
    const optsOf = (i: number) => ({ fmt: "e4m3", numPerTokens: 128, ...(GATHER ? { posToToken: pos } : {}), out: outs[i] }) as const;
    let cur = 0;
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => {
      perChannelLaunchTuning.pipelinedBf16 = s.form;
      cur = SETTINGS.indexOf(s);
    }, () => void perChannelCastFused(x, optsOf(cur)));
    const bytes = 2 * T * H + (GATHER ? 4 * T : 0) + T * H + tOut * H * 4;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      console.log(`perChannelCastFused ${T}x${H} ${CASE}\t${s.name.padEnd(4)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%`);
    }
    // one more call of each form (the kernel checked), then rg's outputs compared with base's byte for byte
    SETTINGS.forEach((s, i) => {
      perChannelLaunchTuning.pipelinedBf16 = s.form;
      perChannelCastFused(x, optsOf(i));
      if (perChannelLastSymbol() !== s.sym) {
        failures++;
        console.log(`FAIL ${T}x${H} ${s.name}: ran ${perChannelLastSymbol()}, expected ${s.sym}`);
      }
    });
    for (const k of ["data", "sf"] as const) {
      const ref = await hostBytes(outs[0][k]);
      for (let i = 1; i < SETTINGS.length; i++) {
        const bad = firstDifference(ref, await hostBytes(outs[i][k]));
        if (bad >= 0) {
          failures++;
          console.log(`FAIL ${T}x${H} ${SETTINGS[i].name}: ${k} differs from base's at byte ${bad}`);
        }
      }
    }
    for (const o of outs) [o.data, o.sf].forEach((t) => t.dispose());
    x.dispose();
    pos.dispose();
  }
} finally {
  Object.assign(perChannelLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "pcfb25_tuning: ok (data and sf of base and rg identical)");

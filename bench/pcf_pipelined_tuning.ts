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
 * indices, write T·H codes + (T/128)·H·4 scales. The output bytes (data and sf) of "pr" are compared with "base"'s; a difference is printed as a failure and the script exits 1.
 *
 * `deno run -A --no-check bench/pcf_pipelined_tuning.ts` (or `bun bench/pcf_pipelined_tuning.ts`).
 * @module
 */
import { type DeviceTensor, perChannelCastFused, perTokenCast, type Quantized, tensor } from "../mod.ts";
import { deviceEmptyStrided, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { perChannelLastSymbol, perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { abStart, abVerdict, DEV, firstDifference, hostBytes, interleavedMedians, randomBf16 } from "./common.ts";

const { stream, timer, copy } = abStart("pcf_pipelined_tuning");
const H = 7168;
const ROUNDS = 5;
const SETTINGS = [
  { name: "base", form: "", sym: "tk_per_channel_cast__e4m3_r128" },
  { name: "pr", form: "_pr", sym: "tk_per_channel_cast__e4m3_r128_pr" },
] as const;
const saved = { ...perChannelLaunchTuning };
let failures = 0;

try {
  for (const T of [8192, 16384]) {
    const xb = randomBf16(T, H, T + 20);
    const q = perTokenCast(xb, { fmt: "e4m3", numPerChannels: 128 }) as Quantized;
    xb.dispose();
    const pos = toDevice(tensor(Int32Array.from({ length: T }, (_, p) => (p * 7919) % T), [T], "int32")) as DeviceTensor;
    const outs = SETTINGS.map(() => ({
      data: deviceEmptyStrided("bench", DEV, [T, H], [H, 1], "e4m3", T * H, stream) as DeviceTensor,
      sf: deviceEmptyStrided("bench", DEV, [T / 128, H], [H, 1], "fp32", (T / 128) * H, stream) as DeviceTensor,
    }));
    const optsOf = (i: number) =>
      ({ fmt: "e4m3", numPerTokens: 128, numPerChannels: 128, posToToken: pos, out: outs[i] }) as const;
    let cur = 0;
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => {
      perChannelLaunchTuning.pipelinedE4m3 = s.form;
      cur = SETTINGS.indexOf(s);
    }, () => void perChannelCastFused(q, optsOf(cur)));
    const bytes = T * H + T * (H / 128) * 4 + 4 * T + T * H + (T / 128) * H * 4;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      console.log(`perChannelCastFused ${T}x${H} e4m3 [1,128] gathered → e4m3 [128,1]\t${s.name.padEnd(4)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%`);
    }
    // one more call of each form (the kernel checked), then each form's outputs compared with base's byte for byte
    SETTINGS.forEach((s, i) => {
      perChannelLaunchTuning.pipelinedE4m3 = s.form;
      perChannelCastFused(q, optsOf(i));
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
    (q[0] as DeviceTensor).dispose();
    (q[1] as DeviceTensor).dispose();
    pos.dispose();
  }
} finally {
  Object.assign(perChannelLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "pcf_pipelined_tuning: ok (data and sf of the three forms identical)");

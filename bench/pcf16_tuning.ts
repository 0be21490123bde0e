/**
 * perChannelCastFused of an e4m3 input with fp32 [1,128] scales, gathered by the roofline's permutation
 * (bench/cases_more.ts: output row p reads input row (p · 7919) mod T) → e4m3 [128,1], fp32 sf: main's base kernel
 * `tk_per_channel_cast__e4m3_r128` against round 16's `tk_per_channel_cast__e4m3_r128_sm` (the tile staged in
 * shared memory by cp.async, 8 CTAs per SM; docs/perf-notes/perf16-pcf.md), interleaved in one process at 8192 and
 * 16384 tokens × 7168. Settings: "base" (perChannelLaunchTuning.stagedE4m3 off) and "sm" (on), both with
 * pipelinedE4m3 "" (round 19's default `_pw` would run otherwise; bench/pcf19_tuning.ts compares it with "sm").
 *
 * Each figure: {@link interleavedMedians} over 5 rounds (20 calls after a lead copy, median of 7, per round). % is
 * of the same run's cuMemcpyDtoD (1 GiB, read + write) for the roofline's bytes: read T·H codes + T·56·4 scales + 4·T
 * indices, write T·H codes + (T/128)·H·4 scales. The output bytes (data and sf) of the two forms are compared; a
 * difference is printed as a failure and the script exits 1.
 *
 * `deno run -A --no-check bench/pcf16_tuning.ts` (or `bun bench/pcf16_tuning.ts`).
 * @module
 */
import { type DeviceTensor, perChannelCastFused, perTokenCast, type Quantized, tensor, toHost } from "../mod.ts";
import { deviceEmptyStrided, type HostTensor, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { perChannelLastSymbol, perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { abStart, abVerdict, DEV, firstDifference, interleavedMedians, randomBf16 } from "./common.ts";

const { stream, timer, copy } = abStart("pcf16_tuning");
const H = 7168;
const ROUNDS = 5;
const SETTINGS = [
  { name: "base", on: false, sym: "tk_per_channel_cast__e4m3_r128" },
  { name: "sm", on: true, sym: "tk_per_channel_cast__e4m3_r128_sm" },
] as const;
const saved = { ...perChannelLaunchTuning };
let failures = 0;

const bytesOf = async (t: DeviceTensor) => {
  const d = ((await toHost(t)) as HostTensor).data;
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
};

try {
  perChannelLaunchTuning.pipelinedE4m3 = "";
  for (const T of [8192, 16384]) {
    const xb = randomBf16(T, H, T + 16);
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
      perChannelLaunchTuning.stagedE4m3 = s.on;
      cur = SETTINGS.indexOf(s);
    }, () => void perChannelCastFused(q, optsOf(cur)));
    const bytes = T * H + T * (H / 128) * 4 + 4 * T + T * H + (T / 128) * H * 4;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      console.log(`perChannelCastFused ${T}x${H} e4m3 [1,128] gathered → e4m3 [128,1]\t${s.name.padEnd(4)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%`);
    }
    // one more call of each form (the kernel checked), then the two forms' outputs compared byte for byte
    SETTINGS.forEach((s, i) => {
      perChannelLaunchTuning.stagedE4m3 = s.on;
      perChannelCastFused(q, optsOf(i));
      if (perChannelLastSymbol() !== s.sym) {
        failures++;
        console.log(`FAIL ${T}x${H} ${s.name}: ran ${perChannelLastSymbol()}, expected ${s.sym}`);
      }
    });
    for (const k of ["data", "sf"] as const) {
      const ref = await bytesOf(outs[0][k]);
      const got = await bytesOf(outs[1][k]);
      const bad = firstDifference(ref, got);
      if (bad >= 0) {
        failures++;
        console.log(`FAIL ${T}x${H} sm: ${k} differs from base's at byte ${bad}`);
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
abVerdict(failures, "pcf16_tuning: ok (data and sf of the two forms identical)");

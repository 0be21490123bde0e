/**
 * perBlockCastLossless's data launch, main's `__data` against `__data_a` (`losslessLaunchTuning.dataAligned`;
 * docs/perf-notes/perf11-lsl.md), in one process: the roofline's cases (bench/cases_more.ts): MXFP4 input (e2m1x2
 * codes with fp32 power-of-two scales [1, 32], made by perTokenCast from random bf16) → e4m3 [128, 128] with fp32
 * scales or packed UE8M0 (TMA-aligned column-major), 4096, 8192 and 16384 tokens × 7168. Settings:
 * - "main":   knob off: `tk_per_block_cast_lossless__sf` then `__data` (main's form before round 11);
 * - "data_a": knob on (the default since round 11): `__sf` then `__data_a`.
 *
 * Each figure: 20 calls into preallocated outputs after a lead copy of 2 GiB, the median of 7 repetitions
 * (LeadTimer); the settings interleaved over 5 rounds, the median of the rounds printed. % is of the same run's
 * cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes the roofline counts: T·H/2 codes + the input scales read,
 * T·H e4m3 bytes + the output scales written. Δ is the row's time minus main's, per call. The output bytes (data
 * and scales, whole allocations) of the two settings are compared: a difference prints FAIL and exits 1.
 *
 * `deno run -A --no-check bench/lsl11_tuning.ts` (or `bun bench/lsl11_tuning.ts`).
 * @module
 */
import process from "node:process";
import { type DeviceTensor, devices, perBlockCastLossless, perTokenCast, type Quantized } from "../mod.ts";
import { deviceRuntime, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { lastLosslessDataKernel, losslessLaunchTuning } from "../ops/quant/per_block_cast_lossless.ts";
import { copyRateGBs, DEV, hostBytes, LeadTimer, randomBf16Host } from "./common.ts";

if (devices().length === 0) {
  console.log("lsl11_tuning needs a CUDA device; none found");
  process.exit(0);
}
const H = 7168;
const ROUNDS = 5;
const SETTINGS = [
  { name: "main", on: false, kernel: "tk_per_block_cast_lossless__data" },
  { name: "data_a", on: true, kernel: "tk_per_block_cast_lossless__data_a" },
] as const;
const VARIANTS = [
  { name: "fp32-sf", o: { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128] } as const },
  {
    name: "packed-ue8m0",
    o: { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128], roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const,
  },
];

/** The storage bytes of an sf grid, as bench/cases_more.ts counts them. */
function sfBytes(nbm: number, nbk: number, packed: boolean, colMajor: boolean): number {
  const cols = packed ? Math.ceil(nbk / 4) : nbk;
  return (colMajor ? Math.ceil(nbm / 4) * 4 : nbm) * cols * 4;
}

const rt = deviceRuntime("bench");
const stream = rt.defaultStream(DEV);
const timer = new LeadTimer(); // 20 calls after a 2-GiB lead copy, median of 7
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const saved = losslessLaunchTuning.dataAligned;
let failures = 0;

try {
  for (const T of [4096, 8192, 16384]) {
    const xd = toDevice(randomBf16Host(T, H, T + 11)) as DeviceTensor;
    const q = perTokenCast(xd, { fmt: "e2m1", numPerChannels: 32, roundSf: true }) as Quantized;
    xd.dispose();
    for (const v of VARIANTS) {
      // one pair of outputs per setting, so that the bytes of both can be compared at the end
      const outs = SETTINGS.map((s) => {
        losslessLaunchTuning.dataAligned = s.on;
        const [data, sf] = perBlockCastLossless(q, v.o) as [DeviceTensor, DeviceTensor];
        if (lastLosslessDataKernel() !== s.kernel) {
          failures++;
          console.log(`FAIL ${T}x${H} ${v.name} ${s.name}: launched ${lastLosslessDataKernel()}, not ${s.kernel}`);
        }
        return { data, sf, opts: { ...v.o, out: { data, sf } } };
      });
      const us = new Map<string, number[]>();
      for (let round = 0; round < ROUNDS; round++) {
        SETTINGS.forEach((s, i) => {
          losslessLaunchTuning.dataAligned = s.on;
          const opts = outs[i].opts;
          us.set(s.name, [...(us.get(s.name) ?? []), timer.timeUs(stream, () => void perBlockCastLossless(q, opts))]);
        });
      }
      losslessLaunchTuning.dataAligned = saved;
      const packed = v.name === "packed-ue8m0";
      const bytes = (T * H) / 2 + sfBytes(T, H / 32, false, false) + T * H + sfBytes(T / 128, H / 128, packed, packed);
      const med = (name: string) => us.get(name)!.sort((a, b) => a - b)[ROUNDS >> 1];
      const base = med("main");
      for (const s of SETTINGS) {
        const t = med(s.name);
        const pct = (100 * bytes) / (t * 1e3) / copy.gbps;
        const delta = s.name === "main" ? "" : `\tΔ ${(t - base).toFixed(2)} µs`;
        console.log(`perBlockCastLossless ${T}x${H} e2m1 [1,32] → e4m3 128x128 ${v.name.padEnd(12)}\t${s.name.padEnd(6)}\t${t.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      }
      for (const part of ["data", "sf"] as const) {
        const ref = await hostBytes(outs[0][part]);
        const got = await hostBytes(outs[1][part]);
        let bad = got.length === ref.length ? -1 : 0;
        for (let j = 0; j < ref.length && bad < 0; j++) if (ref[j] !== got[j]) bad = j;
        if (bad >= 0) {
          failures++;
          console.log(`FAIL ${T}x${H} ${v.name}: data_a's ${part} differs from main's at byte ${bad}`);
        }
      }
      for (const o of outs) {
        o.data.dispose();
        o.sf.dispose();
      }
    }
    (q[0] as DeviceTensor).dispose();
    (q[1] as DeviceTensor).dispose();
  }
} finally {
  losslessLaunchTuning.dataAligned = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
console.log(failures > 0 ? `${failures} FAIL` : "bytes: data_a = main for every case");
if (failures > 0) process.exit(1);

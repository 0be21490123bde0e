/**
 * perTokenCastAndCastBack's default kernel with and without programmatic dependent launch, in one process
 * (docs/perf-notes/perf10-pcb.md): bf16 in place, e4m3, groups of 128 (the roofline's case, bench/cases_elem.ts),
 * 4096, 8192 and 16384 tokens × 7168, where `tk_per_token_cast_and_cast_back__bf16_e4m3_g128_r1` runs (one row per
 * 512-thread block, grid = rows). Settings:
 * - "r1":       `config.pdl = false`: a plain launch;
 * - "r1+pdl":   `config.pdl = true` (the default): launched with the PDL attribute.
 * (The branch's A/B also ran main's `_g128` on these rows, through a knob that went when `_r1` landed as the default;
 * its figures are in the perf note.)
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy of 2 GiB (so that the calls are
 * queued before the GPU reaches them: PDL only overlaps launches the GPU already holds), the median of 7
 * repetitions; the settings interleaved over 5 rounds, the median of the rounds printed. % is of the same run's
 * cuMemcpyDtoD (1 GiB, read + write bytes) for 4·T·H bytes (read and write of x), as the roofline counts it; Δ is
 * the row's time minus the plain launch's, per call. The bytes of x after each setting's calls are compared with the
 * plain launch's (the same 20·(7+3)·5 + … calls from the same start: any difference is printed as a failure).
 *
 * `deno run -A --no-check bench/pcb10_tuning.ts` (or `bun bench/pcb10_tuning.ts`).
 * @module
 */
import process from "node:process";
import { type DeviceTensor, devices, perTokenCastAndCastBack, toHost } from "../mod.ts";
import { deviceRuntime, type HostTensor, toDevice } from "../core/tensor.ts";
import { config } from "../core/config.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { copyRateGBs, DEV, LeadTimer, randomBf16Host } from "./common.ts";

if (devices().length === 0) {
  console.log("pcb10_tuning needs a CUDA device; none found");
  process.exit(0);
}
const H = 7168;
const ROUNDS = 5;
const SETTINGS = [
  { name: "r1", pdl: false },
  { name: "r1+pdl", pdl: true },
] as const;
const OPTS = { fmt: "e4m3", numPerChannels: 128 } as const;

const rt = deviceRuntime("bench");
const stream = rt.defaultStream(DEV);
const timer = new LeadTimer() // 20 calls after a 2-GiB lead copy, median of 7;


const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const saved = config.pdl;
let failures = 0;

try {
  for (const T of [4096, 8192, 16384]) {
    const host = randomBf16Host(T, H, T + 1);
    // one copy of x per setting, all from the same start, so that the calls see the same values
    const xs = SETTINGS.map(() => toDevice(host) as DeviceTensor);
    const us = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      SETTINGS.forEach((s, i) => {
        config.pdl = s.pdl;
        const x = xs[i];
        us.set(s.name, [...(us.get(s.name) ?? []), timer.timeUs(stream, () => void perTokenCastAndCastBack(x, OPTS))]);
      });
    }
    config.pdl = saved;
    const bytes = 4 * T * H;
    const med = (name: string) => us.get(name)!.sort((a, b) => a - b)[ROUNDS >> 1];
    const base = med("r1");
    for (const s of SETTINGS) {
      const v = med(s.name);
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.name === "r1" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`perTokenCastAndCastBack ${T}x${H} bf16 e4m3 [1,128]\t${s.name.padEnd(7)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    // every setting ran the same number of calls on its own copy: the bytes must agree with the plain launch's
    const bytesOf = async (x: DeviceTensor) => {
      const d = ((await toHost(x)) as HostTensor).data;
      return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
    };
    const ref = await bytesOf(xs[0]);
    for (let i = 1; i < SETTINGS.length; i++) {
      const got = await bytesOf(xs[i]);
      let bad = -1;
      for (let j = 0; j < ref.length && bad < 0; j++) if (ref[j] !== got[j]) bad = j;
      if (bad >= 0 || got.length !== ref.length) {
        failures++;
        console.log(`FAIL ${T}x${H} ${SETTINGS[i].name}: x differs from r1's at byte ${bad}`);
      }
    }
    for (const x of xs) x.dispose();
  }
} finally {
  config.pdl = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
if (failures > 0) process.exit(1);

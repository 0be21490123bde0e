/**
 * perTokenCast bf16 → MXFP4 (e2m1 [1,32], roundSf): main's `_g32_u4sca` against round 26's `_g32_mxw`
 * (per_token_cast_fp4_26.cu; docs/perf-notes/perf26-fp4.md), in one process, at 8192 and 16384 × 7168 (FP4_TOKENS,
 * comma-separated, for other sizes). Settings (perTokenLaunchTuning.mxfp4Wide, restored at the end): "main" off,
 * "mxw" on. Cases: the roofline's packed UE8M0 column-major (TMA) sf of bench/cases_more.ts, and packed row-major.
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy (LeadTimer of bench/common.ts),
 * the median of 7 repetitions; the settings interleaved over 5 rounds (rotated order), the median of the rounds
 * printed. % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes bench/cases_more.ts counts
 * (read 2TH, write TH/2 + the sf 4·align(T, 4)·H/128). The data and sf of both settings are compared on random bf16
 * rows (with NaN, ±Inf, ±0 and subnormals written in) at each size: a difference prints FAIL and the script exits 1.
 * Without a GPU it prints a skip line and exits 0.
 *
 * `deno run -A --no-check bench/fp4_26_tuning.ts` (or `bun bench/fp4_26_tuning.ts`).
 * @module
 */
import process from "node:process";
import { type DeviceTensor, perTokenCast, toHost } from "../mod.ts";
import { type HostTensor, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians, randomBf16Host } from "./common.ts";

const { stream, timer, copy } = abStart("fp4_26_tuning");
const H = 7168;
const ROUNDS = 5;
const SETTINGS: readonly { name: string; on: boolean }[] = [
  { name: "main", on: false },
  { name: "mxw", on: true },
];
const TOKENS = (process.env.FP4_TOKENS ?? "8192,16384").split(",").map(Number);
const CASES = [
  {
    name: "MXFP4 [1,32] packed-ue8m0 col",
    o: { fmt: "e2m1", numPerChannels: 32, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const,
    sfBytes: (T: number) => 4 * (Math.ceil(T / 4) * 4) * Math.ceil(H / 128),
  },
  {
    name: "MXFP4 [1,32] packed-ue8m0 row",
    o: { fmt: "e2m1", numPerChannels: 32, roundSf: true, usePackedUe8m0: true } as const,
    sfBytes: (T: number) => 4 * T * Math.ceil(H / 128),
  },
];

const saved = perTokenLaunchTuning.mxfp4Wide;
let failures = 0;

function bytesOf(h: HostTensor): Uint8Array {
  return new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength);
}

try {
  for (const T of TOKENS) {
    const hx = randomBf16Host(T, H, T + 17);
    const d16 = hx.data as Uint16Array;
    const sp = [0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0001, 0x8033, 0xffa5];
    for (let i = 5; i < d16.length; i += 9973) d16[i] = sp[i % sp.length];
    const x = toDevice(hx) as DeviceTensor;
    for (const c of CASES) {
      const [data, sf] = perTokenCast(x, c.o) as [DeviceTensor, DeviceTensor];
      const o = { ...c.o, out: { data, sf } };
      let ref: Uint8Array[] | null = null;
      for (const s of SETTINGS) {
        perTokenLaunchTuning.mxfp4Wide = s.on;
        perTokenCast(x, o);
        const got = [bytesOf((await toHost(data)) as HostTensor).slice(), bytesOf((await toHost(sf)) as HostTensor).slice()];
        if (ref === null) {
          ref = got;
          continue;
        }
        for (let k = 0; k < 2; k++) {
          const bad = firstDifference(got[k], ref[k]);
          if (bad >= 0) {
            failures++;
            console.log(`FAIL perTokenCast ${c.name} ${T}x${H} ${s.name}: ${k === 0 ? "data" : "sf"} differs from main's at byte ${bad} (${got[k][bad]} vs ${ref[k][bad]})`);
          }
        }
      }
      const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => void (perTokenLaunchTuning.mxfp4Wide = s.on), () => void perTokenCast(x, o));
      perTokenLaunchTuning.mxfp4Wide = saved;
      const bytes = 2 * T * H + (T * H) / 2 + c.sfBytes(T);
      const base = med.get("main")!;
      for (const s of SETTINGS) {
        const v = med.get(s.name)!;
        const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
        const delta = s.name === "main" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
        console.log(`perTokenCast bf16→e2m1 ${c.name} ${T}x${H}\t${s.name.padEnd(5)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      }
      data.dispose();
      sf.dispose();
    }
    x.dispose();
  }
} finally {
  perTokenLaunchTuning.mxfp4Wide = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "fp4_26_tuning: mxw's outputs equal main's");

/**
 * A/B of perTokenCast with programmatic dependent launch in one process (docs/perf-notes/perf9-pdl.md): bf16 → e4m3,
 * groups of 128, fp32 and packed UE8M0 scales (bench/common.ts CASES, as bench/roofline.ts), 4096, 8192 and 16384
 * tokens × 7168, under `config.pdl` false (`_g128` / `_g128_pkl`, plain launches: the row "main") and true (its
 * default: `_g128_pdl` / `_g128_pkl_pdl` launched with the PDL attribute: the row "pdl").
 *
 * Each figure: N = 20 calls on one stream between two events, after a lead copy of 2 GiB on that stream (~1 ms) (so that the
 * calls are all queued before the GPU reaches them: PDL can only overlap a launch the GPU already holds), the median
 * of 7 repetitions; the settings interleaved over 5 rounds, the median of the rounds printed. Three patterns:
 * - "back-to-back": the N casts alone (the roofline's pattern; each cast's previous kernel is a cast);
 * - "+ copy": a 4 KiB device copy after each cast (the cast's previous stream operation is a copy);
 * - "+ kernel": a 1 × 7168 perTokenCastBack after each cast (the previous kernel is a plain launch of another
 *   kernel, without griddepcontrol).
 * On the default (legacy) stream and on a created non-blocking stream. % is of the same run's cuMemcpyDtoD (1 GiB,
 * read + write bytes), counting the cast's bytes only (so the "+" rows include the small op's time); Δ is the PDL
 * row's time minus main's, per call.
 *
 * `deno run -A --no-check bench/pdl_tuning.ts` (or `bun bench/pdl_tuning.ts`). Measured on an H200 2026-12-01 (branch
 * perf9-pdl, whose "main" row was its knob off): docs/perf-notes/perf9-pdl.md, "Measured".
 * @module
 */
import process from "node:process";
import { createStream, type DeviceTensor, devices, empty, perTokenCast, perTokenCastBack, type Quantized } from "../mod.ts";
import { deviceRuntime, type Stream } from "../core/tensor.ts";
import { config } from "../core/config.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { CASES, castBytes, copyRateGBs, DEV, LeadTimer, randomBf16 } from "./common.ts";

if (devices().length === 0) {
  console.log("pdl_tuning needs a CUDA device; none found");
  process.exit(0);
}
const H = 7168;
const ROUNDS = 5;
const SETTINGS = [
  { name: "main", pdl: false },
  { name: "pdl", pdl: true },
] as const;
const PATTERNS = ["back-to-back", "+ copy", "+ kernel"] as const;

const rt = deviceRuntime("bench");
const timer = new LeadTimer() // 20 calls after a 2-GiB lead copy, median of 7;


const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const savedPdl = config.pdl;
const created = createStream(0);
const streams: [string, Stream][] = [["default stream", rt.defaultStream(DEV)], ["created stream", created]];
// the small ops between casts
const small = { src: empty([4096], "uint8", { device: 0 }) as DeviceTensor, dst: empty([4096], "uint8", { device: 0 }) as DeviceTensor };
const smallX = randomBf16(1, H, 7);
const smallPair = perTokenCast(smallX, { fmt: "e4m3", numPerChannels: 128 }) as [DeviceTensor, DeviceTensor];
const smallOut = empty([1, H], "bf16", { device: 0 }) as DeviceTensor;

try {
  for (const T of [4096, 8192, 16384]) {
    const x = randomBf16(T, H);
    const us = new Map<string, number[]>();
    const runs = CASES.map((c) => {
      const data = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
      const [d0, sf] = perTokenCast(x, c.opts) as Quantized;
      d0.dispose();
      return { c, data, sf: sf as DeviceTensor };
    });
    for (let round = 0; round < ROUNDS; round++) {
      for (const r of runs) {
        for (const [sname, stream] of streams) {
          // one options object per stream: the calls after the first take the replay path (as in a loop)
          const opts = { ...r.c.opts, stream, out: { data: r.data, sf: r.sf } };
          const backOpts = { fmt: "bf16", numPerChannels: 128, out: smallOut, stream } as const;
          const cast = () => void perTokenCast(x, opts);
          const fs: Record<(typeof PATTERNS)[number], () => void> = {
            "back-to-back": cast,
            "+ copy": () => {
              cast();
              rt.copyDtoD(DEV, small.dst.addr, small.src.addr, 4096, stream);
            },
            "+ kernel": () => {
              cast();
              perTokenCastBack(smallPair, backOpts);
            },
          };
          for (const pat of PATTERNS) {
            for (const s of SETTINGS) {
              config.pdl = s.pdl;
              const k = `${r.c.name}\t${sname}\t${pat}\t${s.name}`;
              us.set(k, [...(us.get(k) ?? []), timer.timeUs(stream, fs[pat])]);
            }
          }
        }
      }
    }
    config.pdl = savedPdl;
    for (const r of runs) {
      const bytes = castBytes(T, H, !!r.c.opts.usePackedUe8m0);
      for (const [sname] of streams) {
        for (const pat of PATTERNS) {
          const med: Record<string, number> = {};
          for (const s of SETTINGS) {
            med[s.name] = us.get(`${r.c.name}\t${sname}\t${pat}\t${s.name}`)!.sort((a, b) => a - b)[ROUNDS >> 1];
          }
          for (const s of SETTINGS) {
            const v = med[s.name];
            const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
            const delta = s.pdl ? `\tΔ ${(v - med.main).toFixed(2)} µs` : "";
            console.log(`perTokenCast ${T}x${H} ${r.c.name.padEnd(13)}\t${sname}\t${pat.padEnd(12)}\t${s.name.padEnd(4)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
          }
        }
      }
      r.data.dispose();
      r.sf.dispose();
    }
    x.dispose();
  }
} finally {
  config.pdl = savedPdl;
  syncAndCheck(0, created.handle);
  created[Symbol.dispose]();
  timer.dispose();
  for (const t of [small.src, small.dst, smallX, smallOut, ...smallPair]) t.dispose();
}

/**
 * A/B of programmatic dependent launch (docs/perf-notes/perf10-pdl.md) in one process, on the launches that carry
 * the PDL attribute since round 10: the roofline's cases (bench/cases_norm.ts, cases_swiglu.ts, cases_more.ts; the
 * same calls, shapes and bytes as bench/roofline.ts) of normForward (`_tp16hr`), normForwardAndPerTokenCast
 * (`_e4m3_g128_br4a`), addRmsnormForwardAndPerTokenCast (`_e4m3_g128_wr_resa` then; `_tp16c_res` since round 11), swigluForward (`_an`),
 * swigluForwardAndPerTokenCast (`_e4m3_g128_anl`) and swigluBackward (`_a`), and (bench/cases_elem.ts,
 * cases_per_block.ts, cases_more.ts) castBack e4m3 → bf16 ([128, 128] and [1, 128]) and perTokenCastBack e4m3 → bf16
 * (`tk_cast_back_seg__e4m3_bf16`), and perBlockCastWithSfOnly bf16 → e4m3 128 × 128, at 8192 and 16384 tokens × 7168,
 * under `config.pdl` false (the same kernels launched plainly: griddepcontrol has no effect; the row "off") and true
 * (its default: launched with the PDL attribute; the row "pdl"). The element casts, perBlockCast and
 * perBlockCastWithPrecomputedSf, whose PDL launches lost or tied (perf10-pdl.md, Measured), never carry the
 * attribute: both rows would be the same launch, so they are not listed.
 *
 * Each figure: N = 20 calls on the default stream (the roofline's) between two events, after a lead copy of 2 GiB
 * on that stream (~1 ms) (so that the calls are all queued before the GPU reaches them: PDL can only overlap a launch
 * the GPU already holds), the median of 7 repetitions; the settings interleaved over 5 rounds, the median of the
 * rounds printed. Two patterns:
 * - "back-to-back": the N calls alone (the roofline's pattern; each launch's previous kernel is the same op's);
 * - "+ copy": a 4 KiB device copy after each call (the previous stream operation is a copy).
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes), counting the op's bytes only; Δ is the PDL row's
 * time minus the off row's, per call.
 *
 * `deno run -A --no-check bench/pdl_tuning10.ts [--ops=normForward,castBack,…]` (or `bun bench/pdl_tuning10.ts`);
 * `--ops` keeps the listed ops only (all nine by default, ~3 minutes).
 * @module
 */
import process from "node:process";
import { type DeviceTensor, devices, empty } from "../mod.ts";
import { deviceRuntime, type Stream } from "../core/tensor.ts";
import { config } from "../core/config.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import type { BenchCase } from "./cases.ts";
import { cases as normCases } from "./cases_norm.ts";
import { cases as swigluCases } from "./cases_swiglu.ts";
import { cases as elemCases } from "./cases_elem.ts";
import { cases as perBlockCases } from "./cases_per_block.ts";
import { casesOn as moreCases } from "./cases_more.ts";
import { copyRateGBs, DEV, LeadTimer } from "./common.ts";

if (devices().length === 0) {
  console.log("pdl_tuning10 needs a CUDA device; none found");
  process.exit(0);
}
const ROUNDS = 5;
const OPS = [
  "normForward",
  "normForwardAndPerTokenCast",
  "addRmsnormForwardAndPerTokenCast",
  "swigluForward",
  "swigluForwardAndPerTokenCast",
  "swigluBackward",
  "castBack",
  "perTokenCastBack",
  "perBlockCastWithSfOnly",
];
const opsArg = process.argv.find((a) => a.startsWith("--ops="));
const WANTED = opsArg ? opsArg.slice(6).split(",") : OPS;
/** The cases of the PDL launches: the six norm / SwiGLU ops' roofline cases, castBack e4m3 → bf16, the per-block sf only. */
function wanted(c: BenchCase): boolean {
  if (!WANTED.includes(c.op) || (c.tokens !== 8192 && c.tokens !== 16384)) return false;
  if (c.op === "castBack") return c.variant.startsWith("e4m3→bf16");
  return true;
}
const SETTINGS = [
  { name: "off", pdl: false },
  { name: "pdl", pdl: true },
] as const;
const PATTERNS = ["back-to-back", "+ copy"] as const;

const rt = deviceRuntime("bench");
const stream: Stream = rt.defaultStream(DEV);
const timer = new LeadTimer() // 20 calls after a 2-GiB lead copy, median of 7;
const small = { src: empty([4096], "uint8", { device: 0 }) as DeviceTensor, dst: empty([4096], "uint8", { device: 0 }) as DeviceTensor };


const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const savedPdl = config.pdl;
// the roofline's cases of the changed kernels; the others are kept until the end (cases of one file share inputs:
// disposing one disposes its neighbours'; cases_more's are set up on first call only)
const all: BenchCase[] = [...normCases(), ...swigluCases(), ...elemCases(), ...perBlockCases(), ...moreCases([8192, 16384], 0)];
const runs = all.filter(wanted);
runs.sort((a, b) => OPS.indexOf(a.op) - OPS.indexOf(b.op) || a.tokens - b.tokens);

try {
  const us = new Map<string, number[]>();
  const key = (c: BenchCase, pat: string, s: string) => `${c.op}\t${c.tokens}\t${c.variant}\t${pat}\t${s}`;
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of runs) {
      const fs: Record<(typeof PATTERNS)[number], () => void> = {
        "back-to-back": c.run,
        "+ copy": () => {
          c.run();
          rt.copyDtoD(DEV, small.dst.addr, small.src.addr, 4096, stream);
        },
      };
      for (const pat of PATTERNS) {
        for (const s of SETTINGS) {
          config.pdl = s.pdl;
          const k = key(c, pat, s.name);
          us.set(k, [...(us.get(k) ?? []), timer.timeUs(stream, fs[pat])]);
        }
      }
    }
  }
  config.pdl = savedPdl;
  for (const c of runs) {
    for (const pat of PATTERNS) {
      const med: Record<string, number> = {};
      for (const s of SETTINGS) med[s.name] = us.get(key(c, pat, s.name))!.sort((a, b) => a - b)[ROUNDS >> 1];
      for (const s of SETTINGS) {
        const v = med[s.name];
        const pct = (100 * c.bytes) / (v * 1e3) / copy.gbps;
        const delta = s.pdl ? `\tΔ ${(v - med.off).toFixed(2)} µs` : "";
        console.log(`${c.op} ${c.tokens}x${c.hidden} ${c.variant.padEnd(28)}\t${pat.padEnd(12)}\t${s.name.padEnd(3)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      }
    }
  }
} finally {
  config.pdl = savedPdl;
  syncAndCheck(0, stream.handle);
  for (const c of runs) c.dispose();
  timer.dispose();
  for (const t of [small.src, small.dst]) t.dispose();
}

/**
 * Round 11's residual cast in normForward's two-pass geometry against main's warp rows (docs/perf-notes/perf11-ncast.md),
 * in one process: addRmsnormForwardAndPerTokenCast (bench/cases_more.ts: bf16 → e4m3, groups of 128, packed UE8M0
 * scales in the TMA-aligned layout, a weight, eps 1e-6, the residual updated in place), 4096, 8192 and 16384 tokens ×
 * 7168. Settings:
 * - "main":  `normLaunchTuning.castRowForm = 0`: the warp rows `_e4m3_g128_wr_res` (round 11's A/B timed
 *   `_e4m3_g128_wr_resa`, the same compiled for aligned views only, since removed from the package);
 * - "tp16c": `castRowForm = 1` (the default): `_e4m3_g128_tp16c_res` (4 blocks of 512 threads per SM).
 * (`config.pdl` as the process has it: on by default, as the roofline runs. normForwardAndPerTokenCast is not
 * affected by the knob: its row forms lost to `_br4a` and were removed.)
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy of 2 GiB, the median of 7
 * repetitions (bench/common.ts LeadTimer); the settings interleaved over 5 rounds, the median of the rounds printed.
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for the bytes bench/roofline.ts counts for the op
 * (cases_more.ts). After the timing, one more call per setting: data, sf and the residual (which each setting updated
 * the same number of times from the same start) compared with main's byte for byte; a difference prints FAIL and the
 * exit status is 1.
 *
 * `deno run -A --no-check bench/ncast11_tuning.ts` (or `bun bench/ncast11_tuning.ts`).
 * @module
 */
import process from "node:process";
import { addRmsnormForwardAndPerTokenCast, type DeviceTensor, devices } from "../mod.ts";
import { deviceRuntime, toDevice } from "../core/tensor.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { copyRateGBs, DEV, hostBytes, LeadTimer, randomBf16Host } from "./common.ts";

if (devices().length === 0) {
  console.log("ncast11_tuning needs a CUDA device; none found");
  process.exit(0);
}
const H = 7168;
const ROUNDS = 5;
const SETTINGS = [
  { name: "main", on: 0 },
  { name: "tp16c", on: 1 },
] as const;
const SF = { fmt: "e4m3", numPerChannels: 128, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const;

/** Packed UE8M0 sf bytes of a `[T, H]` cast with groups of 128 (TMA-aligned): padded rows × ⌈(H/128)/4⌉ words. */
function packedSfBytes(T: number): number {
  return Math.ceil(T / 4) * 4 * Math.ceil(H / 128 / 4) * 4;
}

const rt = deviceRuntime("bench");
const stream = rt.defaultStream(DEV);
const timer = new LeadTimer(); // 20 calls after a 2-GiB lead copy, median of 7
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const saved = normLaunchTuning.castRowForm;
let failures = 0;

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let j = 0; j < a.length; j++) if (a[j] !== b[j]) return j;
  return -1;
}
async function compare(tag: string, name: string, what: string, got: DeviceTensor, ref: DeviceTensor): Promise<void> {
  const bad = firstDiff(await hostBytes(got), await hostBytes(ref));
  if (bad >= 0) {
    failures++;
    console.log(`FAIL ${tag} ${name}: ${what} differs from main's at byte ${bad}`);
  }
}
function report(op: string, tag: string, bytes: number, us: Map<string, number[]>): void {
  const med = (name: string) => us.get(name)!.sort((a, b) => a - b)[ROUNDS >> 1];
  const base = med("main");
  for (const s of SETTINGS) {
    const v = med(s.name);
    const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
    const delta = s.name === "main" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
    console.log(`${op} ${tag}\t${s.name.padEnd(7)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
  }
}

try {
  for (const T of [4096, 8192, 16384]) {
    const tag = `${T}x${H} bf16→e4m3 128 packed-ue8m0`;
    const xh = randomBf16Host(T, H, T + 1);
    const x = toDevice(xh) as DeviceTensor;
    const w1 = toDevice(randomBf16Host(1, H, 2)) as DeviceTensor;
    const w = w1.view([H]) as DeviceTensor;

    // addRmsnormForwardAndPerTokenCast (cases_more.ts): residual in place, one copy per setting from the same start
    // (it grows by x at each call: |values| stay far below bf16's range), data and sf allocated by each call
    {
      const rh = randomBf16Host(T, H, 5);
      const residuals = SETTINGS.map(() => toDevice(rh) as DeviceTensor);
      const o = { eps: 1e-6, ...SF } as const;
      const us = new Map<string, number[]>();
      for (let round = 0; round < ROUNDS; round++) {
        SETTINGS.forEach((s, i) => {
          normLaunchTuning.castRowForm = s.on;
          const r = residuals[i];
          const t = timer.timeUs(stream, () => {
            const [d, sf] = addRmsnormForwardAndPerTokenCast(x, r, w, o);
            (d as DeviceTensor).dispose();
            (sf as DeviceTensor).dispose();
          });
          us.set(s.name, [...(us.get(s.name) ?? []), t]);
        });
      }
      normLaunchTuning.castRowForm = saved;
      const n = T * H;
      report("addRmsnormForwardAndPerTokenCast", tag, 2 * n + 2 * n + 2 * H + 2 * n + n + packedSfBytes(T) + 4 * T, us);
      const outs = SETTINGS.map((s, i) => {
        normLaunchTuning.castRowForm = s.on;
        const [d, sf] = addRmsnormForwardAndPerTokenCast(x, residuals[i], w, o);
        return { d: d as DeviceTensor, sf: sf as DeviceTensor };
      });
      normLaunchTuning.castRowForm = saved;
      for (let i = 1; i < SETTINGS.length; i++) {
        await compare(`addRmsnormForwardAndPerTokenCast ${tag}`, SETTINGS[i].name, "data", outs[i].d, outs[0].d);
        await compare(`addRmsnormForwardAndPerTokenCast ${tag}`, SETTINGS[i].name, "sf", outs[i].sf, outs[0].sf);
        await compare(`addRmsnormForwardAndPerTokenCast ${tag}`, SETTINGS[i].name, "residual", residuals[i], residuals[0]);
      }
      for (const ob of outs) [ob.d, ob.sf].forEach((t) => t.dispose());
      residuals.forEach((t) => t.dispose());
    }
    [x, w, w1].forEach((t) => t.dispose());
  }
} finally {
  normLaunchTuning.castRowForm = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
if (failures > 0) process.exit(1);

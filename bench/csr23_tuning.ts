/**
 * stochasticCast bf16 → e4m3 (the roofline case of bench/cases_elem.ts), `tk_cast__bf16_e4m3_sr_a12` (cast_sr12.cu)
 * against round 23's wide ring `…_sr_a12w2` (cast_sr23.cu: a warp's 2-stage ring of 64-chunk units, 2 consecutive
 * chunks a lane a step and one 16-byte store; the default for 5120 … 14336 rows; docs/perf-notes/perf23-csr.md), in
 * one process, at 4096, 8192, 12288 and 16384 × 7168 (CSR_TOKENS: others). Settings (castLaunchTuning.srRing with
 * srRingMinRows 0 / srRingMaxRows Infinity, all restored at the end): "sr_a12" 0, "sr_a12w2"
 * "w2". (Round 21's `_sr_a12c5` and round 23's `_sr_a12w3`, measured by this script against w2, left the package.)
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy (LeadTimer of bench/common.ts),
 * the median of 7 repetitions; the settings interleaved over 5 rounds (rotated order), the median of the rounds
 * printed. % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for 3 bytes a value (bench/cases_elem.ts).
 * Every setting's output is compared with sr_a12's on random bf16 values with NaN, ±Inf, ±0 and subnormals written
 * in, and its launched symbol checked, at each size: a difference prints FAIL and exits 1. The last line gives the
 * sizes at which the ring beat sr_a12.
 * Without a CUDA device: a skip line, exit 0.
 *
 * `deno run -A --no-check bench/csr23_tuning.ts` (or `bun bench/csr23_tuning.ts`).
 * @module
 */
import { type DeviceTensor, empty, stochasticCast } from "../mod.ts";
import { toDevice } from "../core/tensor.ts";
import { kernelFunction, syncAndCheck } from "../ffi/cuda.ts";
import { castLaunchTuning, elementCastLastLaunch } from "../ops/quant/elem_launch.ts";
import { abStart, abVerdict, DEV, FirstOutput, hostBytes, interleavedMedians, randomBf16Host } from "./common.ts";

const { stream, timer, copy } = abStart("csr23_tuning");
const H = 7168;
// CSR_TOKENS="2048,6144,…" measures other sizes (the crossovers between the default four)
const TOKENS = (process.env.CSR_TOKENS ?? "4096,8192,12288,16384").split(",").map(Number);
const ROUNDS = 5;
const SETTINGS: readonly { name: string; ring: 0 | "w2" }[] = [
  { name: "sr_a12", ring: 0 },
  { name: "sr_a12w2", ring: "w2" },
];

const saved = { ...castLaunchTuning };
let failures = 0;
/** Per ring setting, the sizes at which it beat sr_a12. */
const wins = new Map<string, number[]>();

try {
  castLaunchTuning.srRingMinRows = 0;
  castLaunchTuning.srRingMaxRows = Infinity;
  for (const T of TOKENS) {
    const hx = randomBf16Host(T, H, T + 20);
    const d16 = hx.data as Uint16Array;
    const sp = [0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0001, 0x8033, 0x0080, 0x3c80];
    for (let i = 5; i < d16.length; i += 9973) d16[i] = sp[i % sp.length];
    const x = toDevice(hx) as DeviceTensor;
    const y = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
    const o = { dtype: "e4m3", seed: 7n, out: y } as const;
    const first = new FirstOutput("sr_a12");
    for (const s of SETTINGS) {
      castLaunchTuning.srRing = s.ring;
      stochasticCast(x, o);
      if (elementCastLastLaunch().fn !== kernelFunction("bench", DEV, `tk_cast__bf16_e4m3_${s.name}`)) {
        failures++;
        console.log(`FAIL stochasticCast ${T}x${H} ${s.name}: another kernel was launched`);
      }
      failures += first.check(await hostBytes(y), `stochasticCast ${T}x${H} ${s.name}`);
    }
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => void (castLaunchTuning.srRing = s.ring), () => void stochasticCast(x, o));
    const bytes = 3 * T * H;
    const base = med.get("sr_a12")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.ring === 0 ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`stochasticCast bf16→e4m3 SR ${T}x${H}\t${s.name.padEnd(9)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      if (s.ring !== 0 && v < base) wins.set(s.name, [...(wins.get(s.name) ?? []), T]);
    }
    for (const t of [x, y]) t.dispose();
  }
  for (const s of SETTINGS) {
    if (s.ring === 0) continue;
    console.log(`${s.name}: beats sr_a12 at ${(wins.get(s.name) ?? []).join(", ") || "no size"}`);
  }
} finally {
  Object.assign(castLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "csr23_tuning: sr_a12w2's outputs equal sr_a12's at every size");

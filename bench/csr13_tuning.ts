/**
 * stochasticCast bf16 → e4m3 (the roofline case of bench/cases_elem.ts), cast.cu's `tk_cast__bf16_e4m3_sr_a` against
 * `tk_cast__bf16_e4m3_sr_a12` (cast_sr12.cu: §7.3's rounding in a domain scaled by 2^-120, as perTokenCast's
 * `_g128_sr_wu12`; docs/perf-notes/perf13-csr.md), in one process, 8192 and 16384 × 7168. Settings
 * (castLaunchTuning.srScaledEncode, restored at the end): "sr_a" off, "sr_a12" on.
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy (LeadTimer of bench/common.ts),
 * the median of 7 repetitions; the settings interleaved over 5 rounds (rotated order), the median of the rounds
 * printed. % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for 3 bytes a value (bench/cases_elem.ts).
 * Both settings' outputs are compared on random bf16 values with NaN, ±Inf, ±0 and subnormals written in, at each
 * size: a difference prints FAIL.
 *
 * `deno run -A --no-check bench/csr13_tuning.ts` (or `bun bench/csr13_tuning.ts`).
 * @module
 */
import { type DeviceTensor, empty, stochasticCast, toHost } from "../mod.ts";
import { type HostTensor, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { castLaunchTuning } from "../ops/quant/elem_launch.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians, randomBf16Host } from "./common.ts";

const { stream, timer, copy } = abStart("csr13_tuning");
const H = 7168;
const ROUNDS = 5;
const SETTINGS: readonly { name: string; on: boolean }[] = [
  { name: "sr_a", on: false },
  { name: "sr_a12", on: true },
];

const saved = castLaunchTuning.srScaledEncode;
const savedRing = castLaunchTuning.srRing;
castLaunchTuning.srRing = 0; // `_sr_a12` itself at 8192 rows, not round 23's ring (bench/csr23_tuning.ts)
let failures = 0;

try {
  for (const T of [8192, 16384]) {
    const hx = randomBf16Host(T, H, T + 13);
    const d16 = hx.data as Uint16Array;
    const sp = [0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0001, 0x8033, 0x0080, 0x3c80];
    for (let i = 5; i < d16.length; i += 9973) d16[i] = sp[i % sp.length];
    const x = toDevice(hx) as DeviceTensor;
    const y = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
    const o = { dtype: "e4m3", seed: 7n, out: y } as const;
    let ref: Uint8Array | null = null;
    for (const s of SETTINGS) {
      castLaunchTuning.srScaledEncode = s.on;
      stochasticCast(x, o);
      const h = (await toHost(y)) as HostTensor;
      const got = new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength).slice();
      if (ref === null) {
        ref = got;
        continue;
      }
      const bad = firstDifference(got, ref);
      if (bad >= 0) {
        failures++;
        console.log(`FAIL stochasticCast ${T}x${H} ${s.name}: differs from sr_a's at byte ${bad} (${got[bad]} vs ${ref[bad]})`);
      }
    }
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => void (castLaunchTuning.srScaledEncode = s.on), () => void stochasticCast(x, o));
    castLaunchTuning.srScaledEncode = saved;
    const bytes = 3 * T * H;
    const base = med.get("sr_a")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.name === "sr_a" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`stochasticCast bf16→e4m3 SR ${T}x${H}\t${s.name.padEnd(6)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    for (const t of [x, y]) t.dispose();
  }
} finally {
  castLaunchTuning.srScaledEncode = saved;
  castLaunchTuning.srRing = savedRing;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "csr13_tuning: sr_a12's outputs equal sr_a's");

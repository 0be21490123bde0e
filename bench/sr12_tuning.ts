/**
 * perTokenCast bf16 → e4m3 with stochasticCast (groups of 128, fp32 sf: the roofline case of bench/cases_elem.ts),
 * main's `_g128_sr_wu` against `_g128_sr_wu12` (per_token_cast_sr12.cu: the §7.3 rounding in a domain scaled by
 * 2^-120; docs/perf-notes/perf12-sr.md), in one process, 8192 and 16384 × 7168. Settings
 * (perTokenLaunchTuning.srScaledEncode, restored at the end): "main" off, "sr12" on.
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy (LeadTimer of bench/common.ts),
 * the median of 7 repetitions; the settings interleaved over 5 rounds (rotated order), the median of the rounds
 * printed. % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes bench/cases_elem.ts counts
 * (3 bytes a value + the fp32 sf). The data and sf of both settings are compared on random bf16 rows (with NaN,
 * ±Inf, ±0 and subnormals written in) at each size: a difference prints FAIL.
 *
 * `deno run -A --no-check bench/sr12_tuning.ts` (or `bun bench/sr12_tuning.ts`).
 * @module
 */
import { type DeviceTensor, empty, perTokenCast, toHost } from "../mod.ts";
import { type HostTensor, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians, randomBf16Host } from "./common.ts";

const { stream, timer, copy } = abStart("sr12_tuning");
const H = 7168;
const ROUNDS = 5;
const SETTINGS: readonly { name: string; on: boolean }[] = [
  { name: "wu", on: false },
  { name: "sr12", on: true },
];

const saved = perTokenLaunchTuning.srScaledEncode;
let failures = 0;

function bytesOf(h: HostTensor): Uint8Array {
  return new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength);
}

try {
  for (const T of [8192, 16384]) {
    const hx = randomBf16Host(T, H, T + 12);
    const d16 = hx.data as Uint16Array;
    const sp = [0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0001, 0x8033, 0xffa5];
    for (let i = 5; i < d16.length; i += 9973) d16[i] = sp[i % sp.length];
    const x = toDevice(hx) as DeviceTensor;
    const data = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
    const sf = empty([T, H / 128], "fp32", { device: 0 }) as DeviceTensor;
    const o = { fmt: "e4m3", numPerChannels: 128, stochasticCast: true, out: { data, sf } } as const;
    // outputs of both settings
    let ref: Uint8Array[] | null = null;
    for (const s of SETTINGS) {
      perTokenLaunchTuning.srScaledEncode = s.on;
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
          console.log(`FAIL perTokenCast SR ${T}x${H} ${s.name}: ${k === 0 ? "data" : "sf"} differs from main's at byte ${bad} (${got[k][bad]} vs ${ref[k][bad]})`);
        }
      }
    }
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => void (perTokenLaunchTuning.srScaledEncode = s.on), () => void perTokenCast(x, o));
    perTokenLaunchTuning.srScaledEncode = saved;
    // bench/cases_elem.ts's bytes
    const bytes = 3 * T * H + 4 * T * (H / 128);
    const base = med.get("wu")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.name === "wu" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`perTokenCast bf16→e4m3 128 SR ${T}x${H}\t${s.name.padEnd(6)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    for (const t of [x, data, sf]) t.dispose();
  }
} finally {
  perTokenLaunchTuning.srScaledEncode = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "sr12_tuning: sr12's outputs equal main's");

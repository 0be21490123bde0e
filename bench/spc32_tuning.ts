/**
 * `swigluForwardAndPerChannelCastAndTranspose`'s round-32 `_an` form (`swigluPerChannelLaunchTuning.alignedNoClamp`:
 * `tk_swiglu_per_channel_cast__bf16_an`, docs/perf-notes/perf32-spc.md) against main's kernels (the knob off),
 * interleaved in one process: the three roofline rows of bench/cases_swiglu_per_channel.ts (numPerTokens 128 and 32
 * transposed, 128 with withoutTranspose) at 8192 and 16384 × 7168 (SPC_TOKENS: other token counts, comma-separated),
 * on the roofline's input (bench/cases_swiglu_per_channel.ts's mixed bf16 patterns). Settings per row: main (knob
 * off), `an` (`_an` on its one-wave grid: 4 CTAs per SM on sm_90) and `an-12` (`_an` on main's 12 · SMs
 * grid, `anGrid: "main"`), the knob restored at the end.
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, 20 calls after a lead copy, rotated order over 5
 * rounds, the median printed); the op allocates its outputs, so each call allocates and frees them stream-ordered,
 * as in the roofline. % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for the roofline's bytes: T · 2H · 2
 * read, T · H codes and T / R · H fp32 scales written. Δ is the setting's time minus main's. Each setting's launch is
 * checked to be the expected kernel and both `_an` settings' data and sf (whole allocations) are compared byte for byte with
 * main's: a difference prints FAIL and exits 1.
 *
 * `deno run -A --no-check bench/spc32_tuning.ts` (or `bun bench/spc32_tuning.ts`).
 * @module
 */
import process from "node:process";
import { type DeviceTensor, tensor, toDevice, toHost } from "../mod.ts";
import type { HostTensor } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import {
  swigluForwardAndPerChannelCastAndTranspose as fused,
  swigluPerChannelLastSymbol,
  swigluPerChannelLaunchTuning,
} from "../ops/quant/swiglu_per_channel.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians } from "./common.ts";

const { stream, timer, copy } = abStart("spc32_tuning");
const H = 7168;
const ROUNDS = 5;
const AN = "tk_swiglu_per_channel_cast__bf16_an";
const ROWS = [
  { name: "[H, T] 128 tokens per scale", numPerTokens: 128, withoutTranspose: false, main: "tk_swiglu_per_channel_cast_and_transpose__bf16_r128" },
  { name: "[H, T] 32 tokens per scale", numPerTokens: 32, withoutTranspose: false, main: "tk_swiglu_per_channel_cast_and_transpose__bf16_r32" },
  { name: "[T, H] 128 tokens per scale", numPerTokens: 128, withoutTranspose: true, main: "tk_swiglu_per_channel_cast__bf16_r128" },
] as const;

/** bench/cases_swiglu_per_channel.ts's bf16 pattern of element i: random sign, exponent field 0x78 … 0x87. */
function mixed(i: number): number {
  const h = Math.imul(i, 0x9e3779b1) >>> 0;
  return ((h >>> 31) << 15) | (0x3c00 + ((h >>> 8) & 0x7ff));
}

async function bytesOf(t: DeviceTensor): Promise<Uint8Array> {
  const h = (await toHost(t)) as HostTensor;
  return new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength).slice();
}

const saved = { ...swigluPerChannelLaunchTuning };
let failures = 0;
try {
  for (const T of (process.env.SPC_TOKENS ?? "8192,16384").split(",").map(Number)) {
    const x = toDevice(tensor(new Uint16Array(T * 2 * H).map((_, i) => mixed(i)), [T, 2 * H], "bf16"));
    for (const row of ROWS) {
      const tag = `${T}x${H} ${row.name}`;
      const o = { fmt: "e4m3", numPerTokens: row.numPerTokens, withoutTranspose: row.withoutTranspose } as const;
      const settings = [
        { name: "main", an: false, grid: "wave", kernel: row.main as string },
        { name: "an", an: true, grid: "wave", kernel: AN },
        { name: "an-12", an: true, grid: "main", kernel: AN },
      ] as const;
      // one pair of outputs per setting (its own launch), compared below
      const outs = settings.map((s) => {
        swigluPerChannelLaunchTuning.alignedNoClamp = s.an;
        swigluPerChannelLaunchTuning.anGrid = s.grid;
        const [data, sf] = fused(x, o) as [DeviceTensor, DeviceTensor];
        if (swigluPerChannelLastSymbol() !== s.kernel) {
          failures++;
          console.log(`FAIL ${tag} ${s.name}: launched ${swigluPerChannelLastSymbol()}, not ${s.kernel}`);
        }
        return { data, sf };
      });
      const med = interleavedMedians(timer, stream, settings, ROUNDS, (s) => {
        swigluPerChannelLaunchTuning.alignedNoClamp = s.an;
        swigluPerChannelLaunchTuning.anGrid = s.grid;
      }, () => {
        for (const t of fused(x, o)) (t as DeviceTensor).dispose();
      });
      Object.assign(swigluPerChannelLaunchTuning, saved);
      const bytes = T * 2 * H * 2 + T * H + (T / row.numPerTokens) * H * 4;
      const tMain = med.get("main")!;
      for (const s of settings) {
        const t = med.get(s.name)!;
        const pct = (100 * bytes) / (t * 1e3) / copy.gbps;
        const delta = s.an ? `\tΔ ${(t - tMain).toFixed(2)} µs` : "";
        console.log(`swigluPerChannel ${tag.padEnd(40)}\t${s.name.padEnd(7)}\t${t.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      }
      for (const k of [1, 2]) {
        for (const part of ["data", "sf"] as const) {
          const bad = firstDifference(await bytesOf(outs[k][part]), await bytesOf(outs[0][part]));
          if (bad >= 0) {
            failures++;
            console.log(`FAIL ${tag}: ${settings[k].name}'s ${part} differs from main's at byte ${bad}`);
          }
        }
      }
      for (const out of outs) {
        out.data.dispose();
        out.sf.dispose();
      }
    }
    x.dispose();
  }
} finally {
  Object.assign(swigluPerChannelLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "spc32_tuning: the _an form's outputs (data and sf) equal main's for every row");

/**
 * normForwardAndPerTokenCast bf16 → e4m3 without residual on aligned views (bench/cases_norm.ts's roofline case),
 * main's `_e4m3_g<N>_br4w` against round 15's `_e4m3_g<N>_br4x` (the lean bench copy of the cast loop;
 * docs/perf-notes/perf15-ncast.md), interleaved in one process: 8192 and 16384 × 7168, a weight, outScale 1; g128
 * with packed UE8M0 TMA-aligned scales (the lean copy) and with fp32 row-major scales (the general copy, unchanged:
 * a control), g32 packed at 16384. Settings (normLaunchTuning.castLeanLoop, restored at the end; castWarpBound as
 * main, on): "br4w" off, "br4x" on.
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, rotated order over 5 rounds, the median printed).
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for 2n (x) + n (data) + 2H (weight) + the scales.
 * Both settings' data and sf are compared byte for byte at each case: a difference prints FAIL and exits 1.
 *
 * `deno run -A --no-check bench/ncast15_tuning.ts` (or `bun bench/ncast15_tuning.ts`).
 * @module
 */
import { type DeviceTensor, toHost } from "../mod.ts";
import { type HostTensor, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { normForwardAndPerTokenCast } from "../ops/norm/mod.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians, randomBf16Host } from "./common.ts";

const { stream, timer, copy } = abStart("ncast15_tuning");
const H = 7168;
const ROUNDS = 5;
const SETTINGS: readonly { name: string; on: boolean }[] = [
  { name: "br4w", on: false },
  { name: "br4x", on: true },
];
const PACKED = { roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const;
const CASES = [
  { T: 8192, npc: 128, sf: "packed", o: PACKED },
  { T: 8192, npc: 128, sf: "fp32-row", o: {} },
  { T: 16384, npc: 128, sf: "packed", o: PACKED },
  { T: 16384, npc: 128, sf: "fp32-row", o: {} },
  { T: 16384, npc: 32, sf: "packed", o: PACKED },
] as const;

const saved = normLaunchTuning.castLeanLoop;
const savedBound = normLaunchTuning.castWarpBound;
let failures = 0;

async function bytesOf(t: unknown): Promise<Uint8Array> {
  const h = (await toHost(t as DeviceTensor)) as HostTensor;
  return new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength).slice();
}

try {
  normLaunchTuning.castWarpBound = true;
  for (const c of CASES) {
    const tag = `${c.T}x${H} g${c.npc} ${c.sf}`;
    const x = toDevice(randomBf16Host(c.T, H, c.T + 1)) as DeviceTensor;
    const w1 = toDevice(randomBf16Host(1, H, 2)) as DeviceTensor;
    const w = w1.view([H]) as DeviceTensor;
    const o = { fmt: "e4m3", numPerChannels: c.npc, eps: 1e-6, ...c.o } as const;
    const outs: Uint8Array[][] = [];
    for (const s of SETTINGS) {
      normLaunchTuning.castLeanLoop = s.on;
      const [[d, sf]] = normForwardAndPerTokenCast(x, w, o);
      outs.push([await bytesOf(d), await bytesOf(sf)]);
      (d as DeviceTensor).dispose();
      (sf as DeviceTensor).dispose();
    }
    for (const k of [0, 1]) {
      const bad = firstDifference(outs[1][k], outs[0][k]);
      if (bad >= 0) {
        failures++;
        console.log(`FAIL ${tag}: br4x's ${k ? "sf" : "data"} differs from br4w's at byte ${bad}`);
      }
    }
    const med = interleavedMedians(
      timer,
      stream,
      SETTINGS,
      ROUNDS,
      (s) => void (normLaunchTuning.castLeanLoop = s.on),
      () => {
        const [[d, sf]] = normForwardAndPerTokenCast(x, w, o);
        (d as DeviceTensor).dispose();
        (sf as DeviceTensor).dispose();
      },
    );
    normLaunchTuning.castLeanLoop = saved;
    const n = c.T * H;
    const sfBytes = c.sf === "packed" ? c.T * Math.ceil(H / c.npc / 4) * 4 : 4 * c.T * (H / c.npc);
    const bytes = 2 * n + n + 2 * H + sfBytes;
    const base = med.get("br4w")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.name === "br4w" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`normForwardAndPerTokenCast ${tag}\t${s.name}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    [x, w, w1].forEach((t) => t.dispose());
  }
} finally {
  normLaunchTuning.castLeanLoop = saved;
  normLaunchTuning.castWarpBound = savedBound;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "ncast15_tuning: br4x's outputs equal br4w's");

/**
 * The A/B loop shared by the e2m1 perTokenCast tuning scripts (bench/fp4_26_tuning.ts: `mxfp4Wide`,
 * bench/nvfp4_29_tuning.ts: `nvfp4Wide`, bench/fp4c30_tuning.ts: `nvfp4ColTiles`; bench/fp4_17_tuning.ts,
 * `e2m1LaneWide`, left with that knob in trim32): main's kernel (knob off) against the form (knob on) in one process.
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy (LeadTimer of bench/common.ts),
 * the median of 7 repetitions; the settings interleaved over 5 rounds (rotated order), the median of the rounds
 * printed. % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes bench/cases_more.ts counts
 * (read 2TH, write TH/2 + the case's sf bytes). The data and sf of both settings are compared on random bf16 rows
 * (with NaN, ±Inf, ±0 and subnormals written in) at each size: a difference prints FAIL and the script exits 1.
 * Without a GPU it prints a skip line and exits 0.
 * @module
 */
import { type DeviceTensor, perTokenCast, type PerTokenCastOptions } from "../mod.ts";
import { toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { perTokenLaunchTuning } from "../ops/quant/per_token_cast.ts";
import { abStart, abVerdict, FirstOutput, hostBytes, interleavedMedians, randomBf16Host } from "./common.ts";

/** One option set timed: its label, the perTokenCast options, the sf bytes written for T rows of H. */
export interface E2m1AbCase {
  name: string;
  o: PerTokenCastOptions;
  sfBytes: (T: number, H: number) => number;
}

/** Times `cases` at `tokens` × `H` rows with perTokenLaunchTuning[knob] off ("main") and on (`formName`). */
export async function runE2m1Ab(
  script: string,
  knob: "mxfp4Wide" | "nvfp4Wide" | "nvfp4ColTiles",
  formName: string,
  cases: readonly E2m1AbCase[],
  tokens: readonly number[],
  H = 7168,
): Promise<void> {
  const { stream, timer, copy } = abStart(script);
  const settings: readonly { name: string; on: boolean }[] = [{ name: "main", on: false }, { name: formName, on: true }];
  const saved = perTokenLaunchTuning[knob];
  let failures = 0;
  try {
    for (const T of tokens) {
      const hx = randomBf16Host(T, H, T + 17);
      const d16 = hx.data as Uint16Array;
      const sp = [0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0001, 0x8033, 0xffa5];
      for (let i = 5; i < d16.length; i += 9973) d16[i] = sp[i % sp.length];
      const x = toDevice(hx) as DeviceTensor;
      for (const c of cases) {
        const [data, sf] = perTokenCast(x, c.o) as [DeviceTensor, DeviceTensor];
        const o = { ...c.o, out: { data, sf } };
        const refs = [new FirstOutput("main"), new FirstOutput("main")];
        for (const s of settings) {
          perTokenLaunchTuning[knob] = s.on;
          perTokenCast(x, o);
          const label = `perTokenCast ${c.name} ${T}x${H} ${s.name}`;
          failures += refs[0].check(await hostBytes(data), `${label}: data`);
          failures += refs[1].check(await hostBytes(sf), `${label}: sf`);
        }
        const med = interleavedMedians(timer, stream, settings, 5, (s) => void (perTokenLaunchTuning[knob] = s.on), () => void perTokenCast(x, o));
        perTokenLaunchTuning[knob] = saved;
        const bytes = 2 * T * H + (T * H) / 2 + c.sfBytes(T, H);
        const base = med.get("main")!;
        for (const s of settings) {
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
    perTokenLaunchTuning[knob] = saved;
    syncAndCheck(0, stream.handle);
    timer.dispose();
  }
  abVerdict(failures, `${script}: ${formName}'s outputs equal main's`);
}

/** The packed UE8M0 sf bytes of MXFP4 (groups of 32, four scales a 32-bit word): column-major (TMA) and row-major. */
export const MXFP4_PACKED_COL: E2m1AbCase = {
  name: "MXFP4 [1,32] packed-ue8m0 col",
  o: { fmt: "e2m1", numPerChannels: 32, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true },
  sfBytes: (T, H) => 4 * (Math.ceil(T / 4) * 4) * Math.ceil(H / 128),
};
export const MXFP4_PACKED_ROW: E2m1AbCase = {
  name: "MXFP4 [1,32] packed-ue8m0 row",
  o: { fmt: "e2m1", numPerChannels: 32, roundSf: true, usePackedUe8m0: true },
  sfBytes: (T, H) => 4 * T * Math.ceil(H / 128),
};

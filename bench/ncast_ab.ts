/**
 * The interleaved A/B of normForwardAndPerTokenCast's bulk-rows forms, for a candidate against the default `_br4y`
 * (rounds 14, 15 and 18 ran it on `_br4w` / `_br4x` / `_br4a` against their successors, through ncast14 … ncast18_tuning,
 * retired with those forms; ncast18_tuning left in trim24): 8192 and 16384 × 7168, a weight, outScale
 * 1; g128 with packed UE8M0 TMA-aligned scales and with fp32 row-major scales, g32 packed at 16384. Each setting is a
 * set of normLaunchTuning knob values (restored at the end). Each figure: interleavedMedians (bench/common.ts:
 * LeadTimer, rotated order over 5 rounds, the median printed); % is of the same run's cuMemcpyDtoD for the bytes
 * bench/roofline.ts counts (x read, data written, the weight, the sf), with data and rstd preallocated as there (until
 * the twenty-first run every call allocated them: round 28's A/B then put `_br4y` 13 points below its roofline figure,
 * docs/perf-notes/perf28-ncast.md). The settings' outputs (data and sf) are
 * compared byte for byte with the first setting's: a difference prints FAIL and exits 1.
 * @module
 */
import { type DeviceTensor, empty, toHost } from "../mod.ts";
import { type HostTensor, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { normForwardAndPerTokenCast } from "../ops/norm/mod.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians, randomBf16Host } from "./common.ts";

/** One setting of the A/B: its name and the normLaunchTuning knobs it sets. */
export interface NormCastSetting {
  name: string;
  knobs: Partial<typeof normLaunchTuning>;
}

/** Runs the A/B of `settings` (the first is the baseline) under the script name `script`; exits 1 on a difference. */
export async function normCastAB(script: string, settings: readonly NormCastSetting[]): Promise<void> {
  const { stream, timer, copy } = abStart(script);
  const H = 7168;
  const ROUNDS = 5;
  const PACKED = { roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const;
  const CASES = [
    { T: 8192, npc: 128, sf: "packed", o: PACKED },
    { T: 8192, npc: 128, sf: "fp32-row", o: {} },
    { T: 16384, npc: 128, sf: "packed", o: PACKED },
    { T: 16384, npc: 128, sf: "fp32-row", o: {} },
    { T: 16384, npc: 32, sf: "packed", o: PACKED },
  ] as const;
  const saved = { ...normLaunchTuning };
  const apply = (s: NormCastSetting) => void Object.assign(normLaunchTuning, s.knobs);
  const base = settings[0].name;
  let failures = 0;

  const bytesOf = async (t: unknown): Promise<Uint8Array> => {
    const h = (await toHost(t as DeviceTensor)) as HostTensor;
    return new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength).slice();
  };

  try {
    for (const c of CASES) {
      const tag = `${c.T}x${H} g${c.npc} ${c.sf}`;
      const x = toDevice(randomBf16Host(c.T, H, c.T + 1)) as DeviceTensor;
      const w1 = toDevice(randomBf16Host(1, H, 2)) as DeviceTensor;
      const w = w1.view([H]) as DeviceTensor;
      // data and rstd preallocated as bench/cases_norm.ts's roofline case does (the sf, which cannot be passed in the
      // TMA-aligned layout, is allocated by each call there and here): the A/B times what the roofline times
      const data = empty([c.T, H], "e4m3", { device: 0 }) as DeviceTensor;
      const rstd = empty([c.T], "fp32", { device: 0 }) as DeviceTensor;
      const o = { fmt: "e4m3", numPerChannels: c.npc, eps: 1e-6, ...c.o, out: { data, rstd } } as const;
      const outs: Uint8Array[][] = [];
      for (const s of settings) {
        apply(s);
        const [[d, sf]] = normForwardAndPerTokenCast(x, w, o);
        outs.push([await bytesOf(d), await bytesOf(sf)]);
        (sf as DeviceTensor).dispose();
      }
      for (let i = 1; i < settings.length; i++) {
        for (const k of [0, 1]) {
          const bad = firstDifference(outs[i][k], outs[0][k]);
          if (bad >= 0) {
            failures++;
            console.log(`FAIL ${tag}: ${settings[i].name}'s ${k ? "sf" : "data"} differs from ${base}'s at byte ${bad}`);
          }
        }
      }
      const med = interleavedMedians(timer, stream, settings, ROUNDS, apply, () => {
        (normForwardAndPerTokenCast(x, w, o)[0][1] as DeviceTensor).dispose();
      });
      Object.assign(normLaunchTuning, saved);
      const n = c.T * H;
      const sfBytes = c.sf === "packed" ? c.T * Math.ceil(H / c.npc / 4) * 4 : 4 * c.T * (H / c.npc);
      const bytes = 2 * n + n + 2 * H + sfBytes;
      const b0 = med.get(base)!;
      for (const s of settings) {
        const v = med.get(s.name)!;
        const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
        const delta = s.name === base ? "" : `\tΔ ${(v - b0).toFixed(2)} µs`;
        console.log(`normForwardAndPerTokenCast ${tag}\t${s.name}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      }
      [x, w, w1, data, rstd].forEach((t) => t.dispose());
    }
  } finally {
    Object.assign(normLaunchTuning, saved);
    syncAndCheck(0, stream.handle);
    timer.dispose();
  }
  const others = settings.slice(1).map((s) => s.name).join(", ");
  abVerdict(failures, `${script}: ${others}'s outputs equal ${base}'s`);
}

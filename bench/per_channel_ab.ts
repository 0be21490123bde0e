/**
 * The interleaved A/B loop shared by the perChannelCastFused tuning scripts (bench/pcfb25_tuning.ts: bf16 input,
 * knob `pipelinedBf16`; bench/pcf_pipelined_tuning.ts: e4m3 input, knob `pipelinedE4m3`): per size, every setting's
 * own preallocated outputs, {@link interleavedMedians} over 5 rounds (20 calls after a lead copy, median of 7, per
 * round), % of the same run's cuMemcpyDtoD for the case's bytes; then one more call of each setting with the launched
 * kernel checked, and every setting's data and sf compared with the first setting's byte for byte (a difference or a
 * wrong kernel prints FAIL and the script exits 1).
 * @module
 */
import { type DeviceTensor, perChannelCastFused, type PerChannelCastFusedOptions, type Quantized, tensor } from "../mod.ts";
import { deviceEmptyStrided, toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { perChannelLastSymbol, perChannelLaunchTuning } from "../ops/quant/per_channel_cast.ts";
import { abStart, abVerdict, DEV, firstDifference, hostBytes, interleavedMedians } from "./common.ts";

/** One setting: its printed name, the knob's value and the kernel symbol it must launch. */
export interface PerChannelSetting<F extends string> {
  name: string;
  form: F;
  sym: string;
}

/** The A/B of `settings` (the first is the base) on `tokens` × 7168 rows. */
export async function perChannelFusedAB<K extends "pipelinedBf16" | "pipelinedE4m3">(a: {
  script: string;
  knob: K;
  settings: readonly PerChannelSetting<(typeof perChannelLaunchTuning)[K]>[];
  tokens: readonly number[];
  /** the op's input for T rows (disposed by the loop) */
  input: (T: number) => DeviceTensor | Quantized;
  /** gather by the roofline's permutation (output row p reads input row (p · 7919) mod T) */
  gather: boolean;
  /** options besides fmt, numPerTokens, posToToken and out */
  extra: Omit<PerChannelCastFusedOptions, "fmt" | "numPerTokens" | "posToToken" | "out">;
  bytes: (T: number, H: number) => number;
  label: string;
  ok: string;
}): Promise<void> {
  const { stream, timer, copy } = abStart(a.script);
  const H = 7168;
  const saved = { ...perChannelLaunchTuning };
  const setForm = (f: (typeof perChannelLaunchTuning)[K]) => void (perChannelLaunchTuning[a.knob] = f);
  let failures = 0;
  try {
    for (const T of a.tokens) {
      const x = a.input(T);
      const pos = a.gather ? toDevice(tensor(Int32Array.from({ length: T }, (_, p) => (p * 7919) % T), [T], "int32")) as DeviceTensor : null;
      const tOut = Math.ceil(T / 128);
      const outs = a.settings.map(() => ({
        data: deviceEmptyStrided("bench", DEV, [T, H], [H, 1], "e4m3", T * H, stream) as DeviceTensor,
        sf: deviceEmptyStrided("bench", DEV, [tOut, H], [H, 1], "fp32", tOut * H, stream) as DeviceTensor,
      }));
      const optsOf = (i: number) => ({ fmt: "e4m3", numPerTokens: 128, ...a.extra, ...(pos ? { posToToken: pos } : {}), out: outs[i] }) as const;
      let cur = 0;
      const med = interleavedMedians(timer, stream, a.settings, 5, (s) => {
        setForm(s.form);
        cur = a.settings.indexOf(s);
      }, () => void perChannelCastFused(x, optsOf(cur)));
      const bytes = a.bytes(T, H);
      for (const s of a.settings) {
        const v = med.get(s.name)!;
        const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
        console.log(`perChannelCastFused ${T}x${H} ${a.label}\t${s.name.padEnd(4)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%`);
      }
      a.settings.forEach((s, i) => {
        setForm(s.form);
        perChannelCastFused(x, optsOf(i));
        if (perChannelLastSymbol() !== s.sym) {
          failures++;
          console.log(`FAIL ${T}x${H} ${s.name}: ran ${perChannelLastSymbol()}, expected ${s.sym}`);
        }
      });
      for (const k of ["data", "sf"] as const) {
        const ref = await hostBytes(outs[0][k]);
        for (let i = 1; i < a.settings.length; i++) {
          const bad = firstDifference(ref, await hostBytes(outs[i][k]));
          if (bad >= 0) {
            failures++;
            console.log(`FAIL ${T}x${H} ${a.settings[i].name}: ${k} differs from ${a.settings[0].name}'s at byte ${bad}`);
          }
        }
      }
      for (const o of outs) [o.data, o.sf].forEach((t) => t.dispose());
      for (const t of Array.isArray(x) ? x : [x]) (t as DeviceTensor).dispose();
      pos?.dispose();
    }
  } finally {
    Object.assign(perChannelLaunchTuning, saved);
    syncAndCheck(0, stream.handle);
    timer.dispose();
  }
  abVerdict(failures, a.ok);
}

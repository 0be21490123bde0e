/**
 * normBackward's bf16 rows kernel: the default since round 11, `_b4swc_unit` (x, gradOut and xGrad moved in whole
 * 128-byte lines: lane l moves bytes 512k + 16l of its warp's 1 KiB, x and xGrad exchanged between lanes by shuffles;
 * kernels-src/cuda/norm/norm_backward_sw.cu, docs/perf-notes/perf11-nbw.md), against the kernel before it,
 * `_b4swx_unit`, in one process. The roofline's case (bench/cases_norm.ts: bf16 x, weight, gradOut, fp32 rstd and
 * weightGrad, outputs preallocated) at 8192 and 16384 tokens × 7168, under `normLaunchTuning.backwardForm` "swx",
 * "swc" (the default), then "swx" again (drift check).
 *
 * Each figure: 20 calls on the default stream between two events after a 2-GiB lead copy (bench/common.ts
 * LeadTimer), the median of 7 repetitions; the settings interleaved over 3 rounds, the median of the rounds printed.
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes bench/cases_norm.ts counts
 * (x, gradOut, xGrad, rstd, weight, weightGrad), as bench/roofline.ts does. After the timing, each setting's xGrad and
 * weightGrad (one more call each) are compared with `_b4swx`'s byte for byte: a difference prints FAIL and exits 1.
 *
 * `deno run -A --no-check bench/nbw11_tuning.ts` (or `bun bench/nbw11_tuning.ts`).
 * @module
 */
import process from "node:process";
import { type DeviceTensor, devices, empty, normBackward, normForward, toHost } from "../mod.ts";
import { deviceRuntime, type HostTensor } from "../core/tensor.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { copyRateGBs, DEV, LeadTimer, randomBf16 } from "./common.ts";

if (devices().length === 0) {
  console.log("nbw11_tuning needs a CUDA device; none found");
  process.exit(0);
}
const H = 7168;
const ROUNDS = 3;
type Form = typeof normLaunchTuning.backwardForm;
const SETTINGS: { name: string; form: Form }[] = [
  { name: "_b4swx", form: "swx" },
  { name: "_b4swc (default)", form: "swc" },
  { name: "_b4swx (drift)", form: "swx" },
];

const rt = deviceRuntime("bench");
const stream = rt.defaultStream(DEV);
const timer = new LeadTimer();
const copy = copyRateGBs(2 ** 30);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
const saved = normLaunchTuning.backwardForm;
let failures = 0;

const bytesOf = async (t: DeviceTensor) => {
  const d = ((await toHost(t)) as HostTensor).data;
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
};

try {
  for (const T of [8192, 16384]) {
    // bench/cases_norm.ts's tensors (same seeds)
    const x = randomBf16(T, H, 1);
    const w1 = randomBf16(1, H, 2);
    const w = w1.view([H]);
    const dy = randomBf16(T, H, 3);
    const [fo, rstd] = normForward(x, w, { eps: 1e-6 });
    const xGrad = empty([T, H], "bf16", { device: 0 }) as DeviceTensor;
    const weightGrad = empty([H], "fp32", { device: 0 }) as DeviceTensor;
    const opts = { out: { xGrad, weightGrad } };
    const run = () => void normBackward(x, w, dy, rstd, opts);
    const bytes = 2 * T * H + 2 * T * H + 4 * T + 2 * H + 2 * T * H + 4 * H;
    const us = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of SETTINGS) {
        normLaunchTuning.backwardForm = s.form;
        us.set(s.name, [...(us.get(s.name) ?? []), timer.timeUs(stream, run)]);
      }
    }
    const med = (name: string) => us.get(name)!.sort((a, b) => a - b)[ROUNDS >> 1];
    const base = med(SETTINGS[0].name);
    for (const s of SETTINGS) {
      const v = med(s.name);
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s === SETTINGS[0] ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`normBackward ${T}x${H} bf16 weight, fp32 weightGrad\t${s.name.padEnd(16)}\t${v.toFixed(1)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    // the outputs of each setting against _b4swx's
    let ref: Uint8Array[] = [];
    for (const s of SETTINGS) {
      normLaunchTuning.backwardForm = s.form;
      run();
      const got = [await bytesOf(xGrad), await bytesOf(weightGrad)];
      if (ref.length === 0) {
        ref = got;
        continue;
      }
      ["xGrad", "weightGrad"].forEach((name, k) => {
        let bad = -1;
        for (let j = 0; j < ref[k].length && bad < 0; j++) if (ref[k][j] !== got[k][j]) bad = j;
        if (bad >= 0 || got[k].length !== ref[k].length) {
          failures++;
          console.log(`FAIL ${T}x${H} ${s.name}: ${name} differs from _b4swx's at byte ${bad} (0x${got[k][bad]?.toString(16)} vs 0x${ref[k][bad]?.toString(16)})`);
        }
      });
    }
    normLaunchTuning.backwardForm = saved;
    [xGrad, weightGrad, fo, rstd, dy, x, w1].forEach((t) => (t as DeviceTensor).dispose());
  }
} finally {
  normLaunchTuning.backwardForm = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
if (failures > 0) process.exit(1);
console.log("bytes: every setting's xGrad and weightGrad equal _b4swx's");

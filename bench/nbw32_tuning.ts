/**
 * normBackward's bf16 rows kernel: main's default `_b4swc_unit` (kernels-src/cuda/norm/norm_backward_sw.cu: 256
 * threads, chunks u and u + 256, warps 6 and 7 running their dead chunk on zeros at H = 7168) against round 32's
 * `_b4sw7_unit` (norm_backward_sw7.cu: the same rows loop on 224 threads, every chunk live, both weight chunks in
 * registers; docs/perf-notes/perf32-nbw.md), interleaved in one process. The roofline's case (bench/cases_norm.ts:
 * bf16 x, weight, gradOut, fp32 rstd and weightGrad, outputs preallocated) at 8192 and 16384 tokens × 7168, under
 * `normLaunchTuning.backwardForm` "swc" (main), "sw7", then "swc" again (drift check); the knob is restored at the end.
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, rotated order over 5 rounds, the median printed).
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for the bytes bench/cases_norm.ts counts (x, gradOut,
 * xGrad, rstd, weight, weightGrad). Each setting's rows kernel is checked (backwardRowsForm) and its xGrad and
 * weightGrad are compared with `_b4swc`'s byte for byte: a difference prints FAIL and exits 1. Without a GPU it prints a
 * skip line and exits 0.
 *
 * `deno run -A --no-check bench/nbw32_tuning.ts` (or `bun bench/nbw32_tuning.ts`).
 * @module
 */
import { type DeviceTensor, empty, normBackward, normForward } from "../mod.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { backwardRowsForm } from "../ops/norm/norm_backward.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { abStart, abVerdict, FirstOutput, hostBytes, interleavedMedians, randomBf16 } from "./common.ts";

const { stream, timer, copy } = abStart("nbw32_tuning");
const H = 7168;
const ROUNDS = 5;
type Form = typeof normLaunchTuning.backwardForm;
const SETTINGS: readonly { name: string; form: Form; sym: string }[] = [
  { name: "_b4swc (main)", form: "swc", sym: "_b4swc" },
  { name: "_b4sw7", form: "sw7", sym: "_b4sw7" },
  { name: "_b4swc (drift)", form: "swc", sym: "_b4swc" },
];
const saved = normLaunchTuning.backwardForm;
let failures = 0;

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
    const tag = `${T}x${H} bf16 weight, fp32 weightGrad`;
    const firstX = new FirstOutput("_b4swc"), firstW = new FirstOutput("_b4swc");
    for (const s of SETTINGS) {
      normLaunchTuning.backwardForm = s.form;
      const form = backwardRowsForm({ x, weight: w, gradOut: dy, residualOutGrad: null, xGrad }, 1);
      if (form !== s.sym) {
        failures++;
        console.log(`FAIL ${tag} ${s.name}: the rows kernel would be ${form}, not ${s.sym}`);
      }
      run();
      failures += firstX.check(await hostBytes(xGrad), `${tag} ${s.name} xGrad`);
      failures += firstW.check(await hostBytes(weightGrad), `${tag} ${s.name} weightGrad`);
    }
    const med = interleavedMedians(
      timer,
      stream,
      SETTINGS,
      ROUNDS,
      (s) => void (normLaunchTuning.backwardForm = s.form),
      run,
    );
    normLaunchTuning.backwardForm = saved;
    const bytes = 2 * T * H + 2 * T * H + 4 * T + 2 * H + 2 * T * H + 4 * H;
    const base = med.get(SETTINGS[0].name)!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s === SETTINGS[0] ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`normBackward ${tag}\t${s.name.padEnd(15)}\t${v.toFixed(1)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    [xGrad, weightGrad, fo, rstd, dy, x, w1].forEach((t) => (t as DeviceTensor).dispose());
  }
} finally {
  normLaunchTuning.backwardForm = saved;
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "nbw32_tuning: _b4sw7's xGrad and weightGrad equal _b4swc's at both sizes");

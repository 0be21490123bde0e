/**
 * The FP4 dequantizers against round 24's ring forms (unpack24.cu; docs/perf-notes/perf24-unp.md), in one process,
 * at 8192 and 16384 × 7168 (UNP_TOKENS: others), on the roofline's input (bench/cases_more.ts: perTokenCast e2m1
 * [1, 32] with roundSf of random bf16, fp32 power-of-two scales):
 * - unpackFromE2m1fnX2 → bf16 and → fp32: "main" `tk_unpack_e2m1x2__<dtype>` (unpack.cu) against "w"
 *   `…_w` (unpackLaunchTuning.ring, ringGridPerSm 4) and "w g8" (ringGridPerSm 8);
 * - castBack e2m1 [1, 32] fp32 sf → bf16: "main" `tk_cast_back__e2m1_bf16` (cast_back.cu) against "w"
 *   `tk_cast_back__e2m1_bf16_w` (castBackLaunchTuning.e2m1Ring, ringGridPerSm 4) and "w g8".
 * The tuning objects are restored at the end.
 *
 * Each figure: 20 calls on the default stream between two events after a lead copy (LeadTimer of bench/common.ts),
 * the median of 7 repetitions; the settings interleaved over 5 rounds (rotated order), the median of the rounds
 * printed. % is of the same run's cuMemcpyDtoD (1 GiB, read + write bytes) for the bytes the op must read and write
 * (the roofline's: codes, scales, output). Every setting's output is compared with main's byte for byte, and its
 * launched symbol checked, at each size: a difference prints FAIL and exits 1. The last lines give the sizes at which
 * each ring setting beat main.
 * Without a CUDA device: a skip line, exit 0.
 *
 * `deno run -A --no-check bench/unp24_tuning.ts` (or `bun bench/unp24_tuning.ts`).
 * @module
 */
import { castBack, type DeviceTensor, empty, perTokenCast, unpackFromE2m1fnX2 } from "../mod.ts";
import { toDevice } from "../core/tensor.ts";
import { kernelFunction, syncAndCheck } from "../ffi/cuda.ts";
import { castBackLastLaunch, castBackLaunchTuning } from "../ops/quant/cast_back.ts";
import { unpackLastLaunch, unpackLaunchTuning } from "../ops/quant/unpack.ts";
import { abStart, abVerdict, DEV, FirstOutput, hostBytes, interleavedMedians, randomBf16Host } from "./common.ts";

const { stream, timer, copy } = abStart("unp24_tuning");
const H = 7168;
// UNP_TOKENS="4096,12288" measures other sizes
const TOKENS = (process.env.UNP_TOKENS ?? "8192,16384").split(",").map(Number);
const ROUNDS = 5;
const SETTINGS: readonly { name: string; ring: boolean; grid: number }[] = [
  { name: "main", ring: false, grid: 4 },
  { name: "w", ring: true, grid: 4 },
  { name: "w g8", ring: true, grid: 8 },
];

const savedU = { ...unpackLaunchTuning };
const savedC = { ...castBackLaunchTuning };
let failures = 0;
/** Per op and ring setting, the sizes at which it beat main. */
const wins = new Map<string, number[]>();

function apply(s: (typeof SETTINGS)[number]): void {
  Object.assign(unpackLaunchTuning, { ring: s.ring, ringGridPerSm: s.grid });
  Object.assign(castBackLaunchTuning, { e2m1Ring: s.ring, ringGridPerSm: s.grid });
}

/** Runs `run` under every setting, checks its symbol and compares its output with main's; then times the settings. */
async function measure(label: string, T: number, bytes: number, y: DeviceTensor, run: () => void, lastFn: () => number, sym: string): Promise<void> {
  const first = new FirstOutput("main");
  for (const s of SETTINGS) {
    apply(s);
    run();
    const want = `${sym}${s.ring ? "_w" : ""}`;
    if (lastFn() !== kernelFunction("bench", DEV, want)) {
      failures++;
      console.log(`FAIL ${label} ${T}x${H} ${s.name}: another kernel than ${want} was launched`);
    }
    failures += first.check(await hostBytes(y), `${label} ${T}x${H} ${s.name}`);
  }
  const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, apply, run);
  const base = med.get("main")!;
  for (const s of SETTINGS) {
    const v = med.get(s.name)!;
    const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
    const delta = s.ring ? `\tΔ ${(v - base).toFixed(2)} µs` : "";
    console.log(`${label} ${T}x${H}\t${s.name.padEnd(5)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    if (s.ring && v < base) wins.set(`${label} ${s.name}`, [...(wins.get(`${label} ${s.name}`) ?? []), T]);
  }
}

try {
  for (const T of TOKENS) {
    const n = T * H;
    const x = toDevice(randomBf16Host(T, H, T + 24)) as DeviceTensor;
    const [data, sf] = perTokenCast(x, { fmt: "e2m1", numPerChannels: 32, roundSf: true }) as [DeviceTensor, DeviceTensor];
    x.dispose();
    for (const dtype of ["bf16", "fp32"] as const) {
      const y = empty([T, H], dtype, { device: 0 }) as DeviceTensor;
      const o = { dtype, out: y };
      await measure(`unpackFromE2m1fnX2 e2m1x2→${dtype}`, T, n / 2 + n * (dtype === "bf16" ? 2 : 4), y, () => void unpackFromE2m1fnX2(data, o), () => unpackLastLaunch().fn, `tk_unpack_e2m1x2__${dtype}`);
      y.dispose();
    }
    const y = empty([T, H], "bf16", { device: 0 }) as DeviceTensor;
    const o = { fmt: "bf16", xBlockSize: [1, 32], out: y } as const;
    await measure("castBack e2m1 [1,32] fp32 sf→bf16", T, n / 2 + 4 * (n / 32) + 2 * n, y, () => void castBack([data, sf], o), () => castBackLastLaunch().fn, "tk_cast_back__e2m1_bf16");
    for (const t of [data, sf, y]) t.dispose();
  }
  for (const s of SETTINGS) {
    if (!s.ring) continue;
    for (const label of ["unpackFromE2m1fnX2 e2m1x2→bf16", "unpackFromE2m1fnX2 e2m1x2→fp32", "castBack e2m1 [1,32] fp32 sf→bf16"]) {
      console.log(`${label} ${s.name}: beats main at ${(wins.get(`${label} ${s.name}`) ?? []).join(", ") || "no size"}`);
    }
  }
} finally {
  Object.assign(unpackLaunchTuning, savedU);
  Object.assign(castBackLaunchTuning, savedC);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "unp24_tuning: the ring forms' outputs equal main's at every size");

/**
 * swigluForward's row-prefetch form with the block's expert cursor (kernels-src/cuda/swiglu/swiglu_rows.cu,
 * docs/perf-notes/perf18-swf.md): `_anrps` (`_anrp`'s prefetch walk, each row's realness by the cursor kept in
 * registers between a block's rows, a warp scan when it moves) against `_anrp` (each warp's binary psum search per row),
 * interleaved in one process: the roofline case of bench/cases_more.ts (bf16 → bf16 into a preallocated out),
 * 8192 and 16384 tokens × H = 7168, psum over 64 experts (alignment 128), row weights, no clamp. Settings
 * (swigluLaunchTuning.forwardRowScan, restored at the end): "main" false (`_anrp`, main's default), "anrps" true.
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, rotated order over 5 rounds, the median printed).
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for the bytes bench/roofline.ts counts (real rows of x
 * and the weights read, the real rows' outputs written). Both settings' outputs (real rows: the forward leaves padding
 * rows unwritten; the out is filled with 0x5a before each setting's call, so a row a setting leaves unwritten cannot
 * pass for the other's) are compared byte for byte on the roofline's input and on random bf16 rows: a difference
 * prints FAIL and exits 1, as does a setting that does not switch the launched kernel. Without a GPU it prints a skip
 * line and exits 0 (abStart).
 *
 * `deno run -A --no-check bench/swf18_tuning.ts` (or `bun bench/swf18_tuning.ts`).
 * @module
 */
import { type DeviceTensor, swigluForward } from "../mod.ts";
import { deviceRuntime } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians } from "./common.ts";
import { abInputs, realBytes } from "./cases_swiglu.ts";

const { stream, timer, copy } = abStart("swf18_tuning");
const H = 7168;
const A = 128;
const ROUNDS = 5;
const SETTINGS: readonly { name: string; on: boolean }[] = [
  { name: "main", on: false },
  { name: "anrps", on: true },
];

const saved = { ...swigluLaunchTuning };
let failures = 0;

/** One call of swigluForward under the current tuning into the preallocated out. */
function call(c: ReturnType<typeof abInputs>): void {
  swigluForward(c.x, { fmt: "bf16", out: c.y, psumNumTokensPerExpert: c.ps, tokenAlignment: A, topkWeights: c.w });
}

/** Both settings' outputs (real rows), compared with main's; the out refilled with 0x5a before each call. */
async function compare(random: boolean, c: ReturnType<typeof abInputs>): Promise<void> {
  const outs: Uint8Array[] = [];
  const fns: unknown[] = [];
  const y = c.y as DeviceTensor;
  for (const s of SETTINGS) {
    swigluLaunchTuning.forwardRowScan = s.on;
    deviceRuntime("bench").memset(y.device, y.addr, 0x5a, y.byteSize, y.storage.stream);
    call(c);
    fns.push(swigluLastLaunch().fn);
    outs.push(await realBytes(y, c.mask));
  }
  Object.assign(swigluLaunchTuning, saved);
  if (new Set(fns).size !== SETTINGS.length) {
    failures++;
    console.log(`FAIL ${c.T}x${H}: forwardRowScan did not switch the launched kernel`);
  }
  const bad = firstDifference(outs[1], outs[0]);
  if (bad >= 0) {
    failures++;
    console.log(`FAIL swigluForward ${c.T}x${H} ${random ? "random" : "roofline"} input: anrps's output differs from main's at byte ${bad}`);
  }
}

try {
  const r = abInputs(8192, true, true);
  await compare(true, r);
  for (const t of [r.x, r.w, r.ps, r.y]) t?.dispose();
  for (const T of [8192, 16384]) {
    const c = abInputs(T, false, true);
    await compare(false, c);
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => void (swigluLaunchTuning.forwardRowScan = s.on), () => call(c));
    Object.assign(swigluLaunchTuning, saved);
    const bytes = c.real * (2 * H * 2 + 4) + c.real * H * 2; // bench/roofline.ts's (cases_more.ts)
    const base = med.get("main")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.name === "main" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`swigluForward ${T}x${H} 64 experts, weights\t${s.name.padEnd(6)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    for (const t of [c.x, c.w, c.ps, c.y]) t?.dispose();
  }
} finally {
  Object.assign(swigluLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "swf18_tuning: anrps's outputs equal main's");

/**
 * swigluForwardAndPerTokenCast's row form with the block's expert cursor (kernels-src/cuda/swiglu/swiglu_rows.cu,
 * docs/perf-notes/perf17-swl.md): `_anrs` (the psum position kept in registers between a block's rows, a warp scan
 * when it moves) against `_anr2`, interleaved in one process:
 * the roofline case of bench/cases_swiglu.ts (bf16 → e4m3, groups of 128, fp32 sf), 8192 and 16384 tokens × H = 7168,
 * psum over 64 experts (alignment 128), row weights, no clamp. Settings (swigluLaunchTuning.castRowScan, restored at
 * the end): "main" false (`_anr2`), "anrs" true (the default since round 17; the `_anrw` variant it was measured
 * beside was dropped, docs/perf-notes/perf17-swl.md).
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, rotated order over 5 rounds, the median printed).
 * % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for the bytes bench/roofline.ts counts (real rows of x
 * and the weights read, the real rows' data and sf written). Every setting's outputs (the data's real rows: padding
 * rows are left unwritten; the whole sf) are compared with main's byte for byte on the roofline's input and on random
 * bf16 rows: a difference prints FAIL and exits 1, as does a setting that does not switch the launched kernel. Without
 * a GPU it prints a skip line and exits 0 (abStart).
 *
 * `deno run -A --no-check bench/swl17_tuning.ts` (or `bun bench/swl17_tuning.ts`).
 * @module
 */
import { type DeviceTensor, swigluForwardAndPerTokenCast, toHost } from "../mod.ts";
import type { HostTensor } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { swigluLastLaunch, swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { abStart, abVerdict, firstDifference, interleavedMedians } from "./common.ts";
import { abInputs } from "./cases_swiglu.ts";

const { stream, timer, copy } = abStart("swl17_tuning");
const H = 7168;
const A = 128;
const ROUNDS = 5;
const SETTINGS: readonly { name: string; mode: boolean }[] = [
  { name: "main", mode: false },
  { name: "anrs", mode: true },
];

const saved = { ...swigluLaunchTuning };
let failures = 0;

/** One call of the cast under the current tuning; its data and sf. */
function call(c: ReturnType<typeof abInputs>): DeviceTensor[] {
  const [d, s] = swigluForwardAndPerTokenCast(c.x, {
    fmt: "e4m3",
    numPerChannels: 128,
    psumNumTokensPerExpert: c.ps,
    tokenAlignment: A,
    topkWeights: c.w,
  });
  return [d as DeviceTensor, s as DeviceTensor];
}

/** The bytes of `t`, rows outside `mask` zeroed when `mask` is given. */
async function bytesOf(t: DeviceTensor, mask?: Uint8Array): Promise<Uint8Array> {
  const h = (await toHost(t)) as HostTensor;
  const b = new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength).slice();
  if (!mask) return b;
  const row = b.length / mask.length;
  for (let r = 0; r < mask.length; r++) if (!mask[r]) b.fill(0, r * row, (r + 1) * row);
  return b;
}

/** Both settings' outputs of one call, compared with main's (the data's real rows, the whole sf). */
async function compare(random: boolean, c: ReturnType<typeof abInputs>): Promise<void> {
  const outs: Uint8Array[][] = [];
  const fns: unknown[] = [];
  for (const s of SETTINGS) {
    swigluLaunchTuning.castRowScan = s.mode;
    const [d, sf] = call(c);
    fns.push(swigluLastLaunch().fn);
    outs.push([await bytesOf(d, c.mask), await bytesOf(sf)]);
    d.dispose();
    sf.dispose();
  }
  Object.assign(swigluLaunchTuning, saved);
  if (new Set(fns).size !== SETTINGS.length) {
    failures++;
    console.log(`FAIL ${c.T}x${H}: castRowScan did not switch the launched kernel`);
  }
  for (let i = 1; i < SETTINGS.length; i++) {
    for (let k = 0; k < 2; k++) {
      const bad = firstDifference(outs[i][k], outs[0][k]);
      if (bad >= 0) {
        failures++;
        console.log(`FAIL ${c.T}x${H} ${random ? "random" : "roofline"} input: ${SETTINGS[i].name}'s ${k ? "sf" : "data"} differs from main's at byte ${bad}`);
      }
    }
  }
}

try {
  const r = abInputs(8192, true);
  await compare(true, r);
  for (const t of [r.x, r.w, r.ps]) t.dispose();
  for (const T of [8192, 16384]) {
    const c = abInputs(T, false);
    await compare(false, c);
    const med = interleavedMedians(timer, stream, SETTINGS, ROUNDS, (s) => void (swigluLaunchTuning.castRowScan = s.mode), () => {
      for (const t of call(c)) t.dispose();
    });
    Object.assign(swigluLaunchTuning, saved);
    const bytes = c.real * (2 * H * 2 + 4) + c.real * (H + (H / 128) * 4); // bench/roofline.ts's (cases_swiglu.ts)
    const base = med.get("main")!;
    for (const s of SETTINGS) {
      const v = med.get(s.name)!;
      const pct = (100 * bytes) / (v * 1e3) / copy.gbps;
      const delta = s.name === "main" ? "" : `\tΔ ${(v - base).toFixed(2)} µs`;
      console.log(`swigluForwardAndPerTokenCast ${T}x${H} 64 experts, weights\t${s.name.padEnd(6)}\t${v.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
    }
    for (const t of [c.x, c.w, c.ps]) t.dispose();
  }
} finally {
  Object.assign(swigluLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "swl17_tuning: anrs's outputs equal main's");

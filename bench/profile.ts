/**
 * One roofline case, run a few times, for a profiler: `ncu ... deno run -A bench/profile.ts <op> <tokens> [variant]`
 * (or `bun bench/profile.ts ...`). Picks the first case of bench/cases.ts's families whose op equals `<op>`, whose
 * token count equals `<tokens>` and whose variant contains `[variant]`, sets it up, runs it `--runs N` times (default
 * 3) and synchronises; tools/ncu_summary.py reports the last launch of each kernel name. A variant ending in
 * `@<form>` (e.g. `"bf16 weight@team-l1"`) first sets that launch form of the RMSNorm forward (bench/norm_forms.ts), or of
 * stochasticCast bf16 → e4m3 (`@sr_a12`, `@sr_a12w2`). The runs sit between
 * cuProfilerStart and cuProfilerStop, so with `ncu --profile-from-start off` only they are profiled. `--list`
 * prints every case instead. Only the families up to the one holding the case are built (bench/cases.ts's order: a
 * case of a late family still sets up the earlier ones, which under ncu takes a minute or more). tools/gpu_run.sh's
 * step `ncu` drives it.
 * @module
 */
import process from "node:process";
import { devices, synchronize } from "../mod.ts";
import { runtimeName } from "../core/env.ts";
import { type BenchCase, type CaseFactory, FAMILIES } from "./cases.ts";
import { applyNormForm } from "./norm_forms.ts";
import { castLaunchTuning } from "../ops/quant/elem_launch.ts";

/** cuProfilerStart / cuProfilerStop of the driver (the shim does not export them: a profiling aid only). */
function profilerApi(): { start(): number; stop(): number } {
  const path = process.env.TK_CUDA_DRIVER ?? "libcuda.so.1";
  if (runtimeName === "bun") {
    type BunFfi = {
      dlopen(p: string, d: Record<string, { args: string[]; returns: string }>): { symbols: Record<string, () => number> };
    };
    const ffi = (import.meta as unknown as { require(id: string): BunFfi }).require("bun:ffi");
    const s = ffi.dlopen(path, { cuProfilerStart: { args: [], returns: "i32" }, cuProfilerStop: { args: [], returns: "i32" } }).symbols;
    return { start: () => s.cuProfilerStart(), stop: () => s.cuProfilerStop() };
  }
  const s = Deno.dlopen(path, {
    cuProfilerStart: { parameters: [], result: "i32" },
    cuProfilerStop: { parameters: [], result: "i32" },
  } as const).symbols;
  return { start: () => s.cuProfilerStart(), stop: () => s.cuProfilerStop() };
}

const args = process.argv.slice(2);
const runsAt = args.indexOf("--runs");
const runs = runsAt >= 0 ? Number(args.splice(runsAt, 2)[1]) : 3;
const list = args.includes("--list");
const [op, tokensText, variantArg = ""] = args.filter((a) => a !== "--list");
// `<variant>@<form>`: the RMSNorm forward's launch form of bench/norm_forms.ts (normLaunchTuning knobs), or one of
// stochasticCast bf16 → e4m3's two forms at any size (castLaunchTuning: `_sr_a12`, or the ring `_sr_a12w2` without
// its row window), e.g. `stochasticCast 16384 "bf16→e4m3@sr_a12w2"`
const CAST_FORMS: Record<string, Partial<typeof castLaunchTuning>> = {
  "sr_a12": { srRing: 0 },
  "sr_a12w2": { srRing: "w2", srRingMinRows: 0, srRingMaxRows: Infinity },
};
const at = variantArg.lastIndexOf("@");
const variant = at >= 0 ? variantArg.slice(0, at) : variantArg;
const form = variantArg.slice(at + 1);
if (at >= 0 && form in CAST_FORMS) Object.assign(castLaunchTuning, CAST_FORMS[form]);
else if (at >= 0 && !applyNormForm(form)) {
  console.error(`unknown form ${form} (bench/norm_forms.ts, or ${Object.keys(CAST_FORMS).join(" / ")})`);
  process.exit(2);
}

if (devices().length === 0) {
  console.log("bench/profile.ts needs a CUDA device; none found");
  process.exit(0);
}

let picked: BenchCase | null = null;
const rest: BenchCase[] = [];
for (const fam of FAMILIES) {
  // the families after the one holding the case are not built: their inputs (the whole roofline's, otherwise) cost
  // minutes of host work and transfers under ncu's interception, before the one profiled launch
  if (picked !== null) break;
  const mod = await import(`./${fam}`) as { cases: CaseFactory };
  for (const c of mod.cases()) {
    if (list) console.log(`${c.op}\t${c.tokens}\t${c.variant}`);
    if (!list && picked === null && c.op === op && c.tokens === Number(tokensText) && c.variant.includes(variant)) {
      picked = c;
    } else {
      rest.push(c); // freed after the profiled runs: cases of a family may share inputs that one case's dispose frees
    }
  }
}
if (list) process.exit(0);
if (picked === null) {
  console.error(`no case ${op} ${tokensText} ${variant} (--list shows them)`);
  process.exit(2);
}
picked.run(); // set-up calls of lazily built cases happen here, outside the profiled range
synchronize(0);
const prof = profilerApi();
const started = prof.start();
for (let i = 0; i < runs; i++) picked.run();
synchronize(0);
const stopped = prof.stop();
if (started !== 0 || stopped !== 0) console.error(`cuProfilerStart / Stop returned ${started} / ${stopped}`);
console.log(`profiled ${picked.op} ${picked.tokens} ${picked.variant}: ${runs} runs, ${picked.bytes} bytes each`);
picked.dispose();
for (const c of rest) c.dispose();

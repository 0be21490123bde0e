/**
 * The generic block-scaled `cast`'s round-23 form with a knob (the default since round 23) against the staged kernel it
 * replaces ("main": the knob off), interleaved in one process (docs/perf-notes/perf23-gcast.md): the bf16 generic
 * roofline row of bench/cases_cast_block.ts, bf16 → e4m3 [16, 64] (main: `tk_cast_block_staged__bf16_e4m3_r16c64_a`;
 * `castBlockLaunchTuning.perBlock16x64`: `tk_per_block_cast__bf16_e4m3_16x64`, at every size here: the default takes it
 * from 10240 rows), at 8192 and 16384 × 7168 (GCAST_TOKENS: others), with fp32 scales (the roofline's) and packed UE8M0
 * column-major scales. Settings per row: main (knob off), then the knob on (restored at the end). (The fp16 → e4m3
 * [1, 128] row, `tk_cast_block_staged__fp16_e4m3_r1c128_a` against `tk_per_token_cast__fp16_e4m3_g128_pdl` by `perToken16`,
 * left with that knob and the staged form in trim32.)
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, 20 calls into preallocated outputs after a lead copy,
 * rotated order over 5 rounds, the median printed). % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for the
 * bytes bench/cases_cast_block.ts counts: 2·T·H input, T·H codes, the scale grid's storage. Δ is the form's time
 * minus main's. Each setting's data and sf (whole allocations) are compared byte for byte with main's, and each
 * setting's launch is checked to be the expected kernel: a difference prints FAIL and exits 1.
 *
 * `deno run -A --no-check bench/gcast23_tuning.ts` (or `bun bench/gcast23_tuning.ts`).
 * @module
 */
import process from "node:process";
import { cast, type CastOptions, type DeviceTensor } from "../mod.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { castBlockLaunchTuning, lastCastBlockKernel } from "../ops/quant/cast_block_launch.ts";
import { abStart, abVerdict, firstDifference, hostBytes, interleavedMedians, randomBf16 } from "./common.ts";

const { stream, timer, copy } = abStart("gcast23_tuning");
const H = 7168;
const ROUNDS = 5;
type Knob = "perBlock16x64";
const ROWS: {
  name: string;
  block: [number, number];
  knob: Knob;
  main: string;
  form: string;
}[] = [
  {
    name: "bf16→e4m3 [16,64]",
    block: [16, 64],
    knob: "perBlock16x64",
    main: "tk_cast_block_staged__bf16_e4m3_r16c64_a",
    form: "tk_per_block_cast__bf16_e4m3_16x64",
  },
];
const SF = [
  { name: "fp32-sf", o: {} },
  { name: "packed-col", o: { roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } },
] as const;

/** The storage bytes of an sf grid (fp32, or packed UE8M0 column-major with 4-row padding). */
function sfBytes(nbm: number, nbk: number, packed: boolean): number {
  return packed ? Math.ceil(nbm / 4) * 4 * Math.ceil(nbk / 4) * 4 : nbm * nbk * 4;
}

const saved = { ...castBlockLaunchTuning };
let failures = 0;
try {
  castBlockLaunchTuning.perBlock16x64MinRows = 0; // the form at every size (the default takes [16, 64] from 10240 rows)
  for (const T of (process.env.GCAST_TOKENS ?? "8192,16384").split(",").map(Number)) {
    for (const row of ROWS) {
      const x = randomBf16(T, H, T + 23);
      for (const sf of SF) {
        const tag = `${T}x${H} ${row.name} ${sf.name}`;
        const settings = [{ name: "main", on: false, kernel: row.main }, {
          name: row.knob,
          on: true,
          kernel: row.form,
        }];
        const o: CastOptions = { dtype: "e4m3", blockSize: row.block, ...sf.o };
        // one pair of outputs per setting (written by each setting's own launch, then compared)
        const outs = settings.map((s) => {
          castBlockLaunchTuning[row.knob] = s.on;
          const [data, sfOut] = cast(x, o) as [DeviceTensor, DeviceTensor];
          if (lastCastBlockKernel() !== s.kernel) {
            failures++;
            console.log(`FAIL ${tag} ${s.name}: launched ${lastCastBlockKernel()}, not ${s.kernel}`);
          }
          return { data, sf: sfOut, opts: { ...o, out: { data, sf: sfOut } } };
        });
        let cur = 0;
        const med = interleavedMedians(timer, stream, settings, ROUNDS, (s) => {
          castBlockLaunchTuning[row.knob] = s.on;
          cur = settings.indexOf(s);
        }, () => void cast(x, outs[cur].opts));
        Object.assign(castBlockLaunchTuning, saved);
        const bytes = 3 * T * H +
          sfBytes(Math.ceil(T / row.block[0]), Math.ceil(H / row.block[1]), sf.name === "packed-col");
        const tMain = med.get("main")!;
        for (const s of settings) {
          const t = med.get(s.name)!;
          const pct = (100 * bytes) / (t * 1e3) / copy.gbps;
          const delta = s.on ? `\tΔ ${(t - tMain).toFixed(2)} µs` : "";
          console.log(`cast ${tag.padEnd(42)}\t${s.name.padEnd(13)}\t${t.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
        }
        for (const part of ["data", "sf"] as const) {
          const bad = firstDifference(await hostBytes(outs[1][part]), await hostBytes(outs[0][part]));
          if (bad >= 0) {
            failures++;
            console.log(`FAIL ${tag}: ${row.knob}'s ${part} differs from main's at byte ${bad}`);
          }
        }
        for (const out of outs) {
          out.data.dispose();
          out.sf.dispose();
        }
      }
      x.dispose();
    }
  }
} finally {
  Object.assign(castBlockLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "gcast23_tuning: each round-23 form's outputs (data and sf) equal main's for every case");

/**
 * perBlockCastLossless's launch forms, interleaved in one process: main's two launches (`__sf`, then `__data_a`;
 * losslessLaunchTuning.tiled off), round 19's `__tile_cp` (`losslessLaunchTuning.tiledForm` 2: a cp.async ring of 3 tiles in shared memory;
 * docs/perf-notes/perf19-lsl.md) and round 20's `__tile_cg` (3, the default since round 20's A/B: the same ring filled
 * by lane pairs, 16-byte cp.async.cg of the codes and one exponent word a pair, with the L2::256B prefetch hint;
 * docs/perf-notes/perf20-lsl.md). Rounds 19 and 20 had a script each (lsl19_tuning: tile against cp; lsl20_tuning: cp
 * against cg) and round 16 one (lsl16_tuning: main's launches against tile), merged here on 2026-12-03; round 16's
 * `__tile` (tiledForm 0) left with its setting in trim24. The roofline's cases (bench/cases_more.ts): MXFP4 input (e2m1x2 codes with
 * fp32 power-of-two scales [1, 32], made by perTokenCast from random bf16) → e4m3 [128, 128] with fp32 scales or
 * packed UE8M0 (TMA-aligned column-major), 8192 and 16384 × 7168.
 * Settings (restored at the end): dataAligned on; tiled off; tiled on with tiledForm 2 / 3.
 *
 * Each figure: interleavedMedians (bench/common.ts: LeadTimer, 20 calls into preallocated outputs after a lead copy,
 * rotated order over 5 rounds, the median printed). % is of the same run's cuMemcpyDtoD (1 GiB, read + write) for
 * the bytes the roofline counts: T·H/2 codes + the input scales read, T·H e4m3 bytes + the output scales written.
 * Δ is the row's time minus the row before's (cp against main, cg against cp). Each form's data and sf (whole
 * allocations) are compared byte for byte with the form before's, and each setting's launch is checked to be the
 * expected kernel: a difference prints FAIL and exits 1.
 *
 * `deno run -A --no-check bench/lsl_tiled_tuning.ts` (or `bun bench/lsl_tiled_tuning.ts`).
 * @module
 */
import { type DeviceTensor, perBlockCastLossless, perTokenCast, type Quantized } from "../mod.ts";
import { toDevice } from "../core/tensor.ts";
import { syncAndCheck } from "../ffi/cuda.ts";
import { lastLosslessDataKernel, losslessLaunchTuning } from "../ops/quant/per_block_cast_lossless.ts";
import { abStart, abVerdict, firstDifference, hostBytes, interleavedMedians, randomBf16Host } from "./common.ts";

const { stream, timer, copy } = abStart("lsl_tiled_tuning");
const H = 7168;
const ROUNDS = 5;
const SETTINGS = [
  { name: "main", tiled: false, form: 3, kernel: "tk_per_block_cast_lossless__data_a" },
  { name: "cp", tiled: true, form: 2, kernel: "tk_per_block_cast_lossless__tile_cp" },
  { name: "cg", tiled: true, form: 3, kernel: "tk_per_block_cast_lossless__tile_cg" },
] as const;
const VARIANTS = [
  { name: "fp32-sf", o: { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128] } as const },
  {
    name: "packed-ue8m0",
    o: { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128], roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } as const,
  },
];

/** The storage bytes of an sf grid, as bench/cases_more.ts counts them. */
function sfBytes(nbm: number, nbk: number, packed: boolean, colMajor: boolean): number {
  const cols = packed ? Math.ceil(nbk / 4) : nbk;
  return (colMajor ? Math.ceil(nbm / 4) * 4 : nbm) * cols * 4;
}

const saved = { ...losslessLaunchTuning };
let failures = 0;
try {
  for (const T of [8192, 16384]) {
    const xd = toDevice(randomBf16Host(T, H, T + 11)) as DeviceTensor;
    const q = perTokenCast(xd, { fmt: "e2m1", numPerChannels: 32, roundSf: true }) as Quantized;
    xd.dispose();
    for (const v of VARIANTS) {
      const tag = `${T}x${H} e2m1 [1,32] → e4m3 128x128 ${v.name}`;
      // one pair of outputs per setting (written by each setting's own launches, then compared)
      const outs = SETTINGS.map((s) => {
        Object.assign(losslessLaunchTuning, { dataAligned: true, tiled: s.tiled, tiledForm: s.form });
        const [data, sf] = perBlockCastLossless(q, v.o) as [DeviceTensor, DeviceTensor];
        if (lastLosslessDataKernel() !== s.kernel) {
          failures++;
          console.log(`FAIL ${tag} ${s.name}: launched ${lastLosslessDataKernel()}, not ${s.kernel}`);
        }
        return { data, sf, opts: { ...v.o, out: { data, sf } } };
      });
      let cur = 0;
      const med = interleavedMedians(
        timer,
        stream,
        SETTINGS,
        ROUNDS,
        (s) => {
          Object.assign(losslessLaunchTuning, { dataAligned: true, tiled: s.tiled, tiledForm: s.form });
          cur = SETTINGS.indexOf(s);
        },
        () => void perBlockCastLossless(q, outs[cur].opts),
      );
      Object.assign(losslessLaunchTuning, saved);
      const packed = v.name === "packed-ue8m0";
      const bytes = (T * H) / 2 + sfBytes(T, H / 32, false, false) + T * H + sfBytes(T / 128, H / 128, packed, packed);
      for (const [i, s] of SETTINGS.entries()) {
        const t = med.get(s.name)!;
        const pct = (100 * bytes) / (t * 1e3) / copy.gbps;
        const delta = i === 0 ? "" : `\tΔ ${(t - med.get(SETTINGS[i - 1].name)!).toFixed(2)} µs`;
        console.log(`perBlockCastLossless ${tag.padEnd(48)}\t${s.name.padEnd(5)}\t${t.toFixed(2)} µs\t${pct.toFixed(1)}%${delta}`);
      }
      for (const [i, s] of SETTINGS.entries()) {
        if (i === 0) continue;
        for (const part of ["data", "sf"] as const) {
          const bad = firstDifference(await hostBytes(outs[i][part]), await hostBytes(outs[i - 1][part]));
          if (bad >= 0) {
            failures++;
            console.log(`FAIL ${tag}: ${s.name}'s ${part} differs from ${SETTINGS[i - 1].name}'s at byte ${bad}`);
          }
        }
      }
      for (const o of outs) {
        o.data.dispose();
        o.sf.dispose();
      }
    }
    (q[0] as DeviceTensor).dispose();
    (q[1] as DeviceTensor).dispose();
  }
} finally {
  Object.assign(losslessLaunchTuning, saved);
  syncAndCheck(0, stream.handle);
  timer.dispose();
}
abVerdict(failures, "lsl_tiled_tuning: each form's outputs (data and sf) equal the form before's (main, tile, cp, cg) for every case");

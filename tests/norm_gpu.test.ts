/**
 * The CUDA kernels of the RMSNorm family against the CPU reference, byte for byte on every byte of every output
 * allocation, on fresh random inputs from printed seeds (spec/norm-rope-rand.md D.11): `normForward`,
 * `normForwardAndPerTokenCast`, `addRmsnormForwardAndPerTokenCast`, `normBackward`; the fused cast equal to
 * `perTokenCast(normForward(...)[0])` on the device; two launch shapes of the reduction and three SM counts giving
 * the same bits; the conformance vectors through the device path; staging in both directions. Skipped, and
 * counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { encodeBf16 } from "../core/dtype.ts";
import { config } from "../core/config.ts";
import { contiguousHost } from "../core/tensor.ts";
import { createStream, DeviceTensor, HostTensor, perTokenCast, type Quantized, tensor, toDevice, toHost } from "../mod.ts";
import { launchCount } from "../ffi/cuda.ts";
import {
  addRmsnormForwardAndPerTokenCast,
  normBackward,
  type NormBackwardOptions,
  normForward,
  normForwardAndPerTokenCast,
  type NormForwardAndPerTokenCastOptions,
  type NormForwardOptions,
} from "../ops/norm/mod.ts";
import { normLaunchTuning } from "../ops/norm/launch.ts";
import { backwardRowsForm, usesB4swc } from "../ops/norm/norm_backward.ts";
import { castViewsAligned } from "../ops/norm/norm_forward.ts";
import { loadGolden } from "./golden.ts";
import { refuses } from "./refuses.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, sameNormCastOutputs, SF_LAYOUTS_FP32, storageBytes, uploadView } from "./gpu_util.ts";

type Dt = "fp32" | "bf16";

/** `[T, H]` rows (B = 0; row stride `stride`), or `[B, T, H]` over the same kind of storage (batch stride T·stride). */
function rows(rand: () => number, B: number, T: number, H: number, dtype: Dt, stride = H): HostTensor {
  const flat = randomInput(rand, Math.max(B, 1) * T, H, dtype, stride);
  if (B === 0) return flat;
  return new HostTensor(flat.data, dtype, [B, T, H], [T * stride, stride, 1]);
}

/** Moderate values (|v| ≤ 4): weights, gradients. */
function moderate(rand: () => number, shape: number[], dtype: Dt): HostTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(n).map(() => Math.fround((rand() * 2 - 1) * 4));
  if (dtype === "fp32") return tensor(v, shape, "fp32");
  return tensor(new Uint16Array(n).map((_, i) => encodeBf16(v[i])), shape, "bf16");
}

/** Runs f with one `normLaunchTuning` field set to `value`, then restores it. */
function withTuning<K extends keyof typeof normLaunchTuning, T>(key: K, value: (typeof normLaunchTuning)[K], f: () => T): T {
  const prev = normLaunchTuning[key];
  normLaunchTuning[key] = value;
  try {
    return f();
  } finally {
    normLaunchTuning[key] = prev;
  }
}
/** The bf16 normBackward rows kernel of `blocks` per SM (4: _b4, 3: staged). */
/** The team width of the launches (0 = default). */
const withTeam = <T>(p: number, f: () => T): T => withTuning("teamThreads", p, f);

/** Runs f with the normBackward launch knobs `t` (normLaunchTuning, ops/norm/launch.ts) set, then restores them. */
function withBwdTuning<T>(t: Partial<typeof normLaunchTuning>, f: () => T): T {
  const prev = { ...normLaunchTuning };
  Object.assign(normLaunchTuning, t);
  try {
    return f();
  } finally {
    Object.assign(normLaunchTuning, prev);
  }
}

// ---- normForward ------------------------------------------------------------------------------------------

interface FwdCase {
  B: number;
  T: number;
  H: number;
  dtype: Dt;
  weight: boolean;
  residual: boolean;
  outScale: number;
  stride: number;
}

/** Runs normForward on both backends and compares out, rstd and residualOut allocations. */
function compareForward(rand: () => number, c: FwdCase, label: string, team = 0): void {
  const x = rows(rand, c.B, c.T, c.H, c.dtype, c.stride);
  const r = c.residual ? rows(rand, c.B, c.T, c.H, c.dtype, c.stride + 16) : undefined;
  const w = c.weight ? moderate(rand, [c.H], c.dtype) : null;
  compareForwardOn(x, r, w, c.outScale, label, team);
}

/** compareForward on given inputs. */
function compareForwardOn(
  x: HostTensor,
  r: HostTensor | undefined,
  w: HostTensor | null,
  outScale: number,
  label: string,
  team = 0,
): void {
  const o: NormForwardOptions = { eps: 1e-6, outScale, residual: r };
  const [co, cr, cs] = normForward(x, w, o);
  const dx = uploadView(x);
  const dr = r ? uploadView(r) : undefined;
  const dw = w ? uploadView(w) : null;
  const [go, gr, gs] = withTeam(team, () => normForward(dx, dw, { ...o, residual: dr }));
  try {
    sameAllocation(go, co, `${label} out`);
    sameAllocation(gr, cr, `${label} rstd`);
    if (r) sameAllocation(gs, cs, `${label} residualOut`);
    else assert.equal(gs, dx, `${label}: normInput is x`);
  } finally {
    dispose(go, gr, r ? gs : null, dx, dr, dw);
  }
}

const HIDDEN = [16, 48, 512, 640, 4096, 5120, 7168, 8192];
for (const dtype of ["fp32", "bf16"] as const) {
  for (const weight of [false, true]) {
    for (const residual of [false, true]) {
      const seed = 7000 + (dtype === "bf16" ? 100 : 0) + (weight ? 10 : 0) + (residual ? 1 : 0);
      gpuTest(`normForward kernel = reference: ${dtype}, weight ${weight}, residual ${residual}, outScale 1 and 0.3, 2-D and 3-D, hidden ${HIDDEN} (seed ${seed})`, () => {
        const rand = rng(seed);
        for (const H of HIDDEN) {
          for (const outScale of [1, 0.3]) {
            compareForward(rand, { B: 0, T: 5, H, dtype, weight, residual, outScale, stride: H }, `${H} 2-D outScale ${outScale}`);
            compareForward(rand, { B: 2, T: 3, H, dtype, weight, residual, outScale, stride: H + 32 }, `${H} 3-D padded outScale ${outScale}`);
          }
          // unaligned row stride (not a multiple of 16 bytes): the element-wise path
          compareForward(rand, { B: 0, T: 3, H, dtype, weight, residual, outScale: 1, stride: H + 1 }, `${H} stride H+1`);
        }
      });
    }
  }
}

gpuTest("normForward gives the same bits for every legal team width of the reduction (32 and 256 threads per row, …)", () => {
  const seed = 7301;
  for (const [H, teams] of [[512, [16, 32, 64, 256]], [7168, [256]], [4096, [128, 256]], [48, [2, 4, 32, 256]], [16, [1, 2, 64]]] as [number, number[]][]) {
    for (const team of teams) {
      for (const dtype of ["fp32", "bf16"] as const) {
        compareForward(rng(seed), { B: 0, T: 37, H, dtype, weight: true, residual: true, outScale: 0.3, stride: H }, `seed ${seed} ${dtype} H ${H} team ${team}`, team);
      }
    }
  }
});

gpuTest("normForward writes in place into residual or x (the in-place residualOut forms)", () => {
  const rand = rng(7401);
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const into of ["residual", "x"] as const) {
      const x = rows(rand, 0, 65, 2048, dtype);
      const r = rows(rand, 0, 65, 2048, dtype);
      const w = moderate(rand, [2048], dtype);
      const hx = contiguousHost(x);
      const hr = contiguousHost(r);
      const [co, cr] = normForward(hx, w, { eps: 1e-6, residual: hr, out: { residualOut: into === "x" ? hx : hr } });
      const dx = uploadView(x);
      const dr = uploadView(r);
      const dw = uploadView(w);
      const target = into === "x" ? dx : dr;
      const [go, gr, gs] = normForward(dx, dw, { eps: 1e-6, residual: dr, out: { residualOut: target } });
      assert.equal(gs, target);
      sameAllocation(go, co, `seed 7401 ${dtype} into ${into}: out`);
      sameAllocation(gr, cr, `seed 7401 ${dtype} into ${into}: rstd`);
      sameAllocation(target, into === "x" ? hx : hr, `seed 7401 ${dtype} into ${into}: residualOut`);
      dispose(go, gr, dx, dr, dw);
    }
  }
});

gpuTest("normForward at full size and many tokens: 4001 × 7168 and 16384 × 512 (seed 7501)", () => {
  const rand = rng(7501);
  compareForward(rand, { B: 0, T: 4001, H: 7168, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: 7168 }, "4001x7168 bf16");
  compareForward(rand, { B: 0, T: 16384, H: 512, dtype: "fp32", weight: true, residual: false, outScale: 0.3, stride: 512 }, "16384x512 fp32");
});

gpuTest("normForward: the grid (config.numSms 1, 7 and the device's) does not change the bits", () => {
  for (const sms of [1, 7, null]) {
    const prev = config.numSms;
    config.numSms = sms;
    try {
      compareForward(rng(7601), { B: 3, T: 100, H: 1024, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: 1024 }, `numSms ${sms}`);
    } finally {
      config.numSms = prev;
    }
  }
});

/**
 * Runs f with the forward tuning knobs set (grid cap per SM; `warpRows`: the residual warp rows `_wr_res`, otherwise
 * the team kernels; the residual casts on aligned views by the warp rows `_wr_res`, castRowForm 0: round 11's default
 * `_tp16c_res` is tested in tests/ncast11_gpu.test.ts), then restores them. Without a residual the team kernels run either way (withRowForms tests the
 * register and bulk rows).
 */
function withForwardTuning<T>(blocksPerSm: number, f: () => T, warpRows = false): T {
  const t = normLaunchTuning;
  const prev = [t.forwardBlocksPerSm, t.residualWarpRows, t.forwardWarpRowsMinRowsPerSm, t.forwardRegRows, t.castBulkRows, t.castRowForm] as const;
  t.forwardBlocksPerSm = blocksPerSm;
  t.castRowForm = 0;
  t.residualWarpRows = warpRows;
  t.forwardRegRows = t.castBulkRows = false;
  t.forwardWarpRowsMinRowsPerSm = 0; // warp rows for any row count when asked for (the tests' shapes are small)
  try {
    return f();
  } finally {
    [t.forwardBlocksPerSm, t.residualWarpRows, t.forwardWarpRowsMinRowsPerSm, t.forwardRegRows, t.castBulkRows, t.castRowForm] = prev;
  }
}

/** A bf16 weight `[H]` at element offset 1 of its storage (not 16-byte aligned: the element-wise staging path). */
function unalignedWeight(rand: () => number, H: number): HostTensor {
  const w = moderate(rand, [H + 1], "bf16");
  return new HostTensor(w.data, "bf16", [H], [1], 1);
}

/**
 * normForward with a residual (bf16, H columns) = reference under the current launch knobs: residualOut new (2-D,
 * 3-D padded, stride H + 1), and in place into residual or x with aligned and unaligned strides.
 */
function compareResidualForms(rand: () => number, H: number, tag: string): void {
  compareForward(rand, { B: 0, T: 29, H, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: H }, `${tag} 2-D`);
  compareForward(rand, { B: 2, T: 5, H, dtype: "bf16", weight: false, residual: true, outScale: 0.3, stride: H + 32 }, `${tag} 3-D padded`);
  compareForward(rand, { B: 0, T: 7, H, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: H + 1 }, `${tag} stride H+1`);
  for (const into of ["residual", "x"] as const) {
    for (const stride of [H, H + 1]) {
      const x = rows(rand, 0, 13, H, "bf16", stride);
      const r = rows(rand, 0, 13, H, "bf16", stride);
      const w = moderate(rand, [H], "bf16");
      // host copies in the same (strided) layout, updated in place by the reference
      const hx = new HostTensor(x.data.slice(), "bf16", x.shape, x.strides, x.offset);
      const hr = new HostTensor(r.data.slice(), "bf16", r.shape, r.strides, r.offset);
      const [co, cr] = normForward(hx, w, { eps: 1e-6, residual: hr, out: { residualOut: into === "x" ? hx : hr } });
      const dx = uploadView(x);
      const dr = uploadView(r);
      const dw = uploadView(w);
      const target = into === "x" ? dx : dr;
      const [go, gr] = normForward(dx, dw, { eps: 1e-6, residual: dr, out: { residualOut: target } });
      const label = `${tag} in place into ${into}, stride ${stride}`;
      sameAllocation(go, co, `${label}: out`);
      sameAllocation(gr, cr, `${label}: rstd`);
      sameAllocation(dx, hx, `${label}: x`);
      sameAllocation(dr, hr, `${label}: residual`);
      dispose(go, gr, dx, dr, dw);
    }
  }
}

gpuTest("normForward and its casts bf16 with a residual by warp rows (_wr_res; with castRowForm 0 on aligned views too) = reference: every chunk count per lane, weight or not, outScale, 2-D / 3-D, in place, padded and unaligned strides, unaligned weight, grid caps (seed 7801)", () => {
  const rand = rng(7801);
  // residualOut new, in place into residual or x; padded and unaligned strides; the casts. H > 256: N = 32 … 512
  // chunks, J = 1 … 16 per lane, with dead chunks (272, 528, 7168) and without
  for (const blocks of [0, 3]) {
    withForwardTuning(blocks, () => {
      for (const H of [272, 528, 1024, 2048, 4096, 7168, 8192]) {
        const tag = `wr_res blocks/SM ${blocks} H ${H}`;
        compareResidualForms(rand, H, tag);
        compareForwardOn(rows(rand, 0, 19, H, "bf16"), rows(rand, 0, 19, H, "bf16"), unalignedWeight(rand, H), 1, `${tag} unaligned weight`);
        for (const npc of [32, 128] as const) {
          if (H % npc) continue;
          const c: FwdCase = { B: 0, T: 17, H, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: H };
          compareCast(rand, c, { fmt: "e4m3", numPerChannels: npc, withOutBf16: true, ...SF_CONFIGS[5][1] }, `${tag} cast ${npc}`);
          // addRmsnorm: residual updated in place
          const x = rows(rand, 0, 17, H, "bf16");
          const r = rows(rand, 0, 17, H, "bf16");
          const w = moderate(rand, [H], "bf16");
          const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, ...SF_CONFIGS[0][1] } as const;
          const dx = uploadView(x);
          const dr = uploadView(r);
          const dw = uploadView(w);
          const [cd, cf] = addRmsnormForwardAndPerTokenCast(x, r, w, o);
          const [gd, gf] = addRmsnormForwardAndPerTokenCast(dx, dr, dw, o);
          sameAllocation(gd, cd, `${tag} addRmsnorm ${npc} data`);
          sameAllocation(gf, cf, `${tag} addRmsnorm ${npc} sf`);
          sameAllocation(dr, r, `${tag} addRmsnorm ${npc} residual`);
          dispose(gd, gf, dx, dr, dw);
        }
      }
    }, true);
  }
  // full size: many rows per warp with a capped grid, and one row per warp (with the residency pad of the A/B)
  for (const blocks of [1, 0]) {
    withForwardTuning(blocks, () => {
      if (blocks === 0) normLaunchTuning.warpRowsSmemPad = 120 * 1024; // restored below
      try {
        const c: FwdCase = { B: 0, T: 3000, H: 7168, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: 7168 };
        compareForward(rand, c, `wr_res 3000x7168 blocks/SM ${blocks}`);
        compareCast(rand, c, { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }, `wr_res cast 3000x7168 blocks/SM ${blocks}`);
      } finally {
        normLaunchTuning.warpRowsSmemPad = 0;
      }
    }, true);
  }
});

/**
 * Runs f with the one-block-per-row forms (the defaults: normForward by the two-pass rows `_tp16hr` on views that allow
 * 16-byte accesses and by register rows `_rr4_l2` on the others, the cast by bulk rows `_e4m3_g<N>_br4y` on views
 * that allow 16-byte accesses and `_e4m3_g<N>_br4` on the others) from any row count, grid cap `blocksPerSm`, then
 * restores the knobs.
 */
function withRowForms<T>(blocksPerSm: number, f: () => T): T {
  const t = normLaunchTuning;
  const prev = [t.forwardRegRows, t.castBulkRows, t.forwardBlocksPerSm, t.forwardWarpRowsMinRowsPerSm] as const;
  t.forwardRegRows = t.castBulkRows = true;
  t.forwardBlocksPerSm = blocksPerSm;
  t.forwardWarpRowsMinRowsPerSm = 0; // the row forms for any row count (the tests' shapes are small)
  try {
    return f();
  } finally {
    [t.forwardRegRows, t.castBulkRows, t.forwardBlocksPerSm, t.forwardWarpRowsMinRowsPerSm] = prev;
  }
}

/**
 * The row-form cases (`_tp16hr` on the aligned views, one block of 4 warps per row: `_rr4_l2` on the unaligned ones
 * (stride H + 1, unaligned weight) and the casts `_e4m3_g<N>_br4y` / `_e4m3_g<N>_br4`) under the current launch knobs, tagged `form`:
 * every chunk count per thread (J = N/P = 1, N ≤ P, threads beyond the tree
 * holding +0 chunks, … 4 for P = 128, with dead chunks), teams wider than the tree, weight or not, outScale, 2-D /
 * 3-D, padded and unaligned strides, unaligned weight, the casts with every sf layout, and 3000 × 7168.
 */
function compareRowForms(rand: () => number, blocks: number, form: string): void {
  for (const H of [16, 48, 272, 288, 512, 528, 640, 1024, 2048, 4096, 5120, 7168, 8192]) {
    for (const weight of [true, false]) {
      const outScale = rand() < 0.5 ? 1 : 0.3;
      const tag = `${form} blocks/SM ${blocks} H ${H} weight ${weight} outScale ${outScale}`;
      compareForward(rand, { B: 0, T: 41, H, dtype: "bf16", weight, residual: false, outScale, stride: H }, `${tag} 2-D`);
      compareForward(rand, { B: 3, T: 5, H, dtype: "bf16", weight, residual: false, outScale, stride: H + 32 }, `${tag} 3-D padded`);
      compareForward(rand, { B: 0, T: 9, H, dtype: "bf16", weight, residual: false, outScale: 1, stride: H + 1 }, `${tag} stride H+1`);
    }
    const x = rows(rand, 0, 19, H, "bf16");
    compareForwardOn(x, undefined, unalignedWeight(rand, H), 1, `${form} blocks/SM ${blocks} H ${H} unaligned weight`);
    // the fused casts (_e4m3_g<N>_br4y on aligned views; _e4m3_g<N>_br4 at stride H + 1, about one case in three):
    // groups of 2 and 8 lanes, every sf layout, outBf16, 2-D and 3-D
    for (const npc of [32, 128] as const) {
      if (H % npc) continue;
      for (const [name, sf] of SF_CONFIGS) {
        const withOutBf16 = rand() < 0.5;
        const B = rand() < 0.3 ? 2 : 0;
        const u = rand();
        const c: FwdCase = { B, T: B ? 7 : 23, H, dtype: "bf16", weight: rand() < 0.7, residual: false, outScale: rand() < 0.5 ? 1 : 0.3, stride: H + (u < 0.35 ? 0 : u < 0.65 ? 64 : 1) };
        compareCast(rand, c, { fmt: "e4m3", numPerChannels: npc, withOutBf16, ...sf }, `${form} cast blocks/SM ${blocks} ${name} ${npc} ${JSON.stringify(c)} outBf16 ${withOutBf16}`);
      }
    }
  }
  // full size, many rows per block when the grid is capped
  const c: FwdCase = { B: 0, T: 3000, H: 7168, dtype: "bf16", weight: true, residual: false, outScale: 1, stride: 7168 };
  compareForward(rand, c, `${form} 3000x7168 blocks/SM ${blocks}`);
  compareCast(rand, c, { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }, `${form} cast 3000x7168 blocks/SM ${blocks}`);
}

gpuTest("normForward bf16 by the row forms (_tp16hr on aligned views; register rows _rr4_l2 on unaligned ones: x or out by element loads, the weight's element-wise staging, the other tensors' 16-byte paths with the L2::256B hint) and the fused cast by bulk rows (_e4m3_g<N>_br4y on aligned views, _e4m3_g<N>_br4 on the others: the row landed in shared memory by one bulk copy) = reference: every chunk count per thread, teams wider than the tree, weight or not, outScale, 2-D / 3-D, padded and unaligned strides, unaligned weight, grid caps (a block's later rows reuse its buffer) (seed 8801)", () => {
  const rand = rng(8801);
  for (const blocks of [0, 1, 3]) withRowForms(blocks, () => compareRowForms(rand, blocks, "tp16hr / rr4_l2 / br4y / br4 cast"));
});

/**
 * normForward by its default row forms (docs/perf-notes/perf8-norm.md, perf9-nf.md): the two-pass rows of 512 threads
 * (`_tp16hr`)
 * on views that allow 16-byte accesses, `_rr4_l2` on the others (stride H + 1, an unaligned weight): one or two
 * pieces a thread with dead ones, K ≤ 256 (no second pieces) and > 256, N < 512 (the +0 nodes), weight or not,
 * outScale, 2-D / 3-D, row strides H + 8 (16-byte rows that are not contiguous) and H + 32, NaN / ±Inf / subnormal /
 * huge rows with a special weight, aligned and not (one block per row), grid cap 3 blocks per SM (rows walked
 * grid-stride by block: the node buffer and rstd's slot reused behind the two barriers) with 3000 × 7168.
 */
function compareDefaultRowForms(rand: () => number, blocks: number): void {
  const form = "tp16hr / rr4_l2";
  for (const H of [16, 48, 272, 512, 528, 1024, 4096, 4112, 5120, 7168, 8192]) {
    for (const weight of [true, false]) {
      const outScale = rand() < 0.5 ? 1 : 0.3;
      const tag = `${form} blocks/SM ${blocks} H ${H} weight ${weight} outScale ${outScale}`;
      compareForward(rand, { B: 0, T: 41, H, dtype: "bf16", weight, residual: false, outScale, stride: H }, `${tag} 2-D`);
      compareForward(rand, { B: 3, T: 5, H, dtype: "bf16", weight, residual: false, outScale, stride: H + 32 }, `${tag} 3-D padded`);
      compareForward(rand, { B: 0, T: 9, H, dtype: "bf16", weight, residual: false, outScale, stride: H + 8 }, `${tag} stride H+8`);
      compareForward(rand, { B: 0, T: 9, H, dtype: "bf16", weight, residual: false, outScale: 1, stride: H + 1 }, `${tag} stride H+1`);
    }
    compareForwardOn(rows(rand, 0, 19, H, "bf16"), undefined, unalignedWeight(rand, H), 1, `${form} blocks/SM ${blocks} H ${H} unaligned weight`);
  }
  // (special values and full size once per form: the first at one block per row, the second walked grid-stride)
  for (const H of blocks === 0 ? [64, 512, 7168] : []) {
    for (const outScale of [1, 3e38, 1e-39]) {
      const x = specialRows(rand, 10, H, "bf16");
      compareForwardOn(x, undefined, specialWeight(rand, H, "bf16"), outScale, `${form} blocks/SM ${blocks} special H ${H} outScale ${outScale} weight`);
      compareForwardOn(x, undefined, null, outScale, `${form} blocks/SM ${blocks} special H ${H} outScale ${outScale}`);
      // _rr4_l2: the same rows with a special weight at element offset 1 (the weight's element-wise staging)
      const sw = specialWeight(rand, H + 1, "bf16");
      const uw = new HostTensor(sw.data, "bf16", [H], [1], 1);
      compareForwardOn(x, undefined, uw, outScale, `${form} blocks/SM ${blocks} special H ${H} outScale ${outScale} unaligned weight`);
    }
  }
  if (blocks !== 0) compareForward(rand, { B: 0, T: 3000, H: 7168, dtype: "bf16", weight: true, residual: false, outScale: 1, stride: 7168 }, `${form} 3000x7168 blocks/SM ${blocks}`);
}

gpuTest("normForward bf16 by the two-pass rows (_tp16hr: 512 threads a row, the fold by warp 0, x held in registers between the passes; _rr4_l2 on unaligned views) = reference: H classes, weight or not, outScale, 2-D / 3-D, padded and unaligned strides, unaligned weight, special values with an aligned and an unaligned weight, grid caps (seed 8851)", () => {
  const rand = rng(8851);
  for (const blocks of [0, 3]) withRowForms(blocks, () => compareDefaultRowForms(rand, blocks));
});

/**
 * normForward's two-pass rows `_tp16hr` (docs/perf-notes/perf9-nf.md), beyond compareDefaultRowForms' matrix: each of
 * its four instantiations (weight or not × outScale 1 or not) on every H class deterministically, with special values
 * under each (at one block per row).
 */
function compareTwoPassInstantiations(rand: () => number, blocks: number): void {
  const form = "tp16hr";
  for (const H of [16, 528, 4112, 7168, 8192]) {
    for (const weight of [true, false]) {
      for (const outScale of [1, 0.3]) {
        compareForward(rand, { B: 0, T: 23, H, dtype: "bf16", weight, residual: false, outScale, stride: H }, `${form} blocks/SM ${blocks} H ${H} weight ${weight} outScale ${outScale} (each instantiation)`);
      }
    }
    if (blocks !== 0) continue;
    const x = specialRows(rand, 6, H, "bf16");
    for (const outScale of [1, 3e38]) {
      compareForwardOn(x, undefined, specialWeight(rand, H, "bf16"), outScale, `${form} special H ${H} outScale ${outScale} weight`);
      compareForwardOn(x, undefined, null, outScale, `${form} special H ${H} outScale ${outScale} no weight`);
    }
  }
}

gpuTest("normForward bf16 by the two-pass rows (_tp16hr) = reference on each of its instantiations (weight or not × outScale 1 or not) on every H class, special values, grid caps (seed 9961)", () => {
  const rand = rng(9961);
  for (const blocks of [0, 3]) withRowForms(blocks, () => compareTwoPassInstantiations(rand, blocks));
});

gpuTest("normForwardAndPerTokenCast by bulk rows with the largest shared-memory carveout (bulkRowsCarveout 100, more resident blocks): the same bits (seed 8811)", () => {
  const rand = rng(8811);
  withTuning("bulkRowsCarveout", 100, () => {
    for (const blocks of [0, 3]) {
      withRowForms(blocks, () => {
        for (const H of [32, 544, 7168, 8192]) {
          for (const [name, sf] of SF_CONFIGS) {
            const c: FwdCase = { B: 0, T: 37, H, dtype: "bf16", weight: true, residual: false, outScale: rand() < 0.5 ? 1 : 0.3, stride: H };
            compareCast(rand, c, { fmt: "e4m3", numPerChannels: H % 128 ? 32 : 128, withOutBf16: true, ...sf }, `br4 cast carveout 100 blocks/SM ${blocks} ${name} H ${H}`);
          }
        }
        const c: FwdCase = { B: 0, T: 3000, H: 7168, dtype: "bf16", weight: true, residual: false, outScale: 1, stride: 7168 };
        compareCast(rand, c, { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }, `br4 cast carveout 100 3000x7168 blocks/SM ${blocks}`);
      });
    }
  });
});

gpuTest("forward team kernels: grid caps 4 / 8 / one block per row, aligned and unaligned weight: same bits (seed 7701)", () => {
  for (const blocks of [0, 4, 1 << 20]) {
    const tag = `blocks/SM ${blocks}`;
    withForwardTuning(blocks, () => {
      const rand = rng(7701);
      for (const [H, team] of [[16, 0], [16, 2], [48, 4], [512, 0], [512, 32], [7168, 0], [8192, 0]] as [number, number][]) {
        for (const residual of [false, true]) {
          const x = rows(rand, 0, 37, H, "bf16");
          const r = residual ? rows(rand, 0, 37, H, "bf16") : undefined;
          for (const w of [moderate(rand, [H], "bf16"), unalignedWeight(rand, H)]) {
            const label = `${tag} H ${H} team ${team} residual ${residual} weight offset ${w.offset}`;
            compareForwardOn(x, r, w, residual ? 0.3 : 1, label, team);
            if (H % 32 === 0) {
              withTeam(team, () => compareCastOn(x, r, w, { B: 0, T: 37, H, outScale: 1 }, { fmt: "e4m3", numPerChannels: 32, withOutBf16: true }, `${label} cast`));
            }
          }
        }
      }
      // full size, many rows per block (the weight read through L1 for every row)
      const c: FwdCase = { B: 0, T: 1200, H: 7168, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: 7168 };
      compareForward(rand, c, `${tag} 1200x7168`);
      compareCast(rand, { ...c, residual: false }, { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }, `${tag} 1200x7168 cast`);
    });
  }
});

// ---- normForwardAndPerTokenCast ---------------------------------------------------------------------------

type SfFlags = Pick<NormForwardAndPerTokenCastOptions, "useTmaAlignedColMajorSf" | "roundSf" | "usePackedUe8m0">;
const SF_CONFIGS: readonly [string, SfFlags][] = SF_LAYOUTS_FP32;

/** Runs the fused cast on both backends and compares data, sf, outBf16, rstd and residualOut allocations. */
function compareCast(rand: () => number, c: FwdCase, o: Omit<NormForwardAndPerTokenCastOptions, "eps">, label: string): void {
  const x = rows(rand, c.B, c.T, c.H, c.dtype, c.stride);
  const r = c.residual ? rows(rand, c.B, c.T, c.H, c.dtype, c.stride) : undefined;
  const w = c.weight ? moderate(rand, [c.H], c.dtype) : null;
  compareCastOn(x, r, w, c, o, label);
}

/** compareCast on given inputs (`c` supplies B, T, H and outScale). */
function compareCastOn(
  x: HostTensor,
  r: HostTensor | undefined,
  w: HostTensor | null,
  c: Pick<FwdCase, "B" | "T" | "H" | "outScale">,
  o: Omit<NormForwardAndPerTokenCastOptions, "eps">,
  label: string,
): void {
  const opts: NormForwardAndPerTokenCastOptions = { ...o, eps: 1e-6, outScale: c.outScale, residual: r };
  const [[cd, cf], cb, cr, cs] = normForwardAndPerTokenCast(x, w, opts);
  const dx = uploadView(x);
  const dr = r ? uploadView(r) : undefined;
  const dw = w ? uploadView(w) : null;
  const [[gd, gf], gb, gr, gs] = normForwardAndPerTokenCast(dx, dw, { ...opts, residual: dr });
  try {
    sameNormCastOutputs([[gd, gf], gb, gr, gs], [[cd, cf], cb, cr, cs], !!r, label);
    // the fused identity on the device itself: perTokenCast of the device normForward output
    const [n] = normForward(dx, dw, { eps: 1e-6, outScale: c.outScale, residual: dr });
    const n2 = c.B ? (n as DeviceTensor).view([c.B * c.T, c.H]) : n;
    const flat = (t: DeviceTensor) => readAllocation(t);
    // (perTokenCast itself takes hidden sizes that are multiples of 64; the fused op also takes 32-multiples)
    if (c.B <= 1 && c.H % 64 === 0) {
      const [pd, pf] = perTokenCast(n2, { fmt: "e4m3", numPerChannels: o.numPerChannels, ...sfOf(o) });
      assertBytesEqual(flat(pd as DeviceTensor), flat(gd as DeviceTensor), `${label}: fused data = perTokenCast(normForward) data`);
      assertBytesEqual(flat(pf as DeviceTensor), flat(gf as DeviceTensor), `${label}: fused sf = perTokenCast(normForward) sf`);
      dispose(pd, pf);
    }
    dispose(n, n2 === n ? null : n2);
  } finally {
    dispose(gd, gf, gb, gr, r ? gs : null, dx, dr, dw);
  }
}

function sfOf(o: SfFlags): SfFlags {
  return { useTmaAlignedColMajorSf: o.useTmaAlignedColMajorSf, roundSf: o.roundSf, usePackedUe8m0: o.usePackedUe8m0 };
}

for (const dtype of ["fp32", "bf16"] as const) {
  for (const npc of [32, 128] as const) {
    const seed = 8000 + (dtype === "bf16" ? 100 : 0) + npc;
    gpuTest(`normForwardAndPerTokenCast kernel = reference = perTokenCast(normForward): ${dtype}, ${npc} channels, every sf config, outBf16, 2-D and 3-D (seed ${seed})`, () => {
      const rand = rng(seed);
      for (const [name, sf] of SF_CONFIGS) {
        for (const [B, T, H] of [[0, 1, 128], [0, 33, 640], [2, 5, 512], [0, 7, 7168], [3, 9, 128]]) {
          if (H % npc) continue;
          const withOutBf16 = rand() < 0.5;
          const c: FwdCase = { B, T, H, dtype, weight: rand() < 0.7, residual: rand() < 0.5, outScale: rand() < 0.5 ? 1 : 0.3, stride: H + (rand() < 0.5 ? 0 : 64) };
          compareCast(rand, c, { fmt: "e4m3", numPerChannels: npc, withOutBf16, ...sf }, `${name} ${B}x${T}x${H} ${JSON.stringify(c)} outBf16 ${withOutBf16}`);
        }
      }
    });
  }
}

gpuTest("normForwardAndPerTokenCast at full size: 4001 × 7168 bf16, packed UE8M0 as DeepGEMM, team widths 256 and default (seed 8301)", () => {
  const c: FwdCase = { B: 0, T: 4001, H: 7168, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: 7168 };
  compareCast(rng(8301), c, { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }, "4001x7168 packed");
  withTeam(32, () => compareCast(rng(8302), { ...c, T: 513, H: 512 }, { fmt: "e4m3", numPerChannels: 32, withOutBf16: true }, "513x512 team 32"));
});

gpuTest("normForwardAndPerTokenCast with preallocated data, sf, outBf16 and rstd writes them in place", () => {
  const rand = rng(8401);
  const x = rows(rand, 0, 64, 1024, "bf16");
  const w = moderate(rand, [1024], "bf16");
  const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: 128, withOutBf16: true } as const;
  const [[cd, cf], cb, cr] = normForwardAndPerTokenCast(x, w, o);
  const out = { data: toDevice(tensor(new Uint8Array(64 * 1024), [64, 1024], "e4m3")), sf: toDevice(tensor(new Float32Array(64 * 8), [64, 8], "fp32")), outBf16: toDevice(tensor(new Uint16Array(64 * 1024), [64, 1024], "bf16")), rstd: toDevice(tensor(new Float32Array(64), [64], "fp32")) };
  const dx = uploadView(x);
  const dw = uploadView(w);
  const [[gd, gf], gb, gr] = normForwardAndPerTokenCast(dx, dw, { ...o, out });
  assert.ok(gd === out.data && gf === out.sf && gb === out.outBf16 && gr === out.rstd);
  sameAllocation(gd, cd, "data");
  sameAllocation(gf, cf, "sf");
  sameAllocation(gb, cb, "outBf16");
  sameAllocation(gr, cr, "rstd");
  dispose(Object.values(out), dx, dw);
});

gpuTest("addRmsnormForwardAndPerTokenCast kernel = reference, residual updated in place (seed 8501)", () => {
  const rand = rng(8501);
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const [T, H, npc] of [[1, 512, 128], [17, 640, 32], [300, 7168, 128]] as [number, number, 32 | 128][]) {
      for (const [name, sf] of [SF_CONFIGS[0], SF_CONFIGS[5]]) {
        const x = rows(rand, 0, T, H, dtype);
        const r = rows(rand, 0, T, H, dtype);
        const w = moderate(rand, [H], dtype);
        const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, ...sf } as const;
        const dx = uploadView(x);
        const dr = uploadView(r);
        const dw = uploadView(w);
        const [cd, cf] = addRmsnormForwardAndPerTokenCast(x, r, w, o);
        const [gd, gf] = addRmsnormForwardAndPerTokenCast(dx, dr, dw, o);
        const label = `${dtype} ${T}x${H}/${npc} ${name}`;
        sameAllocation(gd, cd, `${label} data`);
        sameAllocation(gf, cf, `${label} sf`);
        sameAllocation(dr, r, `${label} residual`);
        sameAllocation(dx, x, `${label} x unchanged`);
        dispose(gd, gf, dx, dr, dw);
      }
    }
  }
});

// ---- normBackward -----------------------------------------------------------------------------------------

interface BwdCase {
  T: number;
  H: number;
  dtype: Dt;
  weight: boolean;
  ro: boolean;
  outScale: number;
  wgDtype: "fp32" | "bf16";
  accumulate: boolean;
  stride: number;
}

/** Runs normBackward on both backends (rstd from the forward) and compares xGrad and weightGrad allocations. */
function compareBackward(rand: () => number, c: BwdCase, label: string): void {
  const x = rows(rand, 0, c.T, c.H, c.dtype, c.stride);
  const w = c.weight ? moderate(rand, [c.H], c.dtype) : null;
  const dy = moderate(rand, [c.T, c.H], c.dtype);
  const ro = c.ro ? moderate(rand, [c.T, c.H], c.dtype) : undefined;
  const wg0 = c.accumulate ? moderate(rand, [c.H], c.wgDtype) : undefined;
  compareBackwardOn(x, w, dy, ro, wg0, c, label);
}

/** compareBackward on given inputs (`c` supplies outScale, wgDtype and accumulate). */
function compareBackwardOn(
  x: HostTensor,
  w: HostTensor | null,
  dy: HostTensor,
  ro: HostTensor | undefined,
  wg0: HostTensor | undefined,
  c: Pick<BwdCase, "outScale" | "wgDtype" | "accumulate">,
  label: string,
): void {
  const [, rstd] = normForward(x, w, { eps: 1e-6 });
  const o: NormBackwardOptions = { outScale: c.outScale, residualOutGrad: ro, weightGradDtype: c.wgDtype, accumulateWeightGrad: c.accumulate };
  const hwg = wg0 ? contiguousHost(wg0) : undefined;
  const dwg = wg0 ? uploadView(wg0) : undefined;
  const [cx, cw] = normBackward(x, w, dy, rstd, { ...o, out: hwg ? { weightGrad: hwg } : undefined });
  const d = [uploadView(x), w ? uploadView(w) : null, uploadView(dy), uploadView(rstd as HostTensor), ro ? uploadView(ro) : undefined] as const;
  const [gx, gw] = normBackward(d[0], d[1], d[2], d[3], { ...o, residualOutGrad: d[4], out: dwg ? { weightGrad: dwg } : undefined });
  try {
    sameAllocation(gx, cx, `${label} xGrad`);
    if (w) sameAllocation(gw, cw, `${label} weightGrad`);
    else assert.equal(gw, null);
  } finally {
    dispose(gx, dwg ? null : gw, dwg, d);
  }
}

for (
  const [dtype, blocks, prefetch, pdl] of [
    ["fp32", 0, "bulk", true],
    ["fp32", 0, "bulk", false],
    ["bf16", 4, "bulk", true],
    ["bf16", 4, "thread", false],
    ["bf16", 4, "off", true],
    ["bf16", 4, "off", false],
  ] as const
) {
  for (const weight of [false, true]) {
    const seed = 9000 + (dtype === "bf16" ? 100 : 0) + (weight ? 10 : 0);
    const form = (blocks ? ` (${blocks} blocks/SM form)` : "") + (blocks === 4 ? ` prefetch ${prefetch}` : "") + (pdl ? ", fold PDL" : "");
    gpuTest(`normBackward kernels = reference: ${dtype}${form}, weight ${weight}, residualOutGrad, outScale, fp32/bf16 gradients, accumulate, T ∈ {1, 511, 512, 513, 1100} (seed ${seed})`, () => {
      const rand = rng(seed);
      withBwdTuning({ backwardPrefetch: prefetch, backwardFoldPdl: pdl }, () => {
        for (const [T, H] of [[1, 32], [511, 512], [512, 96], [513, 640], [3, 8192], [40, 7168], [1100, 1024]]) {
          for (const wgDtype of weight ? ["fp32", "bf16"] as const : ["fp32"] as const) {
            for (const accumulate of weight ? [false, true] : [false]) {
              const c: BwdCase = { T, H, dtype, weight, ro: rand() < 0.5, outScale: rand() < 0.5 ? 1 : 0.3, wgDtype, accumulate, stride: H + (rand() < 0.3 ? 16 : 0) };
              compareBackward(rand, c, `${T}x${H} ${JSON.stringify(c)}`);
            }
          }
        }
      });
    });
  }
}

gpuTest("normBackward: the weight gradient has the same bits for config.numSms 1, 7 and the device's, and team widths (seed 9301)", () => {
  for (const sms of [1, 7, null]) {
    const prev = config.numSms;
    config.numSms = sms;
    try {
      compareBackward(rng(9301), { T: 1100, H: 1024, dtype: "bf16", weight: true, ro: true, outScale: 1, wgDtype: "fp32", accumulate: false, stride: 1024 }, `numSms ${sms}`);
    } finally {
      config.numSms = prev;
    }
  }
  withTeam(256, () => compareBackward(rng(9302), { T: 700, H: 512, dtype: "fp32", weight: true, ro: false, outScale: 0.3, wgDtype: "bf16", accumulate: true, stride: 512 }, "team 256"));
});

// ---- special values ---------------------------------------------------------------------------------------

// ---- normForwardAndPerTokenCast by aligned bulk rows (`_e4m3_g<N>_br4y`, the default on aligned views) ---------------

/** Runs f with the bulk rows from any row count and grid cap `blocks` (`_br4y` on aligned views, `_br4` on others). */
const withAlignedBulkRows = <T>(blocks: number, f: () => T): T => withRowForms(blocks, f);

/** Whether the launch of x (rows of bf16) and w picks `_br4y` (data / outBf16 are fresh allocations: aligned). */
function picksBr4y(x: HostTensor, w: HostTensor | null): boolean {
  const dx = uploadView(x);
  const dw = w ? uploadView(w) : null;
  try {
    return castViewsAligned(dx, dw, dx, null);
  } finally {
    dispose(dx, dw);
  }
}

gpuTest("normForwardAndPerTokenCast by aligned bulk rows (_e4m3_g<N>_br4y) = reference = perTokenCast(normForward): groups of 32 and 128, every sf layout, outBf16 or not, weight or not, outScale 1 / 0.3, 2-D / 3-D, padded strides, dead chunks and one-chunk rows, grid caps (a block's later rows); unaligned views on _br4 (seed 8901)", () => {
  const rand = rng(8901);
  for (const blocks of [0, 1, 3]) {
    withAlignedBulkRows(blocks, () => {
      for (const H of [32, 64, 128, 288, 512, 544, 640, 1056, 2048, 4096, 5120, 7168, 8192]) {
        for (const npc of [32, 128] as const) {
          if (H % npc) continue;
          for (const [name, sf] of SF_CONFIGS) {
            for (const weight of blocks === 0 ? [true, false] : [rand() < 0.7]) {
              const withOutBf16 = rand() < 0.5;
              const B = rand() < 0.3 ? 2 : 0;
              const c: FwdCase = { B, T: B ? 5 : 13, H, dtype: "bf16", weight, residual: false, outScale: rand() < 0.5 ? 1 : 0.3, stride: H + (rand() < 0.5 ? 0 : 8 * Math.ceil(rand() * 8)) };
              compareCast(rand, c, { fmt: "e4m3", numPerChannels: npc, withOutBf16, ...sf }, `br4y blocks/SM ${blocks} ${name} ${npc} ${JSON.stringify(c)} outBf16 ${withOutBf16}`);
            }
          }
        }
      }
      // the form is picked for aligned views, and unaligned ones (x stride, x base, weight) fall back to _br4
      const H = 512;
      const x = rows(rand, 0, 9, H, "bf16", H + 8);
      const w = moderate(rand, [H], "bf16");
      assert.ok(picksBr4y(x, w) && picksBr4y(x, null), "aligned views pick _br4y");
      const xu = rows(rand, 0, 9, H, "bf16", H + 1);
      const xo = new HostTensor(x.data, "bf16", [8, H], [H + 8, 1], 1);
      const wu = unalignedWeight(rand, H);
      assert.ok(!picksBr4y(xu, w) && !picksBr4y(xo, w) && !picksBr4y(x, wu), "unaligned views stay on _br4");
      for (const [xx, ww, tag] of [[xu, w, "x stride H+1"], [xo, w, "x base +2 bytes"], [x, wu, "unaligned weight"], [x, w, "aligned"]] as const) {
        for (const npc of [32, 128] as const) {
          compareCastOn(xx, undefined, ww, { B: 0, T: xx.shape[0], H, outScale: 1 }, { fmt: "e4m3", numPerChannels: npc, withOutBf16: true, roundSf: true }, `br4y blocks/SM ${blocks} ${tag} ${npc}`);
        }
      }
    });
  }
  // full size: the bench's case (and its 8192-row sibling's options) with and without the copy
  for (const withOutBf16 of [false, true]) {
    withAlignedBulkRows(0, () => {
      const c: FwdCase = { B: 0, T: 3000, H: 7168, dtype: "bf16", weight: true, residual: false, outScale: 1, stride: 7168 };
      compareCast(rand, c, { fmt: "e4m3", numPerChannels: 128, withOutBf16, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }, `br4y 3000x7168 outBf16 ${withOutBf16}`);
    });
  }
});

gpuTest("normForwardAndPerTokenCast by aligned bulk rows (_e4m3_g<N>_br4y) = reference on NaNs, ±Inf, ±0, subnormals and outputs that overflow or become subnormal: groups of 32 and 128, every sf layout, weight (special) or not, outScale 1 / 3e38 / 1e-39 (seed 8902)", () => {
  const rand = rng(8902);
  const T = 10;
  withAlignedBulkRows(0, () => {
    for (const H of [128, 640, 7168]) {
      for (const outScale of [1, 3e38, 1e-39]) {
        const x = specialRows(rand, T, H, "bf16");
        const w = specialWeight(rand, H, "bf16");
        for (const npc of [32, 128] as const) {
          for (const [name, sf] of SF_CONFIGS) {
            for (const ww of [w, null]) {
              const label = `br4y special ${T}x${H} outScale ${outScale} ${npc} ${name} weight ${!!ww}`;
              compareCastOn(x, undefined, ww, { B: 0, T, H, outScale }, { fmt: "e4m3", numPerChannels: npc, withOutBf16: rand() < 0.5, ...sf }, label);
            }
          }
        }
      }
    }
  });
});

gpuTest("addRmsnormForwardAndPerTokenCast and the residual cast by the warp rows on aligned views (_e4m3_g<N>_wr_res with castRowForm 0; the default _tp16c_res: ncast11_gpu.test.ts) = reference: groups of 32 and 128, every sf layout, outBf16 or not, weight or not, outScale, 2-D / 3-D, padded strides, residual updated in place, dead chunks; unaligned views (x / residual stride H + 1, residual base +2 bytes, unaligned weight) on _e4m3_g<N>_wr_res; grid caps (seed 8903)", () => {
  const rand = rng(8903);
  for (const blocks of [0, 3]) {
    withForwardTuning(blocks, () => {
      for (const H of [288, 528, 1024, 2048, 4096, 7168, 8192]) {
        const tag = `wr_res blocks/SM ${blocks} H ${H}`;
        for (const npc of [32, 128] as const) {
          if (H % npc) continue;
          for (const [name, sf] of SF_CONFIGS) {
            // normForwardAndPerTokenCast with a residual takes strided rows: aligned (H, padded by 16-byte multiples:
            // _wr_res) or, one case in four, stride H + 1 (_wr_res)
            const B = rand() < 0.3 ? 2 : 0;
            const u = rand();
            const stride = u < 0.25 ? H + 1 : H + (u < 0.625 ? 0 : 8 * Math.ceil(rand() * 8));
            const c: FwdCase = { B, T: B ? 5 : 17, H, dtype: "bf16", weight: rand() < 0.7, residual: true, outScale: rand() < 0.5 ? 1 : 0.3, stride };
            compareCast(rand, c, { fmt: "e4m3", numPerChannels: npc, withOutBf16: rand() < 0.5, ...sf }, `${tag} cast ${name} ${npc} ${JSON.stringify(c)}`);
          }
          // addRmsnorm (x and residual contiguous, residual updated in place): aligned (_wr_res with castRowForm 0), then the residual
          // a contiguous view at element offset 1 of its storage (base +2 bytes: _wr_res)
          for (const offset of [0, 1]) {
            const x = rows(rand, 0, 17, H, "bf16");
            const r0 = randomInput(rand, 1, 17 * H + offset, "bf16");
            const r = new HostTensor(r0.data, "bf16", [17, H], [H, 1], offset);
            const w = moderate(rand, [H], "bf16");
            const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: npc, ...SF_CONFIGS[5][1] } as const;
            const dx = uploadView(x);
            const dr = uploadView(r);
            const dw = uploadView(w);
            assert.equal(castViewsAligned(dx, dw, dx, null, dr, dr), offset === 0, `${tag} addRmsnorm form choice`);
            const [cd, cf] = addRmsnormForwardAndPerTokenCast(x, r, w, o);
            const [gd, gf] = addRmsnormForwardAndPerTokenCast(dx, dr, dw, o);
            sameAllocation(gd, cd, `${tag} addRmsnorm ${npc} residual offset ${offset} data`);
            sameAllocation(gf, cf, `${tag} addRmsnorm ${npc} residual offset ${offset} sf`);
            sameAllocation(dr, r, `${tag} addRmsnorm ${npc} residual offset ${offset} residual`);
            dispose(gd, gf, dx, dr, dw);
          }
          // an unaligned weight: _wr_res
          const x = rows(rand, 0, 11, H, "bf16");
          const r = rows(rand, 0, 11, H, "bf16");
          compareCastOn(x, r, unalignedWeight(rand, H), { B: 0, T: 11, H, outScale: 1 }, { fmt: "e4m3", numPerChannels: npc, withOutBf16: true }, `${tag} unaligned weight ${npc}`);
        }
      }
      // special values (NaN, ±Inf, subnormals, overflow), the special weight or none
      for (const H of [640, 7168]) {
        for (const outScale of [1, 3e38, 1e-39]) {
          const x = specialRows(rand, 10, H, "bf16");
          const r = specialRows(rand, 10, H, "bf16");
          const w = specialWeight(rand, H, "bf16");
          for (const npc of [32, 128] as const) {
            for (const ww of [w, null]) {
              compareCastOn(x, r, ww, { B: 0, T: 10, H, outScale }, { fmt: "e4m3", numPerChannels: npc, withOutBf16: true, roundSf: rand() < 0.5 }, `wr_res blocks/SM ${blocks} special H ${H} outScale ${outScale} ${npc} weight ${!!ww}`);
            }
          }
        }
      }
    }, true);
  }
  withForwardTuning(0, () => {
    const c: FwdCase = { B: 0, T: 3000, H: 7168, dtype: "bf16", weight: true, residual: true, outScale: 1, stride: 7168 };
    compareCast(rand, c, { fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }, `wr_res cast 3000x7168`);
  }, true);
});

const NAN32 = [0x7fc00000, 0xffc00000, 0x7f800001, 0xffffffff];
const NAN16 = [0x7fc0, 0xffc0, 0x7f81, 0xffff];

/**
 * `[T, H]` rows of the corner cases of the output rounding (spec/quant.md §1.5; the kernels round bf16 in hardware and
 * fix NaNs afterwards): row kind t % 5 = moderate values; NaNs of four bit patterns; ±Inf; subnormals; values near
 * the top of the range (sums of squares overflow, rstd 0, ±0 outputs).
 */
function specialRows(rand: () => number, T: number, H: number, dtype: Dt): HostTensor {
  const bits = new Uint32Array(T * H);
  const f = new Float32Array(bits.buffer);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      const i = t * H + j;
      const r = rand();
      f[i] = Math.fround((rand() * 2 - 1) * 4);
      if (t % 5 === 1 && r < 0.05) bits[i] = NAN32[i % 4];
      else if (t % 5 === 2 && r < 0.05) f[i] = r < 0.025 ? Infinity : -Infinity;
      else if (t % 5 === 3) f[i] = Math.fround((rand() * 2 - 1) * 1e-40);
      else if (t % 5 === 4) f[i] = Math.fround((rand() * 2 - 1) * 3e38);
    }
  }
  if (dtype === "fp32") return tensor(f, [T, H], "fp32");
  const b = new Uint16Array(T * H).map((_, i) => Number.isNaN(f[i]) ? NAN16[i % 4] : encodeBf16(f[i]));
  return tensor(b, [T, H], "bf16");
}

/** A moderate weight with a NaN, ±Inf, ±0, a subnormal and a huge value in its first columns. */
function specialWeight(rand: () => number, H: number, dtype: Dt): HostTensor {
  const w = moderate(rand, [H], "fp32").data as Float32Array;
  [NaN, Infinity, -Infinity, 0, -0, 1e-40, 3e38].forEach((v, k) => (w[2 * k + 1] = v));
  if (dtype === "fp32") return tensor(w, [H], "fp32");
  return tensor(new Uint16Array(H).map((_, i) => encodeBf16(w[i])), [H], "bf16");
}

gpuTest("normForward, its fused cast and normBackward kernels = reference on NaNs, ±Inf, ±0, subnormals and outputs that overflow or become subnormal (seed 9501)", () => {
  const rand = rng(9501);
  const T = 10;
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const H of [64, 512, 7168]) {
      for (const outScale of [1, 3e38, 1e-39]) {
        const label = `${dtype} ${T}x${H} outScale ${outScale}`;
        const x = specialRows(rand, T, H, dtype);
        const r = specialRows(rand, T, H, dtype);
        const w = specialWeight(rand, H, dtype);
        compareForwardOn(x, undefined, w, outScale, `${label} weight`); // default: 10 rows, the team kernel
        withForwardTuning(0, () => compareForwardOn(x, undefined, w, outScale, `${label} weight, team kernel, weight via L1`));
        compareForwardOn(x, r, null, outScale, `${label} residual`);
        compareForwardOn(x, r, w, outScale, `${label} residual and weight`);
        if (H % 128 === 0) compareCastOn(x, r, w, { B: 0, T, H, outScale }, { fmt: "e4m3", numPerChannels: 128, withOutBf16: true }, `${label} cast`);
        if (H % 128 === 0) {
          withForwardTuning(0, () => compareCastOn(x, r, w, { B: 0, T, H, outScale }, { fmt: "e4m3", numPerChannels: 128, withOutBf16: true }, `${label} cast, warp rows with residual`), true);
        }
        if (H > 256) withForwardTuning(0, () => compareForwardOn(x, r, w, outScale, `${label} residual and weight, warp rows`), true);
        if (dtype === "bf16") {
          withRowForms(0, () => compareForwardOn(x, undefined, w, outScale, `${label} weight, two-pass rows`));
          if (H % 128 === 0) withRowForms(0, () => compareCastOn(x, undefined, w, { B: 0, T, H, outScale }, { fmt: "e4m3", numPerChannels: 128, withOutBf16: true }, `${label} cast, bulk rows`));
        }
        const dy = specialRows(rand, T, H, dtype);
        compareBackwardOn(x, w, dy, r, undefined, { outScale, wgDtype: "fp32", accumulate: false }, `${label} backward`);
      }
    }
  }
});

for (const [blocks, prefetch, pdl] of [[4, "bulk", true], [4, "thread", false], [4, "off", false]] as const) {
  gpuTest(`normBackward at full size: 4001 × 7168 bf16, ${blocks} blocks/SM form${blocks === 4 ? `, prefetch ${prefetch}` : ""}${pdl ? ", fold PDL" : ""} (seed 9401)`, () => {
    withBwdTuning({ backwardPrefetch: prefetch, backwardFoldPdl: pdl }, () => {
      compareBackward(rng(9401), { T: 4001, H: 7168, dtype: "bf16", weight: true, ro: true, outScale: 1, wgDtype: "fp32", accumulate: true, stride: 7168 }, "4001x7168");
    });
  });
}

// `_b4swc_unit`, the default bf16 rows kernel where its compiled-in launch conditions hold (a weight, no
// residualOutGrad, outScale 1, 4096 < H ≤ 8192, aligned views; perf7-nbw.md, perf8-nbw.md, perf11-nbw.md), and
// `_b4_unit` / `_b4` elsewhere: each must give the reference's bytes, under each prefetch setting (read by the `_b4`
// fallbacks only).
// H = 4128: 258 chunks, so most threads own one live chunk (chunk 1 dead); strides H + 8 (aligned), H + 4 (8-byte
// rows: `_b4`);
// T spans 1 … 4001 (one row per slot, partial slots, several rows per slot); fp32 and bf16 gradients, accumulated
// or not. (~70 M elements of CPU reference per setting: keep it small, the device waits.)
for (const [prefetch, pdl] of [["off", false], ["bulk", true], ["thread", false]] as const) {
  gpuTest(`normBackward _b4swc and its _b4 fallbacks = reference: bf16, T ∈ 1 … 4001, H ∈ {512, 4128, 5120, 7168, 8192}, strides, prefetch ${prefetch}${pdl ? ", fold PDL" : ""} (seed 9601)`, () => {
    const rand = rng(9601);
    withBwdTuning({ backwardPrefetch: prefetch, backwardFoldPdl: pdl }, () => {
      // the rows form is picked for the common launch (at H = 7168 `_b4sw7` since round 32, `_b4swc` where H ≠ 7168),
      // and not for the fallbacks
      const xs = uploadView(rows(rand, 0, 3, 7168, "bf16", 7168 + 8));
      const xu = uploadView(rows(rand, 0, 3, 7168, "bf16", 7168 + 4));
      const x4 = uploadView(rows(rand, 0, 3, 4096, "bf16"));
      const ws = uploadView(moderate(rand, [7168], "bf16"));
      const w4 = uploadView(moderate(rand, [4096], "bf16"));
      const dxs = uploadView(moderate(rand, [3, 7168], "bf16"));
      try {
        const common = { x: xs, weight: ws, gradOut: xs, residualOutGrad: null, xGrad: dxs };
        assert.equal(usesB4swc(common, 1), true);
        assert.equal(backwardRowsForm(common, 1), "_b4sw7");
        assert.equal(backwardRowsForm(common, 0.3), "_b4");
        assert.equal(usesB4swc(common, 0.3), false);
        assert.equal(usesB4swc({ ...common, residualOutGrad: xs }, 1), false);
        assert.equal(usesB4swc({ ...common, weight: null }, 1), false);
        assert.equal(usesB4swc({ ...common, x: xu, gradOut: xu }, 1), false);
        assert.equal(usesB4swc({ ...common, x: x4, gradOut: x4, weight: w4 }, 1), false);
      } finally {
        dispose(xs, xu, x4, ws, w4, dxs);
      }
      const shapes = [[1, 7168], [3, 8192], [40, 5120], [511, 4128], [512, 7168], [513, 8192], [1100, 7168], [1100, 512], [1025, 4128]];
      for (const [T, H] of shapes) {
        for (const [wgDtype, accumulate] of [["fp32", false], ["fp32", true], ["bf16", true]] as const) {
          const stride = H + [0, 8, 4][Math.floor(rand() * 3)];
          const c: BwdCase = { T, H, dtype: "bf16", weight: true, ro: false, outScale: 1, wgDtype, accumulate, stride };
          compareBackward(rand, c, `${T}x${H} ${JSON.stringify(c)}`);
        }
        // fallbacks (_b4): residualOutGrad, outScale ≠ 1, no weight
        if (T !== 40 && T !== 513) continue;
        compareBackward(rand, { T, H, dtype: "bf16", weight: true, ro: true, outScale: 1, wgDtype: "fp32", accumulate: false, stride: H }, `${T}x${H} ro`);
        compareBackward(rand, { T, H, dtype: "bf16", weight: true, ro: false, outScale: 0.3, wgDtype: "fp32", accumulate: false, stride: H }, `${T}x${H} outScale`);
        compareBackward(rand, { T, H, dtype: "bf16", weight: false, ro: false, outScale: 1, wgDtype: "fp32", accumulate: false, stride: H }, `${T}x${H} no weight`);
      }
      compareBackward(rng(9401), { T: 4001, H: 7168, dtype: "bf16", weight: true, ro: false, outScale: 1, wgDtype: "fp32", accumulate: true, stride: 7168 }, "4001x7168");
      // special values: NaN payloads, ±Inf, ±0, subnormals, overflow in x, gradOut and the weight
      for (const H of [4128, 7168]) {
        const x = specialRows(rand, 10, H, "bf16");
        const dy = specialRows(rand, 10, H, "bf16");
        const w = specialWeight(rand, H, "bf16");
        compareBackwardOn(x, w, dy, undefined, undefined, { outScale: 1, wgDtype: "fp32", accumulate: false }, `special 10x${H}`);
        compareBackwardOn(x, w, dy, undefined, moderate(rand, [H], "bf16"), { outScale: 1, wgDtype: "bf16", accumulate: true }, `special 10x${H} bf16 accumulated`);
      }
    });
  });
}

// The default rows form's (`_b4sw7_unit` at H = 7168 since round 32; `_b4swc_unit` before) xGrad and weight gradient
// are the same bits run to run and as its `_b4_unit` fallback's on a launch
// where every one of the 512 slots walks 8 rows (the default twice, then the same gradOut values in a view whose
// 8-byte row stride forces `_b4_unit`; no CPU reference: the test above ties both to it).
gpuTest("normBackward _b4sw7: xGrad and weightGrad bit-identical run to run and to _b4_unit, 4096 × 7168 bf16 (seed 9603)", () => {
  const rand = rng(9603);
  const T = 4096, H = 7168, S = H + 4;
  const x = uploadView(randomInput(rand, T, H, "bf16"));
  const w = uploadView(moderate(rand, [H], "bf16"));
  const hdy = moderate(rand, [T, H], "bf16");
  const dy = uploadView(hdy);
  const su = new Uint16Array((T - 1) * S + H);
  for (let t = 0; t < T; t++) su.set((hdy.data as Uint16Array).subarray(t * H, (t + 1) * H), t * S);
  const dyu = uploadView(tensor(su, [T, H], "bf16", [S, 1]));
  const [fo, rstd] = normForward(x, w, { eps: 1e-6 });
  const outs: [string, ReturnType<typeof normBackward>][] = [];
  try {
    const common = { x, weight: w, gradOut: dy, residualOutGrad: null, xGrad: fo };
    assert.equal(backwardRowsForm(common, 1), "_b4sw7");
    assert.equal(backwardRowsForm({ ...common, gradOut: dyu }, 1), "_b4");
    outs.push(["_b4sw7", normBackward(x, w, dy, rstd)], ["_b4sw7", normBackward(x, w, dy, rstd)]);
    outs.push(["_b4_unit", normBackward(x, w, dyu, rstd)]);
    const rx = readAllocation(outs[0][1][0] as DeviceTensor), rw = readAllocation(outs[0][1][1] as DeviceTensor);
    outs.slice(1).forEach(([form, [gx, gw]], i) => {
      assertBytesEqual(readAllocation(gx as DeviceTensor), rx, `${form} (run ${i + 2}) xGrad`);
      assertBytesEqual(readAllocation(gw as DeviceTensor), rw, `${form} (run ${i + 2}) weightGrad`);
    });
  } finally {
    dispose(x, w, dy, dyu, fo, rstd, outs.map(([, o]) => o));
  }
});

gpuTest("normBackward with 0 tokens launches nothing: an allocated weight gradient is +0, an accumulated one untouched", async () => {
  const x = toDevice(tensor(new Uint16Array(0), [0, 512], "bf16"));
  const w = toDevice(moderate(rng(1), [512], "bf16"));
  const rstd = toDevice(tensor(new Float32Array(0), [0], "fp32"));
  const before = moderate(rng(2), [512], "fp32");
  const acc = toDevice(before);
  const n = launchCount();
  const [dx, wg] = normBackward(x, w, x, rstd, {});
  const [, wa] = normBackward(x, w, x, rstd, { accumulateWeightGrad: true, out: { weightGrad: acc } });
  assert.equal(launchCount(), n);
  assert.deepEqual([...dx.shape], [0, 512]);
  assert.ok(readAllocation(wg as DeviceTensor).every((b) => b === 0));
  assert.equal(wa, acc);
  assertBytesEqual(readAllocation(acc), storageBytes(before), "accumulated gradient untouched");
  dispose(x, w, rstd, acc, dx, wg);
  await Promise.resolve();
});

// D.8: the CUDA kernels take H ≤ 8192 (the CPU reference any H): beyond it every op refuses `x` with SHAPE before
// any allocation or launch, on device inputs and on host inputs sent to the CUDA backend.
gpuTest("the norm ops refuse a hidden size above 8192 on the CUDA backend (SHAPE on x), launching nothing; the CPU backend takes it", () => {
  const H = 8320; // a multiple of 16, 32 and 128
  const hx = tensor(new Uint16Array(2 * H), [2, H], "bf16"), hw = tensor(new Uint16Array(H), [H], "bf16");
  const hr = tensor(new Float32Array(2), [2], "fp32");
  const x = toDevice(hx), w = toDevice(hw), res = toDevice(hx), rstd = toDevice(hr);
  const cast = { eps: 1e-6, fmt: "e4m3", numPerChannels: 128 } as const;
  try {
    refuses("normForward", "x", "SHAPE", () => normForward(x, w, { eps: 1e-6 }), []);
    refuses("normForward", "x", "SHAPE", () => normForward(hx, hw, { eps: 1e-6, backend: "cuda" }), [hx, hw]);
    refuses("normForwardAndPerTokenCast", "x", "SHAPE", () => normForwardAndPerTokenCast(x, w, cast), []);
    refuses("addRmsnormForwardAndPerTokenCast", "x", "SHAPE", () => addRmsnormForwardAndPerTokenCast(x, res, w, cast), []);
    refuses("normBackward", "x", "SHAPE", () => normBackward(x, w, x, rstd), []);
    const [o] = normForward(hx, hw, { eps: 1e-6 });
    assert.deepEqual([...o.shape], [2, H]);
  } finally {
    dispose(x, w, res, rstd);
  }
});

// ---- zero rows, streams, staging -----------------------------------------------------------------------------

gpuTest("0 tokens or 0 batches: the forward ops launch nothing and return empty outputs", () => {
  const n = launchCount();
  for (const shape of [[0, 512], [0, 4, 512], [2, 0, 512]]) {
    const x = toDevice(tensor(new Uint16Array(0), shape, "bf16"));
    const [o, r] = normForward(x, null, { eps: 1e-6 });
    const [[d, f], , rs] = normForwardAndPerTokenCast(x, null, { eps: 1e-6, fmt: "e4m3", numPerChannels: 128, useTmaAlignedColMajorSf: true });
    assert.deepEqual([...o.shape], shape);
    assert.deepEqual([...r.shape], shape.slice(0, -1));
    assert.deepEqual([...d.shape], shape);
    assert.equal(f.shape[f.shape.length - 1], 4);
    dispose(x, o, r, d, f, rs);
  }
  assert.equal(launchCount(), n);
});

gpuTest("the norm ops run on a created stream", async () => {
  const s = createStream(0);
  const rand = rng(9501);
  const hx = rows(rand, 0, 64, 2048, "bf16");
  const hw = moderate(rand, [2048], "bf16");
  const x = toDevice(hx, 0, { stream: s });
  const w = toDevice(hw, 0, { stream: s });
  const [o, r] = normForward(x, w, { eps: 1e-6, stream: s });
  const [[d, f]] = normForwardAndPerTokenCast(x, w, { eps: 1e-6, fmt: "e4m3", numPerChannels: 128, stream: s });
  const [gx, gw] = normBackward(x, w, o, r, { stream: s });
  await s.synchronize();
  const [co, cr] = normForward(hx, hw, { eps: 1e-6 });
  const [[cd, cf]] = normForwardAndPerTokenCast(hx, hw, { eps: 1e-6, fmt: "e4m3", numPerChannels: 128 });
  const [cgx, cgw] = normBackward(hx, hw, co, cr, {});
  sameAllocation(o, co, "out");
  sameAllocation(d, cd, "data");
  sameAllocation(f, cf, "sf");
  sameAllocation(gx, cgx, "xGrad");
  sameAllocation(gw, cgw, "weightGrad");
  dispose(x, w, o, r, d, f, gx, gw);
  s[Symbol.dispose]();
});

gpuTest("host inputs with backend 'cuda' and device inputs with backend 'cpu' give the reference's bytes", async () => {
  const rand = rng(9601);
  const x = rows(rand, 2, 9, 640, "fp32", 672);
  const r = rows(rand, 2, 9, 640, "fp32");
  const w = moderate(rand, [640], "fp32");
  const o = { eps: 1e-6, residual: r, outScale: 0.3 };
  const [co, cr, cs] = normForward(x, w, o);
  const [ho, hr, hs] = normForward(x, w, { ...o, backend: "cuda" });
  assert.ok(ho instanceof HostTensor && hr instanceof HostTensor && hs instanceof HostTensor);
  assertBytesEqual(storageBytes(ho as HostTensor), storageBytes(co as HostTensor), "staged to cuda: out");
  assertBytesEqual(storageBytes(hr as HostTensor), storageBytes(cr as HostTensor), "staged to cuda: rstd");
  assertBytesEqual(storageBytes(hs as HostTensor), storageBytes(cs as HostTensor), "staged to cuda: residualOut");
  const co2 = { eps: 1e-6, fmt: "e4m3", numPerChannels: 32, withOutBf16: true, roundSf: true, usePackedUe8m0: true } as const;
  const [[cd, cf], cb] = normForwardAndPerTokenCast(x, w, co2);
  const [[hd, hf], hb] = normForwardAndPerTokenCast(x, w, { ...co2, backend: "cuda" });
  assertBytesEqual(storageBytes(hd as HostTensor), storageBytes(cd as HostTensor), "staged to cuda: data");
  assertBytesEqual(storageBytes(hf as HostTensor), storageBytes(cf as HostTensor), "staged to cuda: sf");
  assertBytesEqual(storageBytes(hb as HostTensor), storageBytes(cb as HostTensor), "staged to cuda: outBf16");
  const x2 = contiguousHost(rows(rand, 0, 33, 512, "bf16"));
  const w2 = moderate(rand, [512], "bf16");
  const [, rs2] = normForward(x2, w2, { eps: 1e-6 });
  const dy = moderate(rand, [33, 512], "bf16");
  const acc = moderate(rand, [512], "bf16");
  const accH = contiguousHost(acc);
  const [cx, cw] = normBackward(x2, w2, dy, rs2, { weightGradDtype: "bf16", accumulateWeightGrad: true, out: { weightGrad: accH } });
  const acc2 = contiguousHost(acc);
  const [hx2, hw2] = normBackward(x2, w2, dy, rs2, { weightGradDtype: "bf16", accumulateWeightGrad: true, out: { weightGrad: acc2 }, backend: "cuda" });
  assert.equal(hw2, acc2);
  assertBytesEqual(storageBytes(hx2 as HostTensor), storageBytes(cx as HostTensor), "staged to cuda: xGrad");
  assertBytesEqual(storageBytes(acc2), storageBytes(cw as HostTensor), "staged to cuda: accumulated weightGrad");
  const dx = uploadView(x);
  const [dout] = normForward(dx, null, { eps: 1e-6, backend: "cpu" });
  assert.ok(dout instanceof DeviceTensor);
  const [ref] = normForward(x, null, { eps: 1e-6 });
  assertBytesEqual(storageBytes(await toHost(dout)), storageBytes(ref as HostTensor), "staged to cpu: out");
  dispose(dx, dout);
});

// ---- the conformance vectors through the device path ----------------------------------------------------------

{
  const fwd = loadGolden("norm", "norm_forward");
  gpuTest("normForward kernels give the reference's bytes on every case of norm_forward", () => {
    for (const c of fwd.cases) {
      const t = (r: string) => fwd.tensors[`${c.id}.${r}`];
      const x = contiguousHost(t("x"));
      const r = c.inputs.includes("residual") ? contiguousHost(t("residual")) : undefined;
      const w = c.inputs.includes("weight") ? t("weight") : null;
      const o = { eps: c.params.eps as number, outScale: c.params.outScale as number };
      const [co, cr, cs] = normForward(x, w, { ...o, residual: r });
      const d = [uploadView(x), r ? uploadView(r) : undefined, w ? uploadView(w) : null] as const;
      const [go, gr, gs] = normForward(d[0], d[2], { ...o, residual: d[1] });
      sameAllocation(go, co, `${c.id} out`);
      sameAllocation(gr, cr, `${c.id} rstd`);
      if (r) sameAllocation(gs, cs, `${c.id} residualOut`);
      dispose(go, gr, r ? gs : null, d);
    }
  });
}

{
  const g = loadGolden("norm", "norm_forward_and_per_token_cast");
  gpuTest("normForwardAndPerTokenCast kernels give the reference's bytes on every case of norm_forward_and_per_token_cast", () => {
    for (const c of g.cases) {
      const t = (r: string) => g.tensors[`${c.id}.${r}`];
      const p = c.params as Record<string, unknown>;
      const x = contiguousHost(t("x"));
      const r = c.inputs.includes("residual") ? contiguousHost(t("residual")) : undefined;
      const w = c.inputs.includes("weight") ? t("weight") : null;
      const o: NormForwardAndPerTokenCastOptions = {
        eps: p.eps as number,
        outScale: p.outScale as number,
        fmt: "e4m3",
        numPerChannels: p.numPerChannels as 32 | 128,
        useTmaAlignedColMajorSf: p.useTmaAlignedColMajorSf as boolean,
        roundSf: p.roundSf as boolean,
        usePackedUe8m0: p.usePackedUe8m0 as boolean,
      };
      const [[cd, cf], , cr] = normForwardAndPerTokenCast(x, w, { ...o, residual: r });
      const d = [uploadView(x), r ? uploadView(r) : undefined, w ? uploadView(w) : null] as const;
      const [[gd, gf], , gr, gs] = normForwardAndPerTokenCast(d[0], d[2], { ...o, residual: d[1] });
      sameAllocation(gd, cd, `${c.id} data`);
      sameAllocation(gf, cf, `${c.id} sf`);
      sameAllocation(gr, cr, `${c.id} rstd`);
      dispose(gd, gf, gr, r ? gs : null, d);
    }
  });
}

{
  const g = loadGolden("norm", "add_rmsnorm_forward_and_per_token_cast");
  gpuTest("addRmsnormForwardAndPerTokenCast kernels give the reference's bytes on every case of add_rmsnorm_forward_and_per_token_cast", () => {
    for (const c of g.cases) {
      const t = (r: string) => g.tensors[`${c.id}.${r}`];
      const p = c.params as Record<string, unknown>;
      const o = {
        eps: p.eps as number,
        fmt: "e4m3",
        numPerChannels: p.numPerChannels as 32 | 128,
        useTmaAlignedColMajorSf: p.useTmaAlignedColMajorSf as boolean,
        roundSf: p.roundSf as boolean,
        usePackedUe8m0: p.usePackedUe8m0 as boolean,
      } as const;
      const x = contiguousHost(t("x"));
      const r = contiguousHost(t("residual"));
      const w = t("weight");
      const d = [uploadView(x), uploadView(r), uploadView(w)] as const;
      const [cd, cf]: Quantized = addRmsnormForwardAndPerTokenCast(x, r, w, o);
      const [gd, gf] = addRmsnormForwardAndPerTokenCast(d[0], d[1], d[2], o);
      sameAllocation(gd, cd, `${c.id} data`);
      sameAllocation(gf, cf, `${c.id} sf`);
      sameAllocation(d[1], r, `${c.id} residual`);
      dispose(gd, gf, d);
    }
  });
}

{
  const g = loadGolden("norm", "norm_backward");
  gpuTest("normBackward kernels give the reference's bytes on every case of norm_backward", () => {
    for (const c of g.cases) {
      const t = (r: string) => g.tensors[`${c.id}.${r}`];
      const flat = (h: HostTensor) => (h.shape.length === 3 ? contiguousHost(h).view([h.shape[0] * h.shape[1], h.shape[2]]) : contiguousHost(h));
      const x = flat(t("x"));
      const rstd = contiguousHost(t("rstd")).view([x.shape[0]]);
      const w = c.inputs.includes("weight") ? t("weight") : null;
      const dy = flat(t("outGrad"));
      const ro = c.inputs.includes("residualOutGrad") ? flat(t("residualOutGrad")) : undefined;
      const o = { outScale: c.params.outScale as number };
      const [cx, cw] = normBackward(x, w, dy, rstd, { ...o, residualOutGrad: ro });
      const d = [uploadView(x), w ? uploadView(w) : null, uploadView(dy), uploadView(rstd), ro ? uploadView(ro) : undefined] as const;
      const [gx, gw] = normBackward(d[0], d[1], d[2], d[3], { ...o, residualOutGrad: d[4] });
      sameAllocation(gx, cx, `${c.id} xGrad`);
      if (w) sameAllocation(gw, cw, `${c.id} weightGrad`);
      dispose(gx, gw, d);
    }
  });
}

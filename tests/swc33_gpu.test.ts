/**
 * swigluForwardAndPerTokenCast's row form with the next row's loads under the current row's cast, `_anrt`
 * (kernels-src/cuda/swiglu/swiglu_rows.cu, docs/perf-notes/perf33-swc.md; taken while swigluLaunchTuning.castTailPrefetch
 * is set, the default since its A/B, set and restored in try/finally), against `_anrs` (the knob off) byte for byte at
 * 3000 × 7168 (64 experts at alignment 128, 512 at 1) and at 8192 × 7168 (64 experts at 128), and at 3000 against the
 * CPU reference; a data view 8 bytes into its allocation; the cases the row forms do not take (rowForm off, a clamp,
 * another H, x off alignment) run their usual kernel with the knob on. `_anrt` against the CPU reference on every
 * psum layout, alignment, option and special value is tests/swl17_gpu.test.ts's first test (it runs the default row
 * form, `_anrt` since round 33; this file had a copy of it with its own seed until the twenty-second run). Every psum
 * here keeps §11.2. Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { swigluLaunchTuning } from "../ops/quant/swiglu_launch.ts";
import { castKnobAB, castKnobViewsAndFallbacks } from "./swiglu_rows_util.ts";
import { gpuTest, rng } from "./harness.ts";

const SEED = 33301;
const CAST_ANRS = "tk_swiglu_forward__bf16_e4m3_g128_anrs";
const CAST_ANRT = "tk_swiglu_forward__bf16_e4m3_g128_anrt";

gpuTest("_anrt equals _anrs (castTailPrefetch off) at 3000 × 7168 (64 experts at alignment 128, 512 at 1) and 8192 × 7168 (64 at 128); weights, scaling; PDL on and off", () => {
  castKnobAB(rng(SEED + 1), "castTailPrefetch", CAST_ANRS, CAST_ANRT, [[3000, 64, 128], [3000, 512, 1], [8192, 64, 128]]);
});

gpuTest("castTailPrefetch: a data view 8 bytes into its allocation runs _anrt (off: _anrs); with the knob on the cases the row forms do not take run their usual kernel (rowForm off, clampValue, another H, x off alignment)", () => {
  castKnobViewsAndFallbacks(rng(SEED + 2), "castTailPrefetch", CAST_ANRS, CAST_ANRT);
  assert.equal(swigluLaunchTuning.castTailPrefetch, true, "the knob is restored (default on since round 33's A/B)");
});

/**
 * GPU test of `tk_cast__bf16_e4m3_sr_a12` (cast_sr12.cu; docs/perf-notes/perf13-csr.md): stochasticCast bf16 → e4m3
 * with §7.3's rounding done on rz(v·2^-120), against the CPU reference (stochastic.ref.ts) byte for byte (cast.cu's
 * `_sr_a`, which the knob srScaledEncode compared it with, left the package in trim24): every one of the 65536 bf16
 * patterns (NaNs as the one pattern the CPU reference keeps) under 24 different quad hashes each, every tail length,
 * three (seed, offset) pairs, views on and off a chunk boundary (off it the aligned form never applies: the plain `_sr`), the
 * `cast(…, { stochasticRounding })` form, 0 elements, and 4001 × 7168. The symbol of every launch is asserted
 * (elementCastLastLaunch), so a silent fallback fails. Skips without a GPU, as the other GPU tests.
 */
import assert from "node:assert/strict";
import { cast, type DeviceTensor, type HostTensor, stochasticCast, type Tensor, zeros } from "../mod.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { castLaunchTuning, elementCastLastLaunch } from "../ops/quant/elem_launch.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { bf16Elements, dispose, plantSrEdges, readAllocation, sameAllocation, storageBytes, uploadView } from "./gpu_util.ts";

function castFn(suffix: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, `tk_cast__bf16_e4m3${suffix}`);
}

/** SR bf16 → e4m3 of x on the device, the symbol asserted, bytes equal to the CPU reference's. */
function compareSr(x: HostTensor, label: string, seed: bigint, offset: bigint, aligned: boolean): void {
  const cpu = stochasticCast(x, { dtype: "e4m3", seed, offset }) as HostTensor;
  const dx = uploadView(x);
  const saved = { ...castLaunchTuning };
  // `_sr_a12` itself, not round 21's ring that the default runs up to 12288 rows (tests/csr21_gpu.test.ts)
  castLaunchTuning.srRing = 0;
  try {
    const gpu = stochasticCast(dx, { dtype: "e4m3", seed, offset });
    try {
      if (x.numel > 0) {
        const want = aligned ? "_sr_a12" : "_sr";
        assert.equal(elementCastLastLaunch().fn, castFn(want), `${label}: symbol ${want}`);
      }
      sameAllocation(gpu, cpu, label);
    } finally {
      dispose(gpu);
    }
    if (x.numel > 0 && x.shape.length === 1) {
      // into an out view one element into a larger allocation: off a chunk boundary, the plain `_sr`
      const backing = zeros([x.numel + 1], "e4m3", { device: 0 }) as DeviceTensor;
      const outView = backing.slice(0, 1, x.numel + 1);
      try {
        assert.equal(stochasticCast(dx, { dtype: "e4m3", seed, offset, out: outView }), outView, `${label}: returns out`);
        assert.equal(elementCastLastLaunch().fn, castFn("_sr"), `${label} out +1: symbol _sr`);
        const all = readAllocation(backing);
        assert.equal(all[0], 0, `${label}: out view: the element before it was written`);
        assertBytesEqual(all.subarray(1), storageBytes(cpu), `${label} (out view at +1 element)`);
      } finally {
        dispose(outView, backing);
      }
    }
  } finally {
    Object.assign(castLaunchTuning, saved);
    dispose(dx);
  }
}

const SIZES = [4, 8, 12, 40, 1000, 1004, 4099 * 4, 65536 + 36, 1048576 + 4];
const SEEDS: readonly (readonly [bigint, bigint])[] = [[0n, 0n], [12345n, 4n], [0xffffffffn, 0x1_0000_0004n]];

gpuTest("stochasticCast bf16 → e4m3 through _sr_a12 = reference: every bf16 pattern under 24 hashes, every tail, seeds and offsets, views on and off a chunk boundary, 0 elements (seeds 13101, 13102)", () => {
  const saved = { ...castLaunchTuning };
  try {
    // every bf16 pattern, 8 shuffled sweeps × 3 (seed, offset) pairs: each pattern meets 24 quad hashes
    const rand = rng(13101);
    const all = bf16Elements(rand, 8 * 65536, 0, 8);
    for (const [s, off] of SEEDS) compareSr(all, `every pattern seed ${s} offset ${off}`, s, off, true);
    const r2 = rng(13102);
    for (const n of SIZES) {
      // pad 0 and 8: on a chunk boundary (_sr_a12); pad 1 and 4: off it (_sr)
      for (const pad of [0, 8, 1, 4]) {
        const x = bf16Elements(r2, n, pad, n >= 65536 ? 1 : 0);
        for (const [s, off] of n > 100000 ? SEEDS.slice(1, 2) : SEEDS) compareSr(x, `n=${n} +${pad} seed ${s} offset ${off}`, s, off, pad % 8 === 0);
      }
    }
    compareSr(bf16Elements(r2, 0, 0), "0 elements", 0n, 0n, true);
    // the cast option form and a multi-dimensional view
    const m = bf16Elements(r2, 6 * 5 * 8, 0).view([6, 5, 8]) as HostTensor;
    const cpu = cast(m, { dtype: "e4m3", stochasticRounding: true, seed: 3n }) as HostTensor;
    const dm = uploadView(m);
    castLaunchTuning.srRing = 0;
    const gpu = cast(dm, { dtype: "e4m3", stochasticRounding: true, seed: 3n }) as Tensor;
    assert.equal(elementCastLastLaunch().fn, castFn("_sr_a12"), "cast SR [6, 5, 8]: symbol");
    sameAllocation(gpu, cpu, "cast SR [6, 5, 8]");
    assert.equal(elementCastLastLaunch().pdl, false, "no PDL attribute");
    dispose(gpu, dm);
  } finally {
    Object.assign(castLaunchTuning, saved);
  }
});

gpuTest("stochasticCast bf16 → e4m3 through _sr_a12 = reference at full size, 4001 × 7168, with e4m3 subnormal-range values, grid points and saturation (seed 13103)", () => {
  const rand = rng(13103);
  const x = bf16Elements(rand, 4001 * 7168, 0);
  plantSrEdges(rand, x);
  compareSr(x.view([4001, 7168]) as HostTensor, "4001x7168", 99n, 0n, true);
});

/**
 * perBlockCastLossless's aligned data form (`tk_per_block_cast_lossless__data_a`, knob
 * `losslessLaunchTuning.dataAligned`, on by default since round 11; docs/perf-notes/perf11-lsl.md) against the CPU
 * reference, byte for byte on the whole allocations: input block widths ≥ 16 with power-of-two and other block rows,
 * every input and output scale layout, exponent bytes from 0 up (the output exponent's saturation at 0), noise in the
 * fp32 scales' sign and mantissa, 0 rows, tails of a warp's 1024 elements and of a block's 8192, codes at an 8-byte
 * (not 16-byte) offset, output views at a 16-byte offset, 2048 × 7168 against main's `__data` (knob off) too, and
 * the default taking `__data_a`. Every launch asserts which data kernel ran, so a silent fallback fails; the cases
 * the form leaves to `__data` (ci < 16, codes off 8 bytes, output off 16 bytes) assert that fallback and its bytes.
 * Skipped without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, HostTensor, perBlockCastLossless, type PerBlockCastLosslessOptions, type Quantized } from "../mod.ts";
import { lastLosslessDataKernel, losslessLaunchTuning } from "../ops/quant/per_block_cast_lossless.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomFp4, readAllocation, samePair, SF_LAYOUTS_FP32, storageBytes, uploadView } from "./gpu_util.ts";

const NEW = "tk_per_block_cast_lossless__data_a";
const MAIN = "tk_per_block_cast_lossless__data";
const IN_LAYOUTS = ["fp32-row", "fp32-col", "packed-row", "packed-col"] as const;

/** Runs `f` with the knob set to `on`, restoring it afterwards. */
function withKnob<R>(on: boolean, f: () => R): R {
  const saved = { ...losslessLaunchTuning };
  losslessLaunchTuning.dataAligned = on;
  losslessLaunchTuning.tiled = false; // round 16's one-launch form (tests/lsl16_gpu.test.ts) would take these calls
  try {
    return f();
  } finally {
    Object.assign(losslessLaunchTuning, saved);
  }
}

/** The device result of `x` (with the knob on) = the CPU reference, and the data launch was `kernel`. */
function compare(x: Quantized, o: PerBlockCastLosslessOptions, kernel: string, label: string): void {
  const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
  try {
    const got = withKnob(true, () => perBlockCastLossless(dx, o));
    if ((x[0] as HostTensor).shape[0] > 0) assert.equal(lastLosslessDataKernel(), kernel, `${label}: data kernel`);
    samePair(got, perBlockCastLossless(x, o), label);
  } finally {
    dispose(dx);
  }
}

const BLOCKS: [[number, number], [number, number]][] = [
  [[1, 32], [128, 128]],
  [[1, 32], [1, 128]],
  [[1, 32], [1, 32]],
  [[1, 16], [32, 32]],
  [[2, 16], [2, 64]],
  [[3, 32], [6, 256]],
  [[5, 64], [15, 64]],
  [[32, 32], [128, 128]],
  [[1, 128], [128, 512]],
  [[1, 32], [1024, 4096]],
];
// 1024 elements a warp, 8192 a block per step: shapes whose element count leaves a partial warp or block
const SHAPES: [number, number][] = [[0, 64], [1, 32], [3, 96], [7, 160], [130, 320], [257, 1024], [33, 7168], [9, 8224]];

gpuTest("perBlockCastLossless __data_a = reference: input blocks ≥ 16 wide, every input and output sf layout, tails (seed 1101)", () => {
  const rand = rng(1101);
  for (const [xb, ob] of BLOCKS) {
    for (const inLay of IN_LAYOUTS) {
      for (const [T, H] of SHAPES) {
        const x = randomFp4(rand, T, H, xb, inLay, rand() < 0.25 ? 0 : 100 + Math.floor(rand() * 30));
        for (const [name, sfo] of [0, 1].map(() => SF_LAYOUTS_FP32[Math.floor(rand() * SF_LAYOUTS_FP32.length)])) {
          const o = { fmt: "e4m3" as const, xBlockSize: xb, outBlockSize: ob, ...sfo };
          compare(x, o, NEW, `in[${xb}] ${inLay} → out[${ob}] ${name} ${T}x${H}`);
        }
      }
    }
  }
});

gpuTest("perBlockCastLossless __data_a = reference for every output sf layout at 33 × 7168 [1, 32] → [128, 128] (seed 1102)", () => {
  const rand = rng(1102);
  for (const inLay of IN_LAYOUTS) {
    const x = randomFp4(rand, 33, 7168, [1, 32], inLay, 110);
    for (const [name, sfo] of SF_LAYOUTS_FP32) {
      compare(x, { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128], ...sfo }, NEW, `${inLay} → ${name}`);
    }
  }
});

gpuTest("perBlockCastLossless __data_a takes codes at an 8-byte offset; codes off 8 bytes and ci < 16 fall back to __data (seed 1103)", () => {
  const rand = rng(1103);
  const o = { fmt: "e4m3" as const, xBlockSize: [1, 32] as [number, number], outBlockSize: [128, 128] as [number, number] };
  compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105, 8), o, NEW, "codes at byte 8");
  compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105, 4), o, MAIN, "codes at byte 4");
  compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105, 1), o, MAIN, "codes at byte 1");
  for (const [xb, ob] of [[[1, 8], [128, 64]], [[4, 4], [8, 32]]] as [[number, number], [number, number]][]) {
    compare(randomFp4(rand, 67, 1024, xb, "packed-col", 105), { fmt: "e4m3", xBlockSize: xb, outBlockSize: ob }, MAIN, `in[${xb}]`);
  }
});

gpuTest("perBlockCastLossless __data_a writes an output view at a 16-byte offset; off 16 bytes it falls back to __data (seed 1104)", () => {
  const rand = rng(1104);
  const [T, H] = [45, 2048];
  const x = randomFp4(rand, T, H, [1, 32], "fp32-col", 120);
  const o = { fmt: "e4m3" as const, xBlockSize: [1, 32] as [number, number], outBlockSize: [128, 128] as [number, number] };
  const [want] = perBlockCastLossless(x, o) as [HostTensor, HostTensor];
  for (const [off, kernel] of [[16, NEW], [48, NEW], [8, MAIN], [3, MAIN]] as [number, string][]) {
    const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
    const out = uploadView(new HostTensor(new Uint8Array(off + T * H + 40).fill(0xa5), "e4m3", [T, H], [H, 1], off)) as DeviceTensor;
    try {
      const [, sf] = withKnob(true, () => perBlockCastLossless(dx, { ...o, out: { data: out } }));
      assert.equal(lastLosslessDataKernel(), kernel, `offset ${off}: data kernel`);
      const all = readAllocation(out);
      const expect = new Uint8Array(all.length).fill(0xa5);
      expect.set(storageBytes(want), off);
      assertBytesEqual(all, expect, `offset ${off}`);
      dispose(sf);
    } finally {
      dispose(dx, out);
    }
  }
});

gpuTest("perBlockCastLossless __data_a (the default with tiled off) = __data = reference at 2048 × 7168, MXFP4 [1, 32] → [128, 128] (seed 1105)", () => {
  const x = randomFp4(rng(1105), 2048, 7168, [1, 32], "fp32-row", 110);
  const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
  try {
    for (const [name, sfo] of [SF_LAYOUTS_FP32[0], SF_LAYOUTS_FP32[5]]) {
      const o = { fmt: "e4m3" as const, xBlockSize: [1, 32] as [number, number], outBlockSize: [128, 128] as [number, number], ...sfo };
      const ref = perBlockCastLossless(x, o) as [HostTensor, HostTensor];
      const before = withKnob(false, () => perBlockCastLossless(dx, o));
      assert.equal(lastLosslessDataKernel(), MAIN, `${name}: knob off`);
      const after = withKnob(true, () => perBlockCastLossless(dx, o));
      assert.equal(lastLosslessDataKernel(), NEW, `${name}: knob on`);
      const byDefault = withKnob(true, () => perBlockCastLossless(dx, o));
      assert.equal(lastLosslessDataKernel(), NEW, `${name}: the default with tiled off`);
      assertBytesEqual(readAllocation(byDefault[0] as DeviceTensor), readAllocation(after[0] as DeviceTensor), `${name}: default`);
      dispose(byDefault);
      assertBytesEqual(readAllocation(after[0] as DeviceTensor), readAllocation(before[0] as DeviceTensor), `${name}: __data_a against __data`);
      samePair(before, ref, `${name} __data`);
      samePair(after, ref, `${name} __data_a`);
    }
  } finally {
    dispose(dx);
  }
});

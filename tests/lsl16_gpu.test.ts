/**
 * Round 16 (docs/perf-notes/perf16-lsl.md): perBlockCastLossless in one launch (knob `losslessLaunchTuning.tiled`,
 * default on since round 16's A/B), here by `tiledForm` 2, `tk_per_block_cast_lossless__tile_cp` (round 19; it takes
 * exactly the calls round 16's `__tile`, tiledForm 0, took, and replaced it in this file when trim24 removed it; since
 * round 20 the default is 3, `__tile_cg`: lsl_tiled_gpu.test.ts), against the CPU reference byte for byte on the whole allocations
 * (data and sf, padding included), with the launched kernel and the launch count (1, main: 2) checked after every
 * device call: every input sf layout (fp32 and packed UE8M0, row- and column-major) × every output sf layout; row
 * tails (a partial last 128-row band, 1 row) and column tails (a tile's second output block partly or wholly past H,
 * H of 96 and 160); more tiles than CTAs (3000 × 7168: 672 tiles; 8192 × 7168 against main's form on the device);
 * a single block row from an output block taller than the tensor; special values (all-zero code blocks, −0 codes,
 * exponent bytes 0 and 1 (Eout saturating at 0), 249–255 (Inf and NaN fp32 scales: exponent 255), fp32 scales with
 * sign and mantissa noise); the contract violated (DEVICE_VALUE at the next sync, the same count as main's);
 * codes at an 8-byte offset and output views at a 16-byte offset (taken), and the cases the form leaves to main's
 * launches (codes or output off alignment, input blocks other than [1, 32], output blocks other than 128 × 128)
 * with the kernel main runs asserted. Skipped without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, HostTensor, perBlockCastLossless, type PerBlockCastLosslessOptions, type Quantized, tensor, TkError, toHost } from "../mod.ts";
import { launchCount } from "../ffi/cuda.ts";
import { lastLosslessDataKernel, losslessLaunchTuning } from "../ops/quant/per_block_cast_lossless.ts";
import { toColMajor } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, fp32Scales, packedScales, randomFp4, readAllocation, samePair, SF_LAYOUTS_FP32, storageBytes, uploadView } from "./gpu_util.ts";

const TILE = "tk_per_block_cast_lossless__tile_cp";
const DATA_A = "tk_per_block_cast_lossless__data_a";
const DATA = "tk_per_block_cast_lossless__data";
const IN_LAYOUTS = ["fp32-row", "fp32-col", "packed-row", "packed-col"] as const;
const MX: Pick<PerBlockCastLosslessOptions, "fmt" | "xBlockSize" | "outBlockSize"> = { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128] };

/** Runs `f` with `losslessLaunchTuning.tiled = on` (dataAligned on, tiledForm 2: `__tile_cp`), restoring the knobs afterwards. */
function withTiled<R>(on: boolean, f: () => R): R {
  const saved = { ...losslessLaunchTuning };
  Object.assign(losslessLaunchTuning, { tiled: on, dataAligned: true, tiledForm: 2 });
  try {
    return f();
  } finally {
    Object.assign(losslessLaunchTuning, saved);
  }
}

/** The op on the device with the knob on; asserts the data kernel and, for the tiled form, a single launch. */
function runTiled(dx: Quantized, o: PerBlockCastLosslessOptions, kernel: string, label: string): Quantized {
  const n0 = launchCount();
  const got = withTiled(true, () => perBlockCastLossless(dx, o));
  if ((dx[0] as DeviceTensor).shape[0] > 0) {
    assert.equal(lastLosslessDataKernel(), kernel, `${label}: data kernel`);
    assert.equal(launchCount() - n0, kernel === TILE ? 1 : 2, `${label}: launches`);
  }
  return got;
}

/** The device result of `x` (knob on) = the CPU reference, and the data launch was `kernel`. */
function compare(x: Quantized, o: PerBlockCastLosslessOptions, kernel: string, label: string): void {
  const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
  try {
    const got = runTiled(dx, o, kernel, label);
    samePair(got as [DeviceTensor, DeviceTensor], perBlockCastLossless(x, o) as [HostTensor, HostTensor], label);
  } finally {
    dispose(dx);
  }
}

// a partial 128-row band, 1 row, exact bands; H: 96 and 160 (one tile, second block absent or partial), 384
// (second tile half past H), 1024, 7168, 8224 (H % 256 = 32)
const SHAPES: [number, number][] = [[0, 256], [1, 128], [1, 7168], [3, 96], [7, 160], [128, 256], [130, 384], [257, 1024], [33, 7168], [9, 8224]];

gpuTest("perBlockCastLossless __tile_cp = reference: every input × output sf layout, row and column tails (seed 1601)", () => {
  const rand = rng(1601);
  for (const inLay of IN_LAYOUTS) {
    for (const [T, H] of SHAPES) {
      const x = randomFp4(rand, T, H, [1, 32], inLay, rand() < 0.25 ? 0 : 100 + Math.floor(rand() * 30));
      for (const [name, sfo] of SF_LAYOUTS_FP32) compare(x, { ...MX, ...sfo }, TILE, `${inLay} → ${name} ${T}x${H}`);
    }
  }
});

gpuTest("perBlockCastLossless __tile_cp = reference: one block row from an output block taller than the tensor; other blocks stay on main's launches (seed 1602)", () => {
  const rand = rng(1602);
  for (const [T, ob, kernel] of [[100, [256, 128], TILE], [128, [1024, 128], TILE], [300, [256, 128], DATA_A], [100, [64, 128], DATA_A]] as [number, [number, number], string][]) {
    const x = randomFp4(rand, T, 1024, [1, 32], "fp32-row", 110);
    compare(x, { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: ob }, kernel, `${T} rows, out [${ob}]`);
  }
  // input blocks other than [1, 32], output widths other than 128, H of 64 (output block [1, 64] as the kernels take it)
  compare(randomFp4(rand, 67, 1024, [1, 16], "packed-col", 105), { fmt: "e4m3", xBlockSize: [1, 16], outBlockSize: [128, 128] }, DATA_A, "in [1, 16]");
  compare(randomFp4(rand, 67, 1024, [2, 32], "fp32-col", 105), { fmt: "e4m3", xBlockSize: [2, 32], outBlockSize: [128, 128] }, DATA_A, "in [2, 32]");
  compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105), { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 256] }, DATA_A, "out [128, 256]");
  compare(randomFp4(rand, 67, 1024, [1, 32], "packed-row", 105), { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [1, 128] }, DATA_A, "out [1, 128]");
  compare(randomFp4(rand, 67, 64, [1, 32], "fp32-row", 105), MX, DATA_A, "H = 64");
  compare(randomFp4(rand, 67, 1024, [1, 8], "fp32-row", 105), { fmt: "e4m3", xBlockSize: [1, 8], outBlockSize: [128, 128] }, DATA, "in [1, 8]");
});

gpuTest("perBlockCastLossless __tile_cp = reference on special values: zero code blocks, −0, exponents 0/1 and 249–255 (Inf, NaN fp32 scales) (seed 1603)", () => {
  const rand = rng(1603);
  const [T, H] = [300, 1536]; // 3 bands (the last partial) × 12 output blocks: 6 tiles
  const nbk = H / 32;
  const codes = new Uint8Array((T * H) / 2).map(() => Math.floor(rand() * 256));
  const e = new Uint8Array(T * nbk);
  for (let m = 0; m < T; m++) {
    for (let k = 0; k < nbk; k++) {
      const K = k >> 2; // output block column
      // per output block column: the exponents' range (within 11 of the block's max, so the contract holds)
      const lo = [0, 1, 0, 244, 249, 250, 120, 2, 100, 0, 255, 30][K];
      e[m * nbk + k] = K === 10 ? 255 : K === 9 ? 0 : Math.min(255, lo + Math.floor(rand() * 6));
    }
    for (let j = 0; j < H / 2; j++) {
      const blk = Math.floor(j / 16); // input block of code byte j
      if ((m + blk) % 7 === 0) codes[m * (H / 2) + j] = 0; // an all-zero input block
      else if ((m + blk) % 11 === 0) codes[m * (H / 2) + j] = 0x88; // −0, −0
    }
  }
  const data = tensor(codes, [T, H / 2], "e2m1x2") as HostTensor;
  const fp = fp32Scales(e, T, H, rand);
  const pk = packedScales(e, T, H);
  for (const [inName, sf] of [["fp32-row", fp], ["fp32-col", toColMajor(fp)], ["packed-row", pk], ["packed-col", toColMajor(pk)]] as [string, HostTensor][]) {
    for (const [name, sfo] of SF_LAYOUTS_FP32) compare([data, sf], { ...MX, ...sfo }, TILE, `special ${inName} → ${name}`);
  }
});

gpuTest("perBlockCastLossless __tile_cp raises DEVICE_VALUE at the next sync when an input block is more than 2^11 below its output block's largest", async () => {
  const T = 256, H = 256; // the case of tests/per_block_gpu.test.ts, one tile a band
  const data = tensor(new Uint8Array((T * H) / 2).fill(0x22), [T, H / 2], "e2m1x2");
  const e = new Uint8Array(T * (H / 32)).fill(130);
  e[5 * (H / 32) + 3] = 130 - 12;
  e[200 * (H / 32) + 7] = 1;
  const sf = tensor(new Float32Array(new Uint32Array([...e].map((b) => b << 23)).buffer), [T, H / 32], "fp32");
  const dx: Quantized = [uploadView(data as HostTensor), uploadView(sf as HostTensor)];
  const [d, s] = runTiled(dx, MX, TILE, "violated");
  await assert.rejects(toHost(d), (err: unknown) =>
    err instanceof TkError && err.code === "DEVICE_VALUE" && err.op === "perBlockCastLossless" && /2 illegal value\(s\).*2\^11/.test(err.message));
  e[5 * (H / 32) + 3] = 130;
  e[200 * (H / 32) + 7] = 130;
  const good = tensor(new Float32Array(new Uint32Array([...e].map((b) => b << 23)).buffer), [T, H / 32], "fp32");
  const dg = uploadView(good as HostTensor);
  const got = runTiled([dx[0], dg], MX, TILE, "valid after a fault");
  samePair(got as [DeviceTensor, DeviceTensor], perBlockCastLossless([data, good], MX) as [HostTensor, HostTensor], "valid after a fault");
  dispose(dx, d, s, dg);
});

gpuTest("perBlockCastLossless __tile_cp takes codes at an 8-byte offset and output views at a 16-byte offset; off those it runs main's launches (seed 1604)", () => {
  const rand = rng(1604);
  compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105, 8), MX, TILE, "codes at byte 8");
  compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105, 4), MX, DATA, "codes at byte 4");
  const [T, H] = [45, 2048];
  const x = randomFp4(rand, T, H, [1, 32], "packed-col", 120);
  const [want, wantSf] = perBlockCastLossless(x, MX) as [HostTensor, HostTensor];
  for (const [off, kernel] of [[16, TILE], [48, TILE], [8, DATA], [3, DATA]] as [number, string][]) {
    const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
    const out = uploadView(new HostTensor(new Uint8Array(off + T * H + 40).fill(0xa5), "e4m3", [T, H], [H, 1], off)) as DeviceTensor;
    try {
      const [, sf] = runTiled(dx, { ...MX, out: { data: out } }, kernel, `offset ${off}`);
      const all = readAllocation(out);
      const expect = new Uint8Array(all.length).fill(0xa5);
      expect.set(storageBytes(want), off);
      assertBytesEqual(all, expect, `offset ${off}`);
      assertBytesEqual(readAllocation(sf as DeviceTensor), storageBytes(wantSf), `offset ${off} sf`);
      dispose(sf);
    } finally {
      dispose(dx, out);
    }
  }
});

gpuTest("perBlockCastLossless __tile_cp = main's launches = reference at 3000 × 7168, and = main's at 8192 × 7168 (more tiles than CTAs) (seed 1605)", () => {
  const rand = rng(1605);
  for (const [T, withRef] of [[3000, true], [8192, false]] as [number, boolean][]) {
    for (const inLay of ["fp32-row", "packed-col"] as const) {
      const x = randomFp4(rand, T, 7168, [1, 32], inLay, 110);
      const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
      try {
        for (const [name, sfo] of [SF_LAYOUTS_FP32[0], SF_LAYOUTS_FP32[5]]) {
          const o = { ...MX, ...sfo };
          const label = `${T}x7168 ${inLay} → ${name}`;
          const main = withTiled(false, () => perBlockCastLossless(dx, o));
          assert.equal(lastLosslessDataKernel(), DATA_A, `${label}: knob off`);
          const tiled = runTiled(dx, o, TILE, label);
          assertBytesEqual(readAllocation(tiled[0] as DeviceTensor), readAllocation(main[0] as DeviceTensor), `${label}: data, __tile_cp against main`);
          assertBytesEqual(readAllocation(tiled[1] as DeviceTensor), readAllocation(main[1] as DeviceTensor), `${label}: sf, __tile_cp against main`);
          if (withRef) {
            const ref = perBlockCastLossless(x, o) as [HostTensor, HostTensor];
            samePair(tiled as [DeviceTensor, DeviceTensor], ref, `${label} __tile_cp`);
          } else {
            dispose(tiled);
          }
          dispose(main);
        }
      } finally {
        dispose(dx);
      }
    }
  }
});

gpuTest("perBlockCastLossless: the default (tiled on since round 16, tiledForm 3 since round 20) runs __tile_cg, one launch; tiled off runs main's two", () => {
  const x = randomFp4(rng(1606), 130, 1024, [1, 32], "fp32-row", 110);
  const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
  try {
    assert.equal(losslessLaunchTuning.tiled, true);
    const want = perBlockCastLossless(x, MX) as [HostTensor, HostTensor];
    let n0 = launchCount();
    const got = perBlockCastLossless(dx, MX);
    assert.equal(lastLosslessDataKernel(), "tk_per_block_cast_lossless__tile_cg");
    assert.equal(launchCount() - n0, 1);
    samePair(got as [DeviceTensor, DeviceTensor], want, "default");
    n0 = launchCount();
    const off = withTiled(false, () => perBlockCastLossless(dx, MX));
    assert.equal(lastLosslessDataKernel(), DATA_A);
    assert.equal(launchCount() - n0, 2);
    samePair(off as [DeviceTensor, DeviceTensor], want, "tiled off");
    dispose(got, off);
  } finally {
    dispose(dx);
  }
});

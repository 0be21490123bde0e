/**
 * perBlockCastLossless's one-launch tiled forms, picked by `losslessLaunchTuning.tiledForm`: 2 = `__tile_cp` (round 19, docs/perf-notes/perf19-lsl.md: a cp.async ring of 3 tiles in shared memory), 3 =
 * `__tile_cg` (round 20 and the default since, docs/perf-notes/perf20-lsl.md: the same ring filled by lane pairs with
 * 16-byte L2-only copies); each test pins its form. (Form 0, round 16's `__tile`, left the package in trim24; its
 * tests here now run forms 2 and 3 against main's two launches.) Rounds 19 and 20 had a file each (lsl19_gpu, forms 0 and 2, seeds
 * 1901–1906; lsl20_gpu, forms 2 and 3, seeds 2001–2006), merged here on 2026-12-03: each seeded case runs both
 * seeds, every form on each. For every form, against the CPU reference byte for byte on the whole allocations (data
 * and sf, padding included), with the launched kernel and the launch count (1) checked after every device call: every
 * input sf layout (fp32 and packed UE8M0, row- and column-major) × every output sf layout over row tails (a partial
 * last 128-row band, 1 row) and column tails (a tile's second output block partly or wholly past H); a single block
 * row from an output block taller than the tensor (T ≤ 128); special values (zero code blocks, −0, exponent bytes 0/1
 * and 249–255); more tiles than CTAs (3000 × 7168, and 16384 × 7168 against the reference and, on the device,
 * `__tile_cp` against main's two launches and `__tile_cg` against `__tile_cp`); the contract violated (DEVICE_VALUE at
 * the next sync with `__tile`'s count); codes at a 16-byte offset (every form) and at an 8-byte offset (form 2 takes
 * it, form 3 runs `__tile_cp`), output views at a 16-byte offset, and the calls
 * every form leaves to main's launches (codes or output off alignment, other block shapes), with the kernel main runs
 * asserted. Skipped without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { type DeviceTensor, HostTensor, perBlockCastLossless, type PerBlockCastLosslessOptions, type Quantized, tensor, TkError, toHost } from "../mod.ts";
import { launchCount } from "../ffi/cuda.ts";
import { lastLosslessDataKernel, losslessLaunchTuning } from "../ops/quant/per_block_cast_lossless.ts";
import { toColMajor } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, fp32Scales, packedScales, randomFp4, readAllocation, samePair, SF_LAYOUTS_FP32, storageBytes, uploadView } from "./gpu_util.ts";

/** The symbol each `tiledForm` launches where the tiled form is taken. */
const FORMS = [[2, "tk_per_block_cast_lossless__tile_cp"], [3, "tk_per_block_cast_lossless__tile_cg"]] as const;
type Form = (typeof FORMS)[number][0];
const SYMBOL: Record<Form, string> = Object.fromEntries(FORMS) as Record<Form, string>;
const DATA_A = "tk_per_block_cast_lossless__data_a";
const DATA = "tk_per_block_cast_lossless__data";
const TILED = "tiled"; // "the form's own kernel", in the case lists below
/** What runs with the codes' base only 8-byte aligned: form 3's 16-byte copies need 16, so it runs `__tile_cp`. */
const CODES_AT_8 = (form: Form): string => (form === 3 ? SYMBOL[2] : TILED);
const IN_LAYOUTS = ["fp32-row", "fp32-col", "packed-row", "packed-col"] as const;
const MX: Pick<PerBlockCastLosslessOptions, "fmt" | "xBlockSize" | "outBlockSize"> = { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128] };

/** Runs `f` with `tiled` on, `tiledForm = form` (dataAligned on), restoring the knobs afterwards. */
function withForm<R>(form: Form, f: () => R): R {
  const saved = { ...losslessLaunchTuning };
  Object.assign(losslessLaunchTuning, { tiled: true, dataAligned: true, tiledForm: form });
  try {
    return f();
  } finally {
    Object.assign(losslessLaunchTuning, saved);
  }
}

/** The kernel expected: `TILED`, a symbol, or either by form. */
type Expect = string | ((form: Form) => string);

/** The op on the device under `form`; asserts the kernel (a tiled form: one launch; else main's two). */
function runForm(form: Form, dx: Quantized, o: PerBlockCastLosslessOptions, kernel: Expect, label: string): Quantized {
  const n0 = launchCount();
  const got = withForm(form, () => perBlockCastLossless(dx, o));
  const k = typeof kernel === "function" ? kernel(form) : kernel;
  const want = k === TILED ? SYMBOL[form] : k;
  const tiled = FORMS.some(([, symbol]) => symbol === want);
  assert.equal(lastLosslessDataKernel(), want, `${label} form ${form}: data kernel`);
  assert.equal(launchCount() - n0, tiled ? 1 : 2, `${label} form ${form}: launches`);
  return got;
}

/** For every form: the device result of `x` = the CPU reference, launched by `kernel`. */
function compare(x: Quantized, o: PerBlockCastLosslessOptions, kernel: Expect, label: string): void {
  const want = perBlockCastLossless(x, o) as [HostTensor, HostTensor];
  const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
  try {
    for (const [form] of FORMS) samePair(runForm(form, dx, o, kernel, label) as [DeviceTensor, DeviceTensor], want, `${label} form ${form}`);
  } finally {
    dispose(dx);
  }
}

// a partial 128-row band, 1 row, exact bands; H: 96 and 160 (one tile, second block absent or partial), 384
// (second tile half past H), 1024, 7168, 8224 (H % 256 = 32)
const SHAPES: [number, number][] = [[1, 128], [1, 7168], [3, 96], [7, 160], [128, 256], [130, 384], [257, 1024], [33, 7168], [9, 8224], [200, 2080]];

gpuTest("perBlockCastLossless tiledForm 2/3 = reference: every input × output sf layout, row and column tails (seeds 1901, 2001)", () => {
  for (const seed of [1901, 2001]) {
    const rand = rng(seed);
    for (const inLay of IN_LAYOUTS) {
      for (const [T, H] of SHAPES) {
        const x = randomFp4(rand, T, H, [1, 32], inLay, rand() < 0.25 ? 0 : 100 + Math.floor(rand() * 30));
        for (const [name, sfo] of SF_LAYOUTS_FP32) compare(x, { ...MX, ...sfo }, TILED, `seed ${seed} ${inLay} → ${name} ${T}x${H}`);
      }
    }
  }
});

gpuTest("perBlockCastLossless tiledForm 2/3 = reference: one block row from an output block taller than the tensor; other blocks stay on main's launches (seeds 1902, 2002)", () => {
  for (const seed of [1902, 2002]) {
    const rand = rng(seed);
    const at = `seed ${seed}`;
    for (const [T, ob, kernel] of [[100, [256, 128], TILED], [128, [1024, 128], TILED], [1, [512, 128], TILED], [300, [256, 128], DATA_A], [100, [64, 128], DATA_A]] as [number, [number, number], string][]) {
      const x = randomFp4(rand, T, 1024, [1, 32], "packed-row", 110);
      for (const [name, sfo] of [SF_LAYOUTS_FP32[0], SF_LAYOUTS_FP32[5]]) compare(x, { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: ob, ...sfo }, kernel, `${at} ${T} rows, out [${ob}] ${name}`);
    }
    compare(randomFp4(rand, 67, 1024, [1, 16], "packed-col", 105), { fmt: "e4m3", xBlockSize: [1, 16], outBlockSize: [128, 128] }, DATA_A, `${at} in [1, 16]`);
    compare(randomFp4(rand, 67, 1024, [2, 32], "fp32-col", 105), { fmt: "e4m3", xBlockSize: [2, 32], outBlockSize: [128, 128] }, DATA_A, `${at} in [2, 32]`);
    compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105), { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 256] }, DATA_A, `${at} out [128, 256]`);
    compare(randomFp4(rand, 67, 64, [1, 32], "fp32-row", 105), MX, DATA_A, `${at} H = 64`);
    compare(randomFp4(rand, 67, 1024, [1, 8], "fp32-row", 105), { fmt: "e4m3", xBlockSize: [1, 8], outBlockSize: [128, 128] }, DATA, `${at} in [1, 8]`);
  }
});

gpuTest("perBlockCastLossless tiledForm 2/3 = reference on special values: zero code blocks, −0, exponents 0/1 and 249–255 (seeds 1903, 2003)", () => {
  for (const seed of [1903, 2003]) {
    const rand = rng(seed);
    const [T, H] = [300, 1536]; // 3 bands (the last partial) × 12 output blocks: 6 tiles
    const nbk = H / 32;
    const codes = new Uint8Array((T * H) / 2).map(() => Math.floor(rand() * 256));
    const e = new Uint8Array(T * nbk);
    for (let m = 0; m < T; m++) {
      for (let k = 0; k < nbk; k++) {
        const K = k >> 2; // output block column
        const lo = [0, 1, 0, 244, 249, 250, 120, 2, 100, 0, 255, 30][K]; // within 11 of the block's max: the contract holds
        e[m * nbk + k] = K === 10 ? 255 : K === 9 ? 0 : Math.min(255, lo + Math.floor(rand() * 6));
      }
      for (let j = 0; j < H / 2; j++) {
        const blk = Math.floor(j / 16);
        if ((m + blk) % 7 === 0) codes[m * (H / 2) + j] = 0;
        else if ((m + blk) % 11 === 0) codes[m * (H / 2) + j] = 0x88;
      }
    }
    const data = tensor(codes, [T, H / 2], "e2m1x2") as HostTensor;
    const fp = fp32Scales(e, T, H, rand);
    const pk = packedScales(e, T, H);
    for (const [inName, sf] of [["fp32-row", fp], ["fp32-col", toColMajor(fp)], ["packed-row", pk], ["packed-col", toColMajor(pk)]] as [string, HostTensor][]) {
      for (const [name, sfo] of SF_LAYOUTS_FP32) compare([data, sf], { ...MX, ...sfo }, TILED, `seed ${seed} special ${inName} → ${name}`);
    }
  }
});

gpuTest("perBlockCastLossless tiledForm 2/3 raise DEVICE_VALUE with __tile's count when an input block is more than 2^11 below its output block's largest", async () => {
  const T = 256, H = 256;
  const data = tensor(new Uint8Array((T * H) / 2).fill(0x22), [T, H / 2], "e2m1x2");
  const e = new Uint8Array(T * (H / 32)).fill(130);
  e[5 * (H / 32) + 3] = 130 - 12;
  e[200 * (H / 32) + 7] = 1;
  const bad = tensor(new Float32Array(new Uint32Array([...e].map((b) => b << 23)).buffer), [T, H / 32], "fp32");
  e[5 * (H / 32) + 3] = 130;
  e[200 * (H / 32) + 7] = 130;
  const good = tensor(new Float32Array(new Uint32Array([...e].map((b) => b << 23)).buffer), [T, H / 32], "fp32");
  const want = perBlockCastLossless([data, good], MX) as [HostTensor, HostTensor];
  const dd = uploadView(data as HostTensor), db = uploadView(bad as HostTensor), dg = uploadView(good as HostTensor);
  try {
    for (const [form] of FORMS) {
      const [d, s] = runForm(form, [dd, db], MX, TILED, "violated");
      await assert.rejects(toHost(d), (err: unknown) =>
        err instanceof TkError && err.code === "DEVICE_VALUE" && err.op === "perBlockCastLossless" && /2 illegal value\(s\).*2\^11/.test(err.message), `form ${form}`);
      dispose(d, s);
      samePair(runForm(form, [dd, dg], MX, TILED, "valid after a fault") as [DeviceTensor, DeviceTensor], want, `valid after a fault, form ${form}`);
    }
  } finally {
    dispose(dd, db, dg);
  }
});

gpuTest("perBlockCastLossless tiledForm 2/3 take codes at a 16-byte offset (at 8 bytes 2 too, form 3 runs __tile_cp) and output views at a 16-byte offset; off those main's launches run (seeds 1904, 2004)", () => {
  for (const seed of [1904, 2004]) {
    const rand = rng(seed);
    const at = `seed ${seed}`;
    compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105, 8), MX, CODES_AT_8, `${at} codes at byte 8`);
    compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105, 16), MX, TILED, `${at} codes at byte 16`);
    compare(randomFp4(rand, 67, 1024, [1, 32], "packed-col", 105, 48), MX, TILED, `${at} codes at byte 48`);
    compare(randomFp4(rand, 67, 1024, [1, 32], "fp32-row", 105, 4), MX, DATA, `${at} codes at byte 4`);
    const [T, H] = [45, 2048];
    const x = randomFp4(rand, T, H, [1, 32], "packed-col", 120);
    const [want, wantSf] = perBlockCastLossless(x, MX) as [HostTensor, HostTensor];
    const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
    try {
      for (const [form] of FORMS) {
        for (const [off, kernel] of [[16, TILED], [48, TILED], [8, DATA], [3, DATA]] as [number, string][]) {
          const out = uploadView(new HostTensor(new Uint8Array(off + T * H + 40).fill(0xa5), "e4m3", [T, H], [H, 1], off)) as DeviceTensor;
          const label = `${at} form ${form} offset ${off}`;
          const [, sf] = runForm(form, dx, { ...MX, out: { data: out } }, kernel, label);
          const expect = new Uint8Array(off + T * H + 40).fill(0xa5);
          expect.set(storageBytes(want), off);
          assertBytesEqual(readAllocation(out), expect, label);
          assertBytesEqual(readAllocation(sf as DeviceTensor), storageBytes(wantSf), `${label} sf`);
          dispose(sf, out);
        }
      }
    } finally {
      dispose(dx);
    }
  }
});

gpuTest("perBlockCastLossless tiledForm 2/3 = reference at 3000 × 7168 and 16384 × 7168, and __tile_cg = __tile_cp = main's launches at 16384 × 7168 (seeds 1905, 2005)", () => {
  for (const seed of [1905, 2005]) {
    const rand = rng(seed);
    const at = `seed ${seed}`;
    compare(randomFp4(rand, 3000, 7168, [1, 32], "fp32-col", 110), { ...MX, ...SF_LAYOUTS_FP32[2][1] }, TILED, `${at} 3000x7168 fp32-col → fp32-col`);
    compare(randomFp4(rand, 16384, 7168, [1, 32], "fp32-row", 110), MX, TILED, `${at} 16384x7168 fp32-row → fp32`);
    const x = randomFp4(rand, 16384, 7168, [1, 32], "packed-col", 110);
    const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
    const o = { ...MX, ...SF_LAYOUTS_FP32[5][1] };
    const label = `${at} 16384x7168 packed-col → packed-col`;
    try {
      const main = (() => {
        const saved = { ...losslessLaunchTuning };
        losslessLaunchTuning.tiled = false;
        try {
          return perBlockCastLossless(dx, o);
        } finally {
          Object.assign(losslessLaunchTuning, saved);
        }
      })();
      assert.equal(lastLosslessDataKernel(), DATA_A, `${at} tiled off`);
      const cp = runForm(2, dx, o, TILED, label);
      const cg = runForm(3, dx, o, TILED, label);
      const pairs: [string, Quantized, Quantized][] = [
        ["form 2 against main's launches", cp, main],
        ["form 3 against form 2", cg, cp],
      ];
      for (const [what, a, b] of pairs) {
        for (const t of [0, 1] as const) assertBytesEqual(readAllocation(a[t] as DeviceTensor), readAllocation(b[t] as DeviceTensor), `${at} ${what}, output ${t}`);
      }
      dispose(cg, cp, main);
    } finally {
      dispose(dx);
    }
  }
});

gpuTest("perBlockCastLossless: tiledForm defaults to 3 (__tile_cg, one launch); 2 launches __tile_cp, once (seeds 1906, 2006)", () => {
  assert.equal(losslessLaunchTuning.tiledForm, 3);
  for (const seed of [1906, 2006]) {
    const x = randomFp4(rng(seed), 130, 1024, [1, 32], "fp32-row", 110);
    const dx: Quantized = [uploadView(x[0] as HostTensor), uploadView(x[1] as HostTensor)];
    try {
      const want = perBlockCastLossless(x, MX) as [HostTensor, HostTensor];
      const n0 = launchCount();
      const got = perBlockCastLossless(dx, MX);
      assert.equal(lastLosslessDataKernel(), SYMBOL[3], `seed ${seed} default`);
      assert.equal(launchCount() - n0, 1, `seed ${seed} default: launches`);
      samePair(got as [DeviceTensor, DeviceTensor], want, `seed ${seed} default`);
      for (const [form] of FORMS) samePair(runForm(form, dx, MX, TILED, `seed ${seed} knob`) as [DeviceTensor, DeviceTensor], want, `seed ${seed} form ${form}`);
    } finally {
      dispose(dx);
    }
  }
});

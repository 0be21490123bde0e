/**
 * Round 23's forms of the generic block-scaled `cast` (docs/perf-notes/perf23-gcast.md;
 * ops/quant/cast_block_launch.ts): fp16 → e4m3 [1, 128] on `tk_per_token_cast__fp16_e4m3_g128_pdl` (`perToken16`,
 * always taken where it applies since trim32, which removed its knob with the staged form
 * `tk_cast_block_staged__fp16_e4m3_r1c128_a` that the knob's off ran) and bf16 → e4m3 [16, 64] on
 * `tk_per_block_cast__bf16_e4m3_16x64` (`castBlockLaunchTuning.perBlock16x64`, the default from 10240 rows). Every case
 * is compared byte for byte, data and sf allocations (layout padding included), with the CPU reference; the [16, 64]
 * cases run with the knob off and on and are compared with each other too. The kernel that ran is checked after every
 * call (lastCastBlockKernel, and the per-token / per-block launch headers for the round-23 symbols): whole blocks of
 * every sf layout of the roofline and of tests/cast_block_gpu.test.ts (fp32, round, column-major, packed UE8M0, e4m3
 * scales), effective blocks ([16, 128] on one row, [32, 64] on 16 rows), 1 row, 16384 rows, 4096 × 7168, special values
 * (NaN, ±Inf, the largest finite, subnormals, ±0), PDL on and off; partial blocks (T % 16, H % 64, H % 128) staying on
 * cast_block.cu, unaligned views and outputs at an odd byte offset falling back (perBlock16x64) or staying (perToken16
 * keeps its element-wise paths). Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import { encodeBf16, encodeFp16 } from "../core/dtype.ts";
import { cast, type CastOptions, DeviceTensor, HostTensor, type Quantized, zeros } from "../mod.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { castBlockLaunchTuning, lastCastBlockKernel } from "../ops/quant/cast_block_launch.ts";
import { perBlockLastLaunch } from "../ops/quant/per_block_cast.ts";
import { perTokenLastLaunch } from "../ops/quant/per_token_cast.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, readAllocation, sameAllocation, SF_LAYOUTS, storageBytes, uploadView, withPdl } from "./gpu_util.ts";

/** The round-23 forms: perBlock16x64 behind its knob, perToken16 wherever it applies (its knob left in trim32). */
type Form = "perToken16" | "perBlock16x64";
const NEW: Record<Form, string> = {
  perToken16: "tk_per_token_cast__fp16_e4m3_g128_pdl",
  perBlock16x64: "tk_per_block_cast__bf16_e4m3_16x64",
};
/** The staged kernel's shape-compiled [16, 64] form: perBlock16x64's knob off on whole blocks. */
const SHAPED = "tk_cast_block_staged__bf16_e4m3_r16c64_a";

/** The function handle of a symbol on device 0. */
function fnOf(sym: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, sym);
}

/**
 * A `[T, H]` fp16 / bf16 input from element `offset` of its buffer: rows of varied magnitude (1e-3 … 1e4, a zero
 * row, fp16 subnormal rows), then NaN, ±Inf, the largest finite value, subnormals and ±0 planted at random.
 */
function halfInput(rand: () => number, dtype: "fp16" | "bf16", T: number, H: number, offset = 0): HostTensor {
  const enc = dtype === "fp16" ? encodeFp16 : encodeBf16;
  const d = new Uint16Array(offset + T * H);
  for (let t = 0; t < T; t++) {
    const scale = [1, 1e-3, 1e4, 0, 448, 2 ** -20, 0.01][t % 7];
    for (let j = 0; j < H; j++) d[offset + t * H + j] = enc(Math.fround((rand() * 2 - 1) * scale * (1 + 7 * rand())));
  }
  const vals = dtype === "fp16"
    ? [0x7e00, 0xfe00, 0x7c00, 0xfc00, 0x7bff, 0x0001, 0x8000, 0x0000, 0x03ff]
    : [0x7fc0, 0xffc0, 0x7f80, 0xff80, 0x7f7f, 0x0001, 0x8000, 0x0000, 0x007f];
  const n = T * H;
  for (let i = 0; i < Math.min(16, n >> 3); i++) d[offset + Math.floor(rand() * n)] = vals[i % vals.length];
  return new HostTensor(d, dtype, [T, H], [H, 1], offset);
}

interface Case {
  label: string;
  form: Form;
  x: HostTensor;
  o: CastOptions;
  /** the round-23 kernel runs (perBlock16x64: with the knob on) */
  routed: boolean;
  /** perBlock16x64: main's kernel with the knob off is the shape-compiled staged form */
  shaped: boolean;
  /** byte offset of a preallocated data output (null: cast allocates) */
  dataOffset?: number;
}

/** Every case of the test (exported so that the option sets can be run through the CPU reference without a device). */
export function gcast23Cases(): Case[] {
  const out: Case[] = [];
  // fp16 → e4m3 [1, 128]: whole groups (the per-token form), every sf layout; partial groups and other widths stay
  // on cast_block.cu
  {
    const rand = rng(2301);
    const whole: [number, number][] = [[1, 128], [1, 7168], [3, 256], [37, 1280], [64, 7168]];
    for (const [T, H] of whole) {
      for (const [name, sfo] of SF_LAYOUTS) {
        out.push({
          label: `fp16 [1,128] ${name} ${T}x${H}`,
          form: "perToken16",
          x: halfInput(rand, "fp16", T, H),
          o: { dtype: "e4m3", blockSize: [1, 128], ...sfo },
          routed: true,
          shaped: false,
        });
      }
    }
    const r = (label: string, x: HostTensor, o: CastOptions, routed: boolean, dataOffset?: number) =>
      out.push({ label, form: "perToken16", x, o, routed, shaped: false, dataOffset });
    r(
      "fp16 [16,128] on 1 row (effective [1,128])",
      halfInput(rand, "fp16", 1, 384),
      { dtype: "e4m3", blockSize: [16, 128] },
      true,
    );
    r(
      "fp16 [1,128] 16384x256",
      halfInput(rand, "fp16", 16384, 256),
      { dtype: "e4m3", blockSize: [1, 128] },
      true,
    );
    r(
      "fp16 [1,128] 16384x256 packed col",
      halfInput(rand, "fp16", 16384, 256),
      { dtype: "e4m3", blockSize: [1, 128], roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true },
      true,
    );
    r(
      "fp16 [1,128] 4096x7168",
      halfInput(rand, "fp16", 4096, 7168),
      { dtype: "e4m3", blockSize: [1, 128] },
      true,
    );
    // any view alignment: the per-token kernel's element-wise loads and byte stores
    r(
      "fp16 [1,128] x at +1 element",
      halfInput(rand, "fp16", 9, 384, 1),
      { dtype: "e4m3", blockSize: [1, 128], useE4m3Sf: true },
      true,
    );
    r(
      "fp16 [1,128] data at byte offset 1",
      halfInput(rand, "fp16", 9, 384),
      { dtype: "e4m3", blockSize: [1, 128], roundSf: true },
      true,
      1,
    );
    // partial groups (H % 128 ≠ 0), other block widths: cast_block.cu's kernels
    r(
      "fp16 [1,128] 5x192 (partial group)",
      halfInput(rand, "fp16", 5, 192),
      { dtype: "e4m3", blockSize: [1, 128] },
      false,
    );
    r(
      "fp16 [1,128] 4x200 (partial group)",
      halfInput(rand, "fp16", 4, 200),
      { dtype: "e4m3", blockSize: [1, 128], useE4m3Sf: true },
      false,
    );
    r("fp16 [1,64] 8x256", halfInput(rand, "fp16", 8, 256), { dtype: "e4m3", blockSize: [1, 64] }, false);
    r("fp16 [2,128] 8x256", halfInput(rand, "fp16", 8, 256), { dtype: "e4m3", blockSize: [2, 128] }, false);
    r(
      "fp16 [1,128] 3x256 → e2m1x2",
      halfInput(rand, "fp16", 3, 256),
      { dtype: "e2m1x2", blockSize: [1, 128] },
      false,
    );
  }
  // bf16 → e4m3 [16, 64]: whole blocks on aligned views (the new form), every sf layout; the rest stays
  {
    const rand = rng(2302);
    const whole: [number, number][] = [[16, 64], [48, 64], [16, 320], [112, 1152], [96, 7168]];
    for (const [T, H] of whole) {
      for (const [name, sfo] of SF_LAYOUTS) {
        out.push({
          label: `bf16 [16,64] ${name} ${T}x${H}`,
          form: "perBlock16x64",
          x: halfInput(rand, "bf16", T, H),
          o: { dtype: "e4m3", blockSize: [16, 64], ...sfo },
          routed: true,
          shaped: true,
        });
      }
    }
    const r = (label: string, x: HostTensor, o: CastOptions, routed: boolean, shaped: boolean, dataOffset?: number) =>
      out.push({ label, form: "perBlock16x64", x, o, routed, shaped, dataOffset });
    r(
      "bf16 [32,64] on 16 rows (effective [16,64])",
      halfInput(rand, "bf16", 16, 192),
      { dtype: "e4m3", blockSize: [32, 64] },
      true,
      true,
    );
    r(
      "bf16 [16,1000] at H 64 (effective [16,64])",
      halfInput(rand, "bf16", 32, 64),
      { dtype: "e4m3", blockSize: [16, 1000], useE4m3Sf: true },
      true,
      true,
    );
    r(
      "bf16 [16,64] 16384x192",
      halfInput(rand, "bf16", 16384, 192),
      { dtype: "e4m3", blockSize: [16, 64] },
      true,
      true,
    );
    r(
      "bf16 [16,64] 16384x192 packed col",
      halfInput(rand, "bf16", 16384, 192),
      { dtype: "e4m3", blockSize: [16, 64], roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true },
      true,
      true,
    );
    r(
      "bf16 [16,64] 4096x7168",
      halfInput(rand, "bf16", 4096, 7168),
      { dtype: "e4m3", blockSize: [16, 64] },
      true,
      true,
    );
    r(
      "bf16 [16,64] x at +8 elements (16 bytes)",
      halfInput(rand, "bf16", 32, 256, 8),
      { dtype: "e4m3", blockSize: [16, 64] },
      true,
      true,
    );
    // partial blocks, unaligned views and outputs, one row, other shapes: main's kernels with the knob on
    r(
      "bf16 [16,64] 17x128 (partial rows)",
      halfInput(rand, "bf16", 17, 128),
      { dtype: "e4m3", blockSize: [16, 64] },
      false,
      false,
    );
    r(
      "bf16 [16,64] 32x72 (partial columns)",
      halfInput(rand, "bf16", 32, 72),
      { dtype: "e4m3", blockSize: [16, 64], roundSf: true },
      false,
      false,
    );
    // (one row of H % 64 = 0 is an effective [1, 64] block: perTokenCast's, never launchCastBlock's)
    r(
      "bf16 [16,64] 1x72 (effective [1,64])",
      halfInput(rand, "bf16", 1, 72),
      { dtype: "e4m3", blockSize: [16, 64] },
      false,
      false,
    );
    r(
      "bf16 [16,64] x at +1 element",
      halfInput(rand, "bf16", 32, 256, 1),
      { dtype: "e4m3", blockSize: [16, 64], useE4m3Sf: true },
      false,
      false,
    );
    r(
      "bf16 [16,64] data at byte offset 1",
      halfInput(rand, "bf16", 32, 256),
      { dtype: "e4m3", blockSize: [16, 64] },
      false,
      false,
      1,
    );
    r(
      "bf16 [16,64] → e2m1x2",
      halfInput(rand, "bf16", 32, 256),
      { dtype: "e2m1x2", blockSize: [16, 64] },
      false,
      false,
    );
    r("bf16 [8,64] 32x256", halfInput(rand, "bf16", 32, 256), { dtype: "e4m3", blockSize: [8, 64] }, false, false);
    r("fp16 [16,64] 32x256", halfInput(rand, "fp16", 32, 256), { dtype: "e4m3", blockSize: [16, 64] }, false, false);
  }
  return out;
}

/**
 * The device cast of `c` with perBlock16x64 `on` (perToken16 has no knob: `on` must be true): [data, sf] (the data
 * view inside a larger allocation with dataOffset).
 */
function onDevice(
  c: Case,
  on: boolean,
): { d: DeviceTensor; s: DeviceTensor; whole: DeviceTensor | null; kernel: string } {
  const saved = { ...castBlockLaunchTuning };
  castBlockLaunchTuning.perBlock16x64 = on;
  castBlockLaunchTuning.perBlock16x64MinRows = 0; // every size this file builds: the default row bound has its own test
  const dx = uploadView(c.x);
  try {
    let whole: DeviceTensor | null = null;
    let o = c.o;
    if (c.dataOffset !== undefined) {
      const [T, H] = c.x.shape;
      whole = zeros([T * H + 16], "uint8", { device: 0 }) as DeviceTensor;
      o = { ...o, out: { data: new DeviceTensor(whole.storage, "e4m3", [T, H], [H, 1], c.dataOffset) } };
    }
    const [d, s] = cast(dx, o) as [DeviceTensor, DeviceTensor];
    const kernel = lastCastBlockKernel();
    if (on && c.routed) {
      const fn = c.form === "perToken16" ? perTokenLastLaunch().fn : perBlockLastLaunch().fn;
      assert.equal(fn, fnOf(NEW[c.form]), `${c.label}: the launch header holds ${NEW[c.form]}`);
    }
    return { d, s, whole, kernel };
  } finally {
    Object.assign(castBlockLaunchTuning, saved);
    dispose(dx);
  }
}

/**
 * `c` on the device against the CPU reference: perBlock16x64 with its knob off and on (and off = on), perToken16 once;
 * the kernel of every call checked.
 */
function runCase(c: Case): void {
  const [cd, cs] = cast(c.x, c.o) as Quantized;
  const off = c.form === "perBlock16x64" ? onDevice(c, false) : null;
  const on = onDevice(c, true);
  const runs = off ? [off, on] : [on];
  try {
    if (off) {
      assert.ok(off.kernel.startsWith("tk_cast_block_"), `${c.label}: knob off runs cast_block.cu (ran ${off.kernel})`);
      if (c.shaped) assert.equal(off.kernel, SHAPED, `${c.label}: knob off`);
      assert.equal(on.kernel, c.routed ? NEW[c.form] : off.kernel, `${c.label}: knob on`);
    } else if (c.routed) {
      assert.equal(on.kernel, NEW[c.form], `${c.label}: kernel`);
    } else {
      assert.ok(on.kernel.startsWith("tk_cast_block_"), `${c.label}: runs cast_block.cu (ran ${on.kernel})`);
    }
    if (c.dataOffset !== undefined) {
      const n = c.x.shape[0] * c.x.shape[1];
      const want = storageBytes(cd as HostTensor);
      for (const r of runs) {
        const got = readAllocation(r.whole!);
        assertBytesEqual(got.subarray(c.dataOffset, c.dataOffset + n), want, `${c.label} data`);
        assert.ok(
          got.subarray(0, c.dataOffset).every((b) => b === 0) && got.subarray(c.dataOffset + n).every((b) => b === 0),
          `${c.label}: bytes outside the view untouched`,
        );
      }
    } else {
      for (const r of runs) sameAllocation(r.d, cd, `${c.label} ${r === off ? "knob off" : "knob on"} data`);
      if (off) sameAllocation(on.d, off.d, `${c.label} on = off data`);
    }
    for (const r of runs) sameAllocation(r.s, cs, `${c.label} ${r === off ? "knob off" : "knob on"} sf`);
    if (off) sameAllocation(on.s, off.s, `${c.label} on = off sf`);
    assert.deepEqual(
      [...on.s.shape, ...on.s.strides],
      [...(cs as HostTensor).shape, ...(cs as HostTensor).strides],
      `${c.label} sf shape and strides`,
    );
  } finally {
    for (const r of runs) dispose(r.d, r.s, r.whole);
  }
}

for (const form of ["perToken16", "perBlock16x64"] as const) {
  gpuTest(
    `cast round-23 form ${form} (${NEW[form]}) = reference${form === "perBlock16x64" ? " = knob off" : ""}, every sf layout, tails and views falling back`,
    () => {
      for (const c of gcast23Cases()) if (c.form === form) runCase(c);
    },
  );
}

gpuTest(
  "cast round-23 forms with PDL off and on: same bytes, the fp16 launch carries the attribute iff config.pdl",
  () => {
    const rand = rng(2303);
    const x16 = halfInput(rand, "fp16", 64, 1024);
    const xb = halfInput(rand, "bf16", 64, 1024);
    for (const pdl of [false, true]) {
      withPdl(pdl, () => {
        runCase({
          label: `fp16 pdl ${pdl}`,
          form: "perToken16",
          x: x16,
          o: { dtype: "e4m3", blockSize: [1, 128] },
          routed: true,
          shaped: false,
        });
        const dx = uploadView(x16);
        try {
          dispose(cast(dx, { dtype: "e4m3", blockSize: [1, 128] }));
          assert.equal(perTokenLastLaunch().pdl, pdl, `fp16 launch attribute with config.pdl ${pdl}`);
        } finally {
          dispose(dx);
        }
        runCase({
          label: `bf16 pdl ${pdl}`,
          form: "perBlock16x64",
          x: xb,
          o: { dtype: "e4m3", blockSize: [16, 64], roundSf: true },
          routed: true,
          shaped: true,
        });
      });
    }
  },
);

gpuTest("cast round-23 defaults: perBlock16x64 on, [16, 64] from 10240 rows (whole blocks at 10224 and 10240 rows), fp16 [1, 128] per token", () => {
  assert.equal(castBlockLaunchTuning.perBlock16x64, true, "perBlock16x64 defaults to on");
  assert.equal(castBlockLaunchTuning.perBlock16x64MinRows, 10240, "perBlock16x64MinRows defaults to 10240");
  const rand = rng(2304);
  for (const [T, want] of [[10224, SHAPED], [10240, NEW.perBlock16x64]] as const) {
    const x = halfInput(rand, "bf16", T, 128);
    const [cd, cs] = cast(x, { dtype: "e4m3", blockSize: [16, 64] }) as Quantized;
    const dx = uploadView(x);
    try {
      const [d, s] = cast(dx, { dtype: "e4m3", blockSize: [16, 64] }) as [DeviceTensor, DeviceTensor];
      try {
        assert.equal(lastCastBlockKernel(), want, `bf16 [16,64] ${T}x128 with the defaults: ${want}`);
        sameAllocation(d, cd, `bf16 [16,64] ${T}x128 defaults data`);
        sameAllocation(s, cs, `bf16 [16,64] ${T}x128 defaults sf`);
      } finally {
        dispose(d, s);
      }
    } finally {
      dispose(dx);
    }
  }
  const x16 = halfInput(rand, "fp16", 16, 256);
  const dx = uploadView(x16);
  try {
    dispose(cast(dx, { dtype: "e4m3", blockSize: [1, 128] }));
    assert.equal(lastCastBlockKernel(), NEW.perToken16, "fp16 [1,128] 16x256 with the defaults");
  } finally {
    dispose(dx);
  }
});

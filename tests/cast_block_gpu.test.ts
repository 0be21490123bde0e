/**
 * The block-scaled `cast` on CUDA devices against the CPU reference, byte for byte on every byte of every output
 * allocation (layout padding included), on fresh random inputs from printed seeds: every block-shape class of the
 * routing table in docs/DECISIONS.md (the per-token, per-block and per-channel kernels, and cast_block.cu for the
 * rest), plain fp32 / bf16 / fp16 and quantized e4m3 / e2m1x2 inputs in every input scale layout, every sf
 * option, precomputed scales, preallocated and unaligned outputs, host inputs staged with `backend: "cuda"`, a
 * few full-size samples, and every quant_cast conformance vector through the device path. Skipped, and counted
 * as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import {
  cast,
  type CastOptions,
  createStream,
  DeviceTensor,
  HostTensor,
  type Quantized,
  type Tensor,
  tensor,
  toDevice,
  zeros,
} from "../mod.ts";
import { toHostSync } from "../core/tensor.ts";
import { encodeFp16 } from "../core/dtype.ts";
import { castBlockLaunchTuning, shapedForm } from "../ops/quant/cast_block_launch.ts";
import { caseName, type GoldenCase, loadGolden, logicalBytes, opOptions } from "./golden.ts";
import { assertBytesEqual, gpuTest as gpuTestAnyForm, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, SF_LAYOUTS, storageBytes, uploadView } from "./gpu_util.ts";

/**
 * This file tests cast_block.cu's own kernels, so round 23's routing of bf16 [16, 64] to the per-block kernel
 * (castBlockLaunchTuning.perBlock16x64; tests/gcast23_gpu.test.ts compares both ways) is off in each of its tests and
 * restored after. fp16 → e4m3 [1, 128] with H % 128 == 0 runs the per-token kernel whatever the knobs say (since
 * trim32, which removed its knob `perToken16` with the staged form `_r1c128_a`); its cases here check that route
 * against the reference, and the other fp16 cases cast_block.cu's.
 */
function gpuTest(name: string, fn: () => void | Promise<void>): void {
  gpuTestAnyForm(name, async () => {
    const saved = { ...castBlockLaunchTuning };
    Object.assign(castBlockLaunchTuning, { perBlock16x64: false });
    try {
      await fn();
    } finally {
      Object.assign(castBlockLaunchTuning, saved);
    }
  });
}

type Input = HostTensor | [HostTensor, HostTensor];
type SfConfig = Pick<CastOptions, "useTmaAlignedColMajorSf" | "roundSf" | "usePackedUe8m0" | "useE4m3Sf">;
const SF_CONFIGS: readonly [string, SfConfig][] = SF_LAYOUTS;

/**
 * Block shapes of every routing class: per-token groups ([1, 16..128], [1, H]), per-block ([32|128]²), per-channel
 * ([32|128, 1]), and generic ones: odd widths (an e2m1x2 byte straddles two blocks), single rows / columns,
 * blocks larger than the tensor, [1, 1].
 */
const BLOCKS: [number, number][] = [
  [1, 32],
  [1, 128],
  [1, 16],
  [32, 32],
  [128, 128],
  [32, 128],
  [32, 1],
  [128, 1],
  [16, 64],
  [64, 16],
  [3, 96],
  [5, 7],
  [7, 1],
  [1, 48],
  [200, 3],
  [1000, 1000],
  [1, 1],
];
/** Small shapes: empty, partial edge blocks, a whole-128 shape the dedicated kernels take. */
const SHAPES: [number, number][] = [[0, 128], [1, 64], [7, 96], [33, 130], [128, 256]];

/** A random fp32 / bf16 / fp16 `[T, H]` input with edge values (fp16 from the fp32 values, RNE). */
function valueInput(rand: () => number, T: number, H: number, dtype: "fp32" | "bf16" | "fp16"): HostTensor {
  if (dtype !== "fp16") return withSpecials(randomInput(rand, T, H, dtype), rand);
  const v = randomInput(rand, T, H, "fp32").data as Float32Array;
  const h = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) h[i] = encodeFp16(v[i] * 1e-2);
  return tensor(h, [T, H], "fp16");
}

/** `x` with NaN, ±Inf and a huge value planted in a few places (the formulas of §1.1-6 apply to them). */
function withSpecials(x: HostTensor, rand: () => number): HostTensor {
  if (rand() < 0.5) return x;
  const d = x.data as Float32Array | Uint16Array;
  const vals = x.dtype === "bf16" ? [0x7fc0, 0xffc0, 0x7f80, 0xff80, 0x7f7f] : [NaN, -NaN, Infinity, -Infinity, 3.4e38];
  for (let i = 0; i < 8 && x.numel > 0; i++) d[x.offset + Math.floor(rand() * x.numel)] = vals[i % vals.length];
  return x;
}

/** Token-packed scales (packed UE8M0 with blocks [r, 1]) are not available in cast. */
function legal(bs: [number, number], sfo: SfConfig): boolean {
  return !(bs[1] === 1 && sfo.usePackedUe8m0);
}

/** Runs cast on the host and on the device and compares data and sf allocations byte for byte. */
function compare(x: Input, o: CastOptions, label: string): void {
  const hostSf = o.sf as HostTensor | undefined;
  const cpu = cast(x, o);
  const dx = Array.isArray(x) ? [uploadView(x[0]), uploadView(x[1])] as Quantized : uploadView(x);
  const dsf = hostSf ? uploadView(hostSf) : undefined;
  const gpu = cast(dx, { ...o, ...(dsf ? { sf: dsf } : {}) });
  try {
    if (hostSf) {
      sameAllocation(gpu, cpu, `${label} data`);
      return;
    }
    const [cd, cs] = cpu as Quantized;
    const [gd, gs] = gpu as Quantized;
    sameAllocation(gd, cd, `${label} data`);
    sameAllocation(gs, cs, `${label} sf`);
    assert.deepEqual([...gs.shape, ...gs.strides], [...cs.shape, ...cs.strides], `${label} sf shape and strides`);
  } finally {
    dispose(dx, dsf, gpu);
  }
}

/** A quantized input `[codes, sf]` made by the CPU cast of a random input, its sf in the layout `sfo` selects. */
function quantizedInput(
  rand: () => number,
  T: number,
  H: number,
  fmt: "e4m3" | "e2m1x2",
  xBlockSize: [number, number],
  sfo: SfConfig,
): [HostTensor, HostTensor] {
  const [d, s] = cast(randomInput(rand, T, H, "fp32"), { dtype: fmt, blockSize: xBlockSize, ...sfo }) as [
    HostTensor,
    HostTensor,
  ];
  return [d, s];
}

// ---- plain inputs ---------------------------------------------------------------------------------------------

for (const dtype of ["fp32", "bf16", "fp16"] as const) {
  for (const fmt of ["e4m3", "e2m1x2"] as const) {
    const seed = (dtype === "fp32" ? 1 : dtype === "bf16" ? 2 : 3) * 1000 + (fmt === "e4m3" ? 1 : 2) * 100;
    gpuTest(
      `cast kernels = reference: ${dtype} → ${fmt}, blocks ${
        BLOCKS.map((b) => `[${b}]`).join(" ")
      }, every sf layout, shapes ${SHAPES.map((s) => s.join("x"))} (seed ${seed})`,
      () => {
        const rand = rng(seed);
        for (const bs of BLOCKS) {
          for (const [T, H] of SHAPES) {
            for (const [name, sfo] of SF_CONFIGS) {
              if (!legal(bs, sfo)) continue;
              compare(
                valueInput(rand, T, H, dtype),
                { dtype: fmt, blockSize: bs, ...sfo },
                `[${bs}] ${name} ${T}x${H}`,
              );
            }
          }
          // medium: one option set per block shape
          const [name, sfo] = SF_CONFIGS[Math.floor(rand() * SF_CONFIGS.length)];
          if (legal(bs, sfo)) {
            compare(
              valueInput(rand, 384, 1280, dtype),
              { dtype: fmt, blockSize: bs, ...sfo },
              `[${bs}] ${name} medium 384x1280`,
            );
          }
        }
        // one scale per row ([1, H]: the per-token row kernel for H % 64 == 0)
        compare(valueInput(rand, 9, 640, dtype), { dtype: fmt, blockSize: [1, 640] }, "[1, H] 9x640");
        compare(
          valueInput(rand, 9, 640, dtype),
          { dtype: fmt, blockSize: [1, 4096], roundSf: true },
          "[1, 4096] 9x640",
        );
      },
    );
  }
}

// ---- quantized inputs -------------------------------------------------------------------------------------------

/** Input block sizes and input sf layouts of a quantized input (§4.4). */
const X_BLOCKS: [number, number][] = [[1, 16], [1, 32], [1, 128], [32, 32], [128, 128], [32, 128]];
const X_SF: [string, SfConfig][] = [
  ["fp32", {}],
  ["fp32-col", { useTmaAlignedColMajorSf: true }],
  ["e4m3", { useE4m3Sf: true }],
  ["packed-row", { roundSf: true, usePackedUe8m0: true }],
  ["packed-col", { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }],
];
const Q_BLOCKS: [number, number][] = [[1, 32], [1, 128], [32, 1], [128, 1], [16, 64], [3, 96], [5, 1], [32, 32], [
  1,
  48,
]];

for (const inFmt of ["e4m3", "e2m1x2"] as const) {
  for (const fmt of ["e4m3", "e2m1x2"] as const) {
    const seed = 5000 + (inFmt === "e4m3" ? 1 : 2) * 100 + (fmt === "e4m3" ? 1 : 2) * 10;
    gpuTest(
      `cast kernels = reference on quantized ${inFmt} inputs → ${fmt}: every input block and sf layout, blocks ${
        Q_BLOCKS.map((b) => `[${b}]`).join(" ")
      } (seed ${seed})`,
      () => {
        const rand = rng(seed);
        for (const [T, H] of [[128, 256], [33, 192]] as const) {
          for (const xbs of X_BLOCKS) {
            for (const [xname, xsfo] of X_SF) {
              const x = quantizedInput(rand, T, H, inFmt, xbs, xsfo);
              for (const bs of Q_BLOCKS) {
                const [name, sfo] = SF_CONFIGS[Math.floor(rand() * SF_CONFIGS.length)];
                if (!legal(bs, sfo)) continue;
                compare(
                  x,
                  { dtype: fmt, blockSize: bs, xBlockSize: xbs, ...sfo },
                  `in [${xbs}] ${xname} → [${bs}] ${name} ${T}x${H}`,
                );
              }
            }
          }
        }
      },
    );
  }
}

// ---- precomputed scales -----------------------------------------------------------------------------------------

gpuTest(
  "cast kernels = reference with a precomputed sf: every input dtype and target, routed and generic blocks (seed 7100)",
  () => {
    const rand = rng(7100);
    const blocks: [number, number][] = [[1, 32], [1, 256], [32, 128], [128, 128], [3, 96], [16, 64], [7, 1], [1, 1]];
    for (const dtype of ["fp32", "bf16", "fp16"] as const) {
      for (const fmt of ["e4m3", "e2m1x2"] as const) {
        for (const bs of blocks) {
          for (const [T, H] of [[0, 128], [128, 256], [33, 130]] as const) {
            const nbm = Math.ceil(T / bs[0]), nbk = Math.ceil(H / bs[1]);
            // positive scales over many binades, a zero (inv = +Inf) and a subnormal (inv overflows)
            const s = new Float32Array(nbm * nbk).map(() => Math.fround(2 ** (rand() * 40 - 20) * (1 + rand())));
            if (s.length > 2) [s[0], s[1]] = [0, 1e-40];
            const sf = tensor(s, [nbm, nbk], "fp32");
            compare(
              valueInput(rand, T, H, dtype),
              { dtype: fmt, blockSize: bs, sf, roundSf: rand() < 0.5 },
              `${dtype} → ${fmt} [${bs}] ${T}x${H}`,
            );
          }
        }
      }
    }
  },
);

// ---- outputs, staging ------------------------------------------------------------------------------------------

gpuTest("cast writes into preallocated device outputs, and into a data view at an odd byte offset (seed 7200)", () => {
  const rand = rng(7200);
  for (const fmt of ["e4m3", "e2m1x2"] as const) {
    for (const bs of [[3, 96], [1, 32], [32, 32]] as [number, number][]) {
      const [T, H] = [128, 256];
      const x = valueInput(rand, T, H, "bf16");
      const o: CastOptions = { dtype: fmt, blockSize: bs, useTmaAlignedColMajorSf: true };
      const [cd, cs] = cast(x, o) as Quantized;
      const cols = fmt === "e4m3" ? H : H / 2;
      const whole = zeros([T * cols + 16], "uint8", { device: 0 }) as DeviceTensor;
      const outData = new DeviceTensor(whole.storage, fmt, [T, cols], [cols, 1], 1);
      const sfHost = cs as HostTensor;
      const outSf = zeros([sfHost.data.length], sfHost.dtype, { device: 0 }) as DeviceTensor;
      const sfView = new DeviceTensor(outSf.storage, sfHost.dtype, sfHost.shape, sfHost.strides, 0);
      const dx = uploadView(x);
      const [gd, gs] = cast(dx, { ...o, out: { data: outData, sf: sfView } }) as Quantized;
      try {
        assert.ok(gd === outData && gs === sfView, "the given outputs are returned");
        const got = readAllocation(whole);
        assertBytesEqual(
          got.subarray(1, 1 + T * cols),
          storageBytes(cd as HostTensor),
          `${fmt} [${bs}] data at byte offset 1`,
        );
        assert.ok(
          got[0] === 0 && got.subarray(1 + T * cols).every((b) => b === 0),
          "bytes outside the output view untouched",
        );
        sameAllocation(sfView, cs, `${fmt} [${bs}] sf`);
      } finally {
        dispose(dx, whole, outData, outSf, sfView);
      }
    }
  }
});

gpuTest(
  "cast of host inputs with backend cuda (staged) equals the CPU reference, every routing class (seed 7300)",
  () => {
    const rand = rng(7300);
    const x = valueInput(rand, 128, 256, "fp32");
    for (const bs of [[1, 32], [32, 128], [32, 1], [3, 96]] as [number, number][]) {
      const o: CastOptions = { dtype: "e4m3", blockSize: bs, roundSf: true };
      const [cd, cs] = cast(x, o) as Quantized;
      const [sd, ss] = cast(x, { ...o, backend: "cuda" }) as Quantized;
      assert.ok(sd instanceof HostTensor && ss instanceof HostTensor, "host inputs give host results");
      assertBytesEqual(storageBytes(sd), storageBytes(cd as HostTensor), `[${bs}] staged data`);
      assertBytesEqual(storageBytes(ss), storageBytes(cs as HostTensor), `[${bs}] staged sf`);
    }
    const q = quantizedInput(rand, 128, 256, "e2m1x2", [1, 32], {});
    const sf = tensor(new Float32Array(Math.ceil(128 / 3) * Math.ceil(256 / 96)).fill(0.75), [
      Math.ceil(128 / 3),
      Math.ceil(256 / 96),
    ], "fp32");
    const staged: [Input, CastOptions][] = [[q, { dtype: "e4m3", blockSize: [16, 64], xBlockSize: [1, 32] }], [x, {
      dtype: "e2m1x2",
      blockSize: [3, 96],
      sf,
    }]];
    for (const [inp, o] of staged) {
      const c = [cast(inp, o)].flat() as HostTensor[];
      const s = [cast(inp, { ...o, backend: "cuda" })].flat() as HostTensor[];
      for (let i = 0; i < c.length; i++) {
        assertBytesEqual(
          storageBytes(s[i]),
          storageBytes(c[i]),
          `staged ${JSON.stringify(o.blockSize)} output ${i}`,
        );
      }
    }
  },
);

gpuTest(
  "cast of device inputs with backend cpu runs the reference, and a given stream carries the device call (seed 7350)",
  async () => {
    const rand = rng(7350);
    const x = valueInput(rand, 33, 130, "bf16");
    const stream = createStream(0);
    const dx = uploadView(x);
    const sx = toDevice(x, 0, { stream });
    try {
      for (const bs of [[3, 96], [1, 32]] as [number, number][]) {
        const o: CastOptions = { dtype: "e2m1x2", blockSize: bs, roundSf: true, useTmaAlignedColMajorSf: true };
        const [cd, cs] = cast(x, o) as Quantized;
        const viaCpu = cast(dx, { ...o, backend: "cpu" }) as Quantized;
        const onStream = cast(sx, { ...o, stream }) as Quantized;
        await stream.synchronize();
        try {
          assert.ok(
            [...viaCpu, ...onStream].every((t) => t instanceof DeviceTensor),
            "device inputs give device results",
          );
          sameAllocation(onStream[0], cd, `[${bs}] stream data`);
          sameAllocation(onStream[1], cs, `[${bs}] stream sf`);
          // the host-staged result comes back as a contiguous copy of the logical tensor
          for (let i = 0; i < 2; i++) {
            const want = logicalBytes([cd, cs][i] as HostTensor);
            assertBytesEqual(
              logicalBytes(toHostSync(viaCpu[i] as DeviceTensor)),
              want,
              `[${bs}] backend cpu output ${i}`,
            );
          }
        } finally {
          dispose(viaCpu, onStream);
        }
      }
    } finally {
      dispose(dx, sx);
      stream[Symbol.dispose]();
    }
  },
);

// ---- full size ---------------------------------------------------------------------------------------------------

gpuTest("cast kernels = reference at full size: 4001 tokens × 7168, generic and routed blocks (seed 7400)", () => {
  const rand = rng(7400);
  const samples: [HostTensor | Input, CastOptions][] = [
    [valueInput(rand, 4001, 7168, "bf16"), { dtype: "e4m3", blockSize: [16, 64] }],
    [valueInput(rand, 4001, 7168, "fp32"), {
      dtype: "e2m1x2",
      blockSize: [3, 96],
      roundSf: true,
      useTmaAlignedColMajorSf: true,
    }],
    [valueInput(rand, 4001, 7168, "bf16"), { dtype: "e2m1x2", blockSize: [1, 16], useE4m3Sf: true }],
    // the single pass: 4-lane teams (fp16 [1, 128]; H = 7168 + 64, a partial last group, since the per-token kernel
    // takes H % 128 == 0), and fp32 blocks its warps sweep twice
    [valueInput(rand, 4001, 7232, "fp16"), { dtype: "e4m3", blockSize: [1, 128] }],
    [valueInput(rand, 4001, 7168, "fp32"), { dtype: "e4m3", blockSize: [40, 96], usePackedUe8m0: true, roundSf: true }],
  ];
  for (const [x, o] of samples) compare(x, o, `4001x${(Array.isArray(x) ? x[0] : x).shape[1]} ${JSON.stringify(o)}`);
});

// ---- the staged pass with the block shape compiled in (cast_block.cu `_r<R>c<C>_a`; docs/perf-notes/perf9-cast.md) --
// taken whenever a staged launch has the form's shape and whole blocks; partial blocks take tk_cast_block_staged__*

/** `x` (bf16 or fp16) with NaN, ±Inf, the largest finite value, subnormals and ±0 planted in a few places. */
function withHalfSpecials(x: HostTensor, rand: () => number): HostTensor {
  const d = x.data as Uint16Array;
  const vals = x.dtype === "bf16"
    ? [0x7fc0, 0xffc0, 0x7f80, 0xff80, 0x7f7f, 0x0001, 0x8000, 0x0000]
    : [0x7e00, 0xfe00, 0x7c00, 0xfc00, 0x7bff, 0x0001, 0x8000, 0x0000];
  for (let i = 0; i < 16 && x.numel > 0; i++) d[x.offset + Math.floor(rand() * x.numel)] = vals[i % vals.length];
  return x;
}

// (fp16 [1, 128]'s `_r1c128_a`, seed 7480, left in trim32: those calls run the per-token kernel,
// tests/gcast23_gpu.test.ts)
const SHAPED_CASES: { dtype: "bf16" | "fp16"; block: [number, number]; seed: number }[] = [
  { dtype: "bf16", block: [16, 64], seed: 7470 },
];

for (const { dtype, block, seed } of SHAPED_CASES) {
  gpuTest(
    `cast staged shape-compiled kernel (_r${block[0]}c${block[1]}_a) = reference: ${dtype} → e4m3 [${block}], every sf layout, whole and partial blocks, special values (seed ${seed})`,
    () => {
      const rand = rng(seed);
      const [R, C] = block;
      // whole blocks (the shaped form): one block (dead teams and warps), a few, a grid-stride walk; partial ones
      // (T or H not a multiple: the general staged kernel) must give the same bytes too
      const shapes: [number, number][] = [[R, C], [3 * R, C], [R, 5 * C], [7 * R, 3 * C], [32 * R, 11 * C], [96, 7168], [R + 1, 2 * C], [2 * R, C + 8]];
      for (const [T, H] of shapes) {
        const whole = T % R === 0 && H % C === 0;
        for (const [name, sfo] of SF_CONFIGS) {
          const x = withHalfSpecials(valueInput(rand, T, H, dtype), rand);
          const dx = uploadView(x);
          assert.equal(shapedForm(dx, Math.min(R, T), Math.min(C, H), T, H), whole, `${T}x${H}: form selection`);
          dispose(dx);
          compare(x, { dtype: "e4m3", blockSize: block, ...sfo }, `shaped [${block}] ${name} ${T}x${H}`);
        }
      }
      // full size: the roofline's shape class (H = 7168), ~2 blocks per resident warp
      compare(withHalfSpecials(valueInput(rand, 4096, 7168, dtype), rand), { dtype: "e4m3", blockSize: block }, `shaped [${block}] 4096x7168`);
    },
  );
}

// ---- conformance vectors -----------------------------------------------------------------------------------------

const generic = loadGolden("quant", "quant_cast");

function goldenBytes(c: GoldenCase, role: string, got: Tensor, label: string): void {
  assertBytesEqual(
    logicalBytes(toHostSync(got as DeviceTensor)),
    logicalBytes(generic.tensors[`${c.id}.${role}`]),
    `${label} ${c.id} ${role}`,
  );
}

for (const c of generic.cases) {
  gpuTest(
    `cast on the device matches vector ${caseName(c)} ${c.params.dtype} [${c.params.blockSize}]${
      c.params.precomputedSf ? " precomputed sf" : ""
    }`,
    () => {
      const o = opOptions(c);
      delete o.precomputedSf; // a setup key: the vector's sf is an input
      const dx = uploadView(generic.tensors[`${c.id}.x`]);
      const dsf = c.inputs.includes("sf") ? uploadView(generic.tensors[`${c.id}.sf`]) : undefined;
      if (dsf) o.sf = dsf;
      const res = cast(dx, o as never);
      try {
        if (c.outputs.length === 1) {
          goldenBytes(c, "data", res as Tensor, "cuda");
        } else {
          const [data, sf] = res as Quantized;
          goldenBytes(c, "data", data, "cuda");
          goldenBytes(c, "sf", sf, "cuda");
        }
      } finally {
        dispose(dx, dsf, res);
      }
    },
  );
}

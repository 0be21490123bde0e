/**
 * GPU test of unpack24.cu's ring forms (round 24, docs/perf-notes/perf24-unp.md; both knobs default off):
 * `tk_unpack_e2m1x2__{bf16,fp32}_w` (unpackLaunchTuning.ring) and `tk_cast_back__e2m1_bf16_w`
 * (castBackLaunchTuning.e2m1Ring), against the CPU reference byte for byte with the knob on and off, every launch's
 * symbol asserted (unpackLastLaunch / castBackLastLaunch), so a silent fallback fails.
 *
 * unpackFromE2m1fnX2 (fp32 and bf16; e2m1x2, uint8, int8 codes): every code byte; contiguous 1-D sizes around the
 * 16-byte chunk and the 512-byte unit (the byte tail alone, whole units, both); sizes around 1 … 5 warp-grid laps of
 * the ring (its folded prologue, several laps, a partial last lap) under grid caps of 1 and 3 SMs and the device's
 * own, ringGridPerSm 4 and 8; 1 row; odd widths; 2-D and 3-D contiguous views; views on a 16-byte boundary (the ring)
 * and off it (+3, +8 bytes: unpack.cu's kernels); strided, sliced and transposed views and unfoldable leading
 * dimensions (unpack.cu's kernels, knob or not); out views at +1, +4 and +8 elements (the ring only where out is on a
 * 16-byte boundary); 0 elements; 16384 × 3584 codes.
 *
 * castBack / perTokenCastBack e2m1 → bf16: fp32 scales (row- and column-major) of blocks [1, 32|64|128],
 * [32|128, 32|128] and the whole row, with power-of-two scales (process's exact bf16x2 path), arbitrary fp32 scales
 * (its per-value path), both mixed inside a warp's unit, and ±0, subnormal, huge (products overflowing bf16), ±Inf
 * and NaN scales; 1 row, row counts off every block, chunk counts off the 32-chunk unit; grid caps of 1 and 3 SMs
 * (several laps); codes at +16 bytes (the ring) and +1 byte (cast_back.cu's kernel), out views at +1 and +8 elements;
 * the fall-backs, knob on: [1, 16], per-channel [32, 1], packed UE8M0 and e4m3 scales; 16384 × 7168 [1, 32] with
 * power-of-two scales (the roofline case). Skips without a GPU, as the other GPU tests.
 *
 * `unpackCases` / `castBackCases` build the inputs without a device (the option sets can be run through the CPU
 * reference alone).
 * @module
 */
import assert from "node:assert/strict";
import { castBack, type DeviceTensor, HostTensor, perTokenCastBack, type Quantized, type Tensor, tensor, unpackFromE2m1fnX2, zeros } from "../mod.ts";
import { config } from "../core/config.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { castBackLastLaunch, castBackLaunchTuning } from "../ops/quant/cast_back.ts";
import { unpackLastLaunch, unpackLaunchTuning } from "../ops/quant/unpack.ts";
import { toColMajor } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";

const DEVICE = { kind: "cuda", index: 0 } as const;

/** Runs f with config.numSms = sms and the tuning objects' knob set (grid per SM `g`); restores all of them. */
function withKnob<T>(on: boolean, sms: number | null, g: number, f: () => T): T {
  const prevU = { ...unpackLaunchTuning };
  const prevC = { ...castBackLaunchTuning };
  const prevSms = config.numSms;
  Object.assign(unpackLaunchTuning, { ring: on, ringGridPerSm: g });
  Object.assign(castBackLaunchTuning, { e2m1Ring: on, ringGridPerSm: g });
  config.numSms = sms;
  try {
    return f();
  } finally {
    Object.assign(unpackLaunchTuning, prevU);
    Object.assign(castBackLaunchTuning, prevC);
    config.numSms = prevSms;
  }
}

/** Random bytes, every value 0 … 255 among the first 256 (so every code pair appears in any input ≥ 256 bytes). */
function codeBytes(rand: () => number, n: number): Uint8Array {
  const b = Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
  for (let i = 0; i < Math.min(n, 256); i++) b[i] = (i * 167) & 0xff;
  return b;
}

// ---- unpackFromE2m1fnX2 ----------------------------------------------------------------------------------------

/** One unpack call: codes `x`, output dtype, whether the knob takes the ring, grid cap, out view offset (elements). */
export interface UnpackCase {
  label: string;
  x: HostTensor;
  dtype: "fp32" | "bf16";
  ring: boolean;
  sms: number | null;
  grid: number;
  outAt?: number;
}

/** A 1-D code tensor of n bytes at byte `offset` of its buffer. */
function codes1d(rand: () => number, n: number, offset = 0, src: "e2m1x2" | "uint8" | "int8" = "e2m1x2"): HostTensor {
  const b = new Uint8Array(offset + n);
  b.set(codeBytes(rand, n), offset);
  return new HostTensor(src === "int8" ? new Int8Array(b.buffer) : b, src, [n], [1], offset);
}

/** The unpack option sets of this test (no device needed to build them). */
export function unpackCases(rand: () => number, large: boolean): UnpackCase[] {
  const out: UnpackCase[] = [];
  for (const dtype of ["bf16", "fp32"] as const) {
    const add = (label: string, x: HostTensor, ring: boolean, sms: number | null = null, grid = 4, outAt?: number) =>
      out.push({ label: `${dtype} ${label}`, x, dtype, ring, sms, grid, outAt });
    for (const n of [1, 15, 16, 17, 256, 511, 512, 513, 1000, 4095, 4096, 4097, 3 * 4096 + 17]) add(`[${n}]`, codes1d(rand, n), true);
    // warp-grid laps L = 8 · grid · sms units of 512 bytes: the folded prologue, 1 … 5 laps, partial laps, tails
    for (const sms of [1, 3]) {
      for (const grid of [4, 8]) {
        const lap = 8 * grid * sms * 512;
        for (const n of [lap - 1, lap, lap + 1, 2 * lap + 513, 3 * lap - 16, 5 * lap + 7]) {
          add(`[${n}] sms ${sms} grid ${grid}`, codes1d(rand, n), true, sms, grid);
        }
      }
    }
    for (const src of ["uint8", "int8"] as const) add(`${src} [9000]`, codes1d(rand, 9000, 0, src), true);
    add("[1, 3584] (1 row)", codes1d(rand, 3584).view([1, 3584]), true);
    add("[37, 333] (odd width)", codes1d(rand, 37 * 333).view([37, 333]), true);
    add("[5, 1]", codes1d(rand, 5).view([5, 1]), true);
    add("[3, 7, 64]", codes1d(rand, 3 * 7 * 64).view([3, 7, 64]), true);
    // views on and off a 16-byte boundary
    add("[5000] at +16 bytes", codes1d(rand, 5000, 16), true);
    add("[5000] at +3 bytes", codes1d(rand, 5000, 3), false);
    add("[5000] at +8 bytes", codes1d(rand, 5000, 8), false);
    add("[40, 300] at +48 bytes", codes1d(rand, 12000, 48).view([40, 300]), true);
    // strided views: unpack.cu's kernels with the knob on
    const m = new HostTensor(codeBytes(rand, 6 * 5 * 40), "e2m1x2", [6, 5, 40], [200, 40, 1]);
    add("[6, 5, 40] sliced to 34 columns", m.slice(2, 3, 37), false);
    add("[6, 5, 40] transposed", m.transpose(), false);
    add("[6, 20] column stride 2", new HostTensor(m.data, "e2m1x2", [6, 20], [40, 2]), false);
    add("[4, 1, 5, 8] row stride 10", new HostTensor(m.data, "e2m1x2", [4, 1, 5, 8], [50, 999, 10, 1]), false);
    add("[3, 2, 4] negative stride", new HostTensor(m.data, "e2m1x2", [3, 2, 4], [-40, 100, 1], 120), false);
    add("[6, 4, 40] every other slab (unfoldable)", m.slice(1, 0, 4), false);
    // out views at +1 / +4 / +8 elements of a zeroed backing: the ring where out is on a 16-byte boundary
    const eb = dtype === "bf16" ? 2 : 4;
    for (const at of [1, 4, 8]) add(`[4101] out at +${at}`, codes1d(rand, 4101), (at * eb) % 16 === 0, null, 4, at);
    add("[0]", codes1d(rand, 0), true);
    add("[0, 16]", new HostTensor(new Uint8Array(0), "e2m1x2", [0, 16], [16, 1]), true);
    if (large) add("[16384, 3584]", codes1d(rand, 16384 * 3584).view([16384, 3584]), true);
  }
  return out;
}

function checkUnpack(c: UnpackCase): void {
  const cpu = unpackFromE2m1fnX2(c.x, { dtype: c.dtype }) as HostTensor;
  const dx = uploadView(c.x);
  try {
    for (const on of [true, false]) {
      withKnob(on, c.sms, c.grid, () => {
        const tag = `unpack ${c.label} sms ${c.sms ?? "device"} ring ${on}`;
        const want = kernelFunction("test", DEVICE, `tk_unpack_e2m1x2__${c.dtype}${on && c.ring ? "_w" : ""}`);
        if (c.outAt === undefined) {
          const gpu = unpackFromE2m1fnX2(dx, { dtype: c.dtype }) as DeviceTensor;
          try {
            if (c.x.numel > 0) assert.equal(unpackLastLaunch().fn, want, `${tag}: symbol`);
            assertBytesEqual(readAllocation(gpu), storageBytes(cpu), tag);
          } finally {
            dispose(gpu);
          }
          return;
        }
        const n = cpu.numel;
        const backing = zeros([n + c.outAt], c.dtype, { device: 0 }) as DeviceTensor;
        const outView = backing.slice(0, c.outAt, n + c.outAt);
        try {
          assert.equal(unpackFromE2m1fnX2(dx, { dtype: c.dtype, out: outView }), outView, `${tag}: returns out`);
          assert.equal(unpackLastLaunch().fn, want, `${tag}: symbol`);
          const all = readAllocation(backing);
          const head = (all.length / (n + c.outAt)) * c.outAt;
          assert.ok(all.subarray(0, head).every((b) => b === 0), `${tag}: a byte before the out view was written`);
          assertBytesEqual(all.subarray(head), storageBytes(cpu), tag);
        } finally {
          dispose(outView, backing);
        }
      });
    }
  } finally {
    dispose(dx);
  }
}

gpuTest("unpackFromE2m1fnX2 through tk_unpack_e2m1x2__{bf16,fp32}_w (unpackLaunchTuning.ring) = reference = unpack.cu: sizes, grid laps, views on and off 16 bytes, strided views, out views (seed 24001)", () => {
  for (const c of unpackCases(rng(24001), false)) checkUnpack(c);
});

gpuTest("unpackFromE2m1fnX2 ring at 16384 × 3584 codes (16384 × 7168 values), bf16 and fp32 = reference = unpack.cu (seed 24002)", () => {
  for (const c of unpackCases(rng(24002), true).filter((c) => c.label.endsWith("[16384, 3584]"))) checkUnpack(c);
});

// ---- castBack e2m1 → bf16 --------------------------------------------------------------------------------------

type ScaleMode = "pow2" | "any" | "mixed" | "special";

/** One castBack / perTokenCastBack call on a host pair; `perToken` = numPerChannels for perTokenCastBack. */
export interface CastBackCase {
  label: string;
  x: Quantized;
  bs: readonly [number, number];
  perToken?: number;
  ring: boolean;
  sms: number | null;
  outAt?: number;
}

/** fp32 bit patterns of one scale by mode (pow2: ±2^e, exact in bf16 products; any: random normal fp32). */
function scaleBits(rand: () => number, mode: ScaleMode): number {
  const sign = rand() < 0.2 ? 0x80000000 : 0;
  const pow2 = () => sign | ((100 + Math.floor(rand() * 50)) << 23);
  const any = () => sign | ((100 + Math.floor(rand() * 50)) << 23) | (1 + Math.floor(rand() * 0x7ffffe));
  if (mode === "pow2") return pow2();
  if (mode === "any") return any();
  if (mode === "mixed") return rand() < 0.9 ? pow2() : any();
  // special: ±0, subnormal, tiny (subnormal products), huge (products overflowing bf16), ±Inf, NaN, and the others
  const sp = [0, 0x80000000, 0x00000001, 0x00400000, 0x01000000, 0x7e800000, 0x7f000000, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00001];
  const r = rand();
  return r < 0.4 ? sp[Math.floor(rand() * sp.length)] : r < 0.7 ? pow2() : any();
}

/** fp32 scales [⌈T/r⌉, ⌈H/c⌉] by mode, row-major or the TMA-aligned column-major layout. */
function fp32Sf(rand: () => number, T: number, H: number, bs: readonly [number, number], mode: ScaleMode, col: boolean): HostTensor {
  const nbm = Math.ceil(T / bs[0]), nbk = Math.ceil(H / bs[1]);
  const u = new Uint32Array(nbm * nbk).map(() => scaleBits(rand, mode) >>> 0);
  const sf = tensor(new Float32Array(u.buffer), [nbm, nbk], "fp32") as HostTensor;
  return col ? toColMajor(sf) : sf;
}

/** e2m1x2 codes [T, H/2] at byte `offset` of their buffer. */
function fp4Data(rand: () => number, T: number, H: number, offset = 0): HostTensor {
  const n = (T * H) / 2;
  const b = new Uint8Array(offset + n);
  b.set(codeBytes(rand, n), offset);
  return new HostTensor(b, "e2m1x2", [T, H / 2], [H / 2, 1], offset);
}

/** The castBack option sets of this test (no device needed to build them). */
export function castBackCases(rand: () => number, large: boolean): CastBackCase[] {
  const out: CastBackCase[] = [];
  const shapes: [number, number][] = [[1, 64], [1, 7168], [3, 192], [37, 320], [130, 1024], [129, 7168]];
  const blocks: [number, number][] = [[1, 32], [1, 64], [1, 128], [32, 32], [32, 128], [128, 128]];
  const modes: ScaleMode[] = ["pow2", "any", "mixed", "special"];
  let k = 0;
  for (const [T, H] of shapes) {
    for (const bs of blocks) {
      // every block shape with every scale mode and both layouts over the shapes, in rotation (a mode a shape
      // and block, all modes per block over the shapes)
      const mode = modes[k % modes.length];
      const col = k % 3 === 1;
      k++;
      out.push({ label: `[${T}, ${H}] [${bs}] ${mode} ${col ? "col" : "row"}`, x: [fp4Data(rand, T, H), fp32Sf(rand, T, H, bs, mode, col)], bs, ring: true, sms: null });
    }
  }
  for (const mode of modes) {
    out.push({ label: `[64, 7168] [1, 32] ${mode}`, x: [fp4Data(rand, 64, 7168), fp32Sf(rand, 64, 7168, [1, 32], mode, false)], bs: [1, 32], ring: true, sms: null });
  }
  // perTokenCastBack, numPerChannels 32 / 128 / the whole row
  for (const [T, H, n] of [[5, 256, 32], [33, 7168, 128], [7, 448, 448], [2, 7168, 7168]] as const) {
    out.push({ label: `perToken [${T}, ${H}] n ${n}`, x: [fp4Data(rand, T, H), fp32Sf(rand, T, H, [1, n], "mixed", false)], bs: [1, n], perToken: n, ring: true, sms: null });
  }
  // grid caps: 32 warps × 32 chunks of 32 values a lap at 1 SM, 96 warps at 3; several laps and a partial one
  for (const sms of [1, 3]) {
    for (const [T, H] of [[37, 7168], [300, 1088], [1, 64]] as const) {
      out.push({ label: `[${T}, ${H}] [1, 32] sms ${sms}`, x: [fp4Data(rand, T, H), fp32Sf(rand, T, H, [1, 32], "mixed", false)], bs: [1, 32], ring: true, sms });
    }
  }
  // codes on and off a 16-byte boundary; out views
  out.push({ label: "[9, 640] codes at +16 bytes", x: [fp4Data(rand, 9, 640, 16), fp32Sf(rand, 9, 640, [1, 32], "pow2", false)], bs: [1, 32], ring: true, sms: null });
  out.push({ label: "[9, 640] codes at +1 byte", x: [fp4Data(rand, 9, 640, 1), fp32Sf(rand, 9, 640, [1, 32], "pow2", false)], bs: [1, 32], ring: false, sms: null });
  out.push({ label: "[9, 640] codes at +8 bytes", x: [fp4Data(rand, 9, 640, 8), fp32Sf(rand, 9, 640, [1, 32], "any", false)], bs: [1, 32], ring: false, sms: null });
  for (const at of [1, 4, 8]) {
    out.push({ label: `[11, 576] out at +${at}`, x: [fp4Data(rand, 11, 576), fp32Sf(rand, 11, 576, [1, 32], "mixed", false)], bs: [1, 32], ring: at === 8, sms: null, outAt: at });
  }
  // fall-backs with the knob on: c = 16, per-channel, packed UE8M0 and e4m3 scales
  out.push({ label: "[5, 256] [1, 16]", x: [fp4Data(rand, 5, 256), fp32Sf(rand, 5, 256, [1, 16], "mixed", false)], bs: [1, 16], perToken: 16, ring: false, sms: null });
  out.push({ label: "[40, 256] [32, 1]", x: [fp4Data(rand, 40, 256), fp32Sf(rand, 40, 256, [32, 1], "mixed", false)], bs: [32, 1], ring: false, sms: null });
  const e = Uint8Array.from({ length: 6 * 4 }, () => 110 + Math.floor(rand() * 30));
  const w = new Int32Array(6);
  for (let m = 0; m < 6; m++) for (let j = 0; j < 4; j++) w[m] |= e[m * 4 + j] << (8 * j);
  out.push({ label: "[6, 128] [1, 32] packed UE8M0", x: [fp4Data(rand, 6, 128), tensor(w, [6, 1], "int32") as HostTensor], bs: [1, 32], ring: false, sms: null });
  const e4 = tensor(Uint8Array.from({ length: 6 * 4 }, () => 0x30 + Math.floor(rand() * 0x30)), [6, 4], "e4m3") as HostTensor;
  out.push({ label: "[6, 128] [1, 32] e4m3 scales", x: [fp4Data(rand, 6, 128), e4], bs: [1, 32], ring: false, sms: null });
  if (large) {
    out.push({ label: "[16384, 7168] [1, 32] pow2", x: [fp4Data(rand, 16384, 7168), fp32Sf(rand, 16384, 7168, [1, 32], "pow2", false)], bs: [1, 32], ring: true, sms: null });
  }
  return out;
}

/** The call of a case on a pair (host or device), into `out` when given. */
function callCastBack(c: CastBackCase, x: Quantized, out?: Tensor): Tensor {
  return c.perToken !== undefined
    ? perTokenCastBack(x, { fmt: "bf16", numPerChannels: c.perToken, out })
    : castBack(x, { fmt: "bf16", xBlockSize: c.bs, out });
}

function checkCastBack(c: CastBackCase): void {
  const cpu = callCastBack(c, c.x) as HostTensor;
  const dx: Quantized = [uploadView(c.x[0] as HostTensor), uploadView(c.x[1] as HostTensor)];
  try {
    for (const on of [true, false]) {
      withKnob(on, c.sms, 4, () => {
        const tag = `castBack ${c.label} sms ${c.sms ?? "device"} ring ${on}`;
        const want = kernelFunction("test", DEVICE, `tk_cast_back__e2m1_bf16${on && c.ring ? "_w" : ""}`);
        if (c.outAt === undefined) {
          const gpu = callCastBack(c, dx) as DeviceTensor;
          try {
            assert.equal(castBackLastLaunch().fn, want, `${tag}: symbol`);
            assert.equal(castBackLastLaunch().pdl, false, `${tag}: no PDL attribute`);
            assertBytesEqual(readAllocation(gpu), storageBytes(cpu), tag);
          } finally {
            dispose(gpu);
          }
          return;
        }
        const [T, H] = cpu.shape;
        const backing = zeros([T * H + c.outAt], "bf16", { device: 0 }) as DeviceTensor;
        const outView = backing.slice(0, c.outAt, T * H + c.outAt).view([T, H]);
        try {
          assert.equal(callCastBack(c, dx, outView), outView, `${tag}: returns out`);
          assert.equal(castBackLastLaunch().fn, want, `${tag}: symbol`);
          const all = readAllocation(backing);
          assert.ok(all.subarray(0, 2 * c.outAt).every((b) => b === 0), `${tag}: a byte before the out view was written`);
          assertBytesEqual(all.subarray(2 * c.outAt), storageBytes(cpu), tag);
        } finally {
          dispose(outView, backing);
        }
      });
    }
  } finally {
    dispose(dx);
  }
}

gpuTest("castBack / perTokenCastBack e2m1 → bf16 through tk_cast_back__e2m1_bf16_w (castBackLaunchTuning.e2m1Ring) = reference = cast_back.cu: blocks, scale kinds and specials, grid laps, views, fall-backs (seed 24003)", () => {
  for (const c of castBackCases(rng(24003), false)) checkCastBack(c);
});

gpuTest("castBack e2m1 [1, 32] fp32 power-of-two scales → bf16 ring at 16384 × 7168 = reference = cast_back.cu (seed 24004)", () => {
  for (const c of castBackCases(rng(24004), true).filter((c) => c.label.startsWith("[16384, 7168]"))) checkCastBack(c);
});

/**
 * Helpers of the GPU tests: upload a host view with its layout kept (strided rows, column-major scales), read a
 * device allocation whole (so layout padding is compared too), and random inputs with the edge values that
 * matter for casts.
 * @module
 */
import { elementBytes } from "../core/dtype.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { deviceRuntime, DeviceStorage, DeviceTensor, HostTensor, type Quantized, type Tensor, tensor, toDevice } from "../core/tensor.ts";
import assert from "node:assert/strict";
import { config } from "../core/config.ts";
import { toColMajor } from "./golden.ts";
import { assertBytesEqual } from "./harness.ts";

/** Uploads the storage span of a host view and rebuilds the same view (shape, strides, offset) on the device. */
export function uploadView(t: HostTensor, device = 0): DeviceTensor {
  const flat = new HostTensor(t.data, t.dtype, [t.data.length], [1]);
  const whole = toDevice(flat, device);
  const v = new DeviceTensor(whole.storage, t.dtype, t.shape, t.strides, t.offset);
  whole.dispose(); // the view keeps the storage alive
  return v;
}

/** All bytes of a device tensor's allocation (synchronises and checks the error word). */
export function readAllocation(t: DeviceTensor): Uint8Array {
  const out = new Uint8Array(t.byteSize);
  deviceRuntime("test").copyDtoH(t.device, out, t.storage.base, t.storage.stream);
  return out;
}

/** All bytes of a host tensor's storage. */
export function storageBytes(t: HostTensor): Uint8Array {
  return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

/**
 * A random `[T, H]` fp32/bf16 input with row stride `stride` (≥ H; padding columns hold ±1e6 garbage). Rows vary
 * in magnitude (×1e-30 … ×1e4, one huge 3e38 row), with zeros, −0, exact ties and a row of all zeros.
 */
export function randomInput(rand: () => number, T: number, H: number, dtype: "fp32" | "bf16", stride = H): HostTensor {
  const n = Math.max(0, (T - 1) * stride + H);
  const vals = new Float32Array(Math.max(n, 0));
  for (let t = 0; t < T; t++) {
    const kind = t % 11;
    const scale = [1, 1e-3, 1e4, 1e-30, 3e38 / 8, 1, 7, 0, 448, 2 ** -120, 0.01][kind];
    for (let j = 0; j < stride && t * stride + j < n; j++) {
      const i = t * stride + j;
      if (j >= H) {
        vals[i] = rand() < 0.5 ? 1e6 : -1e6;
        continue;
      }
      const r = rand();
      if (kind === 7) vals[i] = r < 0.5 ? -0 : 0;
      else if (r < 0.02) vals[i] = 0;
      else if (r < 0.03) vals[i] = -0;
      else if (kind === 8) vals[i] = Math.fround((Math.floor(rand() * 64) - 32) * 0.5 + 0.25) * (r < 0.5 ? 1 : -1); // rounding ties
      else vals[i] = Math.fround((rand() * 2 - 1) * scale * (1 + 7 * rand()));
    }
  }
  if (dtype === "fp32") return tensor(vals, [T, H], "fp32", [stride, 1]);
  const b = new Uint16Array(vals.length);
  for (let i = 0; i < vals.length; i++) b[i] = encodeBf16(vals[i]);
  return tensor(b, [T, H], "bf16", [stride, 1]);
}

/** Bytes per element of a tensor. */
export function eb(t: { dtype: Parameters<typeof elementBytes>[0] }): number {
  return elementBytes(t.dtype);
}

export { DeviceStorage };

/** Uploads a host tensor or a quantized pair with their layouts kept ({@link uploadView}). */
export function up(t: Tensor | Quantized): DeviceTensor | [DeviceTensor, DeviceTensor] {
  return Array.isArray(t) ? [uploadView(t[0] as HostTensor), uploadView(t[1] as HostTensor)] : uploadView(t as HostTensor);
}

/**
 * Compares a device result's whole allocation (layout padding included) with the expected one: a host result's
 * storage, or another device result's allocation.
 */
export function sameAllocation(gpu: unknown, expected: unknown, label: string): void {
  const want = expected instanceof DeviceTensor ? readAllocation(expected) : storageBytes(expected as HostTensor);
  assertBytesEqual(readAllocation(gpu as DeviceTensor), want, label);
}

/** Expert prefix sums over T rows with random counts (some empty), alignment A. */
export function randomPsum(rand: () => number, T: number, E: number, A: number): HostTensor {
  const p = new Int32Array(E);
  let start = 0;
  for (let e = 0; e < E; e++) {
    // Every expert but the last ends at most at the last multiple of A within T, so the next aligned start stays
    // ≤ T and the psum keeps the §11.2 contract (psum[e] ≥ start_e, psum[E−1] ≤ T) for any T and A.
    const cap = e === E - 1 ? T : Math.floor(T / A) * A;
    const room = Math.max(0, cap - start);
    const n = rand() < 0.2 ? 0 : Math.floor(rand() * Math.min(room, Math.ceil((2 * T) / E) + 1));
    p[e] = start + n;
    start = Math.ceil(p[e] / A) * A;
  }
  return tensor(p, [E], "int32");
}

/** normForwardAndPerTokenCast's outputs: [[data, sf], outBf16 or null, rstd, residualOut]. */
type NormCastOutputs = readonly [readonly [unknown, { readonly strides: ArrayLike<number> }], unknown, unknown, unknown];

/**
 * The device outputs of normForwardAndPerTokenCast against the expected ones (the CPU's), byte for byte: data, the
 * scales and their strides, outBf16 (or its absence), rstd, and residualOut where a residual was given.
 */
export function sameNormCastOutputs(got: NormCastOutputs, want: NormCastOutputs, residual: boolean, label: string): void {
  const [[gd, gf], gb, gr, gs] = got;
  const [[cd, cf], cb, cr, cs] = want;
  sameAllocation(gd, cd, `${label} data`);
  sameAllocation(gf, cf, `${label} sf`);
  assert.deepEqual([...Array.from(gf.strides)], [...Array.from(cf.strides)], `${label} sf strides`);
  if (cb) sameAllocation(gb, cb, `${label} outBf16`);
  else assert.equal(gb, null);
  sameAllocation(gr, cr, `${label} rstd`);
  if (residual) sameAllocation(gs, cs, `${label} residualOut`);
}

/** Disposes every device tensor among the arguments (arrays at any depth); host tensors and nulls are skipped. */
export function dispose(...ts: unknown[]): void {
  for (const t of ts.flat(Infinity)) if (t instanceof DeviceTensor) t.dispose();
}

type SfLayout = { useTmaAlignedColMajorSf?: boolean; roundSf?: boolean; usePackedUe8m0?: boolean };

/** The fp32 and packed UE8M0 scale layouts (quant.md), rounded or not, row- and column-major: every op takes them. */
export const SF_LAYOUTS_FP32: readonly [string, SfLayout][] = [
  ["fp32", {}],
  ["fp32-round", { roundSf: true }],
  ["fp32-col", { useTmaAlignedColMajorSf: true }],
  ["fp32-col-round", { useTmaAlignedColMajorSf: true, roundSf: true }],
  ["packed-row", { roundSf: true, usePackedUe8m0: true }],
  ["packed-col", { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }],
];

/** {@link SF_LAYOUTS_FP32} and the two E4M3-scale layouts, in a fixed order (test seeds derive from the index). */
export const SF_LAYOUTS: readonly [string, SfLayout & { useE4m3Sf?: boolean }][] = [
  ...SF_LAYOUTS_FP32,
  ["e4m3sf-row", { useE4m3Sf: true }],
  ["e4m3sf-col", { useE4m3Sf: true, useTmaAlignedColMajorSf: true }],
];

/**
 * Compares a device `[data, sf]` result with the expected pair (host or device): both allocations byte for byte and
 * the sf strides; then disposes the device pair.
 */
export function samePair(gpu: readonly [Tensor, Tensor], expected: readonly [Tensor, Tensor], label: string): void {
  try {
    sameAllocation(gpu[0], expected[0], `${label} data`);
    sameAllocation(gpu[1], expected[1], `${label} sf`);
    assert.deepEqual([...gpu[1].strides], [...expected[1].strides], `${label} sf strides`);
  } finally {
    dispose(gpu);
  }
}

/**
 * Runs `f` with `config.pdl` set to `on` and restores the previous value when `f` returns, throws, or (when it returns
 * a promise) settles; returns what `f` returns.
 */
export function withPdl<R>(on: boolean, f: () => R): R {
  const saved = config.pdl;
  config.pdl = on;
  let r: R;
  try {
    r = f();
  } catch (e) {
    config.pdl = saved;
    throw e;
  }
  if (r instanceof Promise) return r.finally(() => (config.pdl = saved)) as R;
  config.pdl = saved;
  return r;
}

/**
 * Random e2m1x2 codes `[T, H/2]` (from byte `offset` of their buffer; the bytes before it zero) and power-of-two
 * input scales of blocks `bs` whose exponent bytes lie in [lo, lo + 11], so perBlockCastLossless is always exact;
 * fp32 scales carry sign and mantissa noise the op must ignore (spec/quant.md §10).
 */
export function randomFp4(rand: () => number, T: number, H: number, bs: readonly [number, number], layout: "fp32-row" | "fp32-col" | "packed-row" | "packed-col", lo: number, offset = 0): Quantized {
  const codes = new Uint8Array((T * H) / 2).map(() => Math.floor(rand() * 256));
  let data = tensor(codes, [T, H / 2], "e2m1x2");
  if (offset > 0) {
    const buf = new Uint8Array(offset + codes.length);
    buf.set(codes, offset);
    data = new HostTensor(buf, "e2m1x2", [T, H / 2], [H / 2, 1], offset);
  }
  const nbm = Math.ceil(T / bs[0]);
  const nbk = Math.ceil(H / bs[1]);
  const e = () => lo + Math.floor(rand() * 12);
  let sf: HostTensor;
  if (layout.startsWith("packed")) {
    const cols = Math.ceil(nbk / 4);
    const w = new Int32Array(nbm * cols);
    for (let m = 0; m < nbm; m++) for (let k = 0; k < nbk; k++) w[m * cols + (k >> 2)] |= e() << (8 * (k & 3));
    sf = tensor(w, [nbm, cols], "int32");
  } else {
    const u = new Uint32Array(nbm * nbk).map(() => (e() << 23) | (rand() < 0.3 ? Math.floor(rand() * 0x7fffff) : 0) | (rand() < 0.1 ? 0x80000000 : 0));
    sf = tensor(new Float32Array(u.buffer), [nbm, nbk], "fp32");
  }
  return [data, layout.endsWith("col") ? toColMajor(sf) : sf];
}

/** fp32 scales `[T, H/32]` with the given exponent bytes (bits: exponent << 23, plus `noise` in sign and mantissa). */
export function fp32Scales(e: Uint8Array, T: number, H: number, rand: () => number): HostTensor {
  const u = new Uint32Array(e.length).map((_, i) => (e[i] << 23) | (rand() < 0.3 ? Math.floor(rand() * 0x7fffff) : 0) | (rand() < 0.2 ? 0x80000000 : 0));
  return tensor(new Float32Array(u.buffer), [T, H / 32], "fp32") as HostTensor;
}

/** The same exponent bytes as packed UE8M0 words `[T, ceil(H/128)]`. */
export function packedScales(e: Uint8Array, T: number, H: number): HostTensor {
  const nbk = H / 32, cols = Math.ceil(nbk / 4);
  const w = new Int32Array(T * cols);
  for (let m = 0; m < T; m++) for (let k = 0; k < nbk; k++) w[m * cols + (k >> 2)] |= e[m * nbk + k] << (8 * (k & 3));
  return tensor(w, [T, cols], "int32") as HostTensor;
}

/** The 65536 bf16 patterns in an order shuffled by `rand` (Fisher–Yates, 65535 draws). */
export function shuffledBf16Patterns(rand: () => number): Uint16Array {
  const perm = new Uint16Array(65536);
  for (let k = 0; k < 65536; k++) perm[k] = k;
  for (let k = 65535; k > 0; k--) {
    const j = Math.floor(rand() * (k + 1));
    const t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
  return perm;
}

/**
 * bf16 storage of n + pad elements for the SR cast tests (tests/csr13_gpu.test.ts, tests/csr23_gpu.test.ts): every
 * pattern in order (copies = whole sweeps, shuffled within a sweep), then random; with `specials`, NaN, ±Inf, ±0,
 * subnormals, 448 and beyond planted at random places; NaNs folded to the one pattern the CPU reference keeps.
 */
export function bf16Elements(rand: () => number, n: number, pad: number, sweeps = 0, specials = false): HostTensor {
  const total = n + pad;
  const d = new Uint16Array(total);
  let i = 0;
  for (let s = 0; s < sweeps && i + 65536 <= total; s++, i += 65536) {
    d.set(shuffledBf16Patterns(rand), i);
  }
  for (; i < total; i++) {
    const r = rand();
    d[i] = r < 0.5 ? Math.floor(rand() * 65536) : encodeBf16(Math.fround((rand() * 2 - 1) * 2 ** (rand() * 40 - 30)));
  }
  if (specials) {
    // the NaN probe's fallback, ±Inf, ±0, subnormals, 448 and beyond at random places (either chunk of a lane's pair)
    const sp = [0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0000, 0x0001, 0x807f, 0x43e0, 0xc3e0, 0x43f0];
    for (let k = Math.floor(rand() * 97); k < total; k += 97 + Math.floor(rand() * 400)) d[k] = sp[k % sp.length];
  }
  // NaNs: the one pattern the CPU reference keeps (as tests/elem_gpu.test.ts)
  for (let k = 0; k < total; k++) if ((d[k] & 0x7fff) > 0x7f80) d[k] = 0x7fc0;
  return new HostTensor(d, "bf16", [n], [1], pad);
}

/**
 * Plants the SR e4m3 cast's rounding edges into every 7th element of bf16 storage `x` (tests/csr13_gpu.test.ts,
 * tests/csr23_gpu.test.ts): magnitudes below 2^-6 (binary32 subnormals after the 2^-120 scaling), e4m3 grid points and
 * the bf16 just below them, 448 and beyond, ±0, ±Inf; then folds NaNs to the one pattern the CPU reference keeps.
 */
export function plantSrEdges(rand: () => number, x: HostTensor): void {
  const d = x.data as Uint16Array;
  const edges: number[] = [0, -0, 448, -448, 464, 480, Infinity, -Infinity];
  for (let e = -10; e <= 8; e++) for (let m = 0; m < 8; m++) edges.push((1 + m / 8) * 2 ** e, -(1 + m / 8) * 2 ** e);
  for (let k = 0; k < d.length; k += 7) {
    const v = edges[Math.floor(rand() * edges.length)];
    const b = encodeBf16(v);
    d[k] = rand() < 0.5 || !(Number.isFinite(v) && v !== 0) ? b : b - 1;
  }
  for (let k = 0; k < d.length; k++) if ((d[k] & 0x7fff) > 0x7f80) d[k] = 0x7fc0;
}

/**
 * `n` gather indices into `T` rows (perChannelCastFused's posToToken): random with repeats, ~1 in 5 negative (a zero
 * row), a descending run of 24, then a run of 16 copies of one row.
 */
export function gatherPositions(rand: () => number, n: number, T: number): HostTensor {
  const idx = Int32Array.from({ length: n }, () => (rand() < 0.2 ? -1 - Math.floor(rand() * 3) : Math.floor(rand() * T)));
  for (let p = 0; p < Math.min(n, 24); p++) idx[p] = (T - 1 - p + T) % T;
  for (let p = 24; p < Math.min(n, 40); p++) idx[p] = Math.floor(T / 2);
  return tensor(idx, [n], "int32") as HostTensor;
}

/**
 * Standard normal samples: `randn`, `randnLike`, `setSeed` (spec/API.md §3.4; generator, state and legal arguments:
 * spec/norm-rope-rand.md §C.2, §C.3, D.7, D.10). Checks, then the CPU reference (`randn.ref.ts`) or the CUDA
 * kernel (`kernels-src/cuda/rand/randn.cu`), bit-identical for the same `(seed, offset, index)`.
 * @module
 */
import { type OpOptions, place, type Placement } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, describe, selfOverlapping } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { copyInto, onHost, resultToDevice } from "../../core/stage.ts";
import {
  contiguousStrides,
  type Device,
  deviceEmptyStrided,
  deviceRuntime,
  DeviceTensor,
  type HostTensor,
  hostZeros,
  isTensor,
  numelOf,
  type Stream,
  type Tensor,
} from "../../core/tensor.ts";
import { kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { RANDN_MAX_DIMS, RandnParams } from "./randn.params.ts";
import { randnFill, type RandnDType } from "./randn.ref.ts";

export type { RandnDType };

/** Options of {@link randn}. */
export interface RandnOptions extends OpOptions {
  /** Storage dtype. Default "fp32". */
  dtype?: RandnDType;
  /** Where the result lives: "cpu" (default) or a device (generated there by the CUDA kernel). */
  device?: Device | "cpu";
  /** Seed of a seeded call in `[0, 2⁶⁴)`: the global state is neither read nor advanced. */
  seed?: bigint;
  /** Stream offset of a seeded call in `[0, 2⁶⁴)` (only with `seed`). Default 0. */
  offset?: bigint;
  /** Preallocated output of `dtype` and `shape` (any strides without self-overlap), written in row-major order. */
  out?: Tensor;
}

/** Options of {@link randnLike}. */
export interface RandnLikeOptions extends OpOptions {
  /** Seed of a seeded call in `[0, 2⁶⁴)`. */
  seed?: bigint;
  /** Stream offset of a seeded call in `[0, 2⁶⁴)` (only with `seed`). */
  offset?: bigint;
}

const TWO64 = 1n << 64n;
/** The process-wide generator state of §C.3; initial seed = PyTorch's default seed. */
const state = { seed: 67280421310721n, offset: 0n };
const DTYPES: readonly RandnDType[] = ["fp32", "bf16", "fp16"];
const KEYS = ["dtype", "device", "seed", "offset"];
const LIKE_KEYS = ["seed", "offset"];

function checkU64(op: string, arg: string, v: unknown): bigint {
  if (typeof v !== "bigint" || v < 0n || v >= TWO64) throw new TkError(op, arg, "VALUE", `expected a bigint in [0, 2^64), got ${describe(v)}`);
  return v;
}

/** Seed and offset of one call (§C.3): seeded calls use theirs; unseeded ones are resolved later, from the state. */
function checkSeed(op: string, o: { seed?: unknown; offset?: unknown }): { seed: bigint; offset: bigint } | null {
  if (o.seed === undefined) {
    if (o.offset !== undefined) throw new TkError(op, "offset", "VALUE", "is only allowed together with seed");
    return null;
  }
  return { seed: checkU64(op, "seed", o.seed), offset: o.offset === undefined ? 0n : checkU64(op, "offset", o.offset) };
}

function checkShape(op: string, shape: unknown): number[] {
  if (!Array.isArray(shape)) throw new TkError(op, "shape", "SHAPE", `expected an array of sizes, got ${describe(shape)}`);
  let n = 1;
  for (const d of shape) {
    if (typeof d !== "number" || !Number.isSafeInteger(d) || d < 0) throw new TkError(op, "shape", "SHAPE", `sizes must be non-negative safe integers, got [${shape.map(describe).join(", ")}]`);
    n *= d;
  }
  if (n > Number.MAX_SAFE_INTEGER) throw new TkError(op, "shape", "SHAPE", `has ${n} elements, more than 2^53 − 1`);
  return shape as number[];
}

/** The (seed, offset) an unseeded call uses; advances the offset by exactly one (§C.3). */
function takeState(): { seed: bigint; offset: bigint } {
  const s = { seed: state.seed, offset: state.offset };
  state.offset = (state.offset + 1n) % TWO64;
  return s;
}

// ---- CUDA launch ------------------------------------------------------------------------------------------

const packet = new LaunchPacket(RandnParams);
const W = packet.w;
const THREADS = 256;
const SIZE_WORDS = [W.size0, W.size1, W.size2, W.size3, W.size4, W.size5];
const STRIDE_WORDS = [W.stride0, W.stride1, W.stride2, W.stride3, W.stride4, W.stride5];

/**
 * Test hook: non-zero `grid` / `block` (≤ 256) replace the launch shape of the next launches, to show that the bits
 * do not depend on it (spec/norm-rope-rand.md §C.4). Not part of the public API.
 */
export const randnLaunchShape = { grid: 0, block: 0 };

/** A bigint in [0, 2^64) into two 32-bit words. */
function u64Big(word: number, v: bigint): void {
  packet.u32(word, Number(v & 0xffffffffn));
  packet.u32(word + 1, Number(v >> 32n));
}

/** Sizes and strides of `out` with size-1 dims dropped and row-major-adjacent dims merged; [] when contiguous. */
function mergedDims(out: Tensor): [number[], number[]] {
  const sizes: number[] = [];
  const strides: number[] = [];
  for (let d = 0; d < out.shape.length; d++) {
    if (out.shape[d] === 1) continue;
    const last = sizes.length - 1;
    if (last >= 0 && strides[last] === out.strides[d] * out.shape[d]) {
      sizes[last] *= out.shape[d];
      strides[last] = out.strides[d];
    } else {
      sizes.push(out.shape[d]);
      strides.push(out.strides[d]);
    }
  }
  return sizes.length === 0 || (sizes.length === 1 && strides[0] === 1) ? [[], []] : [sizes, strides];
}

function launchRandn(op: string, device: Device, stream: Stream, out: DeviceTensor, k: { seed: bigint; offset: bigint }, dims: [number[], number[]]): void {
  const n = out.numel;
  if (n === 0) return;
  const fn = kernelFunction(op, device, `tk_randn__${out.dtype}`);
  const p = packet;
  const [sizes, strides] = dims;
  p.u64(W.out, out.addr);
  u64Big(W.seed, k.seed);
  u64Big(W.offset, k.offset);
  p.u64(W.numel, n);
  p.u32(W.rank, sizes.length);
  p.u32(W.pad, 0);
  for (let d = 0; d < RANDN_MAX_DIMS; d++) {
    p.u64(SIZE_WORDS[d], sizes[d] ?? 1);
    const s = strides[d] ?? 0;
    p.u32(STRIDE_WORDS[d], s >>> 0);
    p.u32(STRIDE_WORDS[d] + 1, Math.floor(s / 4294967296) >>> 0);
  }
  const block = randnLaunchShape.block || THREADS;
  const grid = randnLaunchShape.grid || Math.max(1, Math.min(Math.ceil(Math.ceil(n / 4) / THREADS), 64 * config.getNumSms(device)));
  p.setLaunch(fn, stream.handle, grid, block, 0, false, device.index);
  p.launch(op);
}

/** Placement of a call with no device tensor but a `device` option: that device, or the host with `backend: "cpu"`. */
function placeOn(op: string, backend: unknown, device: Device): Placement {
  if (backend === "cpu") return { backend: "cpu", staged: true, device };
  if (backend !== undefined && backend !== "auto" && backend !== "cuda") return place(op, backend, null); // refusals
  if (device.kind === "ascend") throw new TkError(op, "backend", "BACKEND_UNAVAILABLE", "the Ascend backend is not built yet (prebuilt/ascend/README.md)");
  deviceRuntime(op).defaultStream(device); // the driver and the device index are usable, else BACKEND_UNAVAILABLE
  return { backend: "cuda", staged: false, device };
}

function generate(
  op: string,
  shape: number[],
  dtype: RandnDType,
  key: { seed: bigint; offset: bigint } | null,
  out: Tensor | null,
  o: OpOptions,
  device: Device | null,
): Tensor {
  const pl = out || !device ? place(op, o.backend, out) : placeOn(op, o.backend, device);
  // Checked before the state advances: a refused call leaves the stream where it was.
  const dims = pl.backend === "cuda" && !pl.staged && out ? mergedDims(out) : null;
  if (dims && dims[0].length > RANDN_MAX_DIMS) {
    throw new TkError(op, "out", "UNSUPPORTED", `the CUDA kernel writes views of at most ${RANDN_MAX_DIMS} strided dims after merging (got sizes [${dims[0].join(", ")}], strides [${dims[1].join(", ")}])`);
  }
  const k = key ?? takeState();
  if (pl.backend === "cuda") {
    const stream = (pl.staged ? null : o.stream) ?? deviceRuntime(op).defaultStream(pl.device);
    const direct = !pl.staged && out ? (out as DeviceTensor) : null;
    const t = direct ?? deviceEmptyStrided(op, pl.device, shape, contiguousStrides(shape), dtype, numelOf(shape), stream);
    launchRandn(op, pl.device, stream, t, k, dims ?? [[], []]);
    if (!pl.staged) return t;
    // Host out (or host result) on a forced device backend: generated on the device, copied back.
    try {
      const h = onHost(t) as HostTensor;
      if (!out) return h;
      copyInto(op, out, h);
      return out;
    } finally {
      t.dispose();
    }
  }
  if (out && !pl.staged) {
    randnFill(out as HostTensor, k.seed, k.offset);
    return out;
  }
  const h = hostZeros(shape, dtype);
  randnFill(h, k.seed, k.offset);
  return pl.staged ? resultToDevice(op, h, out, pl.device) : h;
}

/**
 * A tensor of `shape` filled with standard normal samples from the library's counter-based generator
 * (spec/norm-rope-rand.md §C.2: Philox4x32-10 + binary64 Box–Muller): element `i` (row-major) depends only on
 * `(seed, offset, i, dtype)`, never on the shape, strides or backend. Without `seed`, the call uses the global
 * state `(seed, offset)` and advances its offset by one (see {@link setSeed}). bf16/fp16 are the fp32 values
 * rounded once more. With a `device` (or a device `out`), the CUDA kernel writes the same bits there, enqueued on
 * `stream`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { randn } from "./mod.ts";
 * const a = randn([2, 3], { seed: 0n });
 * const b = randn([6], { seed: 0n });
 * assert.deepEqual([...(a as { data: Float32Array }).data], [...(b as { data: Float32Array }).data]);
 * assert.equal(new Uint32Array((a as { data: Float32Array }).data.buffer)[0], 0x3f7dbb33); // §C.2.6
 * ```
 */
export function randn(shape: number[], options?: RandnOptions): Tensor {
  const op = "randn";
  checkOptions(op, options, KEYS);
  const o = options ?? {};
  const s = checkShape(op, shape);
  const dtype = o.dtype ?? "fp32";
  if (!DTYPES.includes(dtype)) throw new TkError(op, "dtype", "DTYPE", `must be one of ${DTYPES.join(", ")} (got ${describe(dtype)})`);
  if (o.device !== undefined && o.device !== "cpu") {
    const d = o.device as unknown;
    if (typeof d !== "object" || d === null || typeof (d as Device).kind !== "string") throw new TkError(op, "device", "VALUE", `expected "cpu" or a device, got ${describe(d)}`);
    const dev = d as Device;
    if ((dev.kind !== "cuda" && dev.kind !== "ascend") || !Number.isSafeInteger(dev.index) || dev.index < 0) {
      throw new TkError(op, "device", "VALUE", `expected "cpu" or { kind: "cuda", index }, got ${describe(d)}`);
    }
  }
  const device = o.device !== undefined && o.device !== "cpu" ? o.device : null;
  const key = checkSeed(op, o);
  let out: Tensor | null = null;
  if (o.out !== undefined) {
    out = checkOutTensor(op, "out", o.out, dtype);
    if (out.shape.length !== s.length || out.shape.some((d, i) => d !== s[i])) {
      throw new TkError(op, "out", "OUT_MISMATCH", `expected shape [${s.join(", ")}], got [${out.shape.join(", ")}]`);
    }
    if (selfOverlapping(out)) throw new TkError(op, "out", "OUT_MISMATCH", `two of its elements share an address (strides [${out.strides.join(", ")}])`);
    const where = out instanceof DeviceTensor ? out.device : null;
    if (device && (!where || where.kind !== device.kind || where.index !== device.index)) {
      throw new TkError(op, "out", "OUT_MISMATCH", `must live on ${device.kind}:${device.index} (the device option)`);
    }
  }
  return generate(op, s, dtype, key, out, o, device);
}

/**
 * `randn(t.shape, { dtype: t.dtype, ...options })` for an fp32/bf16/fp16 tensor `t`: a new contiguous tensor.
 * A device `t` gets a device result, generated there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { randn, randnLike } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const t = tensor(new Uint16Array(8), [2, 4], "bf16");
 * const r = randnLike(t, { seed: 7n, offset: 1n });
 * assert.deepEqual([...r.shape], [2, 4]);
 * assert.deepEqual(r, randn([2, 4], { dtype: "bf16", seed: 7n, offset: 1n }));
 * ```
 */
export function randnLike(t: Tensor, options?: RandnLikeOptions): Tensor {
  const op = "randnLike";
  checkOptions(op, options, LIKE_KEYS);
  const o = options ?? {};
  if ((o as { out?: unknown }).out !== undefined) throw new TkError(op, "out", "VALUE", "randnLike takes no out (use randn with out)");
  if (!isTensor(t)) throw new TkError(op, "t", "VALUE", `expected a tensor, got ${describe(t)}`);
  if (!DTYPES.includes(t.dtype as RandnDType)) throw new TkError(op, "t", "DTYPE", `must be fp32, bf16 or fp16 (got ${t.dtype})`);
  const key = checkSeed(op, o);
  return generate(op, [...t.shape], t.dtype as RandnDType, key, null, o, t instanceof DeviceTensor ? t.device : null);
}

/**
 * Sets the global generator state of {@link randn} to `(seed mod 2⁶⁴, offset)` (spec/norm-rope-rand.md §C.3).
 * `seed` is an integer in `[−2⁶³, 2⁶⁴)` (number or bigint, as `torch.manual_seed`); `offset` in `[0, 2⁶⁴)`,
 * default 0. The k-th unseeded call afterwards uses offset `offset + k − 1`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { randn, setSeed } from "./mod.ts";
 * setSeed(42);
 * const a = randn([3]);
 * const b = randn([3]);
 * assert.deepEqual(a, randn([3], { seed: 42n, offset: 0n }));
 * assert.deepEqual(b, randn([3], { seed: 42n, offset: 1n }));
 * ```
 */
export function setSeed(seed: number | bigint, offset: number | bigint = 0): void {
  const op = "setSeed";
  const toBig = (arg: string, v: unknown): bigint => {
    if (typeof v === "bigint") return v;
    if (typeof v === "number" && Number.isSafeInteger(v)) return BigInt(v);
    throw new TkError(op, arg, "VALUE", `expected an integer (safe-integer number or bigint), got ${describe(v)}`);
  };
  const s = toBig("seed", seed);
  if (s < -(1n << 63n) || s >= TWO64) throw new TkError(op, "seed", "VALUE", `must be in [-2^63, 2^64) (got ${s})`);
  const o = toBig("offset", offset);
  if (o < 0n || o >= TWO64) throw new TkError(op, "offset", "VALUE", `must be in [0, 2^64) (got ${o})`);
  state.seed = ((s % TWO64) + TWO64) % TWO64;
  state.offset = o;
}

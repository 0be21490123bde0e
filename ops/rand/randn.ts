/**
 * Standard normal samples: `randn`, `randnLike`, `setSeed` (spec/API.md §3.4; generator, state and legal arguments:
 * spec/norm-rope-rand.md §C.2, §C.3, D.7, D.10). Checks, then the CPU reference (`randn.ref.ts`). There is no CUDA
 * kernel yet: a device output answers `UNSUPPORTED` (device `out` tensors run with `backend: "cpu"`, staged).
 * @module
 */
import { type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, describe, selfOverlapping } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { resultToDevice } from "../../core/stage.ts";
import { type Device, DeviceTensor, type HostTensor, hostZeros, isTensor, type Tensor } from "../../core/tensor.ts";
import { randnFill, type RandnDType } from "./randn.ref.ts";

export type { RandnDType };

/** Options of {@link randn}. */
export interface RandnOptions extends OpOptions {
  /** Storage dtype. Default "fp32". */
  dtype?: RandnDType;
  /** Where the result lives: "cpu" (default). A device answers `UNSUPPORTED` until the kernel exists. */
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

function generate(op: string, shape: number[], dtype: RandnDType, key: { seed: bigint; offset: bigint } | null, out: Tensor | null, backend: unknown): Tensor {
  const pl = placeWithoutKernel(op, backend, out);
  const k = key ?? takeState();
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
 * rounded once more.
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
    throw new TkError(op, "device", "UNSUPPORTED", `randn has no ${(d as Device).kind} kernel yet; generate on the host ("cpu") and copy`);
  }
  const key = checkSeed(op, o);
  let out: Tensor | null = null;
  if (o.out !== undefined) {
    out = checkOutTensor(op, "out", o.out, dtype);
    if (out.shape.length !== s.length || out.shape.some((d, i) => d !== s[i])) {
      throw new TkError(op, "out", "OUT_MISMATCH", `expected shape [${s.join(", ")}], got [${out.shape.join(", ")}]`);
    }
    if (selfOverlapping(out)) throw new TkError(op, "out", "OUT_MISMATCH", `two of its elements share an address (strides [${out.strides.join(", ")}])`);
  }
  return generate(op, s, dtype, key, out, o.backend);
}

/**
 * `randn(t.shape, { dtype: t.dtype, ...options })` for an fp32/bf16/fp16 tensor `t`: a new contiguous tensor.
 * A device `t` answers `UNSUPPORTED` until the kernel exists.
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
  if (t instanceof DeviceTensor) throw new TkError(op, "t", "UNSUPPORTED", `randnLike has no ${t.device.kind} kernel yet; the result would live on ${t.device.kind}:${t.device.index}`);
  const key = checkSeed(op, o);
  return generate(op, [...t.shape], t.dtype as RandnDType, key, null, o.backend);
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

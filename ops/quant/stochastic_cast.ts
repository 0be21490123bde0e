/**
 * `stochasticCast` (spec/API.md §3.1; numerics and legal arguments: spec/quant.md §7.1–§7.4, §11.1), also the
 * `stochasticRounding: true` form of `cast`. Checks, then dispatch to the CPU reference (`stochastic.ref.ts`) or
 * the CUDA kernel (`kernels-src/cuda/quant/cast.cu`, the same software rounding: identical bytes).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkContiguous, checkOptions, checkOutTensor, checkShapeIs, checkTensor, describe, oneOf, overlaps } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged } from "../../core/stage.ts";
import { contiguousOut, launchElementCast, streamFor } from "./elem_launch.ts";
import type { HostTensor, Tensor } from "../../core/tensor.ts";
import { stochasticCastRef, type StochasticDtype } from "./stochastic.ref.ts";

/** Options of {@link stochasticCast}. */
export interface StochasticCastOptions extends OpOptions {
  /** Target dtype: `bf16` or `fp16` (from fp32), `e4m3` (from fp32, bf16 or fp16). */
  dtype: StochasticDtype;
  /** Hash tweak added to every quad index (taken mod 2³²). Default `0n`: upstream's bits. */
  seed?: bigint;
  /**
   * Flat element index of `x[0]` in a larger tensor cast in chunks: a non-negative multiple of 4. Casting the
   * chunks with their offsets gives the bytes of casting the whole. Default `0n`.
   */
  offset?: bigint;
  /** Preallocated contiguous output of `x`'s shape and dtype `dtype`. */
  out?: Tensor;
}

const KEYS = ["dtype", "seed", "offset"];
/** Sources allowed for each target (§7.1). */
const SOURCES: Readonly<Record<StochasticDtype, readonly ("fp32" | "bf16" | "fp16")[]>> = {
  bf16: ["fp32"],
  fp16: ["fp32"],
  e4m3: ["fp32", "bf16", "fp16"],
};

/**
 * Casts `x` to `dtype` with stochastic rounding (spec/quant.md §7.2–§7.4): each element is rounded to one of its
 * two neighbouring codes, up with probability equal to the dropped fraction (to 8 bits for e4m3, 16 for
 * bf16/fp16), the random bits coming from a hash of each quad of four elements and its index. Pairs: fp32 → bf16,
 * fp16, e4m3; bf16 → e4m3; fp16 → e4m3. `x` is contiguous with `numel % 4 == 0`; e4m3 saturates at ±448. The
 * result depends only on the values, their positions, `seed` and `offset`.
 *
 * Host inputs run the CPU reference (or the device with `backend: "cuda"`); device inputs run the CUDA kernel,
 * which gives the same bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type HostTensor, stochasticCast, tensor } from "../../mod.ts";
 * const x = tensor([1, 448, 1.0625, -0.3], [4], "fp32");
 * const y = stochasticCast(x, { dtype: "e4m3" }) as HostTensor;
 * // 1 and 448 are e4m3 values; 1.0625 lies halfway between 1 (0x38) and 1.125 (0x39).
 * assert.ok(y.data[0] === 0x38 && y.data[1] === 0x7e && (y.data[2] === 0x38 || y.data[2] === 0x39));
 * const z = stochasticCast(x, { dtype: "e4m3", seed: 7n, offset: 4n }) as HostTensor;
 * assert.deepEqual(z.data, (stochasticCast(x, { dtype: "e4m3", seed: 7n, offset: 4n }) as HostTensor).data);
 * ```
 */
export function stochasticCast(x: Tensor, options: StochasticCastOptions): Tensor {
  const op = "stochasticCast";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "dtype is required");
  return castStochastically(op, x, options.dtype, options);
}

/** The checks and dispatch of {@link stochasticCast}, also run by `cast` with `stochasticRounding: true`. */
export function castStochastically(op: string, x: Tensor, target: unknown, o: Omit<StochasticCastOptions, "dtype">): Tensor {
  const dtype = oneOf(op, "dtype", target, ["bf16", "fp16", "e4m3"] as const);
  const t = checkTensor(op, "x", x, ["fp32", "bf16", "fp16"]);
  const from = t.dtype as "fp32" | "bf16" | "fp16";
  if (!SOURCES[dtype].includes(from)) {
    throw new TkError(op, "dtype", "VALUE", `stochastic rounding from ${from} targets ${from === "fp32" ? "bf16, fp16 or e4m3" : "e4m3"} only (got ${dtype})`);
  }
  checkContiguous(op, "x", t);
  if (t.numel % 4 !== 0) throw new TkError(op, "x", "SHAPE", `the element count must be a multiple of 4 (got ${t.numel})`);
  const seed = bigintOption(op, "seed", o.seed);
  const offset = bigintOption(op, "offset", o.offset);
  if (offset < 0n || offset % 4n !== 0n) throw new TkError(op, "offset", "VALUE", `must be a non-negative multiple of 4 (got ${offset})`);
  let out: Tensor | null = null;
  if (o.out !== undefined) {
    out = checkOutTensor(op, "out", o.out, dtype);
    checkShapeIs(op, "out", out, t.shape);
    checkContiguous(op, "out", out);
    if (overlaps(out, t)) throw new TkError(op, "out", "OUT_MISMATCH", "overlaps an input");
  }
  const pl = place(op, o.backend, t, out);
  if (pl.backend === "cuda" && !pl.staged) {
    const s = streamFor(op, pl.device, o.stream);
    const y = contiguousOut(op, pl.device, s, t.shape, dtype, out);
    launchElementCast(op, pl.device, s, t, y, true, Number(BigInt.asUintN(32, offset / 4n + seed)));
    return y;
  }
  if (pl.backend === "cuda") {
    const local = { seed, offset, backend: "auto", stream: undefined } as const;
    return runOnDeviceStaged(op, pl.device, [t], [out], ([dx]) => [castStochastically(op, dx!, dtype, local)])[0];
  }
  const res = stochasticCastRef(onHost(t) as HostTensor, dtype, seed, offset, pl.staged ? undefined : (out as HostTensor | null) ?? undefined);
  return pl.staged ? resultToDevice(op, res, out, pl.device) : res;
}

function bigintOption(op: string, name: string, v: unknown): bigint {
  if (v === undefined) return 0n;
  if (typeof v !== "bigint") throw new TkError(op, name, "VALUE", `expected a bigint, got ${describe(v)}`);
  return v;
}

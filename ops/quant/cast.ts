/**
 * The generic `cast` (spec/API.md §3.1; numerics and legal arguments: spec/quant.md §7.1, §4, §4.4, §11.1): plain
 * element conversion among fp32 / bf16 / fp16 / e4m3 (round to nearest), and the 2-D block-scaled cast to e4m3 /
 * e2m1x2 of upstream's reference `tile_kernels/torch/cast.py:cast` (any block shape, partial edge blocks, an
 * optional precomputed `sf`, an optional quantized input). Checks, then dispatch to the CPU references
 * (`cast.ref.ts`, `per_block_cast.ref.ts`). The element conversion (RN and stochastic) runs on CUDA devices
 * (`kernels-src/cuda/quant/cast.cu`); the block-scaled form has no CUDA kernel yet, so a call of it that would run
 * on a device is refused.
 * @module
 */
import { type OpOptions, place, placeWithoutKernel } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
import type { DType } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged } from "../../core/stage.ts";
import type { HostTensor, Quantized, Tensor } from "../../core/tensor.ts";
import { type CastDtype, castRef } from "./cast.ref.ts";
import { checkBlockSize, checkOutData, checkOutSf, checkPrecomputedSf } from "./per_block_cast.ts";
import { type BlockCastArgs, perBlockCastRef, perBlockCastWithPrecomputedSfRef } from "./per_block_cast.ref.ts";
import { checkSfOptions, type SfOptions } from "./sf_options.ts";
import type { QuantizedInput } from "./per_token_cast.ref.ts";
import { amaxClampFor } from "./scale.ref.ts";
import { castStochastically } from "./stochastic_cast.ts";
import { contiguousOut, launchElementCast, streamFor } from "./elem_launch.ts";
import { type SfInput, sfGeometry, sfInput } from "./sf_layout.ts";

/** Options of {@link cast}. */
export interface CastOptions extends OpOptions, SfOptions {
  /**
   * Target dtype. `fp32`, `bf16`, `fp16`, `e4m3`: element conversion (round to nearest). `e2m1x2`, or `e4m3` with
   * any block option (`blockSize`, `sf`, `xBlockSize`, an `SfOptions` flag) or a quantized input: block-scaled.
   */
  dtype: DType;
  /** Block of one scale `[rows, cols]` (positive integers) of the block-scaled form. Default `[32, 32]`. */
  blockSize?: readonly [number, number];
  /** Precomputed scales: fp32, row-major `[⌈T/r⌉, ⌈H/c⌉]`; then only the data is returned. */
  sf?: Tensor;
  /** Block size `[rows, cols]` of a quantized input's scales (required iff `x` is `[data, sf]`). */
  xBlockSize?: readonly [number, number];
  /**
   * Stochastic rounding of the element conversion (spec/quant.md §7.1–§7.4): fp32 → bf16 / fp16 / e4m3, bf16 or
   * fp16 → e4m3, `numel % 4 == 0`; exactly `stochasticCast` with `offset` 0.
   */
  stochasticRounding?: boolean;
  /** Seed of stochastic rounding (only with `stochasticRounding`; default `0n`). */
  seed?: bigint;
  /** Preallocated outputs: a tensor for element conversion and precomputed `sf`, else `{ data?, sf? }`. */
  out?: Tensor | { data?: Tensor; sf?: Tensor };
}

const KEYS = [
  "dtype",
  "blockSize",
  "sf",
  "xBlockSize",
  "stochasticRounding",
  "seed",
  "useTmaAlignedColMajorSf",
  "roundSf",
  "usePackedUe8m0",
  "useE4m3Sf",
];
const ELEMENT: readonly CastDtype[] = ["fp32", "bf16", "fp16", "e4m3"];
const PER_TOKEN_COLS = [16, 32, 64, 128];

/**
 * Casts `x` to `dtype` (spec/quant.md §7.1).
 *
 * - Element conversion (`dtype` fp32 / bf16 / fp16 / e4m3, no block option): `x` fp32 / bf16 / fp16 / e4m3,
 *   contiguous, any shape; every element widened exactly to binary32 and rounded once to nearest (e4m3 saturates
 *   at ±448). Returns the converted tensor.
 * - Block-scaled (`dtype` e2m1x2, or e4m3 with `blockSize`, `sf`, `xBlockSize` or an `SfOptions` flag): `x`
 *   fp32 / bf16 / fp16 `[T, H]` contiguous, or a quantized `[data, sf]` with `xBlockSize`; one scale per
 *   `blockSize` block (default `[32, 32]`, any shape; edge blocks may be partial), exactly as {@link perBlockCast}.
 *   Returns `[data, sf]`, or only `data` when `sf` is given (`data = encode(x · (1/sf))`).
 *
 * Host inputs run the CPU reference; device inputs run the element conversion on the device (the block-scaled form
 * has no CUDA kernel yet: device inputs need `backend: "cpu"` there).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cast, type HostTensor, type Quantized, tensor } from "../../mod.ts";
 * const x = tensor([1, 1000, -0.3], [3], "fp32");
 * const y = cast(x, { dtype: "e4m3" }) as HostTensor;
 * assert.deepEqual([...(y.data as Uint8Array)], [0x38, 0x7e, 0xaa]);
 * const [data, sf] = cast(tensor(new Float32Array(64).fill(12), [1, 64], "fp32"), { dtype: "e2m1x2", blockSize: [1, 32] }) as Quantized;
 * assert.ok(data.shape[1] === 32 && (sf as HostTensor).data[0] === 2);
 * ```
 */
export function cast(x: Tensor | Quantized, options: CastOptions): Tensor | Quantized {
  const op = "cast";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "dtype is required");
  const dtype = oneOf(op, "dtype", options.dtype, ["fp32", "bf16", "fp16", "e4m3", "e2m1x2"] as const);
  const sr = optBool(op, "stochasticRounding", options.stochasticRounding);
  if (!sr && options.seed !== undefined) throw new TkError(op, "seed", "VALUE", "only applies with stochasticRounding: true");
  const o = options;
  const blocked = dtype === "e2m1x2" || Array.isArray(x) || o.blockSize !== undefined || o.sf !== undefined || o.xBlockSize !== undefined ||
    o.useTmaAlignedColMajorSf !== undefined || o.roundSf !== undefined || o.usePackedUe8m0 !== undefined || o.useE4m3Sf !== undefined;
  if (sr) {
    if (blocked) throw new TkError(op, "stochasticRounding", "VALUE", "applies to the element conversion only (targets bf16, fp16, e4m3; no block options, no quantized input)");
    return castStochastically(op, x as Tensor, dtype, { seed: o.seed, out: o.out as Tensor | undefined, backend: o.backend, stream: o.stream });
  }
  if (!blocked) return castElements(op, x as Tensor, dtype as CastDtype, o);
  if (dtype !== "e4m3" && dtype !== "e2m1x2") {
    throw new TkError(op, "dtype", "VALUE", `the block-scaled cast (blockSize, sf, xBlockSize, SfOptions, a quantized input) targets e4m3 or e2m1x2 (got ${JSON.stringify(dtype)})`);
  }
  return castBlocked(op, x, dtype, o);
}

function castElements(op: string, x: Tensor, dtype: CastDtype, o: CastOptions): Tensor {
  const t = checkTensor(op, "x", x, ELEMENT);
  if (!t.isContiguous()) throw new TkError(op, "x", "LAYOUT", `must be contiguous, got strides [${t.strides.join(", ")}]`);
  let out: Tensor | null = null;
  if (o.out !== undefined) {
    out = checkOutTensor(op, "out", o.out, dtype);
    if (out.shape.length !== t.shape.length || out.shape.some((d, i) => d !== t.shape[i])) {
      throw new TkError(op, "out", "OUT_MISMATCH", `expected shape [${t.shape.join(", ")}], got [${out.shape.join(", ")}]`);
    }
    if (!out.isContiguous()) throw new TkError(op, "out", "OUT_MISMATCH", "must be contiguous");
    if (overlaps(out, t)) throw new TkError(op, "out", "OUT_MISMATCH", "overlaps an input");
  }
  const pl = place(op, o.backend, t, out);
  if (pl.backend === "cuda" && !pl.staged) {
    const s = streamFor(op, pl.device, o.stream);
    const y = contiguousOut(op, pl.device, s, t.shape, dtype, out);
    launchElementCast(op, pl.device, s, t, y, false, 0);
    return y;
  }
  if (pl.backend === "cuda") {
    const local = { dtype, backend: "auto", stream: undefined } as const;
    return runOnDeviceStaged(op, pl.device, [t], [out], ([dx]) => [castElements(op, dx!, dtype, local)])[0];
  }
  const res = castRef(onHost(t) as HostTensor, dtype, pl.staged ? undefined : (out as HostTensor | null) ?? undefined);
  return pl.staged ? resultToDevice(op, res, out, pl.device) : res;
}

function castBlocked(op: string, x: Tensor | Quantized, dtype: "e4m3" | "e2m1x2", o: CastOptions): Tensor | Quantized {
  const fmt = dtype === "e4m3" ? "e4m3" : "e2m1";
  const [r, c] = o.blockSize === undefined ? [32, 32] : checkBlockSize(op, "blockSize", o.blockSize, (r, c) => r > 0 && c > 0, "positive integers");
  const { colMajor, roundSf, packed, e4m3Sf } = checkSfOptions(op, o);
  if (packed && c === 1) throw new TkError(op, "usePackedUe8m0", "UNSUPPORTED", "token-packed UE8M0 scales (blocks [r, 1]) are not available in cast yet");
  let T: number, H: number;
  let xt: Tensor;
  let q: { sf: Tensor; sfIn: SfInput; blockRows: number; blockCols: number } | null = null;
  if (Array.isArray(x)) {
    if (x.length !== 2) throw new TkError(op, "x", "VALUE", `a quantized input is [data, sf], got ${x.length} entries`);
    xt = checkTensor(op, "x[0]", x[0], ["e4m3", "e2m1x2"], 2);
    if (!xt.isContiguous()) throw new TkError(op, "x[0]", "LAYOUT", `must be contiguous, got strides [${xt.strides.join(", ")}]`);
    T = xt.shape[0];
    H = xt.shape[1] * (xt.dtype === "e2m1x2" ? 2 : 1);
    const [ri, ci] = checkBlockSize(
      op,
      "xBlockSize",
      o.xBlockSize,
      (ri, ci) => (ri === 1 && PER_TOKEN_COLS.includes(ci)) || ((ri === 32 || ri === 128) && (ci === 32 || ci === 128)),
      "[1, 16|32|64|128] or [32|128, 32|128]",
    );
    const sf = checkTensor(op, "x[1]", x[1], ["fp32", "e4m3", "int32"], 2);
    q = { sf, sfIn: sfInput(op, "x[1]", sf, Math.ceil(T / ri), Math.ceil(H / ci)), blockRows: ri, blockCols: ci };
    if (o.sf !== undefined) throw new TkError(op, "sf", "VALUE", "a precomputed sf takes a plain input, not a quantized pair");
  } else {
    xt = checkTensor(op, "x", x, ["fp32", "bf16", "fp16"], 2);
    if (!xt.isContiguous()) throw new TkError(op, "x", "LAYOUT", `must be contiguous, got strides [${xt.strides.join(", ")}]`);
    [T, H] = xt.shape;
    if (o.xBlockSize !== undefined) throw new TkError(op, "xBlockSize", "VALUE", `is only for a quantized [data, sf] input (got ${describe(o.xBlockSize)})`);
  }
  if (fmt === "e2m1" && H % 2 !== 0) throw new TkError(op, "x", "SHAPE", `e2m1x2 packs two columns per byte, so the hidden size must be even (got ${H})`);
  const nbm = Math.ceil(T / r);
  const nbk = Math.ceil(H / c);
  if (o.sf !== undefined) {
    if (colMajor) throw new TkError(op, "useTmaAlignedColMajorSf", "VALUE", "a precomputed sf must be row-major");
    if (packed) throw new TkError(op, "usePackedUe8m0", "VALUE", "a precomputed sf must be fp32, not packed");
    if (e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "a precomputed sf must be fp32");
    const s = checkPrecomputedSf(op, o.sf, nbm, nbk);
    const out = o.out !== undefined ? checkOutData(op, "out", o.out, fmt, T, H, [xt, s]) : null;
    const pl = placeWithoutKernel(op, o.backend, xt, s, out);
    const hs = onHost(s) as HostTensor;
    const res = perBlockCastWithPrecomputedSfRef(onHost(xt) as HostTensor, hs, { kind: "fp32", s0: hs.strides[0], s1: hs.strides[1] }, fmt, H, r, c, pl.staged ? undefined : (out as HostTensor | null) ?? undefined);
    return pl.staged ? resultToDevice(op, res, out, pl.device) : res;
  }
  const a: BlockCastArgs = {
    tokens: T,
    hidden: H,
    blockRows: r,
    blockCols: c,
    rule: { fmt, roundSf, packedUe8m0: packed, e4m3Sf, clamp: amaxClampFor(fmt, e4m3Sf) },
    layout: { kind: packed ? "packed" : e4m3Sf ? "e4m3" : "fp32", colMajor },
  };
  const g = sfGeometry(nbm, nbk, a.layout);
  const out = o.out;
  if (out !== undefined && (typeof out !== "object" || out === null || "dtype" in out)) throw new TkError(op, "out", "VALUE", "expected { data?, sf? }");
  const inputs = q ? [xt, q.sf] : [xt];
  const od = out as { data?: Tensor; sf?: Tensor } | undefined;
  const outData = od?.data !== undefined ? checkOutData(op, "out.data", od.data, fmt, T, H, inputs) : null;
  const outSf = od?.sf !== undefined ? checkOutSf(op, "out.sf", od.sf, g, inputs) : null;
  if (outData && outSf && overlaps(outData, outSf)) throw new TkError(op, "out.sf", "OUT_MISMATCH", "overlaps out.data");
  const pl = placeWithoutKernel(op, o.backend, xt, q?.sf, outData, outSf);
  const hx = onHost(xt) as HostTensor;
  const input: HostTensor | QuantizedInput = q ? { data: hx, sf: onHost(q.sf) as HostTensor, sfIn: q.sfIn, blockRows: q.blockRows, blockCols: q.blockCols } : hx;
  const hostOut = pl.staged ? undefined : { data: (outData as HostTensor | null) ?? undefined, sf: (outSf as HostTensor | null) ?? undefined };
  const res = perBlockCastRef(input, a, true, hostOut);
  if (!pl.staged) return [res.data!, res.sf];
  return [resultToDevice(op, res.data!, outData, pl.device), resultToDevice(op, res.sf, outSf, pl.device)];
}

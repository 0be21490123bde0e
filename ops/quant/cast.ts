/**
 * The generic `cast` (spec/API.md §3.1; numerics and legal arguments: spec/quant.md §7.1, §4, §4.4, §11.1): plain
 * element conversion among fp32 / bf16 / fp16 / e4m3 (round to nearest), and the 2-D block-scaled cast to e4m3 /
 * e2m1x2 of upstream's reference `tile_kernels/torch/cast.py:cast` (any block shape, partial edge blocks, an
 * optional precomputed `sf`, an optional quantized input). Checks, then dispatch to the CPU references
 * (`cast.ref.ts`, `per_block_cast.ref.ts`) or the CUDA kernels: the element conversion (RN and stochastic) in
 * `kernels-src/cuda/quant/cast.cu`; the block-scaled form in the per-token, per-block and per-channel kernels where
 * its block shape is theirs, else in `kernels-src/cuda/quant/cast_block.cu` (the routing table is in
 * docs/DECISIONS.md).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
import { type DType, elementBytes } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged } from "../../core/stage.ts";
import { type Device, DeviceTensor, type HostTensor, type Quantized, type Stream, type Tensor } from "../../core/tensor.ts";
import { type CastDtype, castRef } from "./cast.ref.ts";
import { launchCastBlock, launchCastBlockPrecomputed, type QuantizedSf } from "./cast_block_launch.ts";
import {
  blockStream,
  checkBlockSize,
  checkOutData,
  checkOutSf,
  checkPrecomputedSf,
  deviceCodes,
  deviceSf,
  perBlockCast,
  perBlockCastWithPrecomputedSf,
} from "./per_block_cast.ts";
import { type BlockCastArgs, perBlockCastRef, perBlockCastWithPrecomputedSfRef } from "./per_block_cast.ref.ts";
import { perChannelCast } from "./per_channel_cast.ts";
import { perTokenCast, perTokenCastWithPrecomputedSf } from "./per_token_cast.ts";
import { checkSfOptions, type SfOptions } from "./sf_options.ts";
import type { QuantizedInput } from "./per_token_cast.ref.ts";
import { amaxClampFor } from "./scale.ref.ts";
import { castStochastically } from "./stochastic_cast.ts";
import { contiguousOut, launchElementCast, streamFor } from "./elem_launch.ts";
import { type SfGeometry, type SfInput, sfGeometry, sfInput } from "./sf_layout.ts";

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
 * Host inputs run the CPU reference unless `backend: "cuda"` (then they are staged through the device); device
 * inputs run on their device, enqueued on `options.stream` (else the default stream), every form byte-identical to
 * the CPU reference.
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
    const pl = place(op, o.backend, xt, s, out);
    if (pl.backend === "cuda" && !pl.staged) return precomputedOnDevice(op, pl.device, blockStream(op, pl.device, o.stream), xt, s, fmt, r, c, out);
    if (pl.backend === "cuda") {
      const local: CastOptions = { dtype, blockSize: [r, c], sf: undefined };
      return runOnDeviceStaged(op, pl.device, [xt, s], [out], ([dx, ds]) => [castBlocked(op, dx!, dtype, { ...local, sf: ds! }) as Tensor])[0];
    }
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
  if (outSf instanceof DeviceTensor && outSf.addr - outSf.storage.base + g.storage * elementBytes(g.dtype) > outSf.byteSize) {
    throw new TkError(op, "out.sf", "OUT_MISMATCH", "its storage is too small for the padded layout");
  }
  const pl = place(op, o.backend, xt, q?.sf, outData, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = blockStream(op, pl.device, o.stream);
    return blockedOnDevice(op, pl.device, stream, xt, q, a, g, { colMajor, roundSf, packed, e4m3Sf }, outData, outSf);
  }
  if (pl.backend === "cuda") {
    const local: CastOptions = {
      dtype,
      blockSize: [r, c],
      xBlockSize: q ? [q.blockRows, q.blockCols] : undefined,
      useTmaAlignedColMajorSf: colMajor,
      roundSf,
      usePackedUe8m0: packed,
      useE4m3Sf: e4m3Sf,
    };
    const [d, sf] = runOnDeviceStaged(op, pl.device, [xt, q?.sf ?? null], [outData, outSf], ([dx, dsf]) => castBlocked(op, dsf ? [dx!, dsf] : dx!, dtype, local) as Quantized);
    return [d, sf];
  }
  const hx = onHost(xt) as HostTensor;
  const input: HostTensor | QuantizedInput = q ? { data: hx, sf: onHost(q.sf) as HostTensor, sfIn: q.sfIn, blockRows: q.blockRows, blockCols: q.blockCols } : hx;
  const hostOut = pl.staged ? undefined : { data: (outData as HostTensor | null) ?? undefined, sf: (outSf as HostTensor | null) ?? undefined };
  const res = perBlockCastRef(input, a, true, hostOut);
  if (!pl.staged) return [res.data!, res.sf];
  return [resultToDevice(op, res.data!, outData, pl.device), resultToDevice(op, res.sf, outSf, pl.device)];
}

// ---- CUDA routing (docs/DECISIONS.md, "cast's block-scaled form on the device") --------------------------------
// The block partition, not the block shape, defines the result: blocks [r, c] of a [T, H] input are the blocks
// [min(r, T), min(c, H)]. The effective shape picks the kernel: the per-token, per-block and per-channel kernels
// compute exactly the spec's block cast for the shapes they take (their CPU references are this one), and
// cast_block.cu everything else.

const BLOCK_SIDES = [32, 128];

/** The block side a dimension of `n` actually sees (`n = 0`: the side as given). */
function effective(side: number, n: number): number {
  return n > 0 ? Math.min(side, n) : side;
}

function isValueInput(x: Tensor): boolean {
  return x.dtype === "fp32" || x.dtype === "bf16";
}

/** `cast` with a precomputed sf, on the device. */
function precomputedOnDevice(op: string, device: Device, stream: Stream, x: Tensor, s: Tensor, fmt: "e4m3" | "e2m1", r: number, c: number, out: Tensor | null): Tensor {
  const [T, H] = x.shape;
  const re = effective(r, T), ce = effective(c, H);
  const base = { fmt, backend: "cuda", stream, ...(out ? { out } : {}) } as const;
  if (isValueInput(x) && re === 1 && H > 0 && H % 64 === 0 && (PER_TOKEN_COLS.includes(ce) || ce === H)) {
    return perTokenCastWithPrecomputedSf(x, s, { ...base, numPerChannels: ce });
  }
  if (isValueInput(x) && BLOCK_SIDES.includes(re) && BLOCK_SIDES.includes(ce) && T % 128 === 0 && H % 128 === 0) {
    return perBlockCastWithPrecomputedSf(x, s, { ...base, blockSize: [re, ce] });
  }
  const data = (out as DeviceTensor | null) ?? deviceCodes(op, device, stream, fmt, T, H);
  launchCastBlockPrecomputed(op, device, stream, x, s, fmt, r, c, data);
  return data;
}

/** The block-scaled `cast` (sf computed), on the device. */
function blockedOnDevice(
  op: string,
  device: Device,
  stream: Stream,
  x: Tensor,
  q: QuantizedSf | null,
  a: BlockCastArgs,
  g: SfGeometry,
  f: { colMajor: boolean; roundSf: boolean; packed: boolean; e4m3Sf: boolean },
  outData: Tensor | null,
  outSf: Tensor | null,
): Quantized {
  const { tokens: T, hidden: H } = a;
  const fmt = a.rule.fmt;
  const re = effective(a.blockRows, T), ce = effective(a.blockCols, H);
  const out = { ...(outData ? { data: outData } : {}), ...(outSf ? { sf: outSf } : {}) };
  const common = { backend: "cuda", stream, out } as const;
  const xq: Tensor | Quantized = q ? [x, q.sf] : x;
  if (re === 1 && H > 0 && H % 64 === 0 && (PER_TOKEN_COLS.includes(ce) || (ce === H && !q)) && (q !== null || isValueInput(x))) {
    const xBlockSize = q ? { xBlockSize: [q.blockRows, q.blockCols] as const } : {};
    const flags = { useTmaAlignedColMajorSf: f.colMajor, roundSf: f.roundSf, usePackedUe8m0: f.packed, useE4m3Sf: f.e4m3Sf };
    return perTokenCast(xq, { fmt, numPerChannels: ce, ...xBlockSize, ...flags, ...common });
  }
  const whole = T % 128 === 0 && H % 128 === 0;
  if (!q && isValueInput(x) && !f.e4m3Sf && BLOCK_SIDES.includes(re) && BLOCK_SIDES.includes(ce) && whole) {
    return perBlockCast(x, { fmt, blockSize: [re, ce], useTmaAlignedColMajorSf: f.colMajor, roundSf: f.roundSf, usePackedUe8m0: f.packed, ...common });
  }
  const perChannelInput = q ? x.dtype === "e4m3" && q.blockRows === 1 && BLOCK_SIDES.includes(q.blockCols) : isValueInput(x);
  if (ce === 1 && fmt === "e4m3" && BLOCK_SIDES.includes(re) && whole && !f.colMajor && !f.e4m3Sf && !f.packed && perChannelInput) {
    return perChannelCast(xq, { fmt, numPerTokens: re, roundSf: f.roundSf, ...(q ? { numPerChannels: q.blockCols } : {}), ...common });
  }
  const data = (outData as DeviceTensor | null) ?? deviceCodes(op, device, stream, fmt, T, H);
  const sf = (outSf as DeviceTensor | null) ?? deviceSf(op, device, stream, g);
  launchCastBlock(op, device, stream, x, q, a, g, data, sf);
  return [data, sf];
}

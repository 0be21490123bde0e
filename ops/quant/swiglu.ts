/**
 * SwiGLU forward ops: `swigluForward`, `swigluForwardAndPerTokenCast` (spec/API.md §3.1; numerics and legal
 * arguments: spec/quant.md §8.1–§8.4, §11.1, §11.2). Checks, then the CPU reference (`swiglu.ref.ts`) or the CUDA
 * kernels (`kernels-src/cuda/swiglu/swiglu.cu`, launched by `swiglu_launch.ts`).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkContiguous, checkInt, checkOptions, checkOutTensor, checkTensor, describe, oneOf, overlaps } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost, runOnDeviceStaged, writeBackSpan } from "../../core/stage.ts";
import { deviceEmptyStrided, DeviceTensor, hostZeros, type HostTensor, isTensor, type Quantized, type Tensor } from "../../core/tensor.ts";
import type { DType } from "../../core/dtype.ts";
import { amaxClampFor } from "./scale.ref.ts";
import { type SfGeometry, type SfLayout, sfGeometry } from "./sf_layout.ts";
import { checkSfOptions, type SfOptions } from "./sf_options.ts";
import { type SwigluArgs, swigluForwardAndPerTokenCastRef, swigluForwardRef } from "./swiglu.ref.ts";
import { callStream, launchSwiglu, type SwigluLaunchCommon } from "./swiglu_launch.ts";

/** Expert layout, row weights and clamp shared by the SwiGLU ops (spec/quant.md §8.1, §8.2, §8.4). */
export interface SwigluCommonOptions extends OpOptions {
  /** int32 `[E]`, `E ≥ 1`: inclusive prefix sums of tokens per expert (§8.1). Default: every row is real. */
  psumNumTokensPerExpert?: Tensor;
  /** Row alignment `A` of each expert's start (positive integer). Default `config.tokenAlignment` (128). */
  tokenAlignment?: number;
  /** fp32 `[T]` contiguous: one weight per row. */
  topkWeights?: Tensor;
  /** Multiplies each row weight (binary32); requires `topkWeights`. */
  routedScalingFactor?: number;
  /** Clamp `c`: gate ≤ c, |up| ≤ c (binary32 of the number). */
  clampValue?: number;
  /** int64 `[4]`, updated in place (added to): `[g > c, u > c, u < −c, H × real rows]`; requires `clampValue`. */
  clampedCount?: Tensor;
}

/** Options of {@link swigluForward}. */
export interface SwigluForwardOptions extends SwigluCommonOptions {
  /** Output dtype. */
  fmt: "fp32" | "bf16";
  /** Preallocated `[T, H]` output of dtype `fmt`; its padding rows are left as they are. */
  out?: Tensor;
}

/** Options of {@link swigluForwardAndPerTokenCast}. */
export interface SwigluForwardAndPerTokenCastOptions extends SwigluCommonOptions, Omit<SfOptions, "useE4m3Sf"> {
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Channels per scale: 32 or 128 (`H % numPerChannels == 0`). */
  numPerChannels: 32 | 128;
  /**
   * Preallocated outputs (spec/API.md §1.5; omitted keys are allocated): `data` e4m3 `[T, H]` contiguous; `sf` of the
   * options' layout, row-major contiguous (not with `useTmaAlignedColMajorSf`). Neither may overlap an input or the
   * other. Padding rows of a given `data` / `sf` are left as they are on the device.
   */
  out?: { data?: Tensor; sf?: Tensor };
}

const COMMON_KEYS = ["fmt", "psumNumTokensPerExpert", "tokenAlignment", "topkWeights", "routedScalingFactor", "clampValue", "clampedCount"];
const FWD_KEYS = [...COMMON_KEYS];
const CAST_KEYS = [...COMMON_KEYS, "numPerChannels", "useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0", "useE4m3Sf"];

/** The checked tensors and values of the common options, plus x's [T, H]. */
interface Checked {
  readonly x: Tensor;
  readonly T: number;
  readonly H: number;
  readonly psum: Tensor | null;
  readonly weights: Tensor | null;
  readonly counts: Tensor | null;
  readonly A: number;
  readonly scale: number | null;
  readonly clamp: number | null;
}

/** An optional finite number option. */
export function optNumber(op: string, name: string, v: unknown): number | null {
  if (v === undefined) return null;
  if (typeof v !== "number" || !Number.isFinite(v)) throw new TkError(op, name, "VALUE", `must be a finite number (got ${describe(v)})`);
  return v;
}

/** The expert-layout, weight and clamp options of every SwiGLU op, checked against T rows (§11.1). */
export interface ExpertOptions {
  readonly psum: Tensor | null;
  readonly weights: Tensor | null;
  readonly A: number;
  readonly scale: number | null;
  readonly clamp: number | null;
}

/** §11.1 rules on psum / tokenAlignment / topkWeights / routedScalingFactor / clampValue, shared by all SwiGLU ops. */
export function checkExpertOptions(op: string, T: number, o: SwigluCommonOptions): ExpertOptions {
  let psum: Tensor | null = null;
  if (o.psumNumTokensPerExpert !== undefined) {
    psum = checkTensor(op, "psumNumTokensPerExpert", o.psumNumTokensPerExpert, ["int32"], 1);
    checkContiguous(op, "psumNumTokensPerExpert", psum);
    if (psum.shape[0] < 1) throw new TkError(op, "psumNumTokensPerExpert", "SHAPE", "needs at least one expert (got 0)");
  }
  const A = o.tokenAlignment === undefined ? config.tokenAlignment : checkInt(op, "tokenAlignment", o.tokenAlignment, 1);
  let weights: Tensor | null = null;
  if (o.topkWeights !== undefined) {
    weights = checkTensor(op, "topkWeights", o.topkWeights, ["fp32"], 1);
    checkContiguous(op, "topkWeights", weights);
    if (weights.shape[0] !== T) throw new TkError(op, "topkWeights", "SHAPE", `expected shape [${T}], got [${weights.shape.join(", ")}]`);
  }
  const scale = optNumber(op, "routedScalingFactor", o.routedScalingFactor);
  if (scale !== null && weights === null) throw new TkError(op, "routedScalingFactor", "VALUE", "requires topkWeights");
  const clamp = optNumber(op, "clampValue", o.clampValue);
  return { psum, weights, A, scale, clamp };
}

/** §11.1 rules shared by both forward ops. */
function checkCommon(op: string, x: unknown, o: SwigluCommonOptions): Checked {
  const xt = checkTensor(op, "x", x, ["fp32", "bf16"], 2);
  checkContiguous(op, "x", xt);
  const [T, H2] = xt.shape;
  if (H2 % 128 !== 0) throw new TkError(op, "x", "SHAPE", `last dimension must be 2H with H % 64 == 0 (got ${H2})`);
  const H = H2 / 2;
  const { psum, weights, A, scale, clamp } = checkExpertOptions(op, T, o);
  let counts: Tensor | null = null;
  if (o.clampedCount !== undefined) {
    if (clamp === null) throw new TkError(op, "clampedCount", "VALUE", "requires clampValue");
    counts = checkTensor(op, "clampedCount", o.clampedCount, ["int64"], 1);
    if (counts.shape[0] !== 4) throw new TkError(op, "clampedCount", "SHAPE", `expected shape [4], got [${counts.shape.join(", ")}]`);
    for (const t of [xt, psum, weights]) if (t && overlaps(counts, t)) throw new TkError(op, "clampedCount", "OUT_MISMATCH", "overlaps an input");
  }
  return { x: xt, T, H, psum, weights, counts, A, scale, clamp };
}

function refArgs(c: Checked): SwigluArgs {
  return {
    tokens: c.T,
    hidden: c.H,
    psum: onHost(c.psum),
    tokenAlignment: c.A,
    topkWeights: onHost(c.weights),
    routedScalingFactor: c.scale,
    clampValue: c.clamp,
  };
}

/** The launch fields of the checked common options (device tensors). */
function launchFields(c: Checked): SwigluLaunchCommon & { counts: Tensor | null } {
  return { tokens: c.T, hidden: c.H, x: c.x, weights: c.weights, psum: c.psum, tokenAlignment: c.A, scale: c.scale, clamp: c.clamp, counts: c.counts };
}

/** Adds the counter increments to `clampedCount` in place (host, or a device tensor staged through the host). */
function addCounts(op: string, t: Tensor | null, inc: readonly number[]): void {
  if (t === null) return;
  const h = onHost(t) as HostTensor;
  const d = h.data as BigInt64Array;
  for (let i = 0; i < 4; i++) d[h.offset + i * h.strides[0]] += BigInt(inc[i]);
  if (t instanceof DeviceTensor) writeBackSpan(op, t, h);
}

/**
 * SwiGLU forward (spec/quant.md §8.3–§8.4): `x` fp32/bf16 `[T, 2H]` contiguous (gate left, up right, `H % 64 == 0`),
 * `out[t][j] = ((g / (1 + expf(−g))) · u) · w` in `fmt`, with the optional clamp, row weights and expert layout.
 * Padding rows of the expert layout are not written: a fresh output holds +0 there, a given `out` keeps its
 * contents. `clampedCount` is added to in place. A `psumNumTokensPerExpert` that breaks §11.2 throws
 * `DEVICE_VALUE` (on a device: at the next sync). Device inputs run the CUDA kernel on `stream`; a device `out`
 * needs unit column stride.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { swigluForward, tensor } from "../../mod.ts";
 * const x = tensor([...new Array(64).fill(0), ...new Array(64).fill(3)], [1, 128], "fp32"); // g = 0, u = 3
 * const out = swigluForward(x, { fmt: "fp32" }) as { data: Float32Array };
 * assert.equal(out.data[0], 0); // silu(0) · 3
 * ```
 */
export function swigluForward(x: Tensor, options: SwigluForwardOptions): Tensor {
  const op = "swigluForward";
  checkOptions(op, options, FWD_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt is required");
  const fmt = oneOf(op, "fmt", options.fmt, ["fp32", "bf16"] as const);
  const c = checkCommon(op, x, options);
  let out: Tensor | null = null;
  if (options.out !== undefined) {
    out = checkOutTensor(op, "out", options.out, fmt);
    if (out.shape.length !== 2 || out.shape[0] !== c.T || out.shape[1] !== c.H) {
      throw new TkError(op, "out", "OUT_MISMATCH", `expected shape [${c.T}, ${c.H}], got [${out.shape.join(", ")}]`);
    }
    for (const t of [c.x, c.psum, c.weights, c.counts]) if (t && overlaps(out, t)) throw new TkError(op, "out", "OUT_MISMATCH", "overlaps an input");
  }
  const pl = place(op, options.backend, c.x, c.psum, c.weights, c.counts);
  if (out) place(op, options.backend, c.x, out);
  if (pl.backend === "cuda" && !pl.staged) {
    if (out && c.T > 1 && c.H > 1 && out.strides[1] !== 1) throw new TkError(op, "out", "LAYOUT", "a device out needs unit column stride");
    const s = callStream(op, pl.device, options.stream);
    const o = out ?? deviceEmptyStrided(op, pl.device, [c.T, c.H], [c.H, 1], fmt, c.T * c.H, s);
    launchSwiglu(pl.device, s, { ...launchFields(c), op, symbol: `tk_swiglu_forward__${c.x.dtype}_${fmt}`, out: o });
    return o;
  }
  if (pl.backend === "cuda") {
    // Host tensors on a forced device backend: staged; the counters come back into the host clampedCount.
    const local = { ...options, out: undefined, backend: "auto", stream: undefined, psumNumTokensPerExpert: undefined, topkWeights: undefined, clampedCount: undefined } as const;
    const [o] = runOnDeviceStaged(op, pl.device, [c.x, out, c.psum, c.weights, c.counts], [out, c.counts], ([dx, dout, dp, dw, dc]) => {
      const r = swigluForward(dx!, { ...local, out: dout ?? undefined, psumNumTokensPerExpert: dp ?? undefined, topkWeights: dw ?? undefined, clampedCount: dc ?? undefined });
      return dc ? [r, dc] : [r];
    });
    return o;
  }
  // Padding rows keep the given out's contents: start from (a host copy of) it.
  const res = out ? (onHost(out) as HostTensor) : hostZeros([c.T, c.H], fmt);
  const inc = swigluForwardRef(op, onHost(c.x) as HostTensor, refArgs(c), res);
  addCounts(op, c.counts, inc);
  if (out && !pl.staged) {
    if (out instanceof DeviceTensor) writeBackSpan(op, out, res);
    return out;
  }
  return deliverHostResult(op, res, out, pl);
}

/**
 * SwiGLU forward fused with a per-token e4m3 cast (spec/quant.md §8.4): the binary32 value of
 * {@link swigluForward}, cast per row in groups of `numPerChannels` (32 or 128, `H % numPerChannels == 0`) exactly
 * as `perTokenCast` would (e4m3 clamp table, sf layout from the options; `useE4m3Sf` is not available). Returns
 * `[data e4m3 [T, H], sf]`. Entries of padding rows are unspecified (§8.4; here the cast of a row of +0; the device
 * leaves them unwritten). `out: { data?, sf? }` receives the outputs (spec/API.md §1.5).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { swigluForwardAndPerTokenCast, tensor } from "../../mod.ts";
 * const x = tensor([...new Array(64).fill(0), ...new Array(64).fill(3)], [1, 128], "fp32");
 * const [data] = swigluForwardAndPerTokenCast(x, { fmt: "e4m3", numPerChannels: 32 }) as [{ data: Uint8Array }, unknown];
 * assert.equal(data.data[0], 0x00);
 * ```
 */
export function swigluForwardAndPerTokenCast(x: Tensor, options: SwigluForwardAndPerTokenCastOptions): Quantized {
  const op = "swigluForwardAndPerTokenCast";
  checkOptions(op, options, CAST_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerChannels are required");
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  const sfo = checkSfOptions(op, options);
  if (sfo.e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "is not available for the SwiGLU casts");
  const c = checkCommon(op, x, options);
  const N = oneOf(op, "numPerChannels", options.numPerChannels, [32, 128] as const);
  if (c.H % N !== 0) throw new TkError(op, "x", "SHAPE", `H = ${c.H} must be a multiple of numPerChannels ${N}`);
  const pl = place(op, options.backend, c.x, c.psum, c.weights, c.counts);
  const layout: SfLayout = { kind: sfo.packed ? "packed" : "fp32", colMajor: sfo.colMajor };
  const g = sfGeometry(c.T, c.H / N, layout);
  const { data: outData, sf: outSf } = castOuts(op, options.out, c, g, sfo.colMajor);
  place(op, options.backend, c.x, outData, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    const s = callStream(op, pl.device, options.stream);
    const data = outData ?? deviceEmptyStrided(op, pl.device, [c.T, c.H], [c.H, 1], "e4m3", c.T * c.H, s);
    const sf = outSf ?? deviceEmptyStrided(op, pl.device, g.shape, g.strides, g.dtype, g.storage, s);
    const sfFlags = { roundSf: sfo.roundSf, packed: sfo.packed };
    launchSwiglu(pl.device, s, { ...launchFields(c), op, symbol: `tk_swiglu_forward__${c.x.dtype}_e4m3_g${N}`, data, sf, sfGeometry: g, sfFlags });
    return [data, sf];
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined, psumNumTokensPerExpert: undefined, topkWeights: undefined, clampedCount: undefined } as const;
    const [d, sf] = runOnDeviceStaged(op, pl.device, [c.x, c.psum, c.weights, c.counts], [outData, outSf, c.counts], ([dx, dp, dw, dc]) => {
      const r = swigluForwardAndPerTokenCast(dx!, { ...local, psumNumTokensPerExpert: dp ?? undefined, topkWeights: dw ?? undefined, clampedCount: dc ?? undefined });
      return dc ? [r[0], r[1], dc] : [r[0], r[1]];
    });
    return [d, sf];
  }
  const cast = {
    tokens: c.T,
    hidden: c.H,
    numPerChannels: N,
    rule: { fmt: "e4m3" as const, roundSf: sfo.roundSf, packedUe8m0: sfo.packed, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) },
    layout,
  };
  const res = swigluForwardAndPerTokenCastRef(op, onHost(c.x) as HostTensor, refArgs(c), cast);
  addCounts(op, c.counts, res.counts);
  return [deliverHostResult(op, res.data, outData, pl), deliverHostResult(op, res.sf, outSf, pl)];
}

/**
 * The `out` of {@link swigluForwardAndPerTokenCast} (spec/API.md §1.5): `{ data?, sf? }`, each matching the output's
 * dtype and shape exactly, contiguous (sf row-major: a given sf is not honoured with `useTmaAlignedColMajorSf`), and
 * overlapping no input and not each other (`OUT_MISMATCH`).
 */
function castOuts(op: string, out: unknown, c: Checked, g: SfGeometry, colMajor: boolean): { data: Tensor | null; sf: Tensor | null } {
  if (out === undefined) return { data: null, sf: null };
  if (typeof out !== "object" || out === null || Array.isArray(out) || isTensor(out)) throw new TkError(op, "out", "VALUE", `expected { data?, sf? }, got ${describe(out)}`);
  for (const k in out) if (k !== "data" && k !== "sf") throw new TkError(op, `out.${k}`, "VALUE", "unknown output (expected data or sf)");
  const o = out as { data?: unknown; sf?: unknown };
  const inputs = [c.x, c.psum, c.weights, c.counts];
  const one = (arg: string, t: unknown, dtype: DType, shape: readonly number[]): Tensor | null => {
    if (t === undefined) return null;
    const v = checkOutTensor(op, arg, t, dtype);
    if (v.shape.length !== shape.length || v.shape.some((d, i) => d !== shape[i])) {
      throw new TkError(op, arg, "OUT_MISMATCH", `expected shape [${shape.join(", ")}], got [${v.shape.join(", ")}]`);
    }
    if (!v.isContiguous()) throw new TkError(op, arg, "OUT_MISMATCH", `must be contiguous (row-major), got strides [${v.strides.join(", ")}]`);
    for (const i of inputs) if (i && overlaps(v, i)) throw new TkError(op, arg, "OUT_MISMATCH", "overlaps an input");
    return v;
  };
  const data = one("out.data", o.data, "e4m3", [c.T, c.H]);
  if (o.sf !== undefined && colMajor) throw new TkError(op, "out.sf", "OUT_MISMATCH", "a preallocated sf must be row-major (not with useTmaAlignedColMajorSf)");
  const sf = one("out.sf", o.sf, g.dtype, g.shape);
  if (data && sf && overlaps(data, sf)) throw new TkError(op, "out.sf", "OUT_MISMATCH", "overlaps out.data");
  return { data, sf };
}

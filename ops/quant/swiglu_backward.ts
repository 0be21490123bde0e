/**
 * SwiGLU backward ops: `swigluBackward`, `swigluBackwardAndPerTokenCast` (spec/API.md §3.1; numerics and legal
 * arguments: spec/quant.md §8.1, §8.2, §8.5, §11.1, §11.2). Checks, then the CPU reference
 * (`swiglu_backward.ref.ts`) or the CUDA kernels (`kernels-src/cuda/swiglu/swiglu.cu`, launched by
 * `swiglu_launch.ts`).
 * @module
 */
import { place } from "../../core/backend.ts";
import { checkContiguous, checkOptions, checkOutTensor, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
import type { DType } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost, runOnDeviceStaged } from "../../core/stage.ts";
import { contiguousStrides, type Device, deviceEmptyStrided, type HostTensor, type Quantized, type Stream, type Tensor } from "../../core/tensor.ts";
import { amaxClampFor } from "./scale.ref.ts";
import { type SfLayout, sfGeometry } from "./sf_layout.ts";
import { checkSfOptions, type SfOptions } from "./sf_options.ts";
import { checkExpertOptions, type SwigluCommonOptions } from "./swiglu.ts";
import { type SwigluBackwardArgs, swigluBackwardAndPerTokenCastRef, swigluBackwardRef } from "./swiglu_backward.ref.ts";
import { callStream, launchSwiglu, type SwigluLaunchCommon } from "./swiglu_launch.ts";

/** Expert layout, row weights, clamp and recompute shared by the SwiGLU backward ops (spec/quant.md §8.5). */
export interface SwigluBackwardCommonOptions extends Omit<SwigluCommonOptions, "clampedCount"> {
  /** Also return `actOut = act · w` (§8.5). Default false. */
  doRecompute?: boolean;
}

/** Options of {@link swigluBackward}. */
export interface SwigluBackwardOptions extends SwigluBackwardCommonOptions {
  /** Dtype of `xGrad` and `actOut`. */
  fmt: "fp32" | "bf16";
  /** Preallocated `xGrad` (dtype `fmt`, the shape of `x`); its padding rows are written +0. */
  out?: Tensor;
}

/** Options of {@link swigluBackwardAndPerTokenCast}. */
export interface SwigluBackwardAndPerTokenCastOptions extends SwigluBackwardCommonOptions, Omit<SfOptions, "useE4m3Sf"> {
  /** Target format of `xGradQ`: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Channels per scale of `xSf` and `xGradSf`: 32 or 128 (`H % numPerChannels == 0`). */
  numPerChannels: 32 | 128;
}

const COMMON_KEYS = ["fmt", "psumNumTokensPerExpert", "tokenAlignment", "topkWeights", "routedScalingFactor", "clampValue", "doRecompute"];
const BWD_KEYS = [...COMMON_KEYS, "out"];
const CAST_KEYS = [...COMMON_KEYS, "numPerChannels", "useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0", "useE4m3Sf"];

/** The checked inputs of a backward call. */
interface Checked {
  readonly x: Tensor;
  readonly actXGrad: Tensor;
  readonly T: number;
  readonly H: number;
  readonly psum: Tensor | null;
  readonly weights: Tensor | null;
  readonly args: Omit<SwigluBackwardArgs, "psum" | "topkWeights">;
}

/**
 * §11.1 rules shared by both backward ops: `x` contiguous `[T, 2H]` or `[B, M, 2H]` (`H % 64 == 0`), `actXGrad`
 * `[T, H]` (or `x`'s leading dims and H) of one of `gradDtypes`, and the expert-layout / weight / clamp options
 * (the rules of the forward ops, spec/quant.md §11.1).
 */
function checkCommon(op: string, x: unknown, xDtypes: readonly DType[], actXGrad: unknown, gradDtypes: readonly DType[], o: SwigluBackwardCommonOptions): Checked {
  const xt = checkTensor(op, "x", x, xDtypes);
  if (xt.shape.length !== 2 && xt.shape.length !== 3) throw new TkError(op, "x", "SHAPE", `expected a 2-D or 3-D tensor, got shape [${xt.shape.join(", ")}]`);
  checkContiguous(op, "x", xt);
  const H2 = xt.shape[xt.shape.length - 1];
  if (H2 % 128 !== 0) throw new TkError(op, "x", "SHAPE", `last dimension must be 2H with H % 64 == 0 (got ${H2})`);
  const H = H2 / 2;
  const lead = xt.shape.slice(0, -1);
  const T = lead.reduce((a, b) => a * b, 1);
  const g = checkTensor(op, "actXGrad", actXGrad, gradDtypes);
  const okShape = (g.shape.length === 2 && g.shape[0] === T && g.shape[1] === H) ||
    (g.shape.length === lead.length + 1 && lead.every((d, i) => g.shape[i] === d) && g.shape[lead.length] === H);
  if (!okShape) throw new TkError(op, "actXGrad", "SHAPE", `expected shape [${T}, ${H}], got [${g.shape.join(", ")}]`);
  const { psum, weights, A, scale, clamp } = checkExpertOptions(op, T, o);
  const doRecompute = optBool(op, "doRecompute", o.doRecompute);
  return {
    x: xt,
    actXGrad: g,
    T,
    H,
    psum,
    weights,
    args: { tokens: T, hidden: H, tokenAlignment: A, routedScalingFactor: scale, clampValue: clamp, doRecompute },
  };
}

function refArgs(c: Checked): SwigluBackwardArgs {
  return { ...c.args, psum: onHost(c.psum), topkWeights: onHost(c.weights) };
}

/** Device outputs of a backward call: the optional weight gradient and recomputed activation. */
function deviceExtras(op: string, device: Device, s: Stream, c: Checked, fmt: "fp32" | "bf16"): { wg: Tensor | null; act: Tensor | null } {
  const actShape = [...c.x.shape.slice(0, -1), c.H];
  const wg = c.weights ? deviceEmptyStrided(op, device, [c.T], [1], "fp32", c.T, s) : null;
  const act = c.args.doRecompute ? deviceEmptyStrided(op, device, actShape, contiguousStrides(actShape), fmt, c.T * c.H, s) : null;
  return { wg, act };
}

/** The launch fields shared by both backward kernels (device tensors). */
function launchFields(c: Checked): SwigluLaunchCommon & { dy: Tensor; recompute: boolean } {
  const a = c.args;
  return {
    tokens: c.T,
    hidden: c.H,
    x: c.x,
    dy: c.actXGrad,
    weights: c.weights,
    psum: c.psum,
    tokenAlignment: a.tokenAlignment,
    scale: a.routedScalingFactor,
    clamp: a.clampValue,
    recompute: a.doRecompute,
  };
}

/** A device actXGrad must be contiguous (the kernels read it by rows of H). */
function checkDeviceGrad(op: string, c: Checked): void {
  if (!c.actXGrad.isContiguous()) throw new TkError(op, "actXGrad", "LAYOUT", "must be contiguous for the CUDA kernels");
}

/**
 * SwiGLU backward (spec/quant.md §8.5): `x` fp32/bf16 `[T, 2H]` or `[B, M, 2H]` contiguous (gate left, up
 * right, `H % 64 == 0`) and `actXGrad` of the same dtype `[T, H]`. Returns `[xGrad, weightGrad | null,
 * actOut | null]`: `xGrad` in `fmt` with the shape of `x` (gate gradient left, up gradient right), `weightGrad`
 * fp32 `[T]` (only with `topkWeights`; fixed summation order of §8.5), `actOut` in `fmt` `[…, H]` (only with
 * `doRecompute`). The silu is the FMA-corrected reciprocal of §8.5, `expf` is correctly rounded. Padding rows of
 * the expert layout are written +0 in every output. A `psumNumTokensPerExpert` that breaks §11.2 throws
 * `DEVICE_VALUE` (on a device: at the next sync). Device inputs run the CUDA kernel on `stream`; there `actXGrad`
 * and a given `out` must be contiguous.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { swigluBackward, tensor } from "../../mod.ts";
 * const x = tensor([...new Array(64).fill(0), ...new Array(64).fill(3)], [1, 128], "fp32"); // g = 0, u = 3
 * const dy = tensor(new Array(64).fill(1), [1, 64], "fp32");
 * const [xGrad, weightGrad, actOut] = swigluBackward(x, dy, { fmt: "fp32" });
 * const g = (xGrad as { data: Float32Array }).data;
 * assert.equal(g[0], 1.5); // d/dg: u · s · (1 + g(1 − s)) = 3 · 0.5
 * assert.equal(g[64], 0); // d/du: s · g = 0
 * assert.equal(weightGrad, null);
 * assert.equal(actOut, null);
 * ```
 */
export function swigluBackward(x: Tensor, actXGrad: Tensor, options: SwigluBackwardOptions): [Tensor, Tensor | null, Tensor | null] {
  const op = "swigluBackward";
  checkOptions(op, options, BWD_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt is required");
  const fmt = oneOf(op, "fmt", options.fmt, ["fp32", "bf16"] as const);
  const c = checkCommon(op, x, ["fp32", "bf16"], actXGrad, ["fp32", "bf16"], options);
  if (c.actXGrad.dtype !== c.x.dtype) throw new TkError(op, "actXGrad", "DTYPE", `must have the dtype of x (${c.x.dtype}), got ${c.actXGrad.dtype}`);
  let out: Tensor | null = null;
  if (options.out !== undefined) {
    out = checkOutTensor(op, "out", options.out, fmt);
    if (out.shape.length !== c.x.shape.length || out.shape.some((d, i) => d !== c.x.shape[i])) {
      throw new TkError(op, "out", "OUT_MISMATCH", `expected shape [${c.x.shape.join(", ")}], got [${out.shape.join(", ")}]`);
    }
    for (const t of [c.x, c.actXGrad, c.psum, c.weights]) if (t && overlaps(out, t)) throw new TkError(op, "out", "OUT_MISMATCH", "overlaps an input");
  }
  const pl = place(op, options.backend, c.x, c.actXGrad, c.psum, c.weights);
  if (out) place(op, options.backend, c.x, out);
  if (pl.backend === "cuda" && !pl.staged) {
    checkDeviceGrad(op, c);
    if (out && !out.isContiguous()) throw new TkError(op, "out", "LAYOUT", "a device out must be contiguous");
    const s = callStream(op, pl.device, options.stream);
    const xGrad = out ?? deviceEmptyStrided(op, pl.device, c.x.shape, contiguousStrides(c.x.shape), fmt, 2 * c.T * c.H, s);
    const { wg, act } = deviceExtras(op, pl.device, s, c, fmt);
    launchSwiglu(pl.device, s, { ...launchFields(c), op, symbol: `tk_swiglu_backward__${c.x.dtype}_${fmt}`, out: xGrad, actOut: act, weightGrad: wg });
    return [xGrad, wg, act];
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined, psumNumTokensPerExpert: undefined, topkWeights: undefined } as const;
    const r = runOnDeviceStaged(op, pl.device, [c.x, c.actXGrad, c.psum, c.weights], [out], ([dx, dg, dp, dw]) => {
      const [a, b, d] = swigluBackward(dx!, dg!, { ...local, psumNumTokensPerExpert: dp ?? undefined, topkWeights: dw ?? undefined });
      return [a, ...(b ? [b] : []), ...(d ? [d] : [])];
    });
    let i = 1;
    const wg = c.weights ? r[i++] : null;
    return [r[0], wg, c.args.doRecompute ? r[i] : null];
  }
  const res = swigluBackwardRef(op, onHost(c.x) as HostTensor, onHost(c.actXGrad) as HostTensor, refArgs(c), fmt);
  return [
    deliverHostResult(op, res.xGrad, out, pl),
    res.weightGrad && deliverHostResult(op, res.weightGrad, null, pl),
    res.actOut && deliverHostResult(op, res.actOut, null, pl),
  ];
}

/**
 * SwiGLU backward from an e4m3 input, fused with a per-token e4m3 cast of the gradient (spec/quant.md §8.5):
 * `x = [data e4m3 [T, 2H] (or [B, M, 2H]) contiguous, xSf fp32 row-major [T, 2H/numPerChannels]]`, `actXGrad`
 * bf16/fp32 `[T, H]`. Returns `[xGrad bf16, [xGradQ e4m3, xGradSf], weightGrad | null, actOut bf16 | null]`:
 * `xGradQ`/`xGradSf` are the per-token cast of the **binary32** gradients over the 2H columns in groups of
 * `numPerChannels` (e4m3 clamp table, sf layout from the options; `useE4m3Sf` is not available). Padding rows
 * are written as zeros in every output, sf entries included.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { swigluBackwardAndPerTokenCast, tensor } from "../../mod.ts";
 * const data = tensor(new Array(128).fill(0), [1, 128], "e4m3"); // g = u = 0
 * const xSf = tensor([1, 1, 1, 1], [1, 4], "fp32");
 * const dy = tensor(new Array(64).fill(1), [1, 64], "bf16");
 * const [xGrad, [xGradQ], weightGrad, actOut] = swigluBackwardAndPerTokenCast([data, xSf], dy, { fmt: "e4m3", numPerChannels: 32 });
 * assert.equal((xGrad as { data: Uint16Array }).data[0], 0);
 * assert.equal((xGradQ as { data: Uint8Array }).data[0], 0x00);
 * assert.equal(weightGrad, null);
 * assert.equal(actOut, null);
 * ```
 */
export function swigluBackwardAndPerTokenCast(
  x: Quantized,
  actXGrad: Tensor,
  options: SwigluBackwardAndPerTokenCastOptions,
): [Tensor, Quantized, Tensor | null, Tensor | null] {
  const op = "swigluBackwardAndPerTokenCast";
  checkOptions(op, options, CAST_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerChannels are required");
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  const sfo = checkSfOptions(op, options);
  if (sfo.e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "is not available for the SwiGLU casts");
  if ((options as { out?: unknown }).out !== undefined) throw new TkError(op, "out", "VALUE", "is not supported: the op allocates its outputs");
  if (!Array.isArray(x) || x.length !== 2) throw new TkError(op, "x", "VALUE", `expected [data, xSf], got ${describe(x)}`);
  const c = checkCommon(op, x[0], ["e4m3"], actXGrad, ["bf16", "fp32"], options);
  const N = oneOf(op, "numPerChannels", options.numPerChannels, [32, 128] as const);
  if (c.H % N !== 0) throw new TkError(op, "x", "SHAPE", `H = ${c.H} must be a multiple of numPerChannels ${N}`);
  const xSf = checkTensor(op, "xSf", x[1], ["fp32"], 2);
  if (xSf.shape[0] !== c.T || xSf.shape[1] !== (2 * c.H) / N) {
    throw new TkError(op, "xSf", "SHAPE", `expected shape [${c.T}, ${(2 * c.H) / N}], got [${xSf.shape.join(", ")}]`);
  }
  checkContiguous(op, "xSf", xSf);
  const pl = place(op, options.backend, c.x, xSf, c.actXGrad, c.psum);
  place(op, options.backend, c.x, c.weights);
  const layout: SfLayout = { kind: sfo.packed ? "packed" : "fp32", colMajor: sfo.colMajor };
  const g = sfGeometry(c.T, (2 * c.H) / N, layout);
  if (pl.backend === "cuda" && !pl.staged) {
    checkDeviceGrad(op, c);
    const s = callStream(op, pl.device, options.stream);
    const strides = contiguousStrides(c.x.shape);
    const xGrad = deviceEmptyStrided(op, pl.device, c.x.shape, strides, "bf16", 2 * c.T * c.H, s);
    const xGradQ = deviceEmptyStrided(op, pl.device, c.x.shape, strides, "e4m3", 2 * c.T * c.H, s);
    const xGradSf = deviceEmptyStrided(op, pl.device, g.shape, g.strides, g.dtype, g.storage, s);
    const { wg, act } = deviceExtras(op, pl.device, s, c, "bf16");
    launchSwiglu(pl.device, s, {
      ...launchFields(c),
      op,
      symbol: `tk_swiglu_backward__e4m3_${c.actXGrad.dtype}_g${N}`,
      xSf,
      out: xGrad,
      data: xGradQ,
      sf: xGradSf,
      sfGeometry: g,
      sfFlags: { roundSf: sfo.roundSf, packed: sfo.packed },
      actOut: act,
      weightGrad: wg,
    });
    return [xGrad, [xGradQ, xGradSf], wg, act];
  }
  if (pl.backend === "cuda") {
    const local = { ...options, backend: "auto", stream: undefined, psumNumTokensPerExpert: undefined, topkWeights: undefined } as const;
    const r = runOnDeviceStaged(op, pl.device, [c.x, xSf, c.actXGrad, c.psum, c.weights], [], ([dx, ds, dg, dp, dw]) => {
      const [a, [q, qs], b, d] = swigluBackwardAndPerTokenCast([dx!, ds!], dg!, { ...local, psumNumTokensPerExpert: dp ?? undefined, topkWeights: dw ?? undefined });
      return [a, q, qs, ...(b ? [b] : []), ...(d ? [d] : [])];
    });
    let i = 3;
    const wg = c.weights ? r[i++] : null;
    return [r[0], [r[1], r[2]], wg, c.args.doRecompute ? r[i] : null];
  }
  const cast = {
    tokens: c.T,
    hidden: 2 * c.H,
    numPerChannels: N,
    rule: { fmt: "e4m3" as const, roundSf: sfo.roundSf, packedUe8m0: sfo.packed, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) },
    layout,
  };
  const xh = { data: onHost(c.x) as HostTensor, sf: onHost(xSf) as HostTensor, numPerChannels: N };
  const res = swigluBackwardAndPerTokenCastRef(op, xh, onHost(c.actXGrad) as HostTensor, refArgs(c), cast);
  return [
    deliverHostResult(op, res.xGrad, null, pl),
    [deliverHostResult(op, res.xGradQ, null, pl), deliverHostResult(op, res.xGradSf, null, pl)],
    res.weightGrad && deliverHostResult(op, res.weightGrad, null, pl),
    res.actOut && deliverHostResult(op, res.actOut, null, pl),
  ];
}

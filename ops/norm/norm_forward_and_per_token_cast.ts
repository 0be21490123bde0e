/**
 * RMSNorm forward fused with the per-token FP8 cast: `normForwardAndPerTokenCast` and
 * `addRmsnormForwardAndPerTokenCast` (spec/API.md §3.2; numerics and legal arguments: spec/norm-rope-rand.md §A.4,
 * D.5, D.10). Checks (the norm's through `resolveNorm`, under this op's name), then dispatch: the fused CUDA kernel
 * (`kernels-src/cuda/norm/norm_forward.cu`, launched by `launchNormForward`), or the CPU reference — `normForward`
 * for the norm, then `castNormalizedRef`.
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, oneOf, overlaps } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged, writeBackSpan } from "../../core/stage.ts";
import { DeviceTensor, deviceEmptyStrided, type HostTensor, type Quantized, type Tensor } from "../../core/tensor.ts";
import type { PerTokenArgs } from "../quant/per_token_cast.ref.ts";
import { perTokenCast } from "../quant/per_token_cast.ts";
import { amaxClampFor } from "../quant/scale.ref.ts";
import { type SfGeometry, sfGeometry, type SfLayout } from "../quant/sf_layout.ts";
import { checkSfOptions, type SfFlags } from "../quant/sf_options.ts";
import { checkCudaHidden, shapeText } from "./checks.ts";
import { normStream } from "./launch.ts";
import { checkMegaMoe, launchMegaMoeSf, type MegaMoe, releaseMegaMoe, writeMegaMoeRef } from "./mega_moe_sf.ts";
import { launchNormForward, normForward, resolveNorm, type ResolvedNorm, rowsLike } from "./norm_forward.ts";
import { castNormalizedRef } from "./norm_forward_and_per_token_cast.ref.ts";

/** Scale-factor options of the fused casts (spec/API.md §3.1 `SfOptions` without `useE4m3Sf`). */
export interface NormCastSfOptions {
  /** Store sf column-major with the token dimension padded to 16 bytes (per batch for 3-D). Default false. */
  useTmaAlignedColMajorSf?: boolean;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Store power-of-two scales as UE8M0 bytes packed four per int32; requires `roundSf`. Default false. */
  usePackedUe8m0?: boolean;
}

/** Options of {@link normForwardAndPerTokenCast}. */
export interface NormForwardAndPerTokenCastOptions extends OpOptions, NormCastSfOptions {
  /** Added to the mean square before the square root; required, finite, ≥ 0 (rounded to binary32). */
  eps: number;
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Channels per scale: 32 or 128, dividing the hidden size. */
  numPerChannels: 32 | 128;
  /** Added to `x` first (rounded to `x.dtype`); the sum is normalized and returned as `normInput`. */
  residual?: Tensor;
  /** Multiplier folded into the weight (rounded to binary32). Default 1. */
  outScale?: number;
  /** Also return the normalized output rounded to bf16. Default false. */
  withOutBf16?: boolean;
  /**
   * Also receive the scales in DeepGEMM's mega-MoE layout (spec/norm-rope-rand.md A.1): an int32 `[T, H/128]` tensor,
   * M-major (stride(0) = 1) with row pitch R = stride(1) ≥ ⌈T/m⌉·align(m, 128), m = `megaMoeBlockM`. Token t's four
   * UE8M0 bytes of columns 128g … 128g + 127 (byte k: sf column 4g + k) go into the int32 at row
   * ρ(t) = ⌊t/m⌋·align(m,128) + ⌊i/128⌋·128 + (i mod 32)·4 + ⌊(i mod 128)/32⌋ (i = t mod m) of column g; every other
   * word keeps its bits (rows up to ⌈T/m⌉·align(m, 128) − 1 of each column, which may lie past the view's T rows,
   * must be inside its allocation). Requires `megaMoeBlockM`, a 2-D `x`, `numPerChannels: 32`, `roundSf` and
   * `H % 128 == 0`.
   */
  megaMoeSf?: Tensor;
  /** m ≥ 1, the mega-MoE block of tokens; required with `megaMoeSf` (0 or absent: no mega-MoE scales). */
  megaMoeBlockM?: number;
  /**
   * Preallocated outputs: `data` e4m3 like `x` (contiguous); `sf` row-major contiguous (`[B?, T, sfCols]`, not with
   * `useTmaAlignedColMajorSf`); `outBf16` bf16 like `x` (contiguous, only with `withOutBf16`); `rstd` and
   * `residualOut` as for `normForward`.
   */
  out?: { data?: Tensor; sf?: Tensor; outBf16?: Tensor; rstd?: Tensor; residualOut?: Tensor };
}

/** Options of {@link addRmsnormForwardAndPerTokenCast}. */
export interface AddRmsnormForwardAndPerTokenCastOptions extends OpOptions, NormCastSfOptions {
  /** Added to the mean square before the square root; required, finite, ≥ 0 (rounded to binary32). */
  eps: number;
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Channels per scale: 32 or 128 (not the whole row). */
  numPerChannels: 32 | 128;
}

/** Options of {@link rmsnormForwardAndPerTokenCast} (the deprecated alias). */
export interface RmsnormForwardAndPerTokenCastOptions extends OpOptions, NormCastSfOptions {
  /** Added to the mean square before the square root; required, finite, ≥ 0 (rounded to binary32). */
  eps: number;
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Channels per scale: 128, or the whole row (the hidden size). */
  numPerChannels: number;
}

const SF_KEYS = ["fmt", "numPerChannels", "useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0"];
const ALIAS_KEYS = ["eps", ...SF_KEYS];
const KEYS = ["eps", "residual", "outScale", "withOutBf16", "megaMoeSf", "megaMoeBlockM", ...SF_KEYS];
const ADD_KEYS = ["eps", ...SF_KEYS];
const OUT_KEYS = ["data", "sf", "outBf16", "rstd", "residualOut"];

/** A contiguous output of `dtype` with x's shape. */
function checkOutRows(op: string, arg: string, t: unknown, dtype: "e4m3" | "bf16", x: Tensor): Tensor {
  const o = checkOutTensor(op, arg, t, dtype);
  if (o.shape.length !== x.shape.length || o.shape.some((d, i) => d !== x.shape[i])) {
    throw new TkError(op, arg, "OUT_MISMATCH", `expected shape ${shapeText(x.shape)} (as x), got ${shapeText(o.shape)}`);
  }
  if (!o.isContiguous()) throw new TkError(op, arg, "OUT_MISMATCH", `must be contiguous, got strides [${o.strides.join(", ")}]`);
  return o;
}

/**
 * RMSNorm over the last dimension of `x` exactly as {@link normForward} (`[T, H]` or `[B, T, H]`, fp32 or bf16,
 * `H` a multiple of 16), followed by the per-token e4m3 cast of the normalized output **rounded to `x.dtype`**:
 * `q` equals `perTokenCast(normForward(x, weight, …)[0], { fmt, numPerChannels, …SfOptions })` byte for byte
 * (spec/norm-rope-rand.md §A.4, D.5); a 3-D input is cast per batch, its sf being `[B, T, sfCols]`.
 * Returns `[q, outBf16, rstd, normInput]`: `q = [data, sf]`; `outBf16` the normalized output rounded to bf16 when
 * `withOutBf16`, else `null`; `rstd` and `normInput` as `normForward`.
 *
 * Device inputs run one fused CUDA kernel on `stream` (the x-dtype normalized output is never written); host
 * inputs run the CPU reference unless `backend` / `TK_BACKEND` says `"cuda"`. Both give the same bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normForwardAndPerTokenCast } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const x = tensor(new Float32Array(64).fill(2), [1, 64], "fp32");
 * const [[data, sf], outBf16, rstd] = normForwardAndPerTokenCast(x, null, { eps: 0, fmt: "e4m3", numPerChannels: 32 });
 * assert.equal((rstd as { data: Float32Array }).data[0], 0.5);
 * assert.equal((sf as { data: Float32Array }).data[0], Math.fround(1 / 448)); // every normalized value is 1
 * assert.equal((data as { data: Uint8Array }).data[0], 0x7e); // 448 in e4m3
 * assert.equal(outBf16, null);
 * ```
 */
export function normForwardAndPerTokenCast(
  x: Tensor,
  weight: Tensor | null,
  options: NormForwardAndPerTokenCastOptions,
): [q: Quantized, outBf16: Tensor | null, rstd: Tensor, normInput: Tensor] {
  return fusedCast("normForwardAndPerTokenCast", x, weight, options);
}

function fusedCast(
  op: string,
  x: Tensor,
  weight: Tensor | null,
  options: NormForwardAndPerTokenCastOptions,
): [q: Quantized, outBf16: Tensor | null, rstd: Tensor, normInput: Tensor] {
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "eps, fmt and numPerChannels are required");
  const xt = checkTensor(op, "x", x, ["fp32", "bf16"]);
  const rank = xt.shape.length;
  if (rank !== 2 && rank !== 3) throw new TkError(op, "x", "SHAPE", `expected a 2-D [T, H] or 3-D [B, T, H] tensor, got shape ${shapeText(xt.shape)}`);
  const H = xt.shape[rank - 1];
  const T = xt.shape[rank - 2];
  const fmt = oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  const N = oneOf(op, "numPerChannels", options.numPerChannels, [32, 128] as const);
  if (H % N !== 0) throw new TkError(op, "numPerChannels", "VALUE", `must divide the hidden size ${H} (got ${N})`);
  const sfo = checkSfOptions(op, options);
  const withOutBf16 = options.withOutBf16 ?? false;
  if (typeof withOutBf16 !== "boolean") throw new TkError(op, "withOutBf16", "VALUE", `expected a boolean, got ${typeof withOutBf16}`);
  const out = options.out;
  if (out !== undefined && (typeof out !== "object" || out === null || Array.isArray(out))) {
    throw new TkError(op, "out", "VALUE", `expected { ${OUT_KEYS.join("?, ")}? }`);
  }
  if (out) for (const k in out) if (!OUT_KEYS.includes(k)) throw new TkError(op, `out.${k}`, "VALUE", `unknown output (expected one of ${OUT_KEYS.join(", ")})`);
  const layout: SfLayout = { kind: sfo.packed ? "packed" : "fp32", colMajor: sfo.colMajor };
  const g = sfGeometry(T, H / N, layout);
  const sfShape = rank === 3 ? [xt.shape[0], ...g.shape] : [...g.shape];

  const outData = out?.data !== undefined ? checkOutRows(op, "out.data", out.data, "e4m3", xt) : null;
  let outSf: Tensor | null = null;
  if (out?.sf !== undefined) {
    if (sfo.colMajor) throw new TkError(op, "out.sf", "OUT_MISMATCH", "a preallocated sf must be row-major (not with useTmaAlignedColMajorSf)");
    outSf = checkOutTensor(op, "out.sf", out.sf, g.dtype);
    if (outSf.shape.length !== sfShape.length || outSf.shape.some((d, i) => d !== sfShape[i])) {
      throw new TkError(op, "out.sf", "OUT_MISMATCH", `expected shape ${shapeText(sfShape)}, got ${shapeText(outSf.shape)}`);
    }
    if (!outSf.isContiguous()) throw new TkError(op, "out.sf", "OUT_MISMATCH", `must be row-major contiguous, got strides [${outSf.strides.join(", ")}]`);
  }
  let outBf16: Tensor | null = null;
  if (out?.outBf16 !== undefined) {
    if (!withOutBf16) throw new TkError(op, "out.outBf16", "VALUE", "is only written with withOutBf16: true");
    outBf16 = checkOutRows(op, "out.outBf16", out.outBf16, "bf16", xt);
  }
  // The outputs of the cast step must not touch any input or any other output.
  const others: [string, Tensor | null | undefined][] = [
    ["x", xt],
    ["weight", weight],
    ["residual", options.residual],
    ["out.rstd", out?.rstd],
    ["out.residualOut", out?.residualOut],
  ];
  const mine: [string, Tensor | null][] = [["out.data", outData], ["out.sf", outSf], ["out.outBf16", outBf16]];
  for (let i = 0; i < mine.length; i++) {
    const [arg, t] = mine[i];
    if (!t) continue;
    for (const [name, o] of [...others, ...mine.slice(0, i)]) {
      if (o && typeof o === "object" && "shape" in o && overlaps(t, o)) throw new TkError(op, arg, "OUT_MISMATCH", `overlaps ${name}`);
    }
  }
  const normOut = out?.rstd !== undefined || out?.residualOut !== undefined ? { rstd: out.rstd, residualOut: out.residualOut } : undefined;
  const r = resolveNorm(op, xt, weight, { eps: options.eps, residual: options.residual, outScale: options.outScale, out: normOut });
  const pl = place(op, options.backend, xt, r.w, r.residual, r.resOut);
  place(op, options.backend, xt, outData, outSf, outBf16);
  place(op, options.backend, xt, r.outRstd);
  checkCudaHidden(op, pl.backend, H);
  const args: PerTokenArgs = {
    tokens: T, // per batch for 3-D
    hidden: H,
    numPerChannels: N,
    rule: { fmt, roundSf: sfo.roundSf, packedUe8m0: sfo.packed, e4m3Sf: false, clamp: amaxClampFor(fmt, false) },
    layout,
  };
  // megaMoeSf (A.1): checked last, so that the view of the words it receives exists only once nothing else refuses
  const mm = checkMegaMoe(op, options.megaMoeSf, options.megaMoeBlockM, xt, N, sfo.roundSf, [...others, ...mine]);
  try {
    if (mm) place(op, options.backend, xt, mm.target);
    return dispatchCast(op, xt, weight, options, { pl, r, args, outData, outSf, outBf16, withOutBf16, sfo, g, sfShape, rank, normOut, mm });
  } finally {
    releaseMegaMoe(mm);
  }
}

/** What fusedCast checked and resolved, for its dispatch. */
interface CastPlan {
  pl: ReturnType<typeof place>;
  r: ResolvedNorm;
  args: PerTokenArgs;
  outData: Tensor | null;
  outSf: Tensor | null;
  outBf16: Tensor | null;
  withOutBf16: boolean;
  sfo: SfFlags;
  g: SfGeometry;
  sfShape: number[];
  rank: number;
  normOut: { rstd?: Tensor; residualOut?: Tensor } | undefined;
  mm: MegaMoe | null;
}

/**
 * fusedCast's dispatch, every argument checked: the fused kernel, the same call on device copies of host inputs, or
 * the CPU reference; then the megaMoeSf words from the scales it produced.
 */
function dispatchCast(
  op: string,
  xt: Tensor,
  weight: Tensor | null,
  options: NormForwardAndPerTokenCastOptions,
  plan: CastPlan,
): [q: Quantized, outBf16: Tensor | null, rstd: Tensor, normInput: Tensor] {
  const { pl, r, args, outData, outSf, outBf16, withOutBf16, sfo, g, sfShape, rank, normOut, mm } = plan;
  const fmt = args.rule.fmt as "e4m3";
  const N = args.numPerChannels as 32 | 128;
  const T = args.tokens, H = args.hidden;
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = normStream(op, pl, options.stream);
    const dev = pl.device;
    const B = rank === 3 ? xt.shape[0] : 1;
    const data = outData ?? rowsLike(op, dev, xt, "e4m3", stream);
    const sf = outSf ?? deviceEmptyStrided(op, dev, sfShape, rank === 3 ? [g.storage, ...g.strides] : g.strides, g.dtype, B * g.storage, stream);
    const ob = withOutBf16 ? (outBf16 ?? rowsLike(op, dev, xt, "bf16", stream)) : null;
    const rs = r.outRstd ?? rowsLike(op, dev, xt, "fp32", stream, true);
    const ro = r.residual ? (r.resOut ?? rowsLike(op, dev, xt, xt.dtype, stream)) : null;
    const cast = { numPerChannels: N, data, sf, g, outBf16: ob, roundSf: sfo.roundSf, packedUe8m0: sfo.packed };
    launchNormForward(op, dev, stream, r, { out: null, rstd: rs, residualOut: ro, cast });
    if (mm) launchMegaMoeSf(op, dev, stream, sf as DeviceTensor, sfo.packed, T, H / 128, mm);
    return [[data, sf], ob, rs, ro ?? xt];
  }
  if (pl.backend === "cuda") {
    // Host inputs on the device: the same call on device copies; results come back into the given outputs.
    const local: NormForwardAndPerTokenCastOptions = {
      eps: r.eps,
      fmt,
      numPerChannels: N,
      outScale: r.outScale,
      withOutBf16,
      useTmaAlignedColMajorSf: sfo.colMajor,
      roundSf: sfo.roundSf,
      usePackedUe8m0: sfo.packed,
    };
    // Results in this order: data, sf, [outBf16], rstd, [residualOut].
    const targets = [outData, outSf, ...(withOutBf16 ? [outBf16] : []), r.outRstd, ...(r.residual ? [r.resOut] : [])];
    const res = runOnDeviceStaged(op, pl.device, [xt, r.w, r.residual], targets, ([dx, dw, dr]) => {
      const [[d, f], b, rs, s] = fusedCast(op, dx!, dw, { ...local, residual: dr ?? undefined });
      return [d, f, ...(b ? [b] : []), rs, ...(dr ? [s] : [])];
    });
    const k = withOutBf16 ? 3 : 2;
    // (host inputs: megaMoeSf is a host tensor, written from the scales that came back)
    if (mm) writeMegaMoeRef(res[1] as HostTensor, sfo.packed, T, H / 128, mm.m, mm.span as HostTensor);
    return [[res[0], res[1]], withOutBf16 ? res[2] : null, res[k], r.residual ? res[k + 1] : xt];
  }

  // CPU reference (device inputs with backend "cpu" are staged through the host): the norm by normForward, whose
  // checks have already passed above, then the cast of its x-dtype output.
  const [normalized, rstd, normInput] = normForward(xt, weight, { eps: r.eps, residual: options.residual, outScale: r.outScale, backend: "cpu", out: normOut });
  const hn = onHost(normalized) as HostTensor;
  if (!pl.staged) {
    const given = {
      data: (outData as HostTensor | null) ?? undefined,
      sf: (outSf as HostTensor | null) ?? undefined,
      outBf16: (outBf16 as HostTensor | null) ?? undefined,
    };
    const c = castNormalizedRef(hn, args, withOutBf16, given);
    if (mm) writeMegaMoeRef(c.sf, sfo.packed, T, H / 128, mm.m, mm.span as HostTensor);
    return [[c.data, c.sf], c.outBf16, rstd, normInput];
  }
  const c = castNormalizedRef(hn, args, withOutBf16, {});
  if (mm) {
    // device megaMoeSf with backend "cpu": the words' span comes to the host, is written, and goes back whole
    const span = onHost(mm.span) as HostTensor;
    writeMegaMoeRef(c.sf, sfo.packed, T, H / 128, mm.m, span);
    writeBackSpan(op, mm.span as DeviceTensor, span);
  }
  const device = pl.device;
  const q: Quantized = [resultToDevice(op, c.data, outData, device), resultToDevice(op, c.sf, outSf, device)];
  return [q, c.outBf16 ? resultToDevice(op, c.outBf16, outBf16, device) : null, rstd, normInput];
}

/**
 * `residual ← x + residual` (rounded to x's dtype, in place), then RMSNorm of the new `residual` with `weight` and
 * the per-token e4m3 cast of the x-dtype normalized output: exactly
 * `normForwardAndPerTokenCast(x, weight, { ...options, residual, out: { residualOut: residual } })[0]`
 * (spec/norm-rope-rand.md §A.4). `x` and `residual` are 2-D contiguous `[T, H]` of one dtype (fp32 or bf16) and do
 * not overlap; `weight` is required. Returns `[data, sf]`; `x` is unchanged.
 *
 * Device inputs run the fused CUDA kernel of {@link normForwardAndPerTokenCast} (residual rewritten in place).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { addRmsnormForwardAndPerTokenCast } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const x = tensor(new Float32Array(128).fill(1), [1, 128], "fp32");
 * const residual = tensor(new Float32Array(128).fill(1), [1, 128], "fp32");
 * const weight = tensor(new Float32Array(128).fill(1), [128], "fp32");
 * const [data, sf] = addRmsnormForwardAndPerTokenCast(x, residual, weight, { eps: 0, fmt: "e4m3", numPerChannels: 128 });
 * assert.equal((residual as { data: Float32Array }).data[5], 2);
 * assert.equal((sf as { data: Float32Array }).data[0], Math.fround(1 / 448));
 * assert.equal((data as { data: Uint8Array }).data[5], 0x7e);
 * ```
 */
export function addRmsnormForwardAndPerTokenCast(
  x: Tensor,
  residual: Tensor,
  weight: Tensor,
  options: AddRmsnormForwardAndPerTokenCastOptions,
): Quantized {
  const op = "addRmsnormForwardAndPerTokenCast";
  const xt = rowsEntry(op, x, options, ADD_KEYS, "the op takes no out (residual is written in place)");
  const H = xt.shape[1];
  const r = checkTensor(op, "residual", residual, ["fp32", "bf16"]);
  if (r.dtype !== xt.dtype) throw new TkError(op, "residual", "DTYPE", `expected dtype ${xt.dtype} (as x), got ${r.dtype}`);
  if (r.shape.length !== 2 || r.shape[0] !== xt.shape[0] || r.shape[1] !== H) {
    throw new TkError(op, "residual", "SHAPE", `expected shape ${shapeText(xt.shape)} (as x), got ${shapeText(r.shape)}`);
  }
  if (!r.isContiguous()) throw new TkError(op, "residual", "LAYOUT", `must be contiguous, got strides [${r.strides.join(", ")}]`);
  if (overlaps(r, xt)) throw new TkError(op, "residual", "VALUE", "overlaps x (residual is written in place)");
  if (weight === null || weight === undefined) throw new TkError(op, "weight", "VALUE", `is required (got ${String(weight)})`);
  const w = checkTensor(op, "weight", weight, ["fp32", "bf16"]);
  if (overlaps(w, r)) throw new TkError(op, "weight", "VALUE", "overlaps residual (residual is written in place)");
  if (options.numPerChannels === H && H !== 32 && H !== 128) {
    throw new TkError(op, "numPerChannels", "VALUE", `must be 32 or 128; whole-row scaling (${H}) is not supported`);
  }
  const opts: NormForwardAndPerTokenCastOptions = { ...options, residual: r, out: { residualOut: r } };
  return fusedCast(op, xt, w, opts)[0];
}

/**
 * **Deprecated** (TileKernels' earlier 2.x entry point; use {@link normForwardAndPerTokenCast}): RMSNorm of the rows
 * of a 2-D contiguous `x` `[T, H]` (fp32 or bf16, `H` a multiple of 128) with a required `weight`, then the per-token
 * e4m3 cast of the output rounded to `x.dtype`, in groups of 128 channels or of the whole row
 * (`numPerChannels = H`). Exactly `perTokenCast(normForward(x, weight, { eps })[0], { fmt: "e4m3", numPerChannels,
 * …SfOptions })` byte for byte (spec/norm-rope-rand.md D.5: the new numerics, not the `9375f83` kernel's). Returns
 * `[data, sf]`.
 *
 * Device inputs: with 128 channels, the fused kernel of {@link normForwardAndPerTokenCast}; with the whole row,
 * {@link normForward} then `perTokenCast` on the same stream (the normalized rows live in a temporary buffer,
 * released in stream order). Host inputs run the CPU reference unless `backend` / `TK_BACKEND` says `"cuda"`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rmsnormForwardAndPerTokenCast } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const x = tensor(new Float32Array(256).fill(2), [1, 256], "fp32");
 * const weight = tensor(new Float32Array(256).fill(1), [256], "fp32");
 * const [data, sf] = rmsnormForwardAndPerTokenCast(x, weight, { eps: 0, fmt: "e4m3", numPerChannels: 256 });
 * assert.deepEqual(sf.shape, [1, 1]); // one scale for the whole row
 * assert.equal((sf as { data: Float32Array }).data[0], Math.fround(1 / 448)); // every normalized value is 1
 * assert.equal((data as { data: Uint8Array }).data[0], 0x7e);
 * ```
 */
export function rmsnormForwardAndPerTokenCast(x: Tensor, weight: Tensor, options: RmsnormForwardAndPerTokenCastOptions): Quantized {
  const op = "rmsnormForwardAndPerTokenCast";
  const xt = rowsEntry(op, x, options, ALIAS_KEYS, "is not supported: the op allocates its outputs");
  const H = xt.shape[1];
  if (H % 128 !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a multiple of 128 (got ${H})`);
  if (weight === null || weight === undefined) throw new TkError(op, "weight", "VALUE", `is required (got ${String(weight)})`);
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  const N = options.numPerChannels;
  if (N !== 128 && N !== H) throw new TkError(op, "numPerChannels", "VALUE", `must be 128 or the hidden size ${H} (got ${String(N)})`);
  const sf: NormCastSfOptions = {
    useTmaAlignedColMajorSf: options.useTmaAlignedColMajorSf,
    roundSf: options.roundSf,
    usePackedUe8m0: options.usePackedUe8m0,
  };
  const common = { backend: options.backend, stream: options.stream };
  if (N === 128) return fusedCast(op, xt, weight, { eps: options.eps, fmt: "e4m3", numPerChannels: 128, ...sf, ...common })[0];
  // The whole row: every argument of both steps is checked here first, under this op's name (the norm's by
  // resolveNorm, the cast's options by checkSfOptions; the cast's input is the norm's own output), so neither step
  // can refuse after the first one ran.
  checkSfOptions(op, sf);
  const r = resolveNorm(op, xt, weight, { eps: options.eps });
  const pl = place(op, options.backend, xt, r.w);
  checkCudaHidden(op, pl.backend, H);
  const [normalized, rstd] = normForward(xt, weight, { eps: options.eps, ...common });
  const q = perTokenCast(normalized, { fmt: "e4m3", numPerChannels: H, ...sf, ...common });
  for (const t of [normalized, rstd]) if (t instanceof DeviceTensor) t.dispose();
  return q;
}

/**
 * The first checks of the 2-D entry points (addRmsnorm…, the alias): known option keys, options given, no `out`
 * (`outReason` says why), `x` a 2-D contiguous fp32 / bf16 tensor. Returns `x`.
 */
function rowsEntry(op: string, x: Tensor, options: object | undefined, keys: string[], outReason: string): Tensor {
  checkOptions(op, options, keys);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "eps, fmt and numPerChannels are required");
  if ((options as { out?: unknown }).out !== undefined) throw new TkError(op, "out", "VALUE", outReason);
  const xt = checkTensor(op, "x", x, ["fp32", "bf16"], 2);
  if (!xt.isContiguous()) throw new TkError(op, "x", "LAYOUT", `must be contiguous, got strides [${xt.strides.join(", ")}]`);
  return xt;
}

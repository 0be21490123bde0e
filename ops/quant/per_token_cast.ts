/**
 * Per-token casts: `perTokenCast`, `perTokenCastWithSfOnly`, `perTokenCastWithPrecomputedSf` (spec/API.md §3.1;
 * numerics and legal arguments: spec/quant.md §2, §4, §11.1). Checks, then dispatch to the CPU reference
 * (`per_token_cast.ref.ts`) or the CUDA kernels (`kernels-src/cuda/quant/per_token_cast.cu`).
 * @module
 */
import { type OpOptions, place, type Placement } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged } from "../../core/stage.ts";
import {
  type Device,
  DeviceTensor,
  deviceEmptyStrided,
  deviceRuntime,
  type HostTensor,
  type Quantized,
  type Stream,
  type Tensor,
} from "../../core/tensor.ts";
import { errorWordPtr, kernelFunction, LaunchPacket, rowsPerBlock } from "../../ffi/cuda.ts";
import { OP_ID } from "../../ffi/op_ids.ts";
import { PER_TOKEN_FLAG, PER_TOKEN_MODE, PerTokenCastParams, SF_KIND } from "./per_token_cast.params.ts";
import {
  type PerTokenArgs,
  perTokenCastRef,
  perTokenCastWithPrecomputedSfRef,
  type QuantizedInput,
} from "./per_token_cast.ref.ts";
import { amaxClampFor, type QuantFmt, type ScaleRule } from "./scale.ref.ts";
import { perTokenStochasticCastRef } from "./stochastic.ref.ts";
import { type SfGeometry, type SfInput, type SfLayout, sfGeometry, sfInput } from "./sf_layout.ts";
import { checkSfOptions, type SfOptions } from "./sf_options.ts";

export type { QuantFmt, SfOptions };

/** Options of {@link perTokenCast}. */
export interface PerTokenCastOptions extends OpOptions, SfOptions {
  /** Target format: FP8 E4M3 or FP4 E2M1 (two codes per byte, dtype `e2m1x2`). */
  fmt: QuantFmt;
  /** Channels per scale: 16, 32, 64 or 128, or the whole row (`H`, plain input only). */
  numPerChannels: number;
  /** Block size `[rows, cols]` of a quantized input's scales (required iff `x` is `[data, sf]`). */
  xBlockSize?: readonly [number, number];
  /**
   * Stochastic rounding of the data (spec/quant.md §2.5, §7.3–§7.4); the scales are those of the RN call. The
   * CUDA kernels (`…_sr` variants) use the same software rounding and give the same bytes as the CPU reference.
   */
  stochasticCast?: boolean;
  /** Preallocated outputs. `data` contiguous; `sf` with exactly the layout the options select. */
  out?: { data?: Tensor; sf?: Tensor };
}

/** Options of {@link perTokenCastWithSfOnly}. */
export interface PerTokenCastWithSfOnlyOptions extends OpOptions, SfOptions {
  /** Target format the scales are computed for. */
  fmt: QuantFmt;
  /** Channels per scale: 16, 32, 64 or 128, or the whole row. */
  numPerChannels: number;
  /** Preallocated sf with exactly the layout the options select. */
  out?: Tensor;
}

/** Options of {@link perTokenCastWithPrecomputedSf}. */
export interface PerTokenCastWithPrecomputedSfOptions extends OpOptions {
  /** Target format. */
  fmt: QuantFmt;
  /** Channels per scale of the given sf: 16, 32, 64 or 128, or the whole row. */
  numPerChannels: number;
  /** The given sf is e4m3 (else fp32). */
  useE4m3Sf?: boolean;
  /** Accepted and without effect: the inverse is always the binary32 `1 / s` (spec/quant.md §2.5). */
  roundSf?: boolean;
  /** Refused when true: a precomputed sf must be row-major. */
  useTmaAlignedColMajorSf?: boolean;
  /** Refused when true: a precomputed sf must be fp32 or e4m3. */
  usePackedUe8m0?: boolean;
  /** Preallocated contiguous data output. */
  out?: Tensor;
}

const GROUPS = [16, 32, 64, 128] as const;
const CAST_KEYS = ["fmt", "numPerChannels", "xBlockSize", "useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0", "useE4m3Sf", "stochasticCast"];
const SF_ONLY_KEYS = ["fmt", "numPerChannels", "useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0", "useE4m3Sf"];
const PRE_KEYS = ["fmt", "numPerChannels", "useE4m3Sf", "roundSf", "useTmaAlignedColMajorSf", "usePackedUe8m0"];

/** Everything a launch or a reference run needs, resolved from the arguments. */
interface Resolved {
  readonly args: PerTokenArgs;
  readonly x: Tensor; // plain values, or the codes of a quantized input
  readonly q: { sf: Tensor; sfIn: SfInput; blockRows: number; blockCols: number } | null;
  /** Geometry of the sf output. */
  readonly g: SfGeometry;
}

/** Checks a plain `x`: fp32/bf16 `[T, H]`, last stride 1, row stride ≥ H, H % 64 == 0. Returns [T, H]. */
function checkPlainX(op: string, x: unknown): [number, number] {
  const t = checkTensor(op, "x", x, ["fp32", "bf16"], 2);
  const [T, H] = t.shape;
  if (H % 64 !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a multiple of 64 (got ${H})`);
  if (T > 0 && H > 1 && t.strides[1] !== 1) throw new TkError(op, "x", "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${t.strides[1]}`);
  if (T > 1 && t.strides[0] < H) throw new TkError(op, "x", "LAYOUT", `row stride must be ≥ ${H}, got ${t.strides[0]}`);
  return [T, H];
}

function checkNumPerChannels(op: string, v: unknown, H: number, allowRow: boolean): number {
  if (allowRow && v === H && H > 0) return H;
  return oneOf(op, "numPerChannels", v, GROUPS);
}

function resolveCast(op: string, x: unknown, o: PerTokenCastOptions, wantData: boolean): Resolved {
  const fmt = oneOf(op, "fmt", o.fmt, ["e4m3", "e2m1"] as const);
  const sfo = checkSfOptions(op, o);
  optBool(op, "stochasticCast", o.stochasticCast);
  let T: number, H: number;
  let q: Resolved["q"] = null;
  let xt: Tensor;
  if (Array.isArray(x)) {
    if (!wantData) throw new TkError(op, "x", "VALUE", "takes a plain fp32/bf16 tensor, not a quantized pair");
    if (x.length !== 2) throw new TkError(op, "x", "VALUE", `a quantized input is [data, sf], got ${x.length} entries`);
    xt = checkTensor(op, "x[0]", x[0], ["e4m3", "e2m1x2"], 2);
    const fp4 = xt.dtype === "e2m1x2";
    T = xt.shape[0];
    H = xt.shape[1] * (fp4 ? 2 : 1);
    if (H % 64 !== 0) throw new TkError(op, "x[0]", "SHAPE", `hidden size must be a multiple of 64 (got ${H})`);
    if (T > 0 && xt.shape[1] > 1 && xt.strides[1] !== 1) throw new TkError(op, "x[0]", "LAYOUT", "last dimension must be contiguous");
    if (T > 1 && xt.strides[0] < xt.shape[1]) throw new TkError(op, "x[0]", "LAYOUT", `row stride must be ≥ ${xt.shape[1]}`);
    const bs = o.xBlockSize;
    if (!Array.isArray(bs) || bs.length !== 2) throw new TkError(op, "xBlockSize", "VALUE", `is required for a quantized input, as [rows, cols] (got ${describe(bs)})`);
    const [ri, ci] = bs;
    const legal = (ri === 1 && (GROUPS as readonly number[]).includes(ci)) || ((ri === 32 || ri === 128) && (ci === 32 || ci === 128));
    if (!legal) throw new TkError(op, "xBlockSize", "VALUE", `must be [1, 16|32|64|128] or [32|128, 32|128] (got ${describe(bs)})`);
    const sf = checkTensor(op, "x[1]", x[1], ["fp32", "e4m3", "int32"], 2);
    const sfIn = sfInput(op, "x[1]", sf, Math.ceil(T / ri), Math.ceil(H / ci));
    q = { sf, sfIn, blockRows: ri, blockCols: ci };
  } else {
    [T, H] = checkPlainX(op, x);
    xt = x as Tensor;
    if (o.xBlockSize !== undefined) throw new TkError(op, "xBlockSize", "VALUE", "is only for a quantized [data, sf] input");
  }
  const N = checkNumPerChannels(op, o.numPerChannels, H, q === null);
  const rule: ScaleRule = { fmt, roundSf: sfo.roundSf, packedUe8m0: sfo.packed, e4m3Sf: sfo.e4m3Sf, clamp: amaxClampFor(fmt, sfo.e4m3Sf) };
  const layout: SfLayout = { kind: sfo.packed ? "packed" : sfo.e4m3Sf ? "e4m3" : "fp32", colMajor: sfo.colMajor };
  const g = sfGeometry(T, Math.ceil(H / N), layout);
  return { args: { tokens: T, hidden: H, numPerChannels: N, rule, layout }, x: xt, q, g };
}

function checkOutData(op: string, arg: string, t: unknown, fmt: QuantFmt, T: number, H: number): Tensor {
  const d = checkOutTensor(op, arg, t, fmt === "e4m3" ? "e4m3" : "e2m1x2");
  const cols = fmt === "e4m3" ? H : H / 2;
  if (d.shape.length !== 2 || d.shape[0] !== T || d.shape[1] !== cols) throw new TkError(op, arg, "OUT_MISMATCH", `expected shape [${T}, ${cols}], got [${d.shape.join(", ")}]`);
  if (!d.isContiguous()) throw new TkError(op, arg, "OUT_MISMATCH", "must be contiguous");
  return d;
}

function checkOutSf(op: string, arg: string, t: unknown, a: PerTokenArgs, g: SfGeometry): Tensor {
  const s = checkOutTensor(op, arg, t, g.dtype);
  const ok = s.shape.length === 2 && s.shape[0] === g.shape[0] && s.shape[1] === g.shape[1] &&
    (a.tokens === 0 || ((s.strides[0] === g.strides[0] || g.shape[0] <= 1) && (s.strides[1] === g.strides[1] || g.shape[1] <= 1)));
  if (!ok) {
    throw new TkError(op, arg, "OUT_MISMATCH", `expected shape [${g.shape.join(", ")}] with strides [${g.strides.join(", ")}], got [${s.shape.join(", ")}] / [${s.strides.join(", ")}]`);
  }
  if (s instanceof DeviceTensor && s.addr - s.storage.base + g.storage * (g.dtype === "fp32" || g.dtype === "int32" ? 4 : 1) > s.byteSize) {
    throw new TkError(op, arg, "OUT_MISMATCH", "its storage is too small for the padded layout");
  }
  return s;
}

function checkNoOverlap(op: string, arg: string, out: Tensor, inputs: (Tensor | null)[]): void {
  for (const i of inputs) if (i && overlaps(out, i)) throw new TkError(op, arg, "OUT_MISMATCH", "overlaps an input");
}

// ---- CUDA launch ------------------------------------------------------------------------------------------

/** Block size of `per_token_cast.cu` (its launch table). */
const PT = { threads: 256 };

const packet = new LaunchPacket(PerTokenCastParams);
const W = packet.w;
// fp16: only through launchPerTokenCastForCast (the generic cast's fp16 [1, 128] form, per_token_cast_gc23.cu)
const IN_INDEX: Record<string, number> = { fp32: 0, bf16: 1, e4m3: 2, e2m1x2: 3, fp16: 4 };
const IN_NAME = ["fp32", "bf16", "e4m3", "e2m1", "fp16"];
const GROUP_INDEX: Record<number, number> = { 16: 0, 32: 1, 64: 2, 128: 3 };
/** Function handles per device and variant (((((in · 2 + out) · 5 + group) · 2 + sr) · 2 + u4) · 11 + form), filled on first use. */
const fnCache: number[][] = [];

/**
 * Kernel form of a launch (per_token_cast.cu, "Symbols"; docs/perf-notes/perf7-sfonly.md and perf7-fp4.md, measured
 * on an H200 2026-12-01). Same bytes in every form (tests/per_token_cast_gpu.test.ts).
 * - "": the `_g<N>` / `_row` kernels (bf16 → e2m1 with groups: `_u4`).
 * - "sor4": perTokenCastWithSfOnly from fp32 / bf16 to e4m3 with groups of 32 or 128 (register units of 4 chunks,
 *   the next unit loaded before the current one is reduced; 84.1 → 89.7% of copy with fp32 sf, 82.4 → 91.0% with
 *   packed column-major sf at 16384 × 7168 bf16, groups of 128). e2m1 and groups of 16 or 64 were not measured and
 *   keep the `_g<N>` / `_u4` kernels (not built, to keep the package small).
 * - "pkl": perTokenCast from fp32 / bf16 to e4m3 with packed UE8M0 sf, groups of 32 or 128, no stochasticCast (the sf
 *   byte stores under an L2::evict_last policy; +0.4 … +2.6 points).
 * - "u4sca": perTokenCast bf16 → e2m1 with roundSf, groups of 32, no stochasticCast (MXFP4: the groups' own
 *   power-of-two scales, so the encoder leaves out the clamp at 6, and a cheaper bf16 amax; 73.9 → 75.1% at 16384 ×
 *   7168 with packed UE8M0 sf). Other scales (NVFP4's e4m3, fp32, precomputed) keep `_u4`: `_u4sca`'s encoder for
 *   non-power-of-two inverses lost (NVFP4 56 → 46%); roundSf with groups of 16, 64 or 128 (not measured) too.
 * - "sor4_a": "sor4" from bf16 with groups of 128 whose x base and row stride are multiples of 16 bytes (the
 *   element-wide fallback of the loads compiled out: ptxas if-converts `_sor4`'s, 8 predicated-off 2-byte loads
 *   beside every 16-byte load; docs/perf-notes/perf9-ptc.md, +1.5 … +2.1 points at 4096 … 16384 × 7168). Any other
 *   view keeps "sor4". The same for perTokenCast (`_g128_a` / `_g128_pkl_a`) measured a tie and is not built.
 * - "pdl" / "pkl_pdl": perTokenCast bf16 → e4m3 with groups of 128 and no stochasticCast (fp32, e4m3 or packed UE8M0
 *   scales, any layout) while `config.pdl` is set (its default): `_g128_pdl` / `_g128_pkl_pdl` (per_token_cast.cu:
 *   `_g128` / `_g128_pkl` behind a griddepcontrol prologue), launched with programmatic dependent launch. Such a
 *   launch may be scheduled while the previous kernel in the stream still runs (that kernel's blocks let it, or
 *   exit); the kernel waits for that kernel's completion and memory before its first global read or write, so any
 *   previous kernel (writing x, reading or writing the outputs) is ordered as in a plain launch (DESIGN's stream
 *   semantics). docs/perf-notes/perf9-pdl.md: 0.8 … 1.7 µs less per launch at 4096 … 16384 × 7168 (4096, fp32 sf:
 *   81.7 → 87.2% of copy back to back, 74.5 → 77.9% with a copy and 72.6 → 75.8% with another kernel between
 *   casts). `config.pdl` off: "" / "pkl", launched without the attribute. Read at every launch; the replay path
 *   compares it.
 * - "wu12": perTokenCast bf16 → e4m3 with stochasticCast, groups of 128 (any sf layout), x base / row stride and data
 *   base multiples of 16 bytes: `_g128_sr_wu12` (per_token_cast_sr12.cu: per_token_cast.cu's run_warp_units, warp
 *   units of 4 chunks per lane walked flat over (row, 1024-column segment) pairs, staged one unit ahead, the same
 *   step() and hash as `_g128_sr`, with the §7.3 e4m3 rounding in a domain scaled by 2^-120, ~3 fewer instructions
 *   per value), launched with the PDL attribute iff `config.pdl`. Measured on the H200: round 10's `_g128_sr_wu` (the
 *   warp units with `_g128_sr`'s encoder; docs/perf-notes/perf10-ptsr.md) 62.3 → 76.1% of copy at 16384 × 7168 (fp32
 *   sf), 60.1 → 73.3% at 8192; round 12's scaled encoder (perf12-sr.md, bench/sr12_tuning.ts) 75.0 → 90.4% and
 *   72.5 → 86.2% on top. Any other stochasticCast view runs `…_sr`, without the attribute; all give the same bytes.
 *   (`_g128_sr_wu`, kept for A/B behind perTokenLaunchTuning.srScaledEncode, left the package with the knob in
 *   trim24: docs/branches/trim24-removed.patch.)
 * - "mxw": perTokenLaunchTuning.mxfp4Wide (round 26): `_g32_mxw` (per_token_cast_fp4_26.cu), round 17's lane-wide
 *   walk (per_token_cast_fp4_17.cuh) for MXFP4; the same bytes as `_g32_u4sca`.
 * - "nvw": perTokenLaunchTuning.nvfp4Wide (round 29): `_g16_nvw` (per_token_cast_fp4_29.cu), the same walk for NVFP4;
 *   the same bytes as `_g16_u4`. (Round 17's "lw", `_g16_lw`, the first form on that walk, left in trim32.)
 * - "nvc": perTokenLaunchTuning.nvfp4ColTiles (round 30): `_g16_nvc` (per_token_cast_fp4_30.cu), "nvw"'s lane body
 *   in units of 16 rows × 64 columns, for NVFP4 with column-major sf.
 */
type Form = "" | "sor4" | "pkl" | "u4sca" | "sor4_a" | "pdl" | "pkl_pdl" | "wu12" | "mxw" | "nvw" | "nvc";
const FORM_INDEX: Record<Form, number> = {
  "": 0,
  sor4: 1,
  pkl: 2,
  u4sca: 3,
  sor4_a: 4,
  pdl: 5,
  pkl_pdl: 6,
  wu12: 7,
  mxw: 8,
  nvw: 9,
  nvc: 10,
};

/**
 * Launch choices of perTokenCast that tests and benches may flip (restore them after use).
 * - `precomputedRing` (round 25, default 4 since the twentieth run; docs/perf-notes/perf25-ptps.md):
 *   perTokenCastWithPrecomputedSf bf16 → e4m3 with 128 columns a scale (fp32 or e4m3 sf), x base / row stride and
 *   data base multiples of 16 bytes, runs `_g128_psr4`, a warp's cp.async ring (per_token_cast_ps25.cu: 4 chunks a
 *   lane a step, 1024 columns a warp unit) instead of `_g128`; 0 keeps `_g128`. Same bytes. Any other view or option
 *   keeps `_g128`. Measured on the H200 (bench/ptps25_tuning.ts, interleaved A/B): 8192 × 7168 86.0 → 92.2%, 16384
 *   90.4 → 93.1% of copy; the 2-chunk `_psr2` tied at 8192 (92.4) and lost at 16384 (92.1) and is not built.
 *   `precomputedRingBlocksPerSm`: the ring's persistent grid, CTAs per SM (0: the launch bound, 4).
 *   `precomputedRingPdl`: launch it with the PDL attribute while `config.pdl` is set (the kernel's griddepcontrol
 *   prologue is a no-op without it). Read at every launch.
 * - `mxfp4Wide` (round 26, default on since its A/B; docs/perf-notes/perf26-fp4.md): perTokenCast bf16 → e2m1 without
 *   stochasticCast, groups of 32 with roundSf (MXFP4; rounded fp32 or packed UE8M0 sf, any layout), x base / row stride
 *   and data base multiples of 16 bytes, runs `_g32_mxw` instead of `_g32_u4sca` (per_token_cast_fp4_26.cu: round 17's
 *   lane-wide warp units and ring, a lane's group of 32 with a NaN-propagating amax that proves it finite, the product
 *   folded into the rounding fmas, no per-chunk NaN test). Same bytes. Any other view or option keeps main's kernels.
 *   Read at every launch; the replay path compares it. Measured on the H200 (bench/fp4_26_tuning.ts, interleaved A/B,
 *   packed UE8M0 sf): 8192 × 7168 69.2–69.3 → 81.0–81.9%, 16384 73.6–73.8 → 86.0–88.2% of copy.
 * - `nvfp4Wide` (round 29, default on since its A/B; docs/perf-notes/perf29-nvfp4.md): perTokenCast bf16 → e2m1 without
 *   stochasticCast, groups of 16, e4m3 sf without roundSf (NVFP4; any sf layout), x base / row stride and data base
 *   multiples of 16 bytes, runs `_g16_nvw` instead of `_g16_u4` (per_token_cast_fp4_29.cu: round 17's lane-wide walk
 *   (per_token_cast_fp4_17.cuh: a lane owns 32 consecutive values — two whole groups, lane-local amax and scale, one
 *   16-byte code store a lane — walked as `_sr_wu12`'s warp units), round 26's NaN-propagating amax that proves a group
 *   finite, no per-chunk NaN test or encoder dispatch, no clamp where the e4m3 byte bounds the products below 7). Same
 *   bytes. Any other view or option keeps main's kernels. Read at every launch; the replay path compares it. Measured
 *   on the H200 against round 17's `_g16_lw` (the same walk with `_u4`'s encoder; bench/nvfp4_29_tuning.ts,
 *   interleaved A/B): row-major sf 8192 × 7168 57.1 → 71.5%, 16384 59.8 → 77.5%; column-major sf 42.7 → 43.8%, 46.3 →
 *   47.2% of copy. `_g16_lw` itself (55.6 → 59.7% of copy against `_g16_u4` at 16384 × 7168, 53.3 → 57.1% at 8192;
 *   docs/perf-notes/perf17-fp4.md), the default from round 17 to 29, left the package with its knob `e2m1LaneWide` in
 *   trim32 (docs/branches/trim32-removed.patch).
 * - `nvfp4ColTiles` (round 30, the default since its A/B; docs/perf-notes/perf30-fp4c.md): the calls `nvfp4Wide` takes with
 *   column-major (TMA-aligned) e4m3 sf whose base is a multiple of 4 bytes run `_g16_nvc` (per_token_cast_fp4_30.cu:
 *   `_g16_nvw`'s lane body, amax, sf and codes unchanged, walked in units of 16 rows × 64 columns so that a unit's sf
 *   bytes are 4 runs of 16 adjacent rows, stored as 4-byte words, instead of 64 one-byte stores 32 sectors apart),
 *   whichever `nvfp4Wide` says. Same bytes. Row-major sf and any other view or option keep main's kernels. Read at
 *   every launch; the replay path compares it. Measured on the H200 (bench/fp4c30_tuning.ts, interleaved A/B,
 *   twenty-second run): column-major sf 8192 × 7168 43.8 → 68.1%, 16384 47.2 → 72.8% of copy.
 */
export const perTokenLaunchTuning: {
  precomputedRing: 0 | 4;
  precomputedRingBlocksPerSm: number;
  precomputedRingPdl: boolean;
  mxfp4Wide: boolean;
  nvfp4Wide: boolean;
  nvfp4ColTiles: boolean;
} = {
  precomputedRing: 4,
  precomputedRingBlocksPerSm: 0,
  precomputedRingPdl: true,
  mxfp4Wide: true,
  nvfp4Wide: true,
  nvfp4ColTiles: true,
};

/** Whether a bf16 x view allows the aligned-only `_sor4_a` symbol: base and row stride multiples of 16 bytes. */
function alignedView(x: Tensor): boolean {
  return addrOf(x) % 16 === 0 && (x.strides[0] * 2) % 16 === 0;
}

/** Chunks (8 bf16 columns each) of one warp unit of `_g128_sr_wu`: 4 per lane × 32 lanes (1024 columns). */
const WU_CHUNKS = 128;

// `aligned`: a bf16 x view that allows 16-byte accesses (alignedView); `pdl`: config.pdl at this launch; `sfWords`: a
// column-major sf whose base, column stride and padded rows allow 4-byte stores of 4 rows
function formOf(mode: number, inDtype: string, a: PerTokenArgs, sr: boolean, aligned: boolean, pdl: boolean, sfWords: boolean): Form {
  const n = a.numPerChannels;
  // fp16 (launchPerTokenCastForCast: cast, e4m3, groups of 128) has `_g128_pdl` only, launched with the attribute
  // iff config.pdl
  if (inDtype === "fp16") return "pdl";
  // with stochasticCast, `aligned` also covers the data output (launchPerToken)
  if (sr) {
    if (!(aligned && mode === PER_TOKEN_MODE.cast && inDtype === "bf16" && a.rule.fmt === "e4m3" && n === 128)) return "";
    return "wu12";
  }
  if ((inDtype !== "fp32" && inDtype !== "bf16") || GROUP_INDEX[n] === undefined) return "";
  if (mode === PER_TOKEN_MODE.sfOnly) {
    if (a.rule.fmt !== "e4m3" || (n !== 32 && n !== 128)) return "";
    return aligned && n === 128 && inDtype === "bf16" ? "sor4_a" : "sor4";
  }
  if (mode !== PER_TOKEN_MODE.cast) return "";
  // `aligned` covers the data output here too (launchPerToken)
  if (
    perTokenLaunchTuning.nvfp4ColTiles && aligned && sfWords && inDtype === "bf16" && a.rule.fmt === "e2m1" &&
    n === 16 && a.rule.e4m3Sf && !a.rule.roundSf && !a.rule.packedUe8m0
  ) return "nvc";
  if (
    perTokenLaunchTuning.nvfp4Wide && aligned && inDtype === "bf16" && a.rule.fmt === "e2m1" && n === 16 &&
    a.rule.e4m3Sf && !a.rule.roundSf && !a.rule.packedUe8m0
  ) return "nvw";
  if (
    perTokenLaunchTuning.mxfp4Wide && aligned && inDtype === "bf16" && a.rule.fmt === "e2m1" && n === 32 &&
    a.rule.roundSf
  ) return "mxw";
  const pdlForm = pdl && inDtype === "bf16" && a.rule.fmt === "e4m3" && n === 128;
  if (a.rule.packedUe8m0 && a.rule.fmt === "e4m3" && (n === 32 || n === 128)) return pdlForm ? "pkl_pdl" : "pkl";
  if (pdlForm) return "pdl";
  if (a.rule.roundSf && a.rule.fmt === "e2m1" && inDtype === "bf16" && n === 32) return "u4sca";
  return "";
}

function variantFn(op: string, device: Device, inDtype: string, fmt: QuantFmt, n: number, sr: boolean, form: Form): number {
  const g = GROUP_INDEX[n] ?? 4;
  const i = IN_INDEX[inDtype];
  // bf16 → e2m1 with groups (round to nearest) runs the `_u4` kernels: 4 chunks of 8 values per thread and unit
  // instead of 2 (per_token_cast.cu; the 2-chunk kernel measured slower and is not built); `_u4sca` is a `_u4`
  // kernel
  const wide = form === "" && inDtype === "bf16" && fmt === "e2m1" && !sr && g !== 4;
  const key = ((((i * 2 + (fmt === "e4m3" ? 0 : 1)) * 5 + g) * 2 + (sr ? 1 : 0)) * 2 + (wide ? 1 : 0)) * 11 + FORM_INDEX[form];
  const cache = fnCache[device.index] ?? (fnCache[device.index] = []);
  const hit = cache[key];
  if (hit !== undefined) return hit;
  const sym = `tk_per_token_cast__${IN_NAME[i]}_${fmt}_${g === 4 ? "row" : `g${n}`}${sr ? "_sr" : ""}${wide ? "_u4" : ""}${form === "" ? "" : `_${form}`}`;
  return (cache[key] = kernelFunction(op, device, sym));
}

function addrOf(t: Tensor | null): number {
  return t ? (t as DeviceTensor).addr : 0;
}

/** Bumped by every launch that rewrites {@link packet}. */
let packetGen = 0;

/**
 * The last device call of perTokenCast. When the next call passes the same tensors and the same options object
 * with the same option values (the steady state of a training or decode loop), everything it would check was
 * checked last time and the packed parameters are still in {@link packet}: the call only allocates fresh outputs
 * and launches. Any difference — another option value, another tensor, an added key, a disposed tensor, a new
 * amax clamp, another launch of this packet in between — takes the full path.
 */
interface Replay {
  gen: number;
  x: unknown;
  x1: unknown;
  opts: PerTokenCastOptions;
  keys: number;
  fmt: unknown;
  npc: unknown;
  bs: unknown;
  bs0: unknown;
  bs1: unknown;
  tma: unknown;
  round: unknown;
  packed: unknown;
  e4m3: unknown;
  sc: unknown;
  out: unknown;
  outData: DeviceTensor | null;
  outSf: DeviceTensor | null;
  backend: unknown;
  stream: unknown;
  clampKey: "e4m3" | "e2m1" | "e4m3/e4m3sf" | "e2m1/e4m3sf";
  clamp: number;
  /** config.pdl at the launch */
  pdl: boolean;
  /** perTokenLaunchTuning.mxfp4Wide at the launch */
  mxw: boolean;
  /** perTokenLaunchTuning.nvfp4Wide at the launch */
  nvw: boolean;
  /** perTokenLaunchTuning.nvfp4ColTiles at the launch */
  nvc: boolean;
  device: Device;
  streamObj: Stream;
  d: DataGeometry;
  g: SfGeometry;
}
let replay: Replay | null = null;

function keyCount(o: object): number {
  let n = 0;
  for (const _ in o) n++;
  return n;
}

function replayable(m: Replay, x: unknown, o: PerTokenCastOptions): boolean {
  if (m.gen !== packetGen || o !== m.opts) return false;
  if (Array.isArray(x) ? x[0] !== m.x || x[1] !== m.x1 || x.length !== 2 : x !== m.x || m.x1 !== null) return false;
  const bs = o.xBlockSize;
  const out = o.out;
  if (
    o.fmt !== m.fmt || o.numPerChannels !== m.npc || bs !== m.bs || o.useTmaAlignedColMajorSf !== m.tma ||
    o.roundSf !== m.round || o.usePackedUe8m0 !== m.packed || o.useE4m3Sf !== m.e4m3 || o.stochasticCast !== m.sc ||
    o.backend !== m.backend || o.stream !== m.stream || out !== m.out
  ) return false;
  if (bs !== undefined && (bs[0] !== m.bs0 || bs[1] !== m.bs1)) return false;
  if (out !== undefined && ((out.data ?? null) !== m.outData || (out.sf ?? null) !== m.outSf)) return false;
  if ((m.x as DeviceTensor).disposed || (m.x1 !== null && (m.x1 as DeviceTensor).disposed)) return false;
  if ((m.outData !== null && m.outData.disposed) || (m.outSf !== null && m.outSf.disposed)) return false;
  return config.amaxClamp[m.clampKey] === m.clamp && keyCount(o) === m.keys && config.pdl === m.pdl &&
    perTokenLaunchTuning.mxfp4Wide === m.mxw && perTokenLaunchTuning.nvfp4Wide === m.nvw &&
    perTokenLaunchTuning.nvfp4ColTiles === m.nvc;
}

/** Launch bound (CTAs per SM) of the `_psr4` ring (per_token_cast_ps25.cu). */
const PS_RING_BOUND = 4;
/** Function handles of the `_psr4` ring per device and symbol, filled on first use. */
const psRingCache: Map<string, number>[] = [];

/**
 * Chunks a lane a step of the `_psr4` ring a perTokenCastWithPrecomputedSf launch takes: perTokenLaunchTuning.
 * precomputedRing when set and the call qualifies (bf16 → e4m3, 128 columns a scale, x base / row stride and data
 * base multiples of 16 bytes), else 0 (`_g128` or the other group kernels).
 */
function precomputedRingOf(r: Resolved, data: Tensor | null): number {
  const n = perTokenLaunchTuning.precomputedRing;
  const a = r.args;
  const ok = n !== 0 && r.x.dtype === "bf16" && a.rule.fmt === "e4m3" && a.numPerChannels === 128 && alignedView(r.x) &&
    addrOf(data) % 16 === 0;
  return ok ? n : 0;
}

function psRingFn(op: string, device: Device, n: number): number {
  const sym = `tk_per_token_cast__bf16_e4m3_g128_psr${n}`;
  const cache = psRingCache[device.index] ?? (psRingCache[device.index] = new Map());
  let fn = cache.get(sym);
  if (fn === undefined) cache.set(sym, fn = kernelFunction(op, device, sym));
  return fn;
}

function launchPerToken(
  op: string,
  device: Device,
  stream: Stream,
  r: Resolved,
  g: SfGeometry,
  mode: number,
  data: Tensor | null,
  sf: Tensor | null,
  xSf: { t: Tensor; lay: SfInput; rows: number; cols: number } | null,
  sr = false,
): void {
  const a = r.args;
  const sfRows = mode === PER_TOKEN_MODE.precomputedSf ? a.tokens : g.paddedRows;
  if (a.tokens === 0 && sfRows === 0) return;
  const aligned = r.x.dtype === "bf16" &&
    (mode === PER_TOKEN_MODE.sfOnly
      ? alignedView(r.x)
      : mode === PER_TOKEN_MODE.cast && (sr || perTokenLaunchTuning.mxfp4Wide || perTokenLaunchTuning.nvfp4Wide ||
        perTokenLaunchTuning.nvfp4ColTiles) &&
        alignedView(r.x) && addrOf(data) % 16 === 0);
  const sfWords = sf !== null && g.strides[0] === 1 && g.strides[1] % 4 === 0 && sfRows % 4 === 0 && addrOf(sf) % 4 === 0;
  const form = formOf(mode, r.x.dtype, a, sr, aligned, config.pdl, sfWords);
  const ring = mode === PER_TOKEN_MODE.precomputedSf ? precomputedRingOf(r, data) : 0;
  const fn = ring !== 0 ? psRingFn(op, device, ring) : variantFn(op, device, r.x.dtype, a.rule.fmt, a.numPerChannels, sr, form);
  packetGen++;
  const p = packet;
  p.u64(W.x, addrOf(r.x));
  p.u64(W.x_sf, xSf ? addrOf(xSf.t) : 0);
  p.u64(W.data, addrOf(data));
  p.u64(W.sf, addrOf(sf));
  p.u64(W.error_word, errorWordPtr(op, device));
  p.u64(W.x_row_stride, r.x.strides[0]);
  p.u64(W.x_sf_stride0, xSf ? xSf.lay.s0 : 0);
  p.u64(W.x_sf_stride1, xSf ? xSf.lay.s1 : 0);
  p.u64(W.sf_stride0, sf ? g.strides[0] : 0);
  p.u64(W.sf_stride1, sf ? g.strides[1] : 0);
  p.u32(W.num_tokens, a.tokens);
  p.u32(W.hidden, a.hidden);
  p.u32(W.num_per_channels, a.numPerChannels);
  p.u32(W.sf_rows, sfRows);
  p.u32(W.mode, mode);
  p.u32(W.flags, (a.rule.roundSf ? PER_TOKEN_FLAG.roundSf : 0) | (a.rule.packedUe8m0 ? PER_TOKEN_FLAG.packedUe8m0 : 0) | (a.rule.e4m3Sf ? PER_TOKEN_FLAG.e4m3Sf : 0));
  p.u32(W.x_sf_kind, xSf ? SF_KIND[xSf.lay.kind === "packed" ? "packedChannel" : xSf.lay.kind] : 0);
  p.u32(W.x_block_rows, xSf ? xSf.rows : 1);
  p.u32(W.x_block_cols, xSf ? xSf.cols : 1);
  p.f32(W.amax_clamp, a.rule.clamp);
  p.u32(W.op_id, OP_ID.perTokenCast);
  // `_g128_sr_wu12` (and `_g32_mxw` / `_g16_nvw`, the same warp units): ⌈T · upr / 8⌉ blocks of 8 warps for one pass (upr = ⌈(H / 8) / 128⌉ warp units a row), at most
  // 8 · SMs as the `_g<N>` kernels
  // `_g16_nvc`: units of 16 rows × 8 chunks (the same 128 chunks), ⌈T / 16⌉ · H / 64 of them, the same bound
  // `_psr4`: warp units of 128 chunks, warp-grid-stride, one persistent wave of the CTAs an SM holds
  const ringBlocks = perTokenLaunchTuning.precomputedRingBlocksPerSm || PS_RING_BOUND;
  const grid = ring !== 0
    ? Math.max(1, Math.min(Math.ceil((a.tokens * Math.ceil(a.hidden / 8 / (32 * ring))) / 8), ringBlocks * config.getNumSms(device)))
    : form === "nvc"
    ? Math.max(1, Math.min(Math.ceil((Math.ceil(a.tokens / 16) * (a.hidden / 64)) / 8), 8 * config.getNumSms(device)))
    : form === "wu12" || form === "mxw" || form === "nvw"
    ? Math.max(1, Math.min(Math.ceil((a.tokens * Math.ceil(a.hidden / 8 / WU_CHUNKS)) / 8), 8 * config.getNumSms(device)))
    : perTokenGrid(device, a.tokens, a.hidden, a.numPerChannels, r.x.dtype, mode === PER_TOKEN_MODE.sfOnly);
  // bf16 takes "pdl" / "pkl_pdl" only while config.pdl is set; fp16 always takes "pdl"
  const pdlLaunch = ring !== 0
    ? config.pdl && perTokenLaunchTuning.precomputedRingPdl
    : ((form === "pdl" || form === "pkl_pdl") && (r.x.dtype !== "fp16" || config.pdl)) ||
      (form === "wu12" && config.pdl);
  p.setLaunch(fn, stream.handle, grid, PT.threads, 0, pdlLaunch, device.index);
  p.launch(op);
}

/**
 * The function handle and the PDL flag of the launch header perTokenCast's family last sent (tests: which symbol
 * ran, and whether with the programmatic-stream-serialization attribute).
 */
export function perTokenLastLaunch(): { fn: number; pdl: boolean } {
  const u = new Uint32Array(packet.bytes.buffer, packet.bytes.byteOffset, 16);
  return { fn: u[0] + u[1] * 4294967296, pdl: (u[11] & 1) === 1 };
}

/** Bits per input element of each kernel input format. */
const IN_BITS: Record<string, number> = { fp32: 32, bf16: 16, e4m3: 8, e2m1x2: 4, fp16: 16 };

/**
 * grid.x of per_token_cast.cu's launch table: `_g<N>`: min(⌈T / R⌉, 8 · SMs) with V = min(128 / bits, N)
 * elements per thread chunk, w = min(8, nextPow2(⌈H / V / 32⌉)) warps per row and R = 8 / w rows per block;
 * `_row`: T. (Padding rows of a column-major sf are covered grid-stride by the same launch.)
 * sf only (perTokenCastWithSfOnly) from fp32 / bf16 (4 resident blocks per SM): one balanced wave instead,
 * ⌈G / n⌉ blocks with G = ⌈T / R⌉ and n = ⌈G / (4 · SMs)⌉, every block walking n or n − 1 row groups (8192 ×
 * 7168: 512 blocks of 16 rows against 1056 blocks of 7–8 in two waves), behind SF_ONLY_ONE_WAVE: off, because
 * it measured slower on the H200 (2026-11-30: 81.0 / 78.4% of copy at 16384 × 7168, fp32 / packed scales, against
 * 85.3 / 84.2% with the capped grid; bench/RESULTS.md, fifth run).
 */
const SF_ONLY_ONE_WAVE = false;

function perTokenGrid(device: Device, T: number, H: number, n: number, dtype: string, sfOnly = false): number {
  if (!(GROUPS as readonly number[]).includes(n)) return Math.max(1, T);
  const v = Math.min(128 / IN_BITS[dtype], n);
  const groups = Math.ceil(T / rowsPerBlock(H, v));
  if (sfOnly && SF_ONLY_ONE_WAVE && (dtype === "fp32" || dtype === "bf16")) {
    return Math.max(1, Math.ceil(groups / Math.ceil(groups / (4 * config.getNumSms(device)))));
  }
  return Math.max(1, Math.min(groups, 8 * config.getNumSms(device)));
}

/** Shape and strides (frozen, shared by every output of the same size) of the data output. */
interface DataGeometry {
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly dtype: "e4m3" | "e2m1x2";
  readonly storage: number;
}

function dataGeometry(a: PerTokenArgs): DataGeometry {
  const cols = a.rule.fmt === "e4m3" ? a.hidden : a.hidden / 2;
  return {
    shape: Object.freeze([a.tokens, cols]),
    strides: Object.freeze([cols, 1]),
    dtype: a.rule.fmt === "e4m3" ? "e4m3" : "e2m1x2",
    storage: a.tokens * cols,
  };
}

function allocData(op: string, device: Device, stream: Stream, d: DataGeometry): DeviceTensor {
  return deviceEmptyStrided(op, device, d.shape, d.strides, d.dtype, d.storage, stream);
}

function allocSf(op: string, device: Device, stream: Stream, g: SfGeometry): DeviceTensor {
  return deviceEmptyStrided(op, device, g.shape, g.strides, g.dtype, g.storage, stream);
}

function streamOf(p: Placement & { backend: "cuda" }, s: Stream | undefined): Stream {
  if (s && (s.device.kind !== p.device.kind || s.device.index !== p.device.index)) {
    throw new TkError("stream", "stream", "DEVICE_MISMATCH", `the stream belongs to ${s.device.kind}:${s.device.index}, the inputs to ${p.device.kind}:${p.device.index}`);
  }
  return s ?? deviceRuntime("stream").defaultStream(p.device);
}

/**
 * The generic `cast`'s fp16 → e4m3 [1, 128] form (ops/quant/cast_block_launch.ts, dedicatedForm's perToken16):
 * `tk_per_token_cast__fp16_e4m3_g128_pdl` (per_token_cast_gc23.cu) into `data` and `sf` (geometry `g`, the cast's own),
 * enqueued on `stream`, with the PDL attribute iff config.pdl. The caller has checked everything: a plain contiguous
 * fp16 `[T, H]` device input, `a.numPerChannels` 128, `H % 128 == 0`, e4m3 output.
 */
export function launchPerTokenCastForCast(
  op: string,
  device: Device,
  stream: Stream,
  x: Tensor,
  a: PerTokenArgs,
  g: SfGeometry,
  data: Tensor,
  sf: Tensor,
): void {
  launchPerToken(op, device, stream, { args: a, x, q: null, g }, g, PER_TOKEN_MODE.cast, data, sf, null);
}

// ---- public ops -------------------------------------------------------------------------------------------

/**
 * Quantizes each row of `x` in groups of `numPerChannels` channels: one scale per group (`amax / Qmax`, clamped
 * from below by `config.amaxClamp`), data = `encode(x · inv)` to FP8 E4M3 or FP4 E2M1 (spec/quant.md §2). `x` is
 * fp32/bf16 `[T, H]` (any row stride, `H % 64 == 0`), or an already-quantized `[data, sf]` with `xBlockSize`
 * (re-quantized in upstream 2.0's order). Returns `[data, sf]`; sf layout per the `SfOptions`.
 *
 * Device inputs run on their device (enqueued on `stream`); host inputs run the CPU reference unless
 * `backend` / `TK_BACKEND` says otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perTokenCast, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(2 * 128).map((_, i) => Math.sin(i)), [2, 128], "fp32");
 * const [data, sf] = perTokenCast(x, { fmt: "e4m3", numPerChannels: 128 });
 * assert.ok(data.dtype === "e4m3" && sf.shape[0] === 2 && sf.shape[1] === 1);
 * ```
 */
export function perTokenCast(x: Tensor | Quantized, options: PerTokenCastOptions): Quantized {
  const op = "perTokenCast";
  const m = replay;
  if (m !== null && replayable(m, x, options)) {
    const data = m.outData ?? allocData(op, m.device, m.streamObj, m.d);
    const sf = m.outSf ?? allocSf(op, m.device, m.streamObj, m.g);
    packet.u64(W.data, data.addr);
    packet.u64(W.sf, sf.addr);
    packet.launch(op);
    return [data, sf];
  }
  checkOptions(op, options, CAST_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerChannels are required");
  const r = resolveCast(op, x, options, true);
  const a = r.args;
  const out = options.out;
  if (out !== undefined && (typeof out !== "object" || out === null)) throw new TkError(op, "out", "VALUE", "expected { data?, sf? }");
  const inputs: Tensor[] = r.q ? [r.x, r.q.sf] : [r.x];
  const outData = out?.data !== undefined ? checkOutData(op, "out.data", out.data, a.rule.fmt, a.tokens, a.hidden) : null;
  const outSf = out?.sf !== undefined ? checkOutSf(op, "out.sf", out.sf, a, r.g) : null;
  if (outData) checkNoOverlap(op, "out.data", outData, inputs);
  if (outSf) checkNoOverlap(op, "out.sf", outSf, inputs);
  if (outData && outSf && overlaps(outData, outSf)) throw new TkError(op, "out.sf", "OUT_MISMATCH", "overlaps out.data");
  const sc = options.stochasticCast === true;
  const pl = place(op, options.backend, r.x, r.q?.sf, outData, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = streamOf(pl, options.stream);
    const dg = dataGeometry(a);
    const data = outData ?? allocData(op, pl.device, stream, dg);
    const sf = outSf ?? allocSf(op, pl.device, stream, r.g);
    const xSf = r.q ? { t: r.q.sf, lay: r.q.sfIn, rows: r.q.blockRows, cols: r.q.blockCols } : null;
    launchPerToken(op, pl.device, stream, r, r.g, PER_TOKEN_MODE.cast, data, sf, xSf, sc);
    if (a.tokens > 0) {
      const bs = options.xBlockSize;
      replay = {
        gen: packetGen,
        x: r.x,
        x1: r.q ? r.q.sf : null,
        opts: options,
        keys: keyCount(options),
        fmt: options.fmt,
        npc: options.numPerChannels,
        bs,
        bs0: bs?.[0],
        bs1: bs?.[1],
        tma: options.useTmaAlignedColMajorSf,
        round: options.roundSf,
        packed: options.usePackedUe8m0,
        e4m3: options.useE4m3Sf,
        sc: options.stochasticCast,
        out,
        outData: outData as DeviceTensor | null,
        outSf: outSf as DeviceTensor | null,
        backend: options.backend,
        stream: options.stream,
        clampKey: a.rule.e4m3Sf ? (a.rule.fmt === "e4m3" ? "e4m3/e4m3sf" : "e2m1/e4m3sf") : a.rule.fmt,
        clamp: a.rule.clamp,
        pdl: config.pdl,
        mxw: perTokenLaunchTuning.mxfp4Wide,
        nvw: perTokenLaunchTuning.nvfp4Wide,
        nvc: perTokenLaunchTuning.nvfp4ColTiles,
        device: pl.device,
        streamObj: stream,
        d: dg,
        g: r.g,
      };
    }
    return [data, sf];
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    const [d, s] = runOnDeviceStaged(op, pl.device, [r.x, r.q?.sf ?? null], [outData, outSf], ([dx, dsf]) =>
      perTokenCast(dsf ? [dx!, dsf] : dx!, local));
    return [d, s];
  }
  // CPU reference (device inputs with backend "cpu" are staged through the host).
  const hx = onHost(r.x) as HostTensor;
  const q: QuantizedInput | null = r.q
    ? { data: hx, sf: onHost(r.q.sf) as HostTensor, sfIn: r.q.sfIn, blockRows: r.q.blockRows, blockCols: r.q.blockCols }
    : null;
  const hostOut = pl.staged ? undefined : { data: (outData as HostTensor | null) ?? undefined, sf: (outSf as HostTensor | null) ?? undefined };
  const res = sc ? perTokenStochasticCastRef(q ?? hx, a, hostOut) : perTokenCastRef(q ?? hx, a, true, hostOut);
  if (!pl.staged) return [res.data!, res.sf];
  return [resultToDevice(op, res.data!, outData, pl.device!), resultToDevice(op, res.sf, outSf, pl.device!)];
}

/**
 * Computes only the scales of {@link perTokenCast} (bit-identical to its `sf` with the same options). Plain
 * fp32/bf16 input only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perTokenCastWithSfOnly, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(64).fill(896), [1, 64], "fp32");
 * const sf = perTokenCastWithSfOnly(x, { fmt: "e4m3", numPerChannels: 64 });
 * assert.ok((sf as { data: Float32Array }).data[0] === 2);
 * ```
 */
export function perTokenCastWithSfOnly(x: Tensor, options: PerTokenCastWithSfOnlyOptions): Tensor {
  const op = "perTokenCastWithSfOnly";
  checkOptions(op, options, SF_ONLY_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerChannels are required");
  const r = resolveCast(op, x, options as PerTokenCastOptions, false);
  const outSf = options.out !== undefined ? checkOutSf(op, "out", options.out, r.args, r.g) : null;
  if (outSf) checkNoOverlap(op, "out", outSf, [r.x]);
  const pl = place(op, options.backend, r.x, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = streamOf(pl, options.stream);
    const sf = outSf ?? allocSf(op, pl.device, stream, r.g);
    launchPerToken(op, pl.device, stream, r, r.g, PER_TOKEN_MODE.sfOnly, null, sf, null);
    return sf;
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    return runOnDeviceStaged(op, pl.device, [r.x], [outSf], ([dx]) => [perTokenCastWithSfOnly(dx!, local)])[0];
  }
  const hx = onHost(r.x) as HostTensor;
  const res = perTokenCastRef(hx, r.args, false, pl.staged ? undefined : { sf: (outSf as HostTensor | null) ?? undefined });
  return pl.staged ? resultToDevice(op, res.sf, outSf, pl.device!) : res.sf;
}

/**
 * Quantizes with caller-supplied scales: `inv = 1 / s` (binary32), data = `encode(x · inv)` (spec/quant.md
 * §2.5). `sf` is row-major `[T, ⌈H/N⌉]`, fp32 (e4m3 with `useE4m3Sf`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perTokenCastWithPrecomputedSf, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(64).fill(3), [1, 64], "fp32");
 * const sf = tensor([2], [1, 1], "fp32");
 * const data = perTokenCastWithPrecomputedSf(x, sf, { fmt: "e4m3", numPerChannels: 64 });
 * assert.ok((data as { data: Uint8Array }).data[0] === 0x3c); // 1.5
 * ```
 */
export function perTokenCastWithPrecomputedSf(x: Tensor, sf: Tensor, options: PerTokenCastWithPrecomputedSfOptions): Tensor {
  const op = "perTokenCastWithPrecomputedSf";
  checkOptions(op, options, PRE_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerChannels are required");
  const fmt = oneOf(op, "fmt", options.fmt, ["e4m3", "e2m1"] as const);
  const [T, H] = checkPlainX(op, x);
  const N = checkNumPerChannels(op, options.numPerChannels, H, true);
  const e4m3Sf = optBool(op, "useE4m3Sf", options.useE4m3Sf);
  optBool(op, "roundSf", options.roundSf);
  if (optBool(op, "usePackedUe8m0", options.usePackedUe8m0)) throw new TkError(op, "usePackedUe8m0", "VALUE", "a precomputed sf must be fp32 (or e4m3), not packed");
  if (optBool(op, "useTmaAlignedColMajorSf", options.useTmaAlignedColMajorSf)) throw new TkError(op, "useTmaAlignedColMajorSf", "VALUE", "a precomputed sf must be row-major");
  const s = checkTensor(op, "sf", sf, [e4m3Sf ? "e4m3" : "fp32"], 2);
  const nbk = Math.ceil(H / N);
  if (s.shape[0] !== T || s.shape[1] !== nbk) throw new TkError(op, "sf", "SHAPE", `expected shape [${T}, ${nbk}], got [${s.shape.join(", ")}]`);
  if (T > 0 && !((s.strides[1] === 1 || nbk === 1) && (s.strides[0] === nbk || T === 1))) {
    throw new TkError(op, "sf", "LAYOUT", `must be row-major (strides [${nbk}, 1]), got [${s.strides.join(", ")}]`);
  }
  const sfIn: SfInput = { kind: e4m3Sf ? "e4m3" : "fp32", s0: s.strides[0], s1: s.strides[1] };
  const out = options.out !== undefined ? checkOutData(op, "out", options.out, fmt, T, H) : null;
  if (out) checkNoOverlap(op, "out", out, [x, s]);
  const pl = place(op, options.backend, x, s, out);
  const args: PerTokenArgs = {
    tokens: T,
    hidden: H,
    numPerChannels: N,
    rule: { fmt, roundSf: false, packedUe8m0: false, e4m3Sf, clamp: amaxClampFor(fmt, e4m3Sf) },
    layout: { kind: e4m3Sf ? "e4m3" : "fp32", colMajor: false },
  };
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = streamOf(pl, options.stream);
    const data = out ?? allocData(op, pl.device, stream, dataGeometry(args));
    const g = sfGeometry(T, nbk, args.layout);
    launchPerToken(op, pl.device, stream, { args, x, q: null, g }, g, PER_TOKEN_MODE.precomputedSf, data, null, { t: s, lay: sfIn, rows: 1, cols: N });
    return data;
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    return runOnDeviceStaged(op, pl.device, [x, s], [out], ([dx, ds]) => [perTokenCastWithPrecomputedSf(dx!, ds!, local)])[0];
  }
  const hs = onHost(s) as HostTensor;
  const res = perTokenCastWithPrecomputedSfRef(onHost(x) as HostTensor, hs, { kind: sfIn.kind, s0: hs.strides[0], s1: hs.strides[1] }, fmt, H, N, pl.staged ? undefined : (out as HostTensor | null) ?? undefined);
  return pl.staged ? resultToDevice(op, res, out, pl.device!) : res;
}


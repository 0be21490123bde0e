/**
 * Per-channel casts: `perChannelCast`, `perChannelCastFused`, `perChannelCastAndTranspose` (spec/API.md §3.1;
 * numerics and legal arguments: spec/quant.md §5, §4.2-3, §11.1). Checks, then dispatch to the CPU reference
 * (`per_channel_cast.ref.ts`) or the CUDA kernels (`kernels-src/cuda/quant/per_channel_cast.cu`).
 * @module
 */
import { type OpOptions, place, type Placement } from "../../core/backend.ts";
import { config } from "../../core/config.ts";
import { checkContiguous, checkOptions, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost, runOnDeviceStaged } from "../../core/stage.ts";
import {
  type Device,
  type DeviceTensor,
  deviceEmptyStrided,
  deviceRuntime,
  type HostTensor,
  type Quantized,
  type Stream,
  type Tensor,
} from "../../core/tensor.ts";
import { errorWordPtr, kernelFunction, kernelFunctionWithSmem, LaunchPacket } from "../../ffi/cuda.ts";
import { registerOpId } from "../../ffi/op_ids.ts";
import { checkOutData, checkOutSf } from "./per_block_cast.ts";
import { PER_CHANNEL_COND, PER_CHANNEL_FLAG, PerChannelCastParams } from "./per_channel_cast.params.ts";
import { type PerChannelArgs, perChannelCastAndTransposeRef, perChannelCastFusedRef, perChannelCastRef } from "./per_channel_cast.ref.ts";
import { SF_KIND } from "./per_token_cast.params.ts";
import type { QuantizedInput } from "./per_token_cast.ref.ts";
import { amaxClampFor } from "./scale.ref.ts";
import { type SfGeometry, sfGeometry, sfInput } from "./sf_layout.ts";
import { checkSfOptions } from "./sf_options.ts";
import { tokenPackedGeometry } from "./sf_token_packed.ts";

/** Error-word ids of the per-channel kernels (ffi/op_ids.ts reserves 8–10). */
const OP = {
  perChannelCast: registerOpId(8, "perChannelCast", {}),
  perChannelCastFused: registerOpId(9, "perChannelCastFused", { [PER_CHANNEL_COND.posOutOfRange]: "posToToken entry not below the number of input tokens (row treated as zeros)" }),
  perChannelCastAndTranspose: registerOpId(10, "perChannelCastAndTranspose", {}),
} as const;

/** Options of {@link perChannelCast}. */
export interface PerChannelCastOptions extends OpOptions {
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Rows of one scale block: 32 or 128. */
  numPerTokens: number;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Channels per input scale of a quantized `[data, sf]` input (32 or 128); required iff `x` is quantized. */
  numPerChannels?: number;
  /** Store the scales as UE8M0 bytes packed four tokens per int32 (`[⌈T/r/4⌉, H]`); requires `roundSf`. */
  usePackedUe8m0?: boolean;
  /** Preallocated outputs: `data` contiguous e4m3 `[T, H]`; `sf` with exactly the layout the options select. */
  out?: { data?: Tensor; sf?: Tensor };
}

/** Options of {@link perChannelCastFused}. */
export interface PerChannelCastFusedOptions extends OpOptions {
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Rows of one scale block: 128 only. */
  numPerTokens: number;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Channels per input scale of a quantized input: 128; required iff `x` is quantized. */
  numPerChannels?: number;
  /** Row gather, int32 `[T_out]` contiguous: output row `p` is input row `posToToken[p]`, zeros when negative. */
  posToToken?: Tensor;
  /** Preallocated outputs: `data` contiguous e4m3 `[T_out, H]`; `sf` fp32 row-major `[⌈T_out/128⌉, H]`. */
  out?: { data?: Tensor; sf?: Tensor };
}

/** Options of {@link perChannelCastAndTranspose}. */
export interface PerChannelCastAndTransposeOptions extends OpOptions {
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Rows of one scale block: 32 or 128. */
  numPerTokens: number;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Preallocated outputs: `data` contiguous e4m3 `[H, T]`; `sf` fp32 row-major `[T/r, H]`. */
  out?: { data?: Tensor; sf?: Tensor };
}

const CAST_KEYS = ["fmt", "numPerTokens", "roundSf", "numPerChannels", "usePackedUe8m0"];
const FUSED_KEYS = ["fmt", "numPerTokens", "roundSf", "numPerChannels", "posToToken"];
const TRANSPOSE_KEYS = ["fmt", "numPerTokens", "roundSf"];

/** The checked input: plain tensor or quantized pair, with its logical `[T, H]`. */
interface Input {
  readonly x: Tensor;
  readonly q: { sf: Tensor; sfIn: QuantizedInput["sfIn"]; numPerChannels: number } | null;
  readonly T: number;
  readonly H: number;
}

/** A contiguous 2-D input of one of `dtypes`; returns its shape. */
function checkX(op: string, arg: string, x: unknown, dtypes: readonly ("fp32" | "bf16" | "e4m3")[]): [Tensor, number, number] {
  const t = checkTensor(op, arg, x, dtypes, 2);
  checkContiguous(op, arg, t);
  return [t, t.shape[0], t.shape[1]];
}

/** `x` of perChannelCast / perChannelCastFused: plain fp32/bf16, or `[e4m3 data, sf]` with `numPerChannels`. */
function checkInput(op: string, x: unknown, npc: unknown, allowed: readonly number[], fused: boolean): Input {
  if (!Array.isArray(x)) {
    if (npc !== undefined) throw new TkError(op, "numPerChannels", "VALUE", "is only for a quantized [data, sf] input");
    const [t, T, H] = checkX(op, "x", x, ["fp32", "bf16"]);
    return { x: t, q: null, T, H };
  }
  if (x.length !== 2) throw new TkError(op, "x", "VALUE", `a quantized input is [data, sf], got ${x.length} entries`);
  if (npc === undefined) throw new TkError(op, "numPerChannels", "VALUE", `is required for a quantized input (one of ${allowed.join(", ")})`);
  const N = oneOf(op, "numPerChannels", npc, allowed);
  const [t, T, H] = checkX(op, "x[0]", x[0], ["e4m3"]);
  if (H % N !== 0) throw new TkError(op, "x[0]", "SHAPE", `hidden size must be a multiple of numPerChannels ${N} (got ${H})`);
  const sf = checkTensor(op, "x[1]", x[1], fused ? ["fp32"] : ["fp32", "e4m3", "int32"], 2);
  const sfIn = sfInput(op, "x[1]", sf, T, H / N);
  if (fused && T > 1 && H / N > 1 && sfIn.s1 !== 1) throw new TkError(op, "x[1]", "LAYOUT", `must be row-major (strides [${H / N}, 1]), got [${sf.strides.join(", ")}]`);
  return { x: t, q: { sf, sfIn, numPerChannels: N }, T, H };
}

/** `out: {data?, sf?}` checked against the output geometry, overlapping no input and not each other. */
function checkOuts(op: string, out: unknown, dataShape: [number, number], g: SfGeometry, inputs: readonly Tensor[]): [Tensor | null, Tensor | null] {
  if (out === undefined) return [null, null];
  if (typeof out !== "object" || out === null) throw new TkError(op, "out", "VALUE", `expected { data?, sf? }, got ${describe(out)}`);
  const o = out as { data?: unknown; sf?: unknown };
  const d = o.data !== undefined ? checkOutData(op, "out.data", o.data, "e4m3", dataShape[0], dataShape[1], inputs) : null;
  const s = o.sf !== undefined ? checkOutSf(op, "out.sf", o.sf, g, inputs) : null;
  if (d && s && overlaps(d, s)) throw new TkError(op, "out.sf", "OUT_MISMATCH", "overlaps out.data");
  return [d, s];
}

function hostInput(i: Input): HostTensor | QuantizedInput {
  const hx = onHost(i.x) as HostTensor;
  if (!i.q) return hx;
  return { data: hx, sf: onHost(i.q.sf) as HostTensor, sfIn: i.q.sfIn, blockRows: 1, blockCols: i.q.numPerChannels };
}

// ---- CUDA launch ------------------------------------------------------------------------------------------

const packet = new LaunchPacket(PerChannelCastParams);
const W = packet.w;
const THREADS = 256;
const ELEMENT_BYTES: Record<string, number> = { fp32: 4, bf16: 2, e4m3: 1 };

/** What a launch reads and writes; `pos` is the gather of perChannelCastFused. */
interface Launch {
  readonly op: keyof typeof OP;
  readonly inp: Input;
  readonly pos: Tensor | null;
  readonly tOut: number;
  readonly r: number;
  readonly flags: number;
  readonly transpose: boolean;
}

function addr(t: Tensor | null | undefined): number {
  return t ? (t as DeviceTensor).addr : 0;
}

/**
 * grid.x of per_channel_cast.cu's launch table: one CTA per tile of R rows × C columns, C = V · 256 · N / R with
 * V = 16 bytes / input element (fp32 4, bf16 8, e4m3 16) and N rows per thread (fp32, bf16 8, e4m3 4).
 */
function perChannelGrid(tOut: number, H: number, r: number, dtype: string): number {
  const rowsPerThread = dtype === "e4m3" ? 4 : 8;
  const cols = ((16 / ELEMENT_BYTES[dtype]) * 256 * rowsPerThread) / r;
  return Math.ceil(tOut / r) * Math.ceil(H / cols);
}

/**
 * The kernel symbol of a launch (per_channel_cast.cu, "Forms"): bf16 with blocks of 128 rows runs `_rt` transposed
 * and `_pa` in perChannelCast (the forms that measured fastest on an H200); every other case (R = 32, fp32 and
 * e4m3 inputs, perChannelCastFused's gather) runs the base kernels.
 */
function kernelSymbol(l: Launch): string {
  const { op, r } = l;
  if (l.transpose) return `tk_per_channel_cast_and_transpose__bf16_r${r}${r === 128 ? "_rt" : ""}`;
  const dtype = l.inp.x.dtype;
  return `tk_per_channel_cast__${dtype}_r${r}${op === "perChannelCast" && dtype === "bf16" && r === 128 ? "_pa" : ""}`;
}

/**
 * Internal launch tuning of the per-channel casts, for A/B runs and tests (not part of the API).
 *
 * - `pipelinedE4m3` (default `"_pr"` since round 20, docs/perf-notes/perf20-pcf.md: 55.3 → 57.1% of copy at
 *   8192 × 7168, 56.8 → 60.3% at 16384 against `_pw`): perChannelCastFused of an e4m3 input (numPerChannels 128)
 *   runs `tk_per_channel_cast__e4m3_r128_pr` (per_channel_cast_pr20.cu: a persistent grid, 1 CTA of 1024 threads
 *   per SM, whose CTAs keep the next two 128 × 512 tiles' reads in flight through a 3-stage shared-memory ring, each
 *   CTA walking a contiguous run of tiles) when x's and data's addresses are multiples of 16 bytes. `""`: the base
 *   kernel `tk_per_channel_cast__e4m3_r128` (kept for A/B). Round 19's default `"_pw"`,
 *   `tk_per_channel_cast__e4m3_r128_pw` (the same ring with 128 × 256 tiles, 2 CTAs per SM, strided tile order;
 *   docs/perf-notes/perf19-pcf.md), left the package in trim24 (docs/branches/trim24-removed.patch); round 16's
 *   `_r128_sm` and its knob `stagedE4m3` in trim20 (docs/branches/trim20-removed.patch); round 20's `_px` (`_pr`'s
 *   tiles in `_pw`'s strided order) lost and was not kept.
 *   Otherwise (another op or format, an unaligned x or data) the base kernel.
 * - `pipelinedBf16` (default `"_rg"` since the twentieth run, docs/perf-notes/perf25-pcfb.md: the roofline's
 *   gathered case 80.9 → 86.3% of copy at 8192 × 7168, 85.8 → 87.7% at 16384, interleaved A/B; `""`: the base kernel):
 *   `"_rg"` runs perChannelCastFused of a bf16 input as `tk_per_channel_cast__bf16_r128_rg` (per_channel_cast_rg25.cu:
 *   the base kernel's 128 × 128 tiles and arithmetic in a persistent grid, 2 CTAs of 256 threads per SM, each thread
 *   keeping its next two tiles' rows in flight through a private 3-stage cp.async ring, packed bf16 amax) when x's and
 *   data's addresses are multiples of 16 bytes and H % 8 == 0, and the call gathers (posToToken) or `ringUngathered`
 *   is set; otherwise the base kernel.
 * - `ringUngathered` (default false since the twenty-first run): `_rg` also for calls without posToToken. Measured on
 *   the H200 (bench/pcfb25_tuning.ts `PCFB_GATHER=0`, Bun): base 86.5 / 84.9 / 88.4 / 90.2% against `_rg` 83.0 / 88.8 /
 *   86.2 / 86.8% of copy at 4096 / 8192 / 12288 / 16384 × 7168 (Deno, 8192 / 16384: 84.3 / 89.8 against 88.2 / 85.9):
 *   the ring wins only at 8192, so ungathered calls keep the base kernel.
 *
 * Same bytes in every case.
 */
export const perChannelLaunchTuning: { pipelinedE4m3: "" | "_pr"; pipelinedBf16: "" | "_rg"; ringUngathered: boolean } = {
  pipelinedE4m3: "_pr",
  pipelinedBf16: "_rg",
  ringUngathered: false,
};

/** The shared-memory carveout (percent) of `_pr` and `_rg`: their resident CTAs (1 × 216 KiB, 2 × 104.5 KiB dynamic) must fit. */
const PIPELINED_CARVEOUT = 100;

/**
 * per_channel_cast_pr20.cu's launch table: block threads, dynamic shared memory (bytes), resident CTAs per SM (the
 * persistent grid is that many per SM, at most one per tile) and tile columns.
 */
const PIPELINED = {
  _pr: { threads: 1024, smem: 221184, perSm: 1, cols: 512 },
} as const;

/** per_channel_cast_rg25.cu's launch table (as {@link PIPELINED}; tiles of 128 rows × 128 columns). */
const RING_GATHER = { threads: 256, smem: 107008, perSm: 2, cols: 128 } as const;

/**
 * Whether a launch may run `_rg`: perChannelCastFused of bf16, x and data 16-byte aligned, H % 8 == 0, gathered (or
 * {@link perChannelLaunchTuning}.ringUngathered set).
 */
function bf16Ringable(l: Launch, data: Tensor): boolean {
  return l.op === "perChannelCastFused" && !l.transpose && l.r === 128 && l.inp.x.dtype === "bf16" && l.inp.H % 8 === 0 &&
    addr(l.inp.x) % 16 === 0 && addr(data) % 16 === 0 && (l.pos !== null || perChannelLaunchTuning.ringUngathered);
}

/** Whether a launch may run `_pr`: perChannelCastFused of e4m3 with numPerChannels 128, x and data 16-byte aligned. */
function e4m3Pipelinable(l: Launch, data: Tensor): boolean {
  return l.op === "perChannelCastFused" && !l.transpose && l.r === 128 && l.inp.x.dtype === "e4m3" &&
    l.inp.q?.numPerChannels === 128 && addr(l.inp.x) % 16 === 0 && addr(data) % 16 === 0;
}

let lastSymbol = "";
/** The kernel symbol of this module's last launch (tests check which form ran). */
export function perChannelLastSymbol(): string {
  return lastSymbol;
}

function launchPerChannel(device: Device, stream: Stream, l: Launch, data: Tensor, sf: Tensor): void {
  const { inp, tOut, r } = l;
  if (tOut === 0 || inp.H === 0) return;
  const eligible = e4m3Pipelinable(l, data);
  const ring = perChannelLaunchTuning.pipelinedBf16 !== "" && bf16Ringable(l, data);
  const pipelined = ring ? RING_GATHER : eligible && perChannelLaunchTuning.pipelinedE4m3 !== "" ? PIPELINED[perChannelLaunchTuning.pipelinedE4m3] : null;
  const sym = ring
    ? `tk_per_channel_cast__bf16_r128${perChannelLaunchTuning.pipelinedBf16}`
    : pipelined
    ? `tk_per_channel_cast__e4m3_r128${perChannelLaunchTuning.pipelinedE4m3}`
    : kernelSymbol(l);
  const fn = pipelined ? kernelFunctionWithSmem(l.op, device, sym, pipelined.smem, PIPELINED_CARVEOUT) : kernelFunction(l.op, device, sym);
  lastSymbol = sym;
  const p = packet;
  const q = inp.q;
  p.u64(W.x, addr(inp.x));
  p.u64(W.x_sf, addr(q?.sf));
  p.u64(W.pos_to_token, addr(l.pos));
  p.u64(W.data, addr(data));
  p.u64(W.sf, addr(sf));
  p.u64(W.error_word, errorWordPtr(l.op, device));
  p.u64(W.x_sf_stride0, q ? q.sfIn.s0 : 0);
  p.u64(W.x_sf_stride1, q ? q.sfIn.s1 : 0);
  p.u64(W.sf_stride0, sf.strides[0]);
  p.u32(W.num_tokens, inp.T);
  p.u32(W.out_tokens, tOut);
  p.u32(W.hidden, inp.H);
  p.u32(W.num_per_channels, q ? q.numPerChannels : 1);
  p.u32(W.x_sf_kind, q ? SF_KIND[q.sfIn.kind === "packed" ? "packedChannel" : q.sfIn.kind] : 0);
  p.u32(W.flags, l.flags);
  p.f32(W.amax_clamp, amaxClampFor("e4m3", false));
  p.u32(W.op_id, OP[l.op]);
  if (pipelined) {
    const tiles = Math.ceil(tOut / 128) * Math.ceil(inp.H / pipelined.cols);
    const grid = Math.min(tiles, pipelined.perSm * config.getNumSms(device));
    p.setLaunch(fn, stream.handle, grid, pipelined.threads, pipelined.smem, false, device.index);
  } else {
    p.setLaunch(fn, stream.handle, perChannelGrid(tOut, inp.H, r, inp.x.dtype), THREADS, 0, false, device.index);
  }
  p.launch(l.op);
}

/** Device run: outputs (given or new, stream-ordered on `stream`), then the launch (none for 0 rows). */
function runOnDevice(pl: Placement & { backend: "cuda" }, options: OpOptions, l: Launch, dataShape: [number, number], g: SfGeometry, outData: Tensor | null, outSf: Tensor | null): Quantized {
  const stream = options.stream ?? deviceRuntime(l.op).defaultStream(pl.device);
  const [rows, cols] = dataShape;
  const data = outData ?? deviceEmptyStrided(l.op, pl.device, dataShape, [cols, 1], "e4m3", rows * cols, stream);
  const sf = outSf ?? deviceEmptyStrided(l.op, pl.device, g.shape, g.strides, g.dtype, g.storage, stream);
  launchPerChannel(pl.device, stream, l, data, sf);
  return [data, sf];
}

function flagsOf(roundSf: boolean, packed: boolean): number {
  return (roundSf ? PER_CHANNEL_FLAG.roundSf : 0) | (packed ? PER_CHANNEL_FLAG.packedUe8m0 : 0);
}

/** Host inputs on a forced device backend: the same call on device copies, results copied back. */
function staged(op: string, pl: Placement & { backend: "cuda" }, inputs: (Tensor | null)[], outData: Tensor | null, outSf: Tensor | null, run: (d: (DeviceTensor | null)[]) => Quantized): Quantized {
  const [d, s] = runOnDeviceStaged(op, pl.device, inputs, [outData, outSf], (ds) => run(ds));
  return [d, s];
}

/**
 * Quantizes `x` to FP8 E4M3 with one scale per column and block of `numPerTokens` (32 or 128) rows
 * (spec/quant.md §5.1): `amax` over the block's rows of one column, `(sf, inv)` as for every cast (§2.3), data =
 * `encode(x · inv)`. `x` is fp32/bf16 `[T, H]` contiguous with `T` and `H` multiples of 128, or an e4m3
 * `[data, sf]` pair with per-token scales of `numPerChannels` (32 or 128) channels, dequantized first. Returns
 * `[data e4m3 [T, H], sf]`, sf fp32 `[T/r, H]`, or with `usePackedUe8m0` (and `roundSf`) UE8M0 bytes packed four
 * tokens per int32, `[⌈T/r/4⌉, H]` (§4.2-3).
 *
 * Device inputs run the CUDA kernel on their device (enqueued on `stream`); host inputs run the CPU reference
 * unless `backend` / `TK_BACKEND` says otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perChannelCast, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(256 * 128).map((_, i) => (i < 128 * 128 ? 896 : 448)), [256, 128], "fp32");
 * const [data, sf] = perChannelCast(x, { fmt: "e4m3", numPerTokens: 128 }) as [{ data: Uint8Array }, { data: Float32Array }];
 * assert.deepEqual([sf.data[0], sf.data[128], data.data[0]], [2, 1, 0x7e]); // scales 896/448 and 448/448; code of 448
 * ```
 */
export function perChannelCast(x: Tensor | Quantized, options: PerChannelCastOptions): Quantized {
  const op = "perChannelCast";
  checkOptions(op, options, CAST_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerTokens are required");
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  const r = oneOf(op, "numPerTokens", options.numPerTokens, [32, 128]);
  const { roundSf, packed } = checkSfOptions(op, options);
  const inp = checkInput(op, x, options.numPerChannels, [32, 128], false);
  const argX = inp.q ? "x[0]" : "x";
  if (inp.T % 128 !== 0) throw new TkError(op, argX, "SHAPE", `number of tokens must be a multiple of 128 (got ${inp.T})`);
  if (inp.H % 128 !== 0) throw new TkError(op, argX, "SHAPE", `hidden size must be a multiple of 128 (got ${inp.H})`);
  const nbm = inp.T / r;
  const g = packed ? tokenPackedGeometry(nbm, inp.H) : sfGeometry(nbm, inp.H, { kind: "fp32", colMajor: false });
  const inputs = inp.q ? [inp.x, inp.q.sf] : [inp.x];
  const [outData, outSf] = checkOuts(op, options.out, [inp.T, inp.H], g, inputs);
  const pl = place(op, options.backend, inp.x, inp.q?.sf, outData, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    return runOnDevice(pl, options, { op, inp, pos: null, tOut: inp.T, r, flags: flagsOf(roundSf, packed), transpose: false }, [inp.T, inp.H], g, outData, outSf);
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    return staged(op, pl, [inp.x, inp.q?.sf ?? null], outData, outSf, ([dx, dsf]) => perChannelCast(dsf ? [dx!, dsf] : dx!, local));
  }
  const a: PerChannelArgs = { tokens: inp.T, hidden: inp.H, numPerTokens: r, rule: { fmt: "e4m3", roundSf, packedUe8m0: packed, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) } };
  const res = perChannelCastRef(hostInput(inp), a);
  return [deliverHostResult(op, res.data, outData, pl), deliverHostResult(op, res.sf, outSf, pl)];
}

/**
 * {@link perChannelCast} with blocks of 128 rows, fused with an optional row gather (spec/quant.md §5.2):
 * output row `p` is input row `posToToken[p]` (int32 `[T_out]`, `T_out % 16 == 0`), or a zero row when the index
 * is negative; zero rows take part in the amax and give code 0. The last block may be partial: its amax covers
 * only the real rows. `x` is fp32/bf16 `[T, H]` contiguous (`T % 128 == 0` without gather), or an e4m3 pair
 * with fp32 row-major per-token scales `[T, H/128]`. Returns `[data e4m3 [T_out, H], sf fp32 [⌈T_out/128⌉, H]]`.
 *
 * An index `posToToken[p] ≥ T` breaks the caller contract (§11.2): the CPU reference throws `DEVICE_VALUE`; the
 * kernel reads nothing for it, writes that row as zeros and the next sync throws `DEVICE_VALUE` (DESIGN §6).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perChannelCastFused, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(128 * 64).fill(-896), [128, 64], "fp32");
 * const posToToken = tensor(new Int32Array(16).map((_, i) => (i % 2 ? -1 : i)), [16], "int32");
 * const [data, sf] = perChannelCastFused(x, { fmt: "e4m3", numPerTokens: 128, posToToken }) as [{ data: Uint8Array }, { data: Float32Array }];
 * assert.deepEqual([data.data[0], data.data[64], sf.data[0]], [0xfe, 0x00, 2]); // -448, a zero row, scale 2
 * ```
 */
export function perChannelCastFused(x: Tensor | Quantized, options: PerChannelCastFusedOptions): Quantized {
  const op = "perChannelCastFused";
  checkOptions(op, options, FUSED_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerTokens are required");
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  oneOf(op, "numPerTokens", options.numPerTokens, [128]);
  const roundSf = optBool(op, "roundSf", options.roundSf);
  const inp = checkInput(op, x, options.numPerChannels, [128], true);
  const argX = inp.q ? "x[0]" : "x";
  let tOut = inp.T;
  let pos: Tensor | null = null;
  if (options.posToToken !== undefined) {
    pos = checkTensor(op, "posToToken", options.posToToken, ["int32"], 1);
    checkContiguous(op, "posToToken", pos);
    tOut = pos.shape[0];
    if (tOut % 16 !== 0) throw new TkError(op, "posToToken", "SHAPE", `length (output tokens) must be a multiple of 16 (got ${tOut})`);
  } else if (inp.T % 128 !== 0) {
    throw new TkError(op, argX, "SHAPE", `number of tokens must be a multiple of 128 without posToToken (got ${inp.T})`);
  }
  const g = sfGeometry(Math.ceil(tOut / 128), inp.H, { kind: "fp32", colMajor: false });
  const inputs = [inp.x, ...(inp.q ? [inp.q.sf] : []), ...(pos ? [pos] : [])];
  const [outData, outSf] = checkOuts(op, options.out, [tOut, inp.H], g, inputs);
  const pl = place(op, options.backend, inp.x, inp.q?.sf ?? pos, outData, outSf);
  if (inp.q && pos) place(op, options.backend, inp.x, pos);
  if (pl.backend === "cuda" && !pl.staged) {
    return runOnDevice(pl, options, { op, inp, pos, tOut, r: 128, flags: flagsOf(roundSf, false), transpose: false }, [tOut, inp.H], g, outData, outSf);
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    return staged(op, pl, [inp.x, inp.q?.sf ?? null, pos], outData, outSf, ([dx, dsf, dpos]) =>
      perChannelCastFused(dsf ? [dx!, dsf] : dx!, { ...local, posToToken: dpos ?? undefined }));
  }
  const a: PerChannelArgs = { tokens: inp.T, hidden: inp.H, numPerTokens: 128, rule: { fmt: "e4m3", roundSf, packedUe8m0: false, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) } };
  const res = perChannelCastFusedRef(op, hostInput(inp), onHost(pos) as HostTensor | null, a);
  return [deliverHostResult(op, res.data, outData, pl), deliverHostResult(op, res.sf, outSf, pl)];
}

/**
 * The per-channel cast of a bf16 `[T, H]` input (spec/quant.md §5.3; numerics of §5.1) with the data written
 * transposed: `data` e4m3 `[H, T]` with `data[k][t]` the code of `x[t][k]`; sf fp32 `[T/r, H]` row-major, not
 * transposed. `T % 128 == 0`, `H % 64 == 0`, `numPerTokens` 32 or 128.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perChannelCastAndTranspose, tensor } from "../../mod.ts";
 * const x = tensor(new Uint16Array(128 * 64).fill(0x4000), [128, 64], "bf16"); // all 2.0
 * const [data, sf] = perChannelCastAndTranspose(x, { fmt: "e4m3", numPerTokens: 32, roundSf: true });
 * assert.deepEqual([data.shape, sf.shape], [[64, 128], [4, 64]]);
 * ```
 */
export function perChannelCastAndTranspose(x: Tensor, options: PerChannelCastAndTransposeOptions): Quantized {
  const op = "perChannelCastAndTranspose";
  checkOptions(op, options, TRANSPOSE_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerTokens are required");
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  const r = oneOf(op, "numPerTokens", options.numPerTokens, [32, 128]);
  const roundSf = optBool(op, "roundSf", options.roundSf);
  if (Array.isArray(x)) throw new TkError(op, "x", "VALUE", "takes a plain bf16 tensor, not a quantized pair");
  const [t, T, H] = checkX(op, "x", x, ["bf16"]);
  if (T % 128 !== 0) throw new TkError(op, "x", "SHAPE", `number of tokens must be a multiple of 128 (got ${T})`);
  if (H % 64 !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a multiple of 64 (got ${H})`);
  const g = sfGeometry(T / r, H, { kind: "fp32", colMajor: false });
  const [outData, outSf] = checkOuts(op, options.out, [H, T], g, [t]);
  const pl = place(op, options.backend, t, outData, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    const inp: Input = { x: t, q: null, T, H };
    return runOnDevice(pl, options, { op, inp, pos: null, tOut: T, r, flags: flagsOf(roundSf, false), transpose: true }, [H, T], g, outData, outSf);
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    return staged(op, pl, [t], outData, outSf, ([dx]) => perChannelCastAndTranspose(dx!, local));
  }
  const a: PerChannelArgs = { tokens: T, hidden: H, numPerTokens: r, rule: { fmt: "e4m3", roundSf, packedUe8m0: false, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) } };
  const res = perChannelCastAndTransposeRef(onHost(t) as HostTensor, a);
  return [deliverHostResult(op, res.data, outData, pl), deliverHostResult(op, res.sf, outSf, pl)];
}

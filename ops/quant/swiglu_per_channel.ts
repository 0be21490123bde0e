/**
 * `swigluForwardAndPerChannelCastAndTranspose` (spec/API.md §3.1; numerics spec/quant.md §8.6, 1.0 semantics):
 * checks, then the CPU reference (`swiglu_per_channel.ref.ts`) or the CUDA kernels
 * (`kernels-src/cuda/swiglu/swiglu_per_channel.cu`).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkContiguous, checkOptions, checkTensor, oneOf, optBool } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost, runOnDeviceStaged } from "../../core/stage.ts";
import { type Device, type DeviceTensor, deviceEmptyStrided, type HostTensor, type Quantized, type Stream, type Tensor } from "../../core/tensor.ts";
import { deviceState, kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { amaxClampFor } from "./scale.ref.ts";
import { optNumber } from "./swiglu.ts";
import { callStream } from "./swiglu_launch.ts";
import { SWIGLU_PER_CHANNEL_FLAG, SwigluPerChannelParams } from "./swiglu_per_channel.params.ts";
import { swigluForwardAndPerChannelCastAndTransposeRef } from "./swiglu_per_channel.ref.ts";

/** Options of {@link swigluForwardAndPerChannelCastAndTranspose}. */
export interface SwigluForwardAndPerChannelCastAndTransposeOptions extends OpOptions {
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Rows of one scale block: 32 or 128. */
  numPerTokens: 32 | 128;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Write the data `[T, H]` instead of transposed `[H, T]`. Default false. */
  withoutTranspose?: boolean;
  /** Clamp `c`: gate ≤ c, |up| ≤ c (binary32 of the number). */
  clampValue?: number;
}

const KEYS = ["fmt", "numPerTokens", "roundSf", "withoutTranspose", "clampValue"];

/**
 * SwiGLU forward fused with a per-channel e4m3 cast (spec/quant.md §8.6): `x` bf16 `[T, 2H]` contiguous (gate left,
 * up right; `T % 128 == 0`, `H % 64 == 0`), activation `(g / (1 + expf(−g))) · u` with the optional clamp, rounded
 * to bf16, then cast per block of `numPerTokens` rows × 1 column (amax, scale and codes of §5.1). Returns
 * `[data, sf]`: data e4m3 `[H, T]` (`data[j][t]`), or `[T, H]` with `withoutTranspose`; sf fp32 `[T / r, H]`.
 * Device inputs run the CUDA kernel on their device (enqueued on `stream`); host inputs run the CPU reference
 * unless `backend` / `TK_BACKEND` says otherwise. The op allocates its outputs (`out` is not accepted).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tensor } from "../../mod.ts";
 * import { swigluForwardAndPerChannelCastAndTranspose } from "./swiglu_per_channel.ts";
 * const x = tensor(new Uint16Array(128 * 128), [128, 128], "bf16"); // g = u = 0
 * const [data, sf] = swigluForwardAndPerChannelCastAndTranspose(x, { fmt: "e4m3", numPerTokens: 32 });
 * assert.deepEqual([data.shape, sf.shape], [[64, 128], [4, 64]]);
 * ```
 */
export function swigluForwardAndPerChannelCastAndTranspose(x: Tensor, options: SwigluForwardAndPerChannelCastAndTransposeOptions): Quantized {
  const op = "swigluForwardAndPerChannelCastAndTranspose";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerTokens are required");
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  if ((options as { out?: unknown }).out !== undefined) throw new TkError(op, "out", "VALUE", "is not supported: the op allocates its outputs");
  const r = oneOf(op, "numPerTokens", options.numPerTokens, [32, 128] as const);
  const roundSf = optBool(op, "roundSf", options.roundSf);
  const withoutTranspose = optBool(op, "withoutTranspose", options.withoutTranspose);
  const clampValue = optNumber(op, "clampValue", options.clampValue);
  const xt = checkTensor(op, "x", x, ["bf16"], 2);
  checkContiguous(op, "x", xt);
  const [T, H2] = xt.shape;
  if (T % 128 !== 0) throw new TkError(op, "x", "SHAPE", `number of tokens must be a multiple of 128 (got ${T})`);
  if (H2 % 128 !== 0) throw new TkError(op, "x", "SHAPE", `last dimension must be 2H with H % 64 == 0 (got ${H2})`);
  const H = H2 / 2;
  const pl = place(op, options.backend, xt);
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = callStream(op, pl.device, options.stream);
    const data = deviceEmptyStrided(op, pl.device, withoutTranspose ? [T, H] : [H, T], withoutTranspose ? [H, 1] : [T, 1], "e4m3", T * H, stream);
    const sf = deviceEmptyStrided(op, pl.device, [T / r, H], [H, 1], "fp32", (T / r) * H, stream);
    launch(pl.device, stream, { x: xt, data, sf, T, H, r, roundSf, withoutTranspose, clampValue });
    return [data, sf];
  }
  if (pl.backend === "cuda") {
    // Host input on a forced device backend: the same call on a device copy, results copied back.
    const local = { ...options, backend: "auto", stream: undefined } as const;
    const [d, s] = runOnDeviceStaged(op, pl.device, [xt], [null, null], ([dx]) => swigluForwardAndPerChannelCastAndTranspose(dx!, local));
    return [d, s];
  }
  const cast = { tokens: T, hidden: H, numPerTokens: r, rule: { fmt: "e4m3" as const, roundSf, packedUe8m0: false, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) } };
  const res = swigluForwardAndPerChannelCastAndTransposeRef(op, onHost(xt) as HostTensor, { tokens: T, hidden: H, clampValue, withoutTranspose, cast });
  return [deliverHostResult(op, res.data, null, pl), deliverHostResult(op, res.sf, null, pl)];
}

// ---- CUDA launch ------------------------------------------------------------------------------------------

const OP = "swigluForwardAndPerChannelCastAndTranspose";
const packet = new LaunchPacket(SwigluPerChannelParams);
const W = packet.w;
const THREADS = 256;
/**
 * CTAs per SM of the persistent grid: a whole number of waves both where the kernels hold 4 CTAs per SM (sm_90a)
 * and where they hold 3 (sm_100a), see swiglu_per_channel.cu's launch table.
 */
const GRID_CTAS_PER_SM = 12;

/** One launch: device tensors and the checked options. */
interface Launch {
  readonly x: Tensor;
  readonly data: Tensor;
  readonly sf: Tensor;
  readonly T: number;
  readonly H: number;
  readonly r: number;
  readonly roundSf: boolean;
  readonly withoutTranspose: boolean;
  readonly clampValue: number | null;
}

/**
 * Kernel choices of {@link swigluForwardAndPerChannelCastAndTranspose} (host-side only; the bytes are the same).
 *
 * - `alignedNoClamp` (round 32, default true since its A/B; docs/perf-notes/perf32-spc.md): runs `tk_swiglu_per_channel_cast__bf16_an`
 *   (swiglu_per_channel.cu, section "`_an`": main's geometry and arithmetic for aligned views without a clamp, with
 *   R and the layout taken from flags, packed bf16 column maxima pre-reduced in the warp) when there is no
 *   clampValue and x's and data's addresses are multiples of 16 bytes; otherwise main's kernel of the layout and R.
 *   Interleaved A/B on the H200 (bench/spc32_tuning.ts, twenty-second run, % of copy, × 7168, `_an` on main's grid):
 *   [H, T] 128 tokens a scale 8192 65.9 → 74.3, 16384 69.8 → 77.6; [H, T] 32 66.5 → 73.0, 69.8 → 75.3; [T, H] 128
 *   67.4 → 78.0, 71.5 → 81.1.
 * - `anGrid`: the grid of `_an`. `"main"` (default): main's 12 · SMs, which won the A/B by 0.4–1.4 points in every
 *   case; `"wave"`: one wave of resident CTAs, 4 per SM on sm_90 and 3 on sm_100, so each SM's slots copy the
 *   34 KiB silu table once instead of three or four times (kept for A/B).
 */
export const swigluPerChannelLaunchTuning: { alignedNoClamp: boolean; anGrid: "wave" | "main" } = {
  alignedNoClamp: true,
  anGrid: "main",
};

/** Resident CTAs per SM of `_an` (swiglu_per_channel.cu's kMinBlocks: ≤ 64 registers on sm_90, ≤ 80 on sm_100). */
function anResidentPerSm(device: Device): number {
  return deviceState(OP, device).cc >= 100 ? 3 : 4;
}

let lastSymbol = "";
/** The kernel symbol of this op's last launch (tests check which form ran). */
export function swigluPerChannelLastSymbol(): string {
  return lastSymbol;
}

/** Whether a launch may run `_an`: the knob is on, no clamp, x and data 16-byte aligned. */
function anEligible(a: Launch): boolean {
  return swigluPerChannelLaunchTuning.alignedNoClamp && a.clampValue === null && (a.x as DeviceTensor).addr % 16 === 0 &&
    (a.data as DeviceTensor).addr % 16 === 0;
}

/**
 * Enqueues the kernel of swiglu_per_channel.cu's launch table: a persistent grid of min(tiles, 12 · SMs) CTAs (`_an`
 * with `anGrid: "wave"`: min(tiles, resident CTAs per SM · SMs)) over tiles of R rows × C columns, C = 8 · 1024 / R.
 * 0 rows or 0 columns launch nothing.
 */
function launch(device: Device, stream: Stream, a: Launch): void {
  if (a.T === 0 || a.H === 0) return;
  const an = anEligible(a);
  const sym = an
    ? "tk_swiglu_per_channel_cast__bf16_an"
    : a.withoutTranspose
    ? `tk_swiglu_per_channel_cast__bf16_r${a.r}`
    : `tk_swiglu_per_channel_cast_and_transpose__bf16_r${a.r}`;
  const fn = kernelFunction(OP, device, sym);
  lastSymbol = sym;
  const p = packet;
  p.u64(W.x, (a.x as DeviceTensor).addr);
  p.u64(W.data, (a.data as DeviceTensor).addr);
  p.u64(W.sf, (a.sf as DeviceTensor).addr);
  p.u32(W.num_tokens, a.T);
  p.u32(W.hidden, a.H);
  const F = SWIGLU_PER_CHANNEL_FLAG;
  const anFlags = an ? (a.r === 32 ? F.rows32 : 0) | (a.withoutTranspose ? 0 : F.transposed) : 0;
  p.u32(W.flags, (a.roundSf ? F.roundSf : 0) | (a.clampValue !== null ? F.clamp : 0) | anFlags);
  p.f32(W.clamp, a.clampValue ?? 0);
  p.f32(W.amax_clamp, amaxClampFor("e4m3", false));
  const tiles = (a.T / a.r) * Math.ceil(a.H / ((8 * 1024) / a.r));
  const perSm = an && swigluPerChannelLaunchTuning.anGrid === "wave" ? anResidentPerSm(device) : GRID_CTAS_PER_SM;
  p.setLaunch(fn, stream.handle, Math.max(1, Math.min(tiles, perSm * config.getNumSms(device))), THREADS, 0, false, device.index);
  p.launch(OP);
}

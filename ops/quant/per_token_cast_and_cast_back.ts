/**
 * `perTokenCastAndCastBack` — simulated per-token quantization, in place (spec/API.md §3.1; numerics and legal
 * arguments: spec/quant.md §2.5, §11.1). Checks, then dispatch to the CPU reference
 * (`per_token_cast_and_cast_back.ref.ts`) or the fused CUDA kernel
 * (`kernels-src/cuda/quant/per_token_cast_and_cast_back.cu`: the row is read once and written once).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkOptions, checkTensor, oneOf, optBool } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { config } from "../../core/config.ts";
import { copyInto, onHost, writeBackSpan } from "../../core/stage.ts";
import { type Device, DeviceTensor, HostTensor, type Stream, type Tensor, toDevice } from "../../core/tensor.ts";
import { kernelFunction, LaunchPacket, rowsPerBlock } from "../../ffi/cuda.ts";
import { CastAndCastBackParams } from "./elem.params.ts";
import { streamFor } from "./elem_launch.ts";
import { PER_TOKEN_FLAG } from "./per_token_cast.params.ts";
import type { PerTokenArgs } from "./per_token_cast.ref.ts";
import { perTokenCastAndCastBackRef } from "./per_token_cast_and_cast_back.ref.ts";
import { amaxClampFor, type QuantFmt } from "./scale.ref.ts";

/** Options of {@link perTokenCastAndCastBack}. */
export interface PerTokenCastAndCastBackOptions extends OpOptions {
  /** Format of the simulated quantization: FP8 E4M3 or FP4 E2M1. */
  fmt: QuantFmt;
  /** Channels per scale: 16, 32, 64 or 128 (`H` must be a multiple of it). */
  numPerChannels: number;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Use e4m3-rounded scales (NVFP4-style); not with `roundSf`. Default false. */
  useE4m3Sf?: boolean;
}

const KEYS = ["fmt", "numPerChannels", "roundSf", "useE4m3Sf"];

/**
 * Quantizes each row of `x` per group of `numPerChannels` channels exactly as {@link perTokenCast} (RN), then
 * dequantizes (`decode(q) · s` in binary32, then x's dtype) and writes the result back into `x` (spec/quant.md
 * §2.5). `x` is fp32/bf16 `[T, H]` with last stride 1 and any row stride, `H % 64 == 0`, `H % numPerChannels == 0`.
 * Returns `x`.
 *
 * Host inputs run the CPU reference (or the device with `backend: "cuda"`); device inputs run the CUDA kernel on
 * `options.stream`, in place.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perTokenCastAndCastBack, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(64).map((_, i) => i === 0 ? 448 : 1.03), [1, 64], "fp32");
 * perTokenCastAndCastBack(x, { fmt: "e4m3", numPerChannels: 64 });
 * assert.ok((x.data as Float32Array)[0] === 448 && (x.data as Float32Array)[1] === 1);
 * ```
 */
export function perTokenCastAndCastBack(x: Tensor, options: PerTokenCastAndCastBackOptions): Tensor {
  const op = "perTokenCastAndCastBack";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerChannels are required");
  if ((options as { out?: unknown }).out !== undefined) throw new TkError(op, "out", "VALUE", "the op writes x in place and takes no out");
  const fmt = oneOf(op, "fmt", options.fmt, ["e4m3", "e2m1"] as const);
  const roundSf = optBool(op, "roundSf", options.roundSf);
  const e4m3Sf = optBool(op, "useE4m3Sf", options.useE4m3Sf);
  if (roundSf && e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "cannot be combined with roundSf");
  const t = checkTensor(op, "x", x, ["fp32", "bf16"], 2);
  const [T, H] = t.shape;
  if (H % 64 !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a multiple of 64 (got ${H})`);
  if (T > 0 && H > 1 && t.strides[1] !== 1) throw new TkError(op, "x", "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${t.strides[1]}`);
  if (T > 1 && t.strides[0] < H) throw new TkError(op, "x", "LAYOUT", `row stride must be ≥ ${H}, got ${t.strides[0]}`);
  const N = oneOf(op, "numPerChannels", options.numPerChannels, [16, 32, 64, 128]);
  if (H % N !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a multiple of numPerChannels ${N} (got ${H})`);
  const pl = place(op, options.backend, t);
  if (pl.backend === "cuda" && !pl.staged) {
    launchCastAndCastBack(op, pl.device, streamFor(op, pl.device, options.stream), t, fmt, N, roundSf, e4m3Sf);
    return t;
  }
  if (pl.backend === "cuda") {
    // host x on a device backend: run on a copy of the view's storage span, then write the span back
    const h = t as HostTensor;
    const span = uploadSpan(h, pl.device);
    try {
      const local = { fmt, numPerChannels: N, roundSf, useE4m3Sf: e4m3Sf } as const;
      perTokenCastAndCastBack(span, local);
      const back = onHost(span) as HostTensor;
      copyInto(op, h, back);
    } finally {
      span.dispose();
    }
    return t;
  }
  const args: PerTokenArgs = {
    tokens: T,
    hidden: H,
    numPerChannels: N,
    rule: { fmt, roundSf, packedUe8m0: false, e4m3Sf, clamp: amaxClampFor(fmt, e4m3Sf) },
    layout: { kind: e4m3Sf ? "e4m3" : "fp32", colMajor: false },
  };
  const h = perTokenCastAndCastBackRef(onHost(t) as HostTensor, args);
  if (pl.staged) writeBackSpan(op, t as DeviceTensor, h);
  return t;
}

const packet = new LaunchPacket(CastAndCastBackParams);
const W = packet.w;
const THREADS = 256;
/** Block of the `_r1` form: one row per block, chunks t and t + 512 per thread (per_token_cast_and_cast_back.cu). */
const R1_THREADS = 512;
/** Largest H the `_r1` form takes: 2 chunks of 8 bf16 per thread of 512. */
const R1_MAX_HIDDEN = 2 * R1_THREADS * 8;

/**
 * Whether this launch takes `tk_per_token_cast_and_cast_back__bf16_e4m3_g128_r1` (one row per 512-thread block, the
 * row in registers, 16-byte accesses compiled in, grid = rows; launched with the PDL attribute while `config.pdl` is
 * set): bf16 → e4m3 with groups of 128, H ≤ 8192, x's base and row stride multiples of 16 bytes. Any other view
 * (unaligned or odd-strided rows, other dtypes, formats, groups, wider rows) runs the `_g<N>` kernel, plainly. Same
 * bits either way. H200 (docs/perf-notes/perf10-pcb.md), 4096 … 16384 × 7168: 92.7 … 96.8% of copy with PDL, 88.0 …
 * 95.8% without, against `_g128`'s 76.2 … 86.6%.
 */
export function usesRowForm(x: Tensor, fmt: QuantFmt, n: number): boolean {
  const [T, H] = x.shape;
  if (x.dtype !== "bf16" || fmt !== "e4m3" || n !== 128 || H > R1_MAX_HIDDEN) return false;
  return (x as DeviceTensor).addr % 16 === 0 && (T <= 1 || (x.strides[0] * 2) % 16 === 0);
}

/**
 * per_token_cast_and_cast_back.cu's launch: `tk_per_token_cast_and_cast_back__<in>_<fmt>_g<N>`, grid.x =
 * ⌈G / n⌉ with G = ⌈T / R⌉ row groups, n = ⌈G / (6 · SMs)⌉ (one resident wave, every block walking n or n − 1
 * groups: at 8192 × 7168 745 blocks of 11 rows instead of 792 blocks of 10 or 11), R = rowsPerBlock(H, V), V = 4
 * (fp32) or 8 (bf16); or, where {@link usesRowForm}, `…__bf16_e4m3_g128_r1` with 512 threads and grid.x = T (one
 * row per block; PDL attribute while `config.pdl`). Nothing for 0 rows.
 */
function launchCastAndCastBack(op: string, device: Device, stream: Stream, x: Tensor, fmt: QuantFmt, n: number, roundSf: boolean, e4m3Sf: boolean): void {
  const [T, H] = x.shape;
  if (T === 0) return;
  const r1 = usesRowForm(x, fmt, n);
  const fn = kernelFunction(op, device, `tk_per_token_cast_and_cast_back__${x.dtype}_${fmt}_g${n}${r1 ? "_r1" : ""}`);
  let grid: number;
  if (r1) {
    grid = Math.min(T, 2 ** 31 - 1);
  } else {
    const groups = Math.ceil(T / rowsPerBlock(H, x.dtype === "fp32" ? 4 : 8));
    grid = Math.max(1, Math.ceil(groups / Math.ceil(groups / (6 * config.getNumSms(device)))));
  }
  const p = packet;
  p.u64(W.x, (x as DeviceTensor).addr);
  p.u64(W.x_row_stride, T > 1 ? x.strides[0] : H);
  p.u32(W.num_tokens, T);
  p.u32(W.hidden, H);
  p.u32(W.flags, (roundSf ? PER_TOKEN_FLAG.roundSf : 0) | (e4m3Sf ? PER_TOKEN_FLAG.e4m3Sf : 0));
  p.f32(W.amax_clamp, amaxClampFor(fmt, e4m3Sf));
  p.setLaunch(fn, stream.handle, grid, r1 ? R1_THREADS : THREADS, 0, r1 && config.pdl, device.index);
  p.launch(op);
}

/** The function handle and the PDL flag of the launch header perTokenCastAndCastBack last sent (tests). */
export function castAndCastBackLastLaunch(): { fn: number; pdl: boolean } {
  const u = new Uint32Array(packet.bytes.buffer, packet.bytes.byteOffset, 16);
  return { fn: u[0] + u[1] * 4294967296, pdl: (u[11] & 1) === 1 };
}

/** A device copy of the storage span a host `[T, H]` view touches, viewed with the same strides. */
function uploadSpan(h: HostTensor, device: Device): DeviceTensor {
  const [T, H] = h.shape;
  const n = T === 0 ? 0 : (T - 1) * h.strides[0] + H;
  const flat = new HostTensor(h.data, h.dtype, [n], [1], h.offset);
  const whole = toDevice(flat, device);
  const v = new DeviceTensor(whole.storage, h.dtype, h.shape, T > 1 ? h.strides : [H, 1], 0);
  whole.dispose();
  return v;
}

/**
 * `unpackFromE2m1fnX2` — decodes packed FP4 codes (spec/API.md §3.1; spec/quant.md §9.2). Device tensors run the
 * CUDA kernel (`kernels-src/cuda/quant/unpack.cu`); the decode is exact, so the CPU numerics fit in this file (the
 * E2M1 table of `core/dtype.ts`).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { config } from "../../core/config.ts";
import { checkOptions, checkOutTensor, checkTensor, oneOf, overlaps } from "../../core/checks.ts";
import { decodeE2m1, encodeBf16 } from "../../core/dtype.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged } from "../../core/stage.ts";
import { type Device, type DeviceTensor, type HostTensor, hostZeros, type Stream, type Tensor } from "../../core/tensor.ts";
import { kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { UnpackParams } from "./elem.params.ts";
import { contiguousOut, streamFor } from "./elem_launch.ts";

/** Options of {@link unpackFromE2m1fnX2}. */
export interface UnpackFromE2m1fnX2Options extends OpOptions {
  /** Output dtype (both exact). Default `"fp32"`. */
  dtype?: "fp32" | "bf16";
  /** Preallocated contiguous output `[…, 2K]`. */
  out?: Tensor;
}

/**
 * Unpacks FP4 E2M1 codes, two per byte (element `2i` in the low nibble of byte `i`, `2i+1` in the high nibble):
 * `x` e2m1x2 / uint8 / int8 `[…, K]` (at least 1-D, any strides) → `[…, 2K]` in `dtype`, exact (spec/quant.md
 * §9.2). Values are ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type HostTensor, tensor, unpackFromE2m1fnX2 } from "../../mod.ts";
 * const y = unpackFromE2m1fnX2(tensor([0x72, 0x8f], [2], "e2m1x2")) as HostTensor;
 * assert.deepEqual([...(y.data as Float32Array)], [1, 6, -6, -0]);
 * ```
 */
export function unpackFromE2m1fnX2(x: Tensor, options?: UnpackFromE2m1fnX2Options): Tensor {
  const op = "unpackFromE2m1fnX2";
  checkOptions(op, options, ["dtype"]);
  const dtype = options?.dtype === undefined ? "fp32" : oneOf(op, "dtype", options.dtype, ["fp32", "bf16"] as const);
  const t = checkTensor(op, "x", x, ["e2m1x2", "uint8", "int8"]);
  if (t.shape.length < 1) throw new TkError(op, "x", "SHAPE", "expected at least 1 dimension, got a 0-D tensor");
  const shape = [...t.shape.slice(0, -1), 2 * t.shape[t.shape.length - 1]];
  let out: Tensor | null = null;
  if (options?.out !== undefined) {
    out = checkOutTensor(op, "out", options.out, dtype);
    if (out.shape.length !== shape.length || out.shape.some((d, i) => d !== shape[i])) {
      throw new TkError(op, "out", "OUT_MISMATCH", `expected shape [${shape.join(", ")}], got [${out.shape.join(", ")}]`);
    }
    if (!out.isContiguous()) throw new TkError(op, "out", "OUT_MISMATCH", "must be contiguous");
    if (overlaps(out, t)) throw new TkError(op, "out", "OUT_MISMATCH", "overlaps an input");
  }
  const pl = place(op, options?.backend, t, out);
  if (pl.backend === "cuda" && !pl.staged) {
    const s = streamFor(op, pl.device, options?.stream);
    const y = contiguousOut(op, pl.device, s, shape, dtype, out);
    launchUnpack(op, pl.device, s, t, y);
    return y;
  }
  if (pl.backend === "cuda") {
    const local = { dtype, backend: "auto", stream: undefined } as const;
    return runOnDeviceStaged(op, pl.device, [t], [out], ([dx]) => [unpackFromE2m1fnX2(dx!, local)])[0];
  }
  const h = onHost(t) as HostTensor;
  const o = pl.staged || out === null ? hostZeros(shape, dtype) : (out as HostTensor);
  const n = h.shape.length;
  const idx = new Array<number>(n).fill(0);
  const src = h.data as Uint8Array | Int8Array;
  const dst = o.data as Float32Array | Uint16Array;
  for (let i = 0; i < h.numel; i++) {
    let off = h.offset;
    for (let d = 0; d < n; d++) off += idx[d] * h.strides[d];
    const b = src[off] & 0xff;
    const lo = decodeE2m1(b & 0xf);
    const hi = decodeE2m1(b >> 4);
    dst[o.offset + 2 * i] = dtype === "fp32" ? lo : encodeBf16(lo);
    dst[o.offset + 2 * i + 1] = dtype === "fp32" ? hi : encodeBf16(hi);
    for (let d = n - 1; d >= 0; d--) {
      if (++idx[d] < h.shape[d]) break;
      idx[d] = 0;
    }
  }
  return pl.staged ? resultToDevice(op, o, out, pl.device) : o;
}

const packet = new LaunchPacket(UnpackParams);
const W = packet.w;
const THREADS = 256;

/**
 * Launch choices of unpackFromE2m1fnX2 that tests and benches may flip (restore them after use).
 * - `ring` (default on since the twentieth run: 8192 × 7168 → bf16 80.5 → 83.7%, 16384 84.3 → 86.8%; → fp32 83.6 → 85.5,
 *   85.0 → 86.5; round 24, docs/perf-notes/perf24-unp.md): for contiguous codes (one launch over rows · K
 *   bytes, column stride 1, row stride K) with x and out on a 16-byte boundary and fewer than 2^35 code bytes, runs
 *   `tk_unpack_e2m1x2__<dtype>_w` (unpack24.cu: unpack.cu's conversion fed by a warp's 2-stage cp.async ring, one
 *   16-byte copy of codes a lane a step, 4 / 8 16-byte stores, every store instruction of a warp 512 contiguous
 *   bytes). Same bytes. Every other view keeps unpack.cu's kernels.
 * - `ringGridPerSm` (default 8, which beat 4 at both sizes and both dtypes): the ring form's grid,
 *   max(1, min(⌈rows·K / 4096⌉, ringGridPerSm · SMs)) blocks of
 *   256 (one warp per 512 code bytes up to the cap).
 */
export const unpackLaunchTuning: { ring: boolean; ringGridPerSm: number } = { ring: true, ringGridPerSm: 8 };
/** Code bytes a ring launch may take (unpack24.cu indexes 16-byte chunks in 32 bits). */
const RING_MAX_BYTES = 2 ** 35;

/** The function handle and the PDL flag of the launch header unpackFromE2m1fnX2 last sent (tests). */
export function unpackLastLaunch(): { fn: number; pdl: boolean } {
  const u = new Uint32Array(packet.bytes.buffer, packet.bytes.byteOffset, 16);
  return { fn: u[0] + u[1] * 4294967296, pdl: (u[11] & 1) === 1 };
}

/**
 * unpack.cu's launches: `tk_unpack_e2m1x2__<dtype>` over `[rows, K]` views of the codes, grid.x =
 * max(1, min(⌈⌈rows·K / 8⌉ / 256⌉, 4 · SMs)); or unpack24.cu's `…_w` under {@link unpackLaunchTuning}.ring. The
 * leading dimensions are folded into rows when their strides allow; otherwise one launch per index of the dimensions
 * before the last two. Nothing for 0 elements.
 */
function launchUnpack(op: string, device: Device, stream: Stream, x: Tensor, out: Tensor): void {
  if (x.numel === 0) return;
  const n = x.shape.length;
  const K = x.shape[n - 1];
  const cs = x.strides[n - 1];
  // fold dims [0, n−1) into rows as far as the strides allow: dims [0, lead) are launched one index at a time
  // (dim d folds when stepping it is stepping `next` rows: its stride is the folded block's stride × its rows)
  let lead = n - 2;
  let next = n >= 2 ? x.strides[n - 2] * x.shape[n - 2] : 0;
  while (lead > 0 && (x.shape[lead - 1] === 1 || x.strides[lead - 1] === next)) {
    lead--;
    next *= x.shape[lead];
  }
  const rows = n === 1 ? 1 : x.shape.slice(Math.max(lead, 0), n - 1).reduce((a, b) => a * b, 1);
  const rs = n === 1 ? K : x.strides[n - 2];
  const t = unpackLaunchTuning;
  const ring = t.ring && lead <= 0 && cs === 1 && (rows <= 1 || rs === K) && rows * K < RING_MAX_BYTES &&
    (x as DeviceTensor).addr % 16 === 0 && (out as DeviceTensor).addr % 16 === 0;
  const fn = kernelFunction(op, device, `tk_unpack_e2m1x2__${out.dtype}${ring ? "_w" : ""}`);
  const grid = ring
    ? Math.max(1, Math.min(Math.ceil((rows * K) / (THREADS * 16)), t.ringGridPerSm * config.getNumSms(device)))
    : Math.max(1, Math.min(Math.ceil(Math.ceil((rows * K) / 8) / THREADS), 4 * config.getNumSms(device)));
  const outBytes = 2 * K * rows * (out.dtype === "fp32" ? 4 : 2);
  const outer = lead > 0 ? x.shape.slice(0, lead) : [];
  const idx = new Array<number>(outer.length).fill(0);
  const p = packet;
  i64(p, W.row_stride, rs);
  i64(p, W.col_stride, cs);
  p.u64(W.rows, rows);
  p.u64(W.cols, K);
  for (let slice = 0;; slice++) {
    let off = 0;
    for (let d = 0; d < outer.length; d++) off += idx[d] * x.strides[d];
    p.u64(W.x, (x as DeviceTensor).addr + off);
    p.u64(W.out, (out as DeviceTensor).addr + slice * outBytes);
    p.setLaunch(fn, stream.handle, grid, THREADS, 0, false, device.index);
    p.launch(op);
    let d = outer.length - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < outer[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/** A signed 64-bit field (views may have negative strides): two's complement of an integer below 2^53. */
function i64(p: LaunchPacket<string>, word: number, v: number): void {
  p.u32(word, v >>> 0);
  p.u32(word + 1, Math.floor(v / 4294967296) >>> 0);
}

/**
 * Dequantization: `perTokenCastBack` and the generic block `castBack` (spec/API.md §3.1, spec/quant.md §2.6, §6).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, oneOf, overlaps } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice, runOnDeviceStaged } from "../../core/stage.ts";
import {
  type Device,
  type DeviceTensor,
  deviceEmptyStrided,
  deviceRuntime,
  type HostTensor,
  type Quantized,
  type Stream,
  isTensor,
  type Tensor,
} from "../../core/tensor.ts";
import { errorWordPtr, kernelFunction, LaunchPacket, rowsPerBlock } from "../../ffi/cuda.ts";
import { OP_ID } from "../../ffi/op_ids.ts";
import { CastBackParams } from "./cast_back.params.ts";
import { type CastBackSf, castBackRef } from "./cast_back.ref.ts";
import { SF_KIND } from "./per_token_cast.params.ts";
import { sfInput } from "./sf_layout.ts";

/** Options of {@link perTokenCastBack}. */
export interface PerTokenCastBackOptions extends OpOptions {
  /** Output dtype. */
  fmt: "fp32" | "bf16";
  /** Channels per scale of the pair: 16, 32, 64 or 128, or the whole row. */
  numPerChannels: number;
  /** Preallocated contiguous output `[T, H]`. */
  out?: Tensor;
}

/** Options of {@link castBack}. */
export interface CastBackOptions extends OpOptions {
  /** Output dtype. */
  fmt: "fp32" | "bf16";
  /** Block of one scale, `[rows, cols]`: per-token `[1, 16|32|64|128]`, per-block `[32|128, 32|128]`, per-channel `[32|128, 1]`. */
  xBlockSize: readonly [number, number];
  /** Preallocated contiguous output `[T, H]`. */
  out?: Tensor;
}

const packet = new LaunchPacket(CastBackParams);
const THREADS = 256;

/**
 * Dequantizes a `[data, sf]` pair of {@link perTokenCast}: `out = decode(q) · s` in binary32, then fp32 or bf16
 * (spec/quant.md §2.6). `data` is e4m3 `[T, H]` or e2m1x2 `[T, H/2]`; `sf` fp32 / e4m3 / packed UE8M0 (int32), row-
 * or column-major. Same as {@link castBack} with `xBlockSize: [1, numPerChannels]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perTokenCast, perTokenCastBack, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(128).fill(1.5), [1, 128], "fp32");
 * const y = perTokenCastBack(perTokenCast(x, { fmt: "e4m3", numPerChannels: 32 }), { fmt: "fp32", numPerChannels: 32 });
 * assert.ok((y as { data: Float32Array }).data[5] === 1.5);
 * ```
 */
export function perTokenCastBack(x: Quantized, options: PerTokenCastBackOptions): Tensor {
  const op = "perTokenCastBack";
  checkOptions(op, options, ["fmt", "numPerChannels"]);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and numPerChannels are required");
  const H = Array.isArray(x) && isTensor(x[0]) ? x[0].shape[1] * (x[0].dtype === "e2m1x2" ? 2 : 1) : 0;
  const n = options.numPerChannels === H && H > 0 ? H : oneOf(op, "numPerChannels", options.numPerChannels, [16, 32, 64, 128]);
  return dequantize(op, x, options, 1, n);
}

/**
 * Block dequantization (spec/quant.md §6): `out[t][j] = decode(q[t][j]) · s(⌊t/r⌋, ⌊j/c⌋)` in binary32, then fp32
 * or bf16, for per-token `[1, c]`, per-block `[r, c]` and per-channel `[r, 1]` blocks. Scales: fp32 or e4m3, row-
 * or TMA column-major (column-major not with `c = 1`); int32 packed UE8M0 channel-packed (row- or column-major)
 * for `c > 1`, token-packed `[⌈nbm/4⌉, H]` for `c = 1`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { castBack, tensor } from "../../mod.ts";
 * const data = tensor(new Uint8Array(64).fill(0x38), [1, 64], "e4m3"); // 1.0
 * const sf = tensor([0.5, 4], [1, 2], "fp32");
 * const y = castBack([data, sf], { fmt: "fp32", xBlockSize: [1, 32] }) as { data: Float32Array };
 * assert.ok(y.data[0] === 0.5 && y.data[63] === 4);
 * ```
 */
export function castBack(x: Quantized, options: CastBackOptions): Tensor {
  const op = "castBack";
  checkOptions(op, options, ["fmt", "xBlockSize"]);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and xBlockSize are required");
  const bs = options.xBlockSize;
  if (!Array.isArray(bs) || bs.length !== 2) throw new TkError(op, "xBlockSize", "VALUE", `is required, as [rows, cols] (got ${describe(bs)})`);
  const [r, c] = bs;
  const legal = (r === 1 && [16, 32, 64, 128].includes(c)) || ((r === 32 || r === 128) && (c === 32 || c === 128 || c === 1));
  if (!legal) throw new TkError(op, "xBlockSize", "VALUE", `must be [1, 16|32|64|128], [32|128, 32|128] or [32|128, 1] (got ${describe(bs)})`);
  return dequantize(op, x, options, r, c);
}

/** The scale layout castBack reads, with token packing for per-channel blocks (§4.2-3). */
function castBackSf(op: string, sf: Tensor, nbm: number, nbk: number, c: number): CastBackSf {
  if (c !== 1) return sfInput(op, "x[1]", sf, nbm, nbk);
  if (sf.dtype === "fp32") {
    if (sf.shape.length !== 2 || sf.shape[0] !== nbm || sf.shape[1] !== nbk) {
      throw new TkError(op, "x[1]", "SHAPE", `expected scale shape [${nbm}, ${nbk}], got [${sf.shape.join(", ")}]`);
    }
    if (nbm > 0 && !sf.isContiguous()) throw new TkError(op, "x[1]", "LAYOUT", "per-channel fp32 scales must be row-major (column-major is not available with blocks [r, 1])");
    return { kind: "fp32", s0: sf.strides[0], s1: sf.strides[1] };
  }
  if (sf.dtype !== "int32") throw new TkError(op, "x[1]", "DTYPE", `per-channel scales are fp32 or token-packed int32, got ${sf.dtype}`);
  const rows = Math.ceil(nbm / 4);
  if (sf.shape.length !== 2 || sf.shape[0] !== rows || sf.shape[1] !== nbk) {
    throw new TkError(op, "x[1]", "SHAPE", `expected token-packed scale shape [${rows}, ${nbk}], got [${sf.shape.join(", ")}]`);
  }
  if (rows > 0 && !sf.isContiguous()) throw new TkError(op, "x[1]", "LAYOUT", "token-packed scales must be row-major");
  return { kind: "packedToken", s0: sf.strides[0], s1: sf.strides[1] };
}

/** Shared body of {@link perTokenCastBack} and {@link castBack}: checks the pair and `out`, then dispatches. */
function dequantize(op: string, x: unknown, options: CastBackOptions | PerTokenCastBackOptions, r: number, c: number): Tensor {
  const fmt = oneOf(op, "fmt", options.fmt, ["fp32", "bf16"] as const);
  if (!Array.isArray(x) || x.length !== 2) throw new TkError(op, "x", "VALUE", `expected a quantized pair [data, sf], got ${describe(x)}`);
  const data = checkTensor(op, "x[0]", x[0], ["e4m3", "e2m1x2"], 2);
  const T = data.shape[0];
  const H = data.shape[1] * (data.dtype === "e2m1x2" ? 2 : 1);
  if (H % 64 !== 0) throw new TkError(op, "x[0]", "SHAPE", `hidden size must be a multiple of 64 (got ${H})`);
  if (!data.isContiguous()) throw new TkError(op, "x[0]", "LAYOUT", "must be contiguous");
  const sf = checkTensor(op, "x[1]", x[1], ["fp32", "e4m3", "int32"], 2);
  const lay = castBackSf(op, sf, Math.ceil(T / r), Math.ceil(H / c), c);
  let out: Tensor | null = null;
  if (options.out !== undefined) {
    out = checkOutTensor(op, "out", options.out, fmt);
    if (out.shape.length !== 2 || out.shape[0] !== T || out.shape[1] !== H) throw new TkError(op, "out", "OUT_MISMATCH", `expected shape [${T}, ${H}], got [${out.shape.join(", ")}]`);
    if (!out.isContiguous()) throw new TkError(op, "out", "OUT_MISMATCH", "must be contiguous");
    if (overlaps(out, data) || overlaps(out, sf)) throw new TkError(op, "out", "OUT_MISMATCH", "overlaps an input");
  }
  const pl = place(op, options.backend, data, sf, out);
  if (pl.backend === "cuda" && !pl.staged) {
    const s = options.stream ?? deviceRuntime(op).defaultStream(pl.device);
    const o = out ?? deviceEmptyStrided(op, pl.device, [T, H], [H, 1], fmt, T * H, s);
    launchCastBack(op, pl.device, s, data, sf, lay, o, H, r, c);
    return o;
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    return runOnDeviceStaged(op, pl.device, [data, sf], [out], ([dd, ds]) => [dequantize(op, [dd!, ds!], local, r, c)])[0];
  }
  const hs = onHost(sf) as HostTensor;
  const res = castBackRef(onHost(data) as HostTensor, hs, { kind: lay.kind, s0: hs.strides[0], s1: hs.strides[1] }, H, r, c, fmt, pl.staged ? undefined : (out as HostTensor | null) ?? undefined);
  return pl.staged ? resultToDevice(op, res, out, pl.device!) : res;
}

function launchCastBack(op: string, device: Device, stream: Stream, data: Tensor, sf: Tensor, lay: CastBackSf, out: Tensor, H: number, r: number, c: number): void {
  const T = data.shape[0];
  if (T === 0) return;
  const input = data.dtype === "e2m1x2" ? "e2m1" : "e4m3";
  const outFmt = out.dtype as "fp32" | "bf16";
  const ring = useE2m1Ring(data, out, lay, T, H, c);
  const seg = !ring && useSegments(H, input, outFmt);
  const sym = `tk_cast_back${seg ? "_seg" : ""}__${input}_${out.dtype}${ring ? "_w" : ""}`;
  const fn = kernelFunction(op, device, sym);
  const p = packet;
  const w = p.w;
  p.u64(w.data, (data as DeviceTensor).addr);
  p.u64(w.sf, (sf as DeviceTensor).addr);
  p.u64(w.out, (out as DeviceTensor).addr);
  p.u64(w.error_word, errorWordPtr(op, device));
  p.u64(w.data_row_stride, data.strides[0]);
  p.u64(w.out_row_stride, out.strides[0]);
  p.u64(w.sf_stride0, lay.s0);
  p.u64(w.sf_stride1, lay.s1);
  p.u32(w.num_tokens, T);
  p.u32(w.hidden, H);
  p.u32(w.block_rows, r);
  p.u32(w.block_cols, c);
  p.u32(w.sf_kind, SF_KIND[lay.kind === "packed" ? "packedChannel" : lay.kind]);
  p.u32(w.op_id, op === "castBack" ? OP_ID.castBack : OP_ID.perTokenCastBack);
  p.u32(w.flags, input === "e4m3" && outFmt === "bf16" ? CAST_BACK_L2_256B : 0);
  const grid = ring ? castBackRingGrid(device, T, H) : seg ? castBackSegGrid(T, H) : castBackGrid(device, T, H, input, outFmt);
  // PDL (docs/perf-notes/perf10-pdl.md): the segmented kernel issues griddepcontrol.launch_dependents first and
  // griddepcontrol.wait before its first global access; it is launched as a programmatic dependent of the previous
  // kernel in the stream while `config.pdl` is set (read at every launch). The row-team kernels launch plainly.
  p.setLaunch(fn, stream.handle, grid, THREADS, 0, config.pdl && seg, device.index);
  p.launch(op);
}

/** The function handle and the PDL flag of the launch header castBack / perTokenCastBack last sent (tests). */
export function castBackLastLaunch(): { fn: number; pdl: boolean } {
  const u = new Uint32Array(packet.bytes.buffer, packet.bytes.byteOffset, 16);
  return { fn: u[0] + u[1] * 4294967296, pdl: (u[11] & 1) === 1 };
}

/**
 * CastBackParams.flags for e4m3 → bf16: kHintL2Line256 of common/load_hint.cuh (bit 9), the `.L2::256B` prefetch
 * size on the segmented kernels' code loads of block scales (the row-team kernels and the per-channel path ignore
 * it). Measured on the H200: +1.8 to +5.9 points of copy over no hint (docs/perf-notes/perf5-hint.md, "Measured");
 * every other output takes no bit (no change there). Same bytes either way.
 */
const CAST_BACK_L2_256B = 0x200;

/**
 * grid.x of cast_back.cu's launch table: R = rowsPerBlock(H, V), V the elements of a thread's piece (one 16-byte
 * store: 8 for bf16 output, 4 for e4m3 → fp32; 8 for e2m1 → fp32); min(⌈T / R⌉, 10 · SMs) for bf16 output (two
 * waves of the kernel's 5 resident blocks per SM), ⌈T / R⌉ uncapped for fp32 (measured faster).
 */
const BF16_GRID_PER_SM = 10;

function castBackGrid(device: Device, T: number, H: number, input: "e4m3" | "e2m1", out: "fp32" | "bf16"): number {
  const v = out === "bf16" ? 8 : input === "e4m3" ? 4 : 8;
  const grid = Math.ceil(T / rowsPerBlock(H, v));
  return Math.max(1, out === "bf16" ? Math.min(grid, BF16_GRID_PER_SM * config.getNumSms(device)) : grid);
}

/**
 * The segmented kernel of cast_back.cu (`tk_cast_back_seg__e4m3_bf16`): a block takes one segment of
 * SEG_PIECES = 256 threads × 2 pieces of a row (grid.x = T · ⌈(H / 8) / SEG_PIECES⌉: one segment per block), for
 * e4m3 → bf16 rows that hold at least SEG_MIN_PIECES pieces (below that most of a block's threads would idle;
 * those rows keep the row-team kernel). fp32 output keeps the row teams (92% of copy on the H200); the segmented fp32 form
 * was never selected (perf3-quant.md's SEG_OUT switch) and is not built.
 */
const SEG_PIECES = 512;
const SEG_MIN_PIECES = 256;

function useSegments(H: number, input: "e4m3" | "e2m1", out: "fp32" | "bf16"): boolean {
  return input === "e4m3" && out === "bf16" && H / 8 >= SEG_MIN_PIECES;
}

function castBackSegGrid(T: number, H: number): number {
  const segs = Math.ceil(H / 8 / SEG_PIECES);
  return Math.max(1, Math.min(T * segs, 0x7fffffff));
}

/**
 * Launch choices of castBack / perTokenCastBack that tests and benches may flip (restore them after use).
 * - `e2m1Ring` (default on since the twentieth run: [1,32] fp32 sf at 8192 × 7168 77.6 → 83.5%, 16384 81.4 → 86.4%;
 *   round 24, docs/perf-notes/perf24-unp.md): e2m1 → bf16 with fp32 scales (row- or
 *   column-major) of blocks [r, c ≥ 32] (the whole row included), codes and out on a 16-byte boundary and
 *   T · H < 2^36, runs `tk_cast_back__e2m1_bf16_w` (unpack24.cu: cast_back.cu's piece conversion fed by a warp's
 *   2-stage cp.async ring over the flat codes, one 16-byte copy of codes and one scale a lane a step, 4 16-byte
 *   stores, every store instruction of a warp 512 contiguous bytes). Same bytes. Everything else keeps
 *   cast_back.cu's kernels.
 * - `ringGridPerSm` (default 4): the ring form's grid, max(1, min(⌈T·H / 8192⌉, ringGridPerSm · SMs)) blocks of 256
 *   (one warp per 32 chunks of 32 values up to the cap).
 */
export const castBackLaunchTuning: { e2m1Ring: boolean; ringGridPerSm: number } = { e2m1Ring: true, ringGridPerSm: 4 };
/** T · H a ring launch may take (unpack24.cu indexes 32-value chunks in 32 bits). */
const RING_MAX_VALUES = 2 ** 36;

function useE2m1Ring(data: Tensor, out: Tensor, lay: CastBackSf, T: number, H: number, c: number): boolean {
  return castBackLaunchTuning.e2m1Ring && data.dtype === "e2m1x2" && out.dtype === "bf16" && lay.kind === "fp32" && c >= 32 &&
    T * H < RING_MAX_VALUES && (data as DeviceTensor).addr % 16 === 0 && (out as DeviceTensor).addr % 16 === 0;
}

function castBackRingGrid(device: Device, T: number, H: number): number {
  return Math.max(1, Math.min(Math.ceil((T * H) / (32 * THREADS)), castBackLaunchTuning.ringGridPerSm * config.getNumSms(device)));
}

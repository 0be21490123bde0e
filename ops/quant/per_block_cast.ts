/**
 * Per-block casts: `perBlockCast`, `perBlockCastWithSfOnly`, `perBlockCastWithPrecomputedSf` (spec/API.md §3.1;
 * numerics and legal arguments: spec/quant.md §3, §4, §11.1). Checks, then dispatch to the CPU reference
 * (`per_block_cast.ref.ts`) or the CUDA kernels (`kernels-src/cuda/quant/per_block_cast.cu`).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
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
  type Tensor,
} from "../../core/tensor.ts";
import { kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { PER_BLOCK_MODE, PerBlockCastParams } from "./per_block_cast.params.ts";
import { PER_TOKEN_FLAG } from "./per_token_cast.params.ts";
import { type BlockCastArgs, perBlockCastRef, perBlockCastWithPrecomputedSfRef } from "./per_block_cast.ref.ts";
import { amaxClampFor, type QuantFmt } from "./scale.ref.ts";
import { type SfGeometry, type SfLayout, sfGeometry } from "./sf_layout.ts";
import { checkSfOptions } from "./sf_options.ts";

/** Options of {@link perBlockCastWithSfOnly}. */
export interface PerBlockCastWithSfOnlyOptions extends OpOptions {
  /** Target format: FP8 E4M3 or FP4 E2M1 (two codes per byte, dtype `e2m1x2`). */
  fmt: QuantFmt;
  /** Block of one scale, `[rows, cols]`, each 32 or 128. */
  blockSize: readonly [number, number];
  /** Store sf column-major with the block-row dimension padded to 16 bytes (DeepGEMM's layout). Default false. */
  useTmaAlignedColMajorSf?: boolean;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Store power-of-two scales as UE8M0 bytes packed four per int32; requires `roundSf`. Default false. */
  usePackedUe8m0?: boolean;
  /** Not available for per-block casts (spec/quant.md §3): only `false` is accepted. */
  useE4m3Sf?: false;
  /** Preallocated sf with exactly the layout the options select. */
  out?: Tensor;
}

/** Options of {@link perBlockCast}. */
export interface PerBlockCastOptions extends Omit<PerBlockCastWithSfOnlyOptions, "out"> {
  /** Preallocated outputs. `data` contiguous; `sf` with exactly the layout the options select. */
  out?: { data?: Tensor; sf?: Tensor };
}

/** Options of {@link perBlockCastWithPrecomputedSf}. */
export interface PerBlockCastWithPrecomputedSfOptions extends OpOptions {
  /** Target format. */
  fmt: QuantFmt;
  /** Block of one scale of the given sf, `[rows, cols]`, each 32 or 128. */
  blockSize: readonly [number, number];
  /** Accepted and without effect: the inverse is always the binary32 `1 / s` (spec/quant.md §3). */
  roundSf?: boolean;
  /** Refused when true: a precomputed sf must be row-major. */
  useTmaAlignedColMajorSf?: boolean;
  /** Refused when true: a precomputed sf must be fp32. */
  usePackedUe8m0?: boolean;
  /** Refused when true: a precomputed sf must be fp32. */
  useE4m3Sf?: boolean;
  /** Preallocated contiguous data output. */
  out?: Tensor;
}

const CAST_KEYS = ["fmt", "blockSize", "useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0", "useE4m3Sf"];
const PRE_KEYS = ["fmt", "blockSize", "roundSf", "useTmaAlignedColMajorSf", "usePackedUe8m0", "useE4m3Sf"];
const BLOCK = [32, 128] as const;

/** Checks a `[rows, cols]` option against the allowed sizes of each entry. */
export function checkBlockSize(op: string, name: string, v: unknown, ok: (r: number, c: number) => boolean, expected: string): [number, number] {
  if (v === undefined) throw new TkError(op, name, "VALUE", `is required, as [rows, cols] (${expected})`);
  if (!Array.isArray(v) || v.length !== 2 || !Number.isSafeInteger(v[0]) || !Number.isSafeInteger(v[1]) || !ok(v[0], v[1])) {
    throw new TkError(op, name, "VALUE", `must be [rows, cols] with ${expected} (got ${describe(v)})`);
  }
  return [v[0], v[1]];
}

/** A contiguous data output `[T, H]` e4m3 / `[T, H/2]` e2m1x2 that overlaps none of `inputs`. */
export function checkOutData(op: string, arg: string, t: unknown, fmt: QuantFmt, T: number, H: number, inputs: readonly Tensor[]): Tensor {
  const d = checkOutTensor(op, arg, t, fmt === "e4m3" ? "e4m3" : "e2m1x2");
  const cols = fmt === "e4m3" ? H : H / 2;
  if (d.shape.length !== 2 || d.shape[0] !== T || d.shape[1] !== cols) throw new TkError(op, arg, "OUT_MISMATCH", `expected shape [${T}, ${cols}], got [${d.shape.join(", ")}]`);
  if (!d.isContiguous()) throw new TkError(op, arg, "OUT_MISMATCH", "must be contiguous");
  for (const i of inputs) if (overlaps(d, i)) throw new TkError(op, arg, "OUT_MISMATCH", "overlaps an input");
  return d;
}

/** An sf output with exactly the shape and strides of geometry `g`, overlapping none of `inputs`. */
export function checkOutSf(op: string, arg: string, t: unknown, g: SfGeometry, inputs: readonly Tensor[]): Tensor {
  const s = checkOutTensor(op, arg, t, g.dtype);
  const ok = s.shape.length === 2 && s.shape[0] === g.shape[0] && s.shape[1] === g.shape[1] &&
    (g.nbm === 0 || ((s.strides[0] === g.strides[0] || g.shape[0] <= 1) && (s.strides[1] === g.strides[1] || g.shape[1] <= 1)));
  if (!ok) {
    throw new TkError(op, arg, "OUT_MISMATCH", `expected shape [${g.shape.join(", ")}] with strides [${g.strides.join(", ")}], got [${s.shape.join(", ")}] / [${s.strides.join(", ")}]`);
  }
  for (const i of inputs) if (overlaps(s, i)) throw new TkError(op, arg, "OUT_MISMATCH", "overlaps an input");
  return s;
}

/** Checks `x`: fp32/bf16 `[T, H]`, contiguous, `T % 128 == 0`, `H % 128 == 0` (§3, §11.1). Returns [T, H]. */
function checkBlockX(op: string, x: unknown): [number, number] {
  const t = checkTensor(op, "x", x, ["fp32", "bf16"], 2);
  const [T, H] = t.shape;
  if (!t.isContiguous()) throw new TkError(op, "x", "LAYOUT", `must be contiguous, got strides [${t.strides.join(", ")}]`);
  if (T % 128 !== 0) throw new TkError(op, "x", "SHAPE", `number of tokens must be a multiple of 128 (got ${T})`);
  if (H % 128 !== 0) throw new TkError(op, "x", "SHAPE", `hidden size must be a multiple of 128 (got ${H})`);
  return [T, H];
}

function resolve(op: string, x: unknown, o: PerBlockCastWithSfOnlyOptions | PerBlockCastOptions): BlockCastArgs {
  const fmt = oneOf(op, "fmt", o.fmt, ["e4m3", "e2m1"] as const);
  const [r, c] = checkBlockSize(op, "blockSize", o.blockSize, (r, c) => BLOCK.includes(r as 32) && BLOCK.includes(c as 32), "each 32 or 128");
  const { colMajor, roundSf, packed, e4m3Sf } = checkSfOptions(op, o);
  if (e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "is not available for per-block casts");
  const [T, H] = checkBlockX(op, x);
  const layout: SfLayout = { kind: packed ? "packed" : "fp32", colMajor };
  const rule = { fmt, roundSf, packedUe8m0: packed, e4m3Sf: false, clamp: amaxClampFor(fmt, false) };
  return { tokens: T, hidden: H, blockRows: r, blockCols: c, rule, layout };
}

function geometryOf(a: BlockCastArgs): SfGeometry {
  return sfGeometry(Math.ceil(a.tokens / a.blockRows), Math.ceil(a.hidden / a.blockCols), a.layout);
}

// ---- CUDA launch ------------------------------------------------------------------------------------------

/** per_block_cast.cu's launch table: block size, tile elements, resident blocks per SM by input dtype. */
const PB = { threads: 256, tileElems: 16384, blocksPerSm: { fp32: 2, bf16: 4 } as Record<string, number> };

/**
 * PerBlockCastParams.flags bit of the sf-only mode: kHintL2Line of common/load_hint.cuh (bit 8), the `.L2::128B`
 * prefetch size on the bf16 kernels' aligned 16-byte cp.async of each tile (fp32 input and unaligned bf16 views
 * ignore it). Measured on the H200, bf16 → e4m3 128 × 128 fp32 sf: 85.7 / 92.7% of copy against 74.1 / 75.5% off
 * at 8192 / 16384 tokens (docs/perf-notes/perf5-hint.md, "Measured"). The cast and precomputed-sf modes lost with
 * it (83.8 / 87.0% against 89.2 / 90.9% off at 16384) and take no bit. Same bytes either way.
 */
const PER_BLOCK_SF_ONLY_L2_128B = 0x100;
const packet = new LaunchPacket(PerBlockCastParams);

function addrOf(t: Tensor | null): number {
  return t ? (t as DeviceTensor).addr : 0;
}

/**
 * Enqueues one per-block launch on `stream`: `mode` cast (data + sf), sf only, or precomputed sf (`xSf` read,
 * only data written). Nothing is launched when there is nothing to write (T = 0).
 */
function launchPerBlock(
  op: string,
  device: Device,
  stream: Stream,
  x: Tensor,
  a: BlockCastArgs,
  mode: number,
  data: Tensor | null,
  sf: Tensor | null,
  xSf: Tensor | null,
): void {
  const r = a.blockRows;
  const tiles = (a.tokens / r) * Math.ceil(a.hidden / (PB.tileElems / r));
  const g = sf ? geometryOf(a) : null;
  if (tiles === 0 && (g === null || g.paddedRows === 0)) return;
  const fn = kernelFunction(op, device, `tk_per_block_cast__${x.dtype}_${a.rule.fmt}_${r}x${a.blockCols}`);
  const p = packet;
  const w = p.w;
  p.u64(w.x, addrOf(x));
  p.u64(w.x_sf, addrOf(xSf));
  p.u64(w.data, addrOf(data));
  p.u64(w.sf, addrOf(sf));
  p.u64(w.x_sf_stride0, xSf ? xSf.strides[0] : 0);
  p.u64(w.x_sf_stride1, xSf ? xSf.strides[1] : 0);
  p.u64(w.sf_stride0, g ? g.strides[0] : 0);
  p.u64(w.sf_stride1, g ? g.strides[1] : 0);
  p.u32(w.num_tokens, a.tokens);
  p.u32(w.hidden, a.hidden);
  p.u32(w.sf_rows, g ? g.paddedRows : 0);
  p.u32(w.mode, mode);
  const hint = mode === PER_BLOCK_MODE.sfOnly ? PER_BLOCK_SF_ONLY_L2_128B : 0;
  // e4m3 scales: only the generic cast's [16, 64] form (launchPerBlockCastForCast); the per-block ops refuse them
  p.u32(
    w.flags,
    (a.rule.roundSf ? PER_TOKEN_FLAG.roundSf : 0) | (a.rule.packedUe8m0 ? PER_TOKEN_FLAG.packedUe8m0 : 0) |
      (a.rule.e4m3Sf ? PER_TOKEN_FLAG.e4m3Sf : 0) | hint,
  );
  p.f32(w.amax_clamp, a.rule.clamp);
  const grid = Math.max(1, Math.min(tiles, PB.blocksPerSm[x.dtype] * config.getNumSms(device)));
  // PDL (docs/perf-notes/perf10-pdl.md): every per_block_cast.cu kernel issues griddepcontrol.launch_dependents first
  // and griddepcontrol.wait before its first global access (no effect on a plain launch). Only the sf-only mode
  // (perBlockCastWithSfOnly) is launched as a programmatic dependent of the previous kernel in the stream, while
  // `config.pdl` is set (read at every launch): it won on the H200, the cast and precomputed-sf modes tied or lost
  // (perf10-pdl.md, Measured) and launch plainly.
  p.setLaunch(fn, stream.handle, grid, PB.threads, 0, config.pdl && mode === PER_BLOCK_MODE.sfOnly, device.index);
  p.launch(op);
}

/**
 * The generic `cast`'s bf16 → e4m3 [16, 64] form (ops/quant/cast_block_launch.ts, `castBlockLaunchTuning.perBlock16x64`):
 * `tk_per_block_cast__bf16_e4m3_16x64` (per_block_cast_gc23.cu, mode cast, no hint bits) into `data` and `sf`,
 * enqueued on `stream`. The caller has checked everything: a plain contiguous bf16 `[T, H]` device input with
 * `T % 16 == 0`, `H % 64 == 0`, x 16-byte and data 8-byte aligned, `a` the cast's [16, 64] args (any sf layout,
 * e4m3 scales included), `data` / `sf` of the cast's geometry.
 */
export function launchPerBlockCastForCast(op: string, device: Device, stream: Stream, x: Tensor, a: BlockCastArgs, data: Tensor, sf: Tensor): void {
  launchPerBlock(op, device, stream, x, a, PER_BLOCK_MODE.cast, data, sf, null);
}

/** The stream of a device call: the one given (on the inputs' device) or the device's default stream. */
export function blockStream(op: string, device: Device, s: Stream | undefined): Stream {
  if (s && (s.device.kind !== device.kind || s.device.index !== device.index)) {
    throw new TkError(op, "stream", "DEVICE_MISMATCH", `the stream belongs to ${s.device.kind}:${s.device.index}, the inputs to ${device.kind}:${device.index}`);
  }
  return s ?? deviceRuntime(op).defaultStream(device);
}

/** A fresh contiguous device data output `[T, H]` e4m3 / `[T, H/2]` e2m1x2. */
export function deviceCodes(op: string, device: Device, stream: Stream, fmt: QuantFmt, T: number, H: number): DeviceTensor {
  const cols = fmt === "e4m3" ? H : H / 2;
  return deviceEmptyStrided(op, device, [T, cols], [cols, 1], fmt === "e4m3" ? "e4m3" : "e2m1x2", T * cols, stream);
}

/** A fresh device sf output with the geometry `g`. */
export function deviceSf(op: string, device: Device, stream: Stream, g: SfGeometry): DeviceTensor {
  return deviceEmptyStrided(op, device, g.shape, g.strides, g.dtype, g.storage, stream);
}

// ---- public ops -------------------------------------------------------------------------------------------

/**
 * Quantizes `x` in 2-D blocks of `blockSize = [r, c]` (each 32 or 128): one scale per block (`amax / Qmax`,
 * clamped from below by `config.amaxClamp`), data = `encode(x · inv)` to FP8 E4M3 or FP4 E2M1 (spec/quant.md §3).
 * `x` is fp32/bf16 `[T, H]`, contiguous, with `T` and `H` multiples of 128. Returns `[data, sf]` with sf
 * `[T/r, H/c]` in the layout the options select (§4).
 *
 * Device inputs run on their device (enqueued on `options.stream`, else the default stream); host inputs run the
 * CPU reference unless `backend: "cuda"` (then they are staged through the device).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perBlockCast, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(128 * 256).map((_, i) => Math.sin(i)), [128, 256], "fp32");
 * const [data, sf] = perBlockCast(x, { fmt: "e4m3", blockSize: [128, 128] });
 * assert.ok(data.dtype === "e4m3" && sf.shape[0] === 1 && sf.shape[1] === 2);
 * ```
 */
export function perBlockCast(x: Tensor, options: PerBlockCastOptions): Quantized {
  const op = "perBlockCast";
  checkOptions(op, options, CAST_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and blockSize are required");
  const a = resolve(op, x, options);
  const g = geometryOf(a);
  const out = options.out;
  if (out !== undefined && (typeof out !== "object" || out === null)) throw new TkError(op, "out", "VALUE", "expected { data?, sf? }");
  const outData = out?.data !== undefined ? checkOutData(op, "out.data", out.data, a.rule.fmt, a.tokens, a.hidden, [x]) : null;
  const outSf = out?.sf !== undefined ? checkOutSf(op, "out.sf", out.sf, g, [x]) : null;
  if (outData && outSf && overlaps(outData, outSf)) throw new TkError(op, "out.sf", "OUT_MISMATCH", "overlaps out.data");
  const pl = place(op, options.backend, x, outData, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = blockStream(op, pl.device, options.stream);
    const data = outData ?? deviceCodes(op, pl.device, stream, a.rule.fmt, a.tokens, a.hidden);
    const sf = outSf ?? deviceSf(op, pl.device, stream, g);
    launchPerBlock(op, pl.device, stream, x, a, PER_BLOCK_MODE.cast, data, sf, null);
    return [data, sf];
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    const [d, s] = runOnDeviceStaged(op, pl.device, [x], [outData, outSf], ([dx]) => perBlockCast(dx!, local));
    return [d, s];
  }
  const hostOut = pl.staged ? undefined : { data: (outData as HostTensor | null) ?? undefined, sf: (outSf as HostTensor | null) ?? undefined };
  const res = perBlockCastRef(onHost(x) as HostTensor, a, true, hostOut);
  if (!pl.staged) return [res.data!, res.sf];
  return [resultToDevice(op, res.data!, outData, pl.device), resultToDevice(op, res.sf, outSf, pl.device)];
}

/**
 * Computes only the scales of {@link perBlockCast} (bit-identical to its `sf` with the same options).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perBlockCastWithSfOnly, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(128 * 128).fill(896), [128, 128], "fp32");
 * const sf = perBlockCastWithSfOnly(x, { fmt: "e4m3", blockSize: [32, 128] }) as { data: Float32Array };
 * assert.deepEqual([...sf.data], [2, 2, 2, 2]);
 * ```
 */
export function perBlockCastWithSfOnly(x: Tensor, options: PerBlockCastWithSfOnlyOptions): Tensor {
  const op = "perBlockCastWithSfOnly";
  checkOptions(op, options, CAST_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and blockSize are required");
  const a = resolve(op, x, options);
  const outSf = options.out !== undefined ? checkOutSf(op, "out", options.out, geometryOf(a), [x]) : null;
  const pl = place(op, options.backend, x, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = blockStream(op, pl.device, options.stream);
    const sf = outSf ?? deviceSf(op, pl.device, stream, geometryOf(a));
    launchPerBlock(op, pl.device, stream, x, a, PER_BLOCK_MODE.sfOnly, null, sf, null);
    return sf;
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    return runOnDeviceStaged(op, pl.device, [x], [outSf], ([dx]) => [perBlockCastWithSfOnly(dx!, local)])[0];
  }
  const res = perBlockCastRef(onHost(x) as HostTensor, a, false, pl.staged ? undefined : { sf: (outSf as HostTensor | null) ?? undefined });
  return pl.staged ? resultToDevice(op, res.sf, outSf, pl.device) : res.sf;
}

/**
 * Quantizes with caller-supplied per-block scales: `inv = 1 / s` (binary32), data = `encode(x · inv)`
 * (spec/quant.md §3). `sf` is fp32, row-major `[T/r, H/c]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perBlockCastWithPrecomputedSf, tensor } from "../../mod.ts";
 * const x = tensor(new Float32Array(128 * 128).fill(3), [128, 128], "fp32");
 * const sf = tensor([2], [1, 1], "fp32");
 * const data = perBlockCastWithPrecomputedSf(x, sf, { fmt: "e4m3", blockSize: [128, 128] }) as { data: Uint8Array };
 * assert.ok(data.data[0] === 0x3c); // 1.5
 * ```
 */
export function perBlockCastWithPrecomputedSf(x: Tensor, sf: Tensor, options: PerBlockCastWithPrecomputedSfOptions): Tensor {
  const op = "perBlockCastWithPrecomputedSf";
  checkOptions(op, options, PRE_KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt and blockSize are required");
  const fmt = oneOf(op, "fmt", options.fmt, ["e4m3", "e2m1"] as const);
  const [r, c] = checkBlockSize(op, "blockSize", options.blockSize, (r, c) => BLOCK.includes(r as 32) && BLOCK.includes(c as 32), "each 32 or 128");
  optBool(op, "roundSf", options.roundSf);
  if (optBool(op, "usePackedUe8m0", options.usePackedUe8m0)) throw new TkError(op, "usePackedUe8m0", "VALUE", "a precomputed sf must be fp32, not packed");
  if (optBool(op, "useTmaAlignedColMajorSf", options.useTmaAlignedColMajorSf)) throw new TkError(op, "useTmaAlignedColMajorSf", "VALUE", "a precomputed sf must be row-major");
  if (optBool(op, "useE4m3Sf", options.useE4m3Sf)) throw new TkError(op, "useE4m3Sf", "VALUE", "is not available for per-block casts (a precomputed sf is fp32)");
  const [T, H] = checkBlockX(op, x);
  const s = checkPrecomputedSf(op, sf, T / r, H / c);
  const out = options.out !== undefined ? checkOutData(op, "out", options.out, fmt, T, H, [x, s]) : null;
  const pl = place(op, options.backend, x, s, out);
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = blockStream(op, pl.device, options.stream);
    const data = out ?? deviceCodes(op, pl.device, stream, fmt, T, H);
    const a: BlockCastArgs = {
      tokens: T,
      hidden: H,
      blockRows: r,
      blockCols: c,
      rule: { fmt, roundSf: false, packedUe8m0: false, e4m3Sf: false, clamp: amaxClampFor(fmt, false) },
      layout: { kind: "fp32", colMajor: false },
    };
    launchPerBlock(op, pl.device, stream, x, a, PER_BLOCK_MODE.precomputedSf, data, null, s);
    return data;
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    return runOnDeviceStaged(op, pl.device, [x, s], [out], ([dx, ds]) => [perBlockCastWithPrecomputedSf(dx!, ds!, local)])[0];
  }
  const hs = onHost(s) as HostTensor;
  const res = perBlockCastWithPrecomputedSfRef(onHost(x) as HostTensor, hs, { kind: "fp32", s0: hs.strides[0], s1: hs.strides[1] }, fmt, H, r, c, pl.staged ? undefined : (out as HostTensor | null) ?? undefined);
  return pl.staged ? resultToDevice(op, res, out, pl.device) : res;
}

/** A precomputed scale tensor: fp32, row-major `[nbm, nbk]` (spec/quant.md §3, §7.1). */
export function checkPrecomputedSf(op: string, sf: unknown, nbm: number, nbk: number): Tensor {
  const s = checkTensor(op, "sf", sf, ["fp32"], 2);
  if (s.shape[0] !== nbm || s.shape[1] !== nbk) throw new TkError(op, "sf", "SHAPE", `expected shape [${nbm}, ${nbk}], got [${s.shape.join(", ")}]`);
  if (nbm > 0 && !((s.strides[1] === 1 || nbk === 1) && (s.strides[0] === nbk || nbm === 1))) {
    throw new TkError(op, "sf", "LAYOUT", `must be row-major (strides [${nbk}, 1]), got [${s.strides.join(", ")}]`);
  }
  return s;
}

/** The function handle and the PDL flag of the launch header the per-block casts last sent (tests). */
export function perBlockLastLaunch(): { fn: number; pdl: boolean } {
  const u = new Uint32Array(packet.bytes.buffer, packet.bytes.byteOffset, 16);
  return { fn: u[0] + u[1] * 4294967296, pdl: (u[11] & 1) === 1 };
}

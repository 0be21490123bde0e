/**
 * Per-block casts: `perBlockCast`, `perBlockCastWithSfOnly`, `perBlockCastWithPrecomputedSf` (spec/API.md §3.1;
 * numerics and legal arguments: spec/quant.md §3, §4, §11.1). Checks, then dispatch to the CPU reference
 * (`per_block_cast.ref.ts`). There is no CUDA kernel yet: a call that would run on a device is refused.
 * @module
 */
import { type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkOptions, checkOutTensor, checkTensor, describe, oneOf, optBool, overlaps } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { onHost, resultToDevice } from "../../core/stage.ts";
import type { HostTensor, Quantized, Tensor } from "../../core/tensor.ts";
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

/**
 * Quantizes `x` in 2-D blocks of `blockSize = [r, c]` (each 32 or 128): one scale per block (`amax / Qmax`,
 * clamped from below by `config.amaxClamp`), data = `encode(x · inv)` to FP8 E4M3 or FP4 E2M1 (spec/quant.md §3).
 * `x` is fp32/bf16 `[T, H]`, contiguous, with `T` and `H` multiples of 128. Returns `[data, sf]` with sf
 * `[T/r, H/c]` in the layout the options select (§4).
 *
 * Host inputs run the CPU reference; there is no CUDA kernel yet (device inputs need `backend: "cpu"`).
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
  const pl = placeWithoutKernel(op, options.backend, x, outData, outSf);
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
  const pl = placeWithoutKernel(op, options.backend, x, outSf);
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
  const pl = placeWithoutKernel(op, options.backend, x, s, out);
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

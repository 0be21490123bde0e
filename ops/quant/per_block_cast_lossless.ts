/**
 * `perBlockCastLossless`: exact FP4 → FP8 re-blocking (spec/API.md §3.1; numerics and legal arguments:
 * spec/quant.md §10, §11). Checks, then dispatch to the CPU reference (`per_block_cast_lossless.ref.ts`). There
 * is no CUDA kernel yet: a call that would run on a device is refused.
 * @module
 */
import { type OpOptions, placeWithoutKernel } from "../../core/backend.ts";
import { checkContiguous, checkOptions, checkTensor, describe, oneOf, overlaps } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost } from "../../core/stage.ts";
import type { HostTensor, Quantized, Tensor } from "../../core/tensor.ts";
import { checkBlockSize, checkOutData, checkOutSf } from "./per_block_cast.ts";
import { perBlockCastLosslessRef } from "./per_block_cast_lossless.ref.ts";
import { type SfLayout, sfGeometry, sfInput } from "./sf_layout.ts";
import { checkSfOptions, type SfOptions } from "./sf_options.ts";

/** Options of {@link perBlockCastLossless}. */
export interface PerBlockCastLosslessOptions extends OpOptions, SfOptions {
  /** Target format: FP8 E4M3 only. */
  fmt: "e4m3";
  /** Block of one input scale, `[rows, cols]`; `cols` a power of two (typical: `[1, 32]`, MXFP4). */
  xBlockSize: readonly [number, number];
  /** Block of one output scale, a multiple of `xBlockSize` in each dimension; `cols` a power of two. */
  outBlockSize: readonly [number, number];
  /** Not available (the output scales are powers of two): only `false` is accepted. */
  useE4m3Sf?: false;
  /** Preallocated outputs: `data` contiguous e4m3 `[T, H]`; `sf` with exactly the layout the options select. */
  out?: { data?: Tensor; sf?: Tensor };
}

const KEYS = ["fmt", "xBlockSize", "outBlockSize", "useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0", "useE4m3Sf"];
const pow2 = (v: number) => v > 0 && (v & (v - 1)) === 0;

/**
 * Re-blocks FP4 (E2M1) data with power-of-two scales into FP8 (E4M3) with coarser scales, exactly
 * (spec/quant.md §10). `x = [data e2m1x2 [T, H/2] contiguous, sf]` with `H % 32 == 0` and scales of
 * `xBlockSize` blocks as fp32 (row- or column-major, exponent field used) or packed UE8M0. For each output block
 * of `outBlockSize`: `Eout = max(Ein) − 6` (at least 0), data = `e4m3(decode(q) · 2^(Ein − Eout))`, scale
 * `2^(Eout − 127)` as fp32 (`Eout = 0` gives +0) or a packed UE8M0 byte (needs `roundSf`). An input block more
 * than 2¹¹ below the largest of its output block cannot be exact: the op throws `DEVICE_VALUE`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { perBlockCastLossless, tensor } from "../../mod.ts";
 * const data = tensor(new Uint8Array(16).fill(0x72), [1, 16], "e2m1x2"); // 1.0 (low) and 6.0 (high)
 * const sf = tensor([2 ** 10], [1, 1], "fp32"); // exponent byte 137
 * const [out, outSf] = perBlockCastLossless([data, sf], { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [1, 32] }) as [{ data: Uint8Array }, { data: Float32Array }];
 * assert.deepEqual([out.data[0], out.data[1], outSf.data[0]], [0x68, 0x7c, 2 ** 4]); // 64, 384, scale 2^(131−127)
 * ```
 */
export function perBlockCastLossless(x: Quantized, options: PerBlockCastLosslessOptions): Quantized {
  const op = "perBlockCastLossless";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "fmt, xBlockSize and outBlockSize are required");
  oneOf(op, "fmt", options.fmt, ["e4m3"] as const);
  const [ri, ci] = checkBlockSize(op, "xBlockSize", options.xBlockSize, (r, c) => r > 0 && pow2(c), "rows ≥ 1 and cols a power of two");
  const [ro, co] = checkBlockSize(op, "outBlockSize", options.outBlockSize, (r, c) => r > 0 && pow2(c), "rows ≥ 1 and cols a power of two");
  if (ro % ri !== 0 || co % ci !== 0) {
    throw new TkError(op, "outBlockSize", "VALUE", `must be a multiple of xBlockSize [${ri}, ${ci}] in each dimension (got ${describe(options.outBlockSize)})`);
  }
  const { colMajor, packed, e4m3Sf } = checkSfOptions(op, options);
  if (e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "is not available for perBlockCastLossless (its scales are powers of two)");
  if (!Array.isArray(x) || x.length !== 2) throw new TkError(op, "x", "VALUE", `expected a quantized [data, sf] pair, got ${describe(x)}`);
  const data = checkTensor(op, "x[0]", x[0], ["e2m1x2"], 2);
  checkContiguous(op, "x[0]", data);
  const T = data.shape[0];
  const H = data.shape[1] * 2;
  if (H % 32 !== 0) throw new TkError(op, "x[0]", "SHAPE", `hidden size must be a multiple of 32 (got ${H})`);
  const sf = checkTensor(op, "x[1]", x[1], ["fp32", "int32"], 2);
  const sfIn = sfInput(op, "x[1]", sf, Math.ceil(T / ri), Math.ceil(H / ci));
  const layout: SfLayout = { kind: packed ? "packed" : "fp32", colMajor };
  const g = sfGeometry(Math.ceil(T / ro), Math.ceil(H / co), layout);
  const out = options.out;
  if (out !== undefined && (typeof out !== "object" || out === null)) throw new TkError(op, "out", "VALUE", `expected { data?, sf? }, got ${describe(out)}`);
  const outData = out?.data !== undefined ? checkOutData(op, "out.data", out.data, "e4m3", T, H, [data, sf]) : null;
  const outSf = out?.sf !== undefined ? checkOutSf(op, "out.sf", out.sf, g, [data, sf]) : null;
  if (outData && outSf && overlaps(outData, outSf)) throw new TkError(op, "out.sf", "OUT_MISMATCH", "overlaps out.data");
  const pl = placeWithoutKernel(op, options.backend, data, sf, outData, outSf);
  const res = perBlockCastLosslessRef(onHost(data) as HostTensor, onHost(sf) as HostTensor, sfIn, { tokens: T, hidden: H, xBlockSize: [ri, ci], outBlockSize: [ro, co], layout });
  return [deliverHostResult(op, res.data, outData, pl), deliverHostResult(op, res.sf, outSf, pl)];
}

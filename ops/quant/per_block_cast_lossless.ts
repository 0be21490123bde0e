/**
 * `perBlockCastLossless`: exact FP4 → FP8 re-blocking (spec/API.md §3.1; numerics and legal arguments:
 * spec/quant.md §10, §11). Checks, then dispatch to the CPU reference (`per_block_cast_lossless.ref.ts`) or the
 * CUDA kernels (`kernels-src/cuda/quant/per_block_cast_lossless.cu`; the aligned data form behind
 * {@link losslessLaunchTuning}: `per_block_cast_lossless_a.cu`; the one-launch tiled forms behind it too, their tile
 * constants in `per_block_cast_lossless_t.cuh`: the pipelined form `per_block_cast_lossless_p.cu`, and that form with
 * 16-byte L2-only copies, the default: `per_block_cast_lossless_g.cu`).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkContiguous, checkOptions, checkTensor, describe, oneOf, overlaps } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost, runOnDeviceStaged } from "../../core/stage.ts";
import type { Device, DeviceTensor, HostTensor, Quantized, Stream, Tensor } from "../../core/tensor.ts";
import { errorWordPtr, kernelFunction, kernelFunctionWithSmem, LaunchPacket } from "../../ffi/cuda.ts";
import { registerOpId } from "../../ffi/op_ids.ts";
import { blockStream, checkBlockSize, checkOutData, checkOutSf, deviceCodes, deviceSf } from "./per_block_cast.ts";
import { LOSSLESS_SF_KIND, PerBlockCastLosslessParams } from "./per_block_cast.params.ts";
import { perBlockCastLosslessRef } from "./per_block_cast_lossless.ref.ts";
import { PER_TOKEN_FLAG } from "./per_token_cast.params.ts";
import { type SfGeometry, type SfInput, type SfLayout, sfGeometry, sfInput } from "./sf_layout.ts";
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
const pow2 = (v: number) => Number.isSafeInteger(v) && v > 0 && 2 ** Math.round(Math.log2(v)) === v;

/** Op id of the device error word, with its condition bit (per_block_cast_lossless.cu). */
const OP_ID_LOSSLESS = registerOpId(7, "perBlockCastLossless", {
  1: "an input scale block is more than 2^11 below the largest of its output block (the cast would not be exact)",
});

// ---- CUDA launch ------------------------------------------------------------------------------------------

/** per_block_cast_lossless.cu's launch table. */
const PL = { threads: 256, warpsPerBlock: 8, sfBlocksPerSm: 4, dataBlocksPerSm: 8, elemsPerChunk: 16, chunksPerStep: 2 };
const packet = new LaunchPacket(PerBlockCastLosslessParams);
/** per_block_cast_lossless_a.cu's launch table: 8192 elements a block per step, 8 blocks per SM resident (one wave). */
const PLA = { threads: 256, blocksPerSm: 8, elemsPerTile: 8192, minInBlockCols: 16, xAlign: 8, dataAlign: 16 };
/** per_block_cast_lossless_t.cuh's tiles: 128 rows × 256 columns, and the launch checks of the tiled forms. */
const PLT = { threads: 256, tileRows: 128, tileCols: 256, inBlockCols: 32, outBlockCols: 128, xAlign: 8, dataAlign: 16 };
/**
 * The pipelined forms of round 16's `__tile` (same tiles and launch checks), by `losslessLaunchTuning.tiledForm`: CTAs per SM
 * resident, dynamic shared memory and the carveout that fits 3 of them, and the codes' alignment the form needs.
 * 2: per_block_cast_lossless_p.cu, a ring of 3 tiles × 256 threads × 8 chunks × (8 code + 4 exponent bytes) = 72 KiB
 * (kRingBytes). 3: per_block_cast_lossless_g.cu, the same ring with one exponent word a lane pair: 3 × 8 × (256 · 8 +
 * 128 · 4) = 60 KiB (kPairRingBytes), 16-byte code copies.
 */
const PLP = {
  2: { symbol: "tk_per_block_cast_lossless__tile_cp", blocksPerSm: 3, ringBytes: 3 * 8 * (256 * 8 + 256 * 4), carveout: 100, xAlign: 8 },
  3: { symbol: "tk_per_block_cast_lossless__tile_cg", blocksPerSm: 3, ringBytes: 3 * 8 * (256 * 8 + 128 * 4), carveout: 100, xAlign: 16 },
} as const;

/**
 * Launch choices of {@link perBlockCastLossless} (docs/perf-notes/perf11-lsl.md). Same bytes either way.
 * - `dataAligned` (default true, since round 11's A/B): the data launch runs `tk_per_block_cast_lossless__data_a`
 *   (32 elements a thread, whole-sector 8-byte loads and 16-byte stores per warp instruction, no byte-wise
 *   fallback, a one-wave grid) where the input block width is ≥ 16, the codes' base is 8-byte and the output data's
 *   base 16-byte aligned; every other call runs `tk_per_block_cast_lossless__data`. false runs `__data` for every
 *   call (the pre-round-11 form, kept for A/B). The `__sf` launch is the same.
 * - `tiled` (default true since round 16, docs/perf-notes/perf16-lsl.md: 52.5 → 67.3% of copy at 16384 × 7168):
 *   the whole op runs as ONE launch, the form `tiledForm` picks of round 16's `tk_per_block_cast_lossless__tile` (a CTA a tile of 128 rows × 256 columns: every code and input scale of the
 *   tile loaded once, 8 chunks a thread in flight, the block max of the exponent bytes by shuffles and one barrier,
 *   then the scales and the e4m3 codes), where the blocks as the kernels take them are input [1, 32] and output
 *   [128, 128] (or one block row of ≤ 128 rows), the codes' base is 8-byte and the output data's base 16-byte
 *   aligned; every other call, and every call with `tiled` false, runs as `dataAligned` says. Same bytes (data and
 *   sf) either way.
 * - `tiledForm` (default 3 since round 20's A/B, docs/perf-notes/perf20-lsl.md: 71.7 → 82.5% of copy at 16384 × 7168,
 *   70.6 → 80.4% at 8192 × 7168), where `tiled` is taken: 3 runs `tk_per_block_cast_lossless__tile_cg` (each lane
 *   pair's chunks copied by 16-byte cp.async.cg, with one exponent word a pair, all with the L2::256B prefetch hint,
 *   into a ring of 3 tiles in shared memory, two tiles ahead in flight, 3 CTAs per SM); a codes base only 8-byte
 *   aligned runs form 2. 2 (the default of round 19, docs/perf-notes/perf19-lsl.md, kept for A/B) runs
 *   `tk_per_block_cast_lossless__tile_cp`: the same ring filled by each thread's own 8-byte chunks and exponent words.
 *   Both take the same calls as `__tile` did (they copy whole 32-bit words of the input scales, whose fp32 or int32
 *   storage is always 4-byte aligned) with the same bytes, and their grid is balanced: every CTA gets ⌈tiles / grid⌉
 *   or one fewer tiles, with grid ≤ CTAs per SM · SMs. (Form 0, round 16's `__tile` itself (52.5 → 67.3% of copy at
 *   16384 × 7168, perf16-lsl.md), left the package in trim24: docs/branches/trim24-removed.patch.)
 */
export const losslessLaunchTuning: { dataAligned: boolean; tiled: boolean; tiledForm: 2 | 3 } = { dataAligned: true, tiled: true, tiledForm: 3 };

let lastDataKernel = "";
/**
 * The symbol of the last data launch of {@link perBlockCastLossless} on a device ("" before any): for tests. With
 * `losslessLaunchTuning.tiled` taken, the op's only launch: the form `losslessLaunchTuning.tiledForm` picks
 * (`tk_per_block_cast_lossless__tile_cg` by default, `__tile_cp` with 2 or a codes base only 8-byte aligned).
 */
export function lastLosslessDataKernel(): string {
  return lastDataKernel;
}

/**
 * Block sizes as the kernels take them (u32, column sizes powers of two) with the same block grid: a block at
 * least as large as the tensor becomes the smallest one that still covers it, as a multiple of the input block.
 */
function deviceBlocks(n: number, inner: number, outer: number, isPow2: boolean): [number, number] {
  const cover = isPow2 ? 2 ** Math.ceil(Math.log2(Math.max(n, 1))) : Math.max(n, 1);
  if (inner >= n) return [cover, cover];
  if (outer >= n) return [inner, isPow2 ? cover : inner * Math.ceil(n / inner)];
  return [inner, outer];
}

function launchLossless(op: string, device: Device, stream: Stream, data: Tensor, sf: Tensor, sfIn: SfInput, out: Tensor, outSf: Tensor, g: SfGeometry, a: { T: number; H: number; ri: number; ci: number; ro: number; co: number; packed: boolean }): void {
  if (a.T === 0) return;
  const [ri, ro] = deviceBlocks(a.T, a.ri, a.ro, false);
  const [ci, co] = deviceBlocks(a.H, a.ci, a.co, true);
  const p = packet;
  const w = p.w;
  p.u64(w.x, (data as DeviceTensor).addr);
  p.u64(w.x_sf, (sf as DeviceTensor).addr);
  p.u64(w.data, (out as DeviceTensor).addr);
  p.u64(w.sf, (outSf as DeviceTensor).addr);
  p.u64(w.error_word, errorWordPtr(op, device));
  p.u64(w.x_sf_stride0, sfIn.s0);
  p.u64(w.x_sf_stride1, sfIn.s1);
  p.u64(w.sf_stride0, g.strides[0]);
  p.u64(w.sf_stride1, g.strides[1]);
  p.u32(w.num_tokens, a.T);
  p.u32(w.hidden, a.H);
  p.u32(w.in_block_rows, ri);
  p.u32(w.in_block_cols, ci);
  p.u32(w.out_block_rows, ro);
  p.u32(w.out_block_cols, co);
  p.u32(w.x_sf_kind, sfIn.kind === "packed" ? LOSSLESS_SF_KIND.packedChannel : LOSSLESS_SF_KIND.fp32);
  p.u32(w.sf_rows, g.paddedRows);
  p.u32(w.flags, a.packed ? PER_TOKEN_FLAG.packedUe8m0 : 0);
  p.u32(w.op_id, OP_ID_LOSSLESS);
  const sms = config.getNumSms(device);
  const xAddr = (data as DeviceTensor).addr, outAddr = (out as DeviceTensor).addr;
  if (
    losslessLaunchTuning.tiled && ri === 1 && ci === PLT.inBlockCols && co === PLT.outBlockCols && (ro === PLT.tileRows || (ro >= a.T && a.T <= PLT.tileRows)) &&
    xAddr % PLT.xAlign === 0 && outAddr % PLT.dataAlign === 0
  ) {
    const tiles = Math.ceil(a.T / PLT.tileRows) * Math.ceil(a.H / PLT.tileCols);
    const knob = losslessLaunchTuning.tiledForm;
    const f = PLP[xAddr % PLP[knob].xAlign !== 0 ? 2 : knob];
    const grid = Math.ceil(tiles / Math.ceil(tiles / (f.blocksPerSm * sms)));
    lastDataKernel = f.symbol;
    p.setLaunch(kernelFunctionWithSmem(op, device, f.symbol, f.ringBytes, f.carveout), stream.handle, grid, PLT.threads, f.ringBytes, false, device.index);
    p.launch(op);
    return;
  }
  const sfGrid = Math.max(1, Math.min(Math.ceil((g.nbm * g.nbk) / PL.warpsPerBlock), PL.sfBlocksPerSm * sms));
  p.setLaunch(kernelFunction(op, device, "tk_per_block_cast_lossless__sf"), stream.handle, sfGrid, PL.threads, 0, false, device.index);
  p.launch(op);
  if (losslessLaunchTuning.dataAligned && ci >= PLA.minInBlockCols && xAddr % PLA.xAlign === 0 && outAddr % PLA.dataAlign === 0) {
    const grid = Math.max(1, Math.min(Math.ceil((a.T * a.H) / PLA.elemsPerTile), PLA.blocksPerSm * sms));
    lastDataKernel = "tk_per_block_cast_lossless__data_a";
    p.setLaunch(kernelFunction(op, device, lastDataKernel), stream.handle, grid, PLA.threads, 0, false, device.index);
    p.launch(op);
    return;
  }
  const chunks = (a.T * a.H) / PL.elemsPerChunk;
  const dataGrid = Math.max(1, Math.min(Math.ceil(chunks / (PL.threads * PL.chunksPerStep)), PL.dataBlocksPerSm * sms));
  lastDataKernel = "tk_per_block_cast_lossless__data";
  p.setLaunch(kernelFunction(op, device, lastDataKernel), stream.handle, dataGrid, PL.threads, 0, false, device.index);
  p.launch(op);
}

/**
 * Re-blocks FP4 (E2M1) data with power-of-two scales into FP8 (E4M3) with coarser scales, exactly
 * (spec/quant.md §10). `x = [data e2m1x2 [T, H/2] contiguous, sf]` with `H % 32 == 0` and scales of
 * `xBlockSize` blocks as fp32 (row- or column-major, exponent field used) or packed UE8M0. For each output block
 * of `outBlockSize`: `Eout = max(Ein) − 6` (at least 0), data = `e4m3(decode(q) · 2^(Ein − Eout))`, scale
 * `2^(Eout − 127)` as fp32 (`Eout = 0` gives +0) or a packed UE8M0 byte (needs `roundSf`). An input block more
 * than 2¹¹ below the largest of its output block cannot be exact: the op throws `DEVICE_VALUE` (on a device: at
 * the next sync point, e.g. `toHost`, per the device error word; the data written are then unspecified).
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
  const pl = place(op, options.backend, data, sf, outData, outSf);
  if (pl.backend === "cuda" && !pl.staged) {
    const stream = blockStream(op, pl.device, options.stream);
    const d = outData ?? deviceCodes(op, pl.device, stream, "e4m3", T, H);
    const s = outSf ?? deviceSf(op, pl.device, stream, g);
    launchLossless(op, pl.device, stream, data, sf, sfIn, d, s, g, { T, H, ri, ci, ro, co, packed });
    return [d, s];
  }
  if (pl.backend === "cuda") {
    const local = { ...options, out: undefined, backend: "auto", stream: undefined } as const;
    const [d, s] = runOnDeviceStaged(op, pl.device, [data, sf], [outData, outSf], ([dd, ds]) => perBlockCastLossless([dd!, ds!], local));
    return [d, s];
  }
  const res = perBlockCastLosslessRef(onHost(data) as HostTensor, onHost(sf) as HostTensor, sfIn, { tokens: T, hidden: H, xBlockSize: [ri, ci], outBlockSize: [ro, co], layout });
  return [deliverHostResult(op, res.data, outData, pl), deliverHostResult(op, res.sf, outSf, pl)];
}

/**
 * Launches of the generic block-scaled cast (`kernels-src/cuda/quant/cast_block.cu`): the block shapes and forms of
 * `cast` that no dedicated kernel covers (see `cast.ts` for the routing). e4m3 output from fp32 / bf16 / fp16 with
 * 16-byte chunks inside the blocks (`singlePass`) is one launch; every other form is two launches on one stream: the
 * scale pass (sf and each block's inverse into a stream-ordered fp32 scratch) and the data pass. Behind
 * {@link castBlockLaunchTuning}, two of those shapes run on the per-token and per-block kernels instead (the default).
 * @module
 */
import { config } from "../../core/config.ts";
import { type Device, deviceEmptyStrided, type DeviceTensor, type Stream, type Tensor } from "../../core/tensor.ts";
import { kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { CAST_BLOCK_MODE, CastBlockParams } from "./cast_block.params.ts";
import { launchPerBlockCastForCast } from "./per_block_cast.ts";
import type { BlockCastArgs } from "./per_block_cast.ref.ts";
import { launchPerTokenCastForCast } from "./per_token_cast.ts";
import { PER_TOKEN_FLAG, SF_KIND } from "./per_token_cast.params.ts";
import { QMAX, type QuantFmt } from "./scale.ref.ts";
import type { SfGeometry, SfInput } from "./sf_layout.ts";

/** cast_block.cu's launch table: 256 threads (8 warps), grids capped at 8 CTAs per SM. */
const THREADS = 256;
const WARPS = 8;
const ITEM_BYTES = 4;
const MAX_CTAS_PER_SM = 8;

const packet = new LaunchPacket(CastBlockParams);
const W = packet.w;
const IN_NAME: Record<string, string> = { fp32: "fp32", bf16: "bf16", fp16: "fp16", e4m3: "e4m3", e2m1x2: "e2m1" };

/** A quantized input's scales as the kernels read them (§4.4). */
export interface QuantizedSf {
  readonly sf: Tensor;
  readonly sfIn: SfInput;
  readonly blockRows: number;
  readonly blockCols: number;
}

function addr(t: Tensor | null | undefined): number {
  return t ? (t as DeviceTensor).addr : 0;
}

/** Fills the fields both passes share; r and c are clamped to T and H (the same blocks, 32-bit fields). */
function fill(x: Tensor, T: number, H: number, r: number, c: number, fmt: QuantFmt): void {
  const p = packet;
  p.u64(W.x, addr(x));
  p.u32(W.num_tokens, T);
  p.u32(W.hidden, H);
  p.u32(W.block_rows, Math.min(r, Math.max(T, 1)));
  p.u32(W.block_cols, Math.min(c, Math.max(H, 1)));
  p.f32(W.qmax, QMAX[fmt]);
}

/** Input elements per 16-byte chunk of the single pass (cast_block.cu `kSingleVec`). */
const SINGLE_VEC: Record<string, number> = { fp32: 4, bf16: 8, fp16: 8 };

/**
 * Whether the single pass takes the form: e4m3 codes of a plain fp32 / bf16 / fp16 input whose effective block width
 * `c` and hidden size `H` are multiples of a 16-byte input chunk (no chunk straddles a block or a row), with 16-byte
 * aligned input and chunk-aligned output, and blocks of fewer than 2^32 chunks (32-bit chunk indices).
 */
function singlePass(
  x: Tensor,
  q: QuantizedSf | null,
  fmt: QuantFmt,
  r: number,
  c: number,
  H: number,
  data: Tensor,
): boolean {
  const vec = SINGLE_VEC[x.dtype];
  if (q !== null || fmt !== "e4m3" || vec === undefined) return false;
  return c % vec === 0 && H % vec === 0 && addr(x) % 16 === 0 && addr(data) % vec === 0 && (r * c) / vec < 2 ** 32;
}

/** Chunks a lane holds per sweep (cast_block.cu `kSingleChunks`). */
const SINGLE_CHUNKS = 4;
/**
 * The staged single pass (`tk_cast_block_staged__*`, cast_block.cu) for blocks of at most 32 · SINGLE_CHUNKS chunks
 * (one sweep); larger blocks keep `tk_cast_block_single__*`. A/B switch of docs/perf-notes/perf3-quant.md.
 */
const STAGED = true;
/**
 * Block shapes [R, C] of the staged kernel's shape-compiled forms (cast_block.cu `_r<R>c<C>_a`), per input: the
 * generic shapes of the roofline, 5–7 points of copy faster than `tk_cast_block_staged__*` on an H200
 * (docs/perf-notes/perf9-cast.md). fp16 [1, 128] had `_r1c128_a` until trim32: since round 23 those calls run
 * perTokenCast's kernel (see {@link dedicatedForm}), and the form left the package
 * (docs/branches/trim32-removed.patch).
 */
const SHAPED: Record<string, readonly [number, number]> = { bf16: [16, 64] };

/**
 * Whether a staged launch takes the shape-compiled form: an input with one, the effective block `re` × `ce` its
 * shape, and whole blocks only (T % R = 0, H % C = 0); otherwise `tk_cast_block_staged__*`.
 */
export function shapedForm(x: Tensor, re: number, ce: number, T: number, H: number): boolean {
  const s = SHAPED[x.dtype];
  return s !== undefined && re === s[0] && ce === s[1] && T % re === 0 && H % ce === 0;
}
/**
 * Launch choices of the generic cast that tests and benches may flip (restore them after use); round 23,
 * docs/perf-notes/perf23-gcast.md. Same bytes as the kernels they replace.
 * - `perBlock16x64` (default on) with `perBlock16x64MinRows` (default 10240): bf16 → e4m3 with effective blocks
 *   [16, 64] of a plain input, T ≥ `perBlock16x64MinRows`, `T % 16 == 0`, `H % 64 == 0`, x 16-byte and data 8-byte
 *   aligned: `tk_per_block_cast__bf16_e4m3_16x64` (per_block_cast_gc23.cu: perBlockCast's tile kernel, 16 × 1024
 *   tiles) instead of `tk_cast_block_staged__bf16_e4m3_r16c64_a`. Interleaved A/B on the H200
 *   (bench/gcast23_tuning.ts, % of copy, fp32 / packed column-major sf, × 7168): 8192 rows 88.7–88.9 → 86.5–87.0 /
 *   87.9–88.2 → 87.0–87.1 (a loss, hence the row bound), 10240 87.4 → 89.1 / 87.3 → 89.2, 12288 86.9 → 90.5 / 86.6 →
 *   90.3, 14336 86.2 → 91.3 / 86.2 → 91.3, 16384 87.2–87.5 → 91.6–91.8 / 87.2–87.3 → 91.4–91.8, 24576 87.6 → 93.8 /
 *   87.5 → 93.7. The bound is the smallest measured size of the win (the tile kernel's fixed start costs more than
 *   the staged kernel's at 8192 rows). Off: the staged kernel.
 * Every other shape, dtype, partial block or view keeps the kernels above. Read at every launch.
 * (Removed in trim32: `perToken16`. fp16 → e4m3 with effective blocks [1, 128] of a plain input and `H % 128 == 0`
 * (any view alignment) always runs `tk_per_token_cast__fp16_e4m3_g128_pdl` (per_token_cast_gc23.cu: the per-token
 * group kernel bf16 [1, 128] runs, from fp16; PDL attribute iff config.pdl). The knob's off ran the staged kernel's
 * shaped form `tk_cast_block_staged__fp16_e4m3_r1c128_a`, which left the package with it
 * (docs/branches/trim32-removed.patch). Interleaved A/B on the H200 (bench/gcast23_tuning.ts, % of copy, fp32 /
 * packed column-major sf, × 7168, `_r1c128_a` → the per-token kernel): 8192 rows 86.6–86.7 → 89.9–90.0 / 84.9–85.1 →
 * 88.8–89.0, 10240 87.8 → 91.0 / 86.6 → 89.8, 12288 89.3 → 91.3 / 87.6 → 90.4, 14336 89.3 → 92.0 / 88.0 → 90.9,
 * 16384 89.8–90.0 → 92.3–92.5 / 88.3–88.5 → 91.1–91.3, 24576 91.3 → 93.0 / 89.7 → 92.4.)
 */
export const castBlockLaunchTuning = { perBlock16x64: true, perBlock16x64MinRows: 10240 };

let lastKernel = "";
/** The symbol of the first (or only) kernel the last launchCastBlock sent (tests and benches). */
export function lastCastBlockKernel(): string {
  return lastKernel;
}

/**
 * The round-23 form that a launch takes (perToken16 always where it applies, perBlock16x64 under
 * {@link castBlockLaunchTuning}), or null; `re` × `ce` the effective block.
 */
function dedicatedForm(x: Tensor, q: QuantizedSf | null, fmt: QuantFmt, re: number, ce: number, T: number, H: number, data: Tensor): "perToken16" | "perBlock16x64" | null {
  if (q !== null || fmt !== "e4m3" || T === 0 || H === 0) return null;
  if (x.dtype === "fp16" && re === 1 && ce === 128 && H % 128 === 0) return "perToken16";
  if (
    castBlockLaunchTuning.perBlock16x64 && x.dtype === "bf16" && re === 16 && ce === 64 && T % 16 === 0 && H % 64 === 0 &&
    T >= castBlockLaunchTuning.perBlock16x64MinRows && addr(x) % 16 === 0 && addr(data) % 8 === 0
  ) return "perBlock16x64";
  return null;
}

/** Resident CTAs per SM of the staged kernel (its launch bound: 48 registers, 32 KiB of shared memory). */
const STAGED_CTAS_PER_SM = 5;

/**
 * grid.x of the staged single pass: one resident wave at most, sized so that every warp walks the same number of
 * block groups (n = ⌈units / resident warps⌉, then ⌈units / n⌉ warps), a unit being the 32 / g blocks of a warp's
 * teams (g: the team lanes of cast_block.cu's `team_lanes`).
 */
function stagedGrid(device: Device, blocks: number, chunks: number): number {
  let g = 1;
  while (g < 32 && g * SINGLE_CHUNKS < chunks) g *= 2;
  const units = Math.ceil(blocks / (32 / g));
  const resident = STAGED_CTAS_PER_SM * WARPS * config.getNumSms(device);
  const n = Math.ceil(units / resident);
  return Math.max(1, Math.ceil(Math.ceil(units / n) / WARPS));
}

function dataGrid(device: Device, T: number, H: number, fmt: QuantFmt): number {
  const bytes = fmt === "e4m3" ? T * H : (T * H) / 2;
  return Math.max(
    1,
    Math.min(Math.ceil(Math.ceil(bytes / ITEM_BYTES) / THREADS), MAX_CTAS_PER_SM * config.getNumSms(device)),
  );
}

/**
 * The block-scaled cast of `x` (plain, or the codes of a quantized input with `q`) into `data` and `sf` (geometry
 * `g`), enqueued on `stream`. Nothing is launched for an empty output.
 */
export function launchCastBlock(
  op: string,
  device: Device,
  stream: Stream,
  x: Tensor,
  q: QuantizedSf | null,
  a: BlockCastArgs,
  g: SfGeometry,
  data: Tensor,
  sf: Tensor,
): void {
  const T = a.tokens, H = a.hidden, fmt = a.rule.fmt;
  const blocks = g.nbm * g.nbk;
  if (blocks === 0) return;
  const re = Math.min(a.blockRows, Math.max(T, 1)), ce = Math.min(a.blockCols, Math.max(H, 1));
  const form = dedicatedForm(x, q, fmt, re, ce, T, H, data);
  if (form === "perToken16") {
    launchPerTokenCastForCast(op, device, stream, x, { tokens: T, hidden: H, numPerChannels: 128, rule: a.rule, layout: a.layout }, g, data, sf);
    lastKernel = "tk_per_token_cast__fp16_e4m3_g128_pdl";
    return;
  }
  if (form === "perBlock16x64") {
    launchPerBlockCastForCast(op, device, stream, x, { ...a, blockRows: 16, blockCols: 64 }, data, sf);
    lastKernel = "tk_per_block_cast__bf16_e4m3_16x64";
    return;
  }
  const single = singlePass(x, q, fmt, re, ce, H, data);
  const inv = single ? null : deviceEmptyStrided(op, device, [blocks], [1], "fp32", blocks, stream);
  const p = packet;
  fill(x, T, H, a.blockRows, a.blockCols, fmt);
  p.u64(W.x_sf, addr(q?.sf));
  p.u64(W.data, addr(data));
  p.u64(W.sf, addr(sf));
  p.u64(W.inv, inv ? inv.addr : 0);
  p.u64(W.x_sf_stride0, q ? q.sfIn.s0 : 0);
  p.u64(W.x_sf_stride1, q ? q.sfIn.s1 : 0);
  p.u64(W.sf_stride0, g.strides[0]);
  p.u64(W.sf_stride1, g.strides[1]);
  p.u32(W.x_block_rows, q ? q.blockRows : 1);
  p.u32(W.x_block_cols, q ? q.blockCols : 1);
  p.u32(W.x_sf_kind, q ? SF_KIND[q.sfIn.kind === "packed" ? "packedChannel" : q.sfIn.kind] : 0);
  p.u32(W.sf_rows, g.paddedRows);
  p.u32(W.mode, CAST_BLOCK_MODE.cast);
  p.u32(W.dequantize_first, q && a.blockCols === 1 ? 1 : 0);
  p.u32(
    W.flags,
    (a.rule.roundSf ? PER_TOKEN_FLAG.roundSf : 0) | (a.rule.packedUe8m0 ? PER_TOKEN_FLAG.packedUe8m0 : 0) |
      (a.rule.e4m3Sf ? PER_TOKEN_FLAG.e4m3Sf : 0),
  );
  p.f32(W.amax_clamp, a.rule.clamp);
  const staged = single && STAGED && (re * ce) / SINGLE_VEC[x.dtype] <= 32 * SINGLE_CHUNKS;
  const sfGrid = staged
    ? stagedGrid(device, blocks, (re * ce) / SINGLE_VEC[x.dtype])
    : Math.max(1, Math.min(Math.ceil(blocks / WARPS), MAX_CTAS_PER_SM * config.getNumSms(device)));
  const first = staged
    ? `tk_cast_block_staged__${IN_NAME[x.dtype]}_e4m3${shapedForm(x, re, ce, T, H) ? `_r${re}c${ce}_a` : ""}`
    : single
    ? `tk_cast_block_single__${IN_NAME[x.dtype]}_e4m3`
    : `tk_cast_block_sf__${IN_NAME[x.dtype]}`;
  lastKernel = first;
  p.setLaunch(
    kernelFunction(op, device, first),
    stream.handle,
    sfGrid,
    THREADS,
    0,
    false,
    device.index,
  );
  p.launch(op);
  if (inv && T * H > 0) launchDataPass(op, device, stream, x, T, H, fmt);
  inv?.dispose(); // stream-ordered: freed after both launches
}

/**
 * `data = encode(x · fl(1/s))` with the precomputed fp32 row-major sf `s` of `[r, c]` blocks (§7.1), enqueued on
 * `stream`: the data pass alone. Nothing is launched for an empty output.
 */
export function launchCastBlockPrecomputed(
  op: string,
  device: Device,
  stream: Stream,
  x: Tensor,
  s: Tensor,
  fmt: QuantFmt,
  blockRows: number,
  blockCols: number,
  data: Tensor,
): void {
  const [T, H] = [x.shape[0], x.shape[1]];
  if (T * H === 0) return;
  const p = packet;
  fill(x, T, H, blockRows, blockCols, fmt);
  p.u64(W.x_sf, addr(s));
  p.u64(W.data, addr(data));
  p.u64(W.sf, 0);
  p.u64(W.inv, 0);
  p.u64(W.x_sf_stride0, s.strides[0]);
  p.u64(W.x_sf_stride1, s.strides[1]);
  p.u64(W.sf_stride0, 0);
  p.u64(W.sf_stride1, 0);
  p.u32(W.x_block_rows, 1);
  p.u32(W.x_block_cols, 1);
  p.u32(W.x_sf_kind, SF_KIND.fp32);
  p.u32(W.sf_rows, 0);
  p.u32(W.mode, CAST_BLOCK_MODE.precomputedSf);
  p.u32(W.dequantize_first, 0);
  p.u32(W.flags, 0);
  p.f32(W.amax_clamp, 0);
  launchDataPass(op, device, stream, x, T, H, fmt);
}

/** Launches the data pass (`tk_cast_block_data__*`) with the packet as filled. */
function launchDataPass(op: string, device: Device, stream: Stream, x: Tensor, T: number, H: number, fmt: QuantFmt): void {
  const fn = kernelFunction(op, device, `tk_cast_block_data__${IN_NAME[x.dtype]}_${fmt}`);
  packet.setLaunch(fn, stream.handle, dataGrid(device, T, H, fmt), THREADS, 0, false, device.index);
  packet.launch(op);
}

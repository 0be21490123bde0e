/**
 * Rotary position embedding: `applyRotary` (spec/API.md §3.3; numerics and legal arguments:
 * spec/norm-rope-rand.md §B.3, D.6, D.10). Checks, then dispatch to the CPU reference (`rope.ref.ts`) or the CUDA
 * kernel (`kernels-src/cuda/transform/rope.cu`).
 * @module
 */
import { type OpOptions, place } from "../../core/backend.ts";
import { checkOptions, checkTensor, describe, optBool, selfOverlapping } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { copyInto, disposeStaged, onDevice, onHost, writeBackSpan } from "../../core/stage.ts";
import { type Device, DeviceTensor, deviceRuntime, type HostTensor, type Stream, type Tensor } from "../../core/tensor.ts";
import { errorWordPtr, kernelFunctionWithSmem, LaunchPacket } from "../../ffi/cuda.ts";
import { registerOpId } from "../../ffi/op_ids.ts";
import { ROPE_FLAG, RopeParams } from "./rope.params.ts";
import { rotaryRows, rotateRef } from "./rope.ref.ts";

/** Op id of the error word (ffi/op_ids.ts reserves 110) and the kernel's condition bit. */
const OP_ID = registerOpId(110, "applyRotary", { 1: "seqlenOffset + position outside the cache rows [0, R)" });

/** Options of {@link applyRotary}. */
export interface ApplyRotaryOptions extends OpOptions {
  /** Rotated too, with the same cache rows: same rank, dtype, `D` and leading dims as `query`, own head count. */
  key?: Tensor;
  /** int32/int64 positions, `[T]` (3-D) or `[B, S]` (4-D, any batch stride including 0); default `s`. */
  positions?: Tensor;
  /** GPT-J pairs `(2i, 2i+1)` instead of NeoX `(i, i + D/2)`. Default false. */
  interleaved?: boolean;
  /** Rotate by the conjugate (the inverse rotation, for backward). Default false. */
  conjugate?: boolean;
  /** Added to every position (or to the token index). Default 0. */
  seqlenOffset?: number;
}

const KEYS = ["key", "positions", "interleaved", "conjugate", "seqlenOffset"];
const DIMS = [32, 64, 128, 256];

function shapeText(s: readonly number[]): string {
  return `[${s.join(", ")}]`;
}

/** A rotated tensor: 3-D or 4-D, fp16/bf16/fp32, unit last stride, no two elements at one address. */
function checkRotated(op: string, arg: string, t: unknown): Tensor {
  const r = checkTensor(op, arg, t, ["fp16", "bf16", "fp32"]);
  if (r.shape.length !== 3 && r.shape.length !== 4) throw new TkError(op, arg, "SHAPE", `expected [T, heads, D] or [B, S, heads, D], got shape ${shapeText(r.shape)}`);
  const D = r.shape[r.shape.length - 1];
  if (!DIMS.includes(D)) throw new TkError(op, arg, "SHAPE", `the rotary dimension (last) must be one of ${DIMS.join(", ")} (got ${D})`);
  if (r.strides[r.strides.length - 1] !== 1) throw new TkError(op, arg, "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${r.strides[r.strides.length - 1]}`);
  if (selfOverlapping(r)) throw new TkError(op, arg, "LAYOUT", `two of its elements share an address (shape ${shapeText(r.shape)}, strides [${r.strides.join(", ")}])`);
  return r;
}

/**
 * Rotates `query` (and `key`) in place by the angles of `cosSinCache` (spec/norm-rope-rand.md §B.3). `query` is
 * `[T, heads, D]` or `[B, S, heads, D]` (fp16/bf16/fp32, `D` ∈ 32, 64, 128, 256, any strides with a unit last
 * stride — partial rotary is a slice such as the trailing 64 of a 192-wide head); `cosSinCache` is fp32
 * `[R, D]`, cos in columns `[0, D/2)`, sin in `[D/2, D)`. Token `(b, s)` uses row `seqlenOffset + positions[b, s]`
 * (or `seqlenOffset + s`). Pairs are NeoX `(i, i + D/2)` or, with `interleaved`, GPT-J `(2i, 2i+1)`:
 * `a' = fma(a, cos, −b·sin)`, `b' = fma(a, sin, b·cos)` in binary32, rounded once to the dtype (`conjugate`:
 * the inverse rotation). Only the view's elements are written. Returns `[query, key | null]`, the same tensors.
 *
 * Device tensors run the CUDA kernel on `stream` (bitwise equal to the CPU reference); a position whose row falls
 * outside the cache leaves that token unchanged and raises `DEVICE_VALUE` at the next sync (the CPU reference
 * throws it before writing anything). Host tensors run the CPU reference unless `backend` / `TK_BACKEND` says
 * otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { applyRotary } from "./mod.ts";
 * import { tensor } from "../../core/tensor.ts";
 * const q = tensor(new Float32Array(32).map((_, i) => (i < 16 ? 1 : 0)), [1, 1, 32], "fp32");
 * const cache = tensor(new Float32Array(32).map((_, i) => (i < 16 ? 0 : 1)), [1, 32], "fp32"); // cos 0, sin 1
 * applyRotary(q, cache, {});
 * const d = (q as { data: Float32Array }).data;
 * assert.ok(d[0] === 0 && d[16] === 1); // (1 + 0i) · i = i
 * ```
 */
export function applyRotary(query: Tensor, cosSinCache: Tensor, options: ApplyRotaryOptions = {}): [query: Tensor, key: Tensor | null] {
  const op = "applyRotary";
  checkOptions(op, options, KEYS);
  const o = options ?? {};
  if ((o as { out?: unknown }).out !== undefined) throw new TkError(op, "out", "VALUE", "applyRotary rotates query and key in place and takes no out");
  const q = checkRotated(op, "query", query);
  const four = q.shape.length === 4;
  const D = q.shape[q.shape.length - 1];
  const cache = checkTensor(op, "cosSinCache", cosSinCache, ["fp32"], 2);
  if (cache.shape[1] !== D) throw new TkError(op, "cosSinCache", "SHAPE", `expected ${D} columns (the rotary dimension of query), got shape ${shapeText(cache.shape)}`);
  if (cache.strides[1] !== 1) throw new TkError(op, "cosSinCache", "LAYOUT", `columns must be contiguous (stride 1), got stride ${cache.strides[1]}`);
  const R = cache.shape[0];
  const B = four ? q.shape[0] : 1;
  const S = four ? q.shape[1] : q.shape[0];
  let k: Tensor | null = null;
  if (o.key !== undefined) {
    k = checkRotated(op, "key", o.key);
    if (k.dtype !== q.dtype) throw new TkError(op, "key", "DTYPE", `expected dtype ${q.dtype} (as query), got ${k.dtype}`);
    const lead = four ? 2 : 1;
    if (k.shape.length !== q.shape.length || k.shape[k.shape.length - 1] !== D || k.shape.slice(0, lead).some((d, i) => d !== q.shape[i])) {
      throw new TkError(op, "key", "SHAPE", `expected shape [${q.shape.slice(0, lead).join(", ")}, heads, ${D}] (as query), got ${shapeText(k.shape)}`);
    }
    if (k.numel > 0 && q.numel > 0 && sameStart(k, q)) throw new TkError(op, "key", "VALUE", "starts at the same address as query");
  }
  let pos: Tensor | null = null;
  if (o.positions !== undefined) {
    pos = checkTensor(op, "positions", o.positions, ["int32", "int64"]);
    const want = four ? [B, S] : [S];
    if (pos.shape.length !== want.length || pos.shape.some((d, i) => d !== want[i])) {
      throw new TkError(op, "positions", "SHAPE", `expected shape ${shapeText(want)}, got ${shapeText(pos.shape)}`);
    }
    if (S > 1 && pos.strides[pos.strides.length - 1] !== 1) throw new TkError(op, "positions", "LAYOUT", `last dimension must be contiguous (stride 1), got stride ${pos.strides[pos.strides.length - 1]}`);
  }
  const interleaved = optBool(op, "interleaved", o.interleaved);
  const conjugate = optBool(op, "conjugate", o.conjugate);
  const off = o.seqlenOffset ?? 0;
  if (typeof off !== "number" || !Number.isSafeInteger(off)) throw new TkError(op, "seqlenOffset", "VALUE", `expected an integer, got ${describe(off)}`);
  const work = q.numel > 0 || (k !== null && k.numel > 0);
  if (!pos && work && (off < 0 || off + S > R)) {
    throw new TkError(op, "seqlenOffset", "VALUE", `without positions, seqlenOffset and seqlenOffset + S must lie in [0, ${R}] (got ${off} with S = ${S})`);
  }
  if (work && R === 0) throw new TkError(op, "cosSinCache", "SHAPE", "has no rows, but there is something to rotate");
  const pl = place(op, o.backend, q, cache, k, pos);
  if (!work) return [query, k];

  if (pl.backend === "cuda" && !pl.staged) {
    if (B * S > 0xffffffff) throw new TkError(op, "query", "SHAPE", `B·S = ${B * S} tokens exceed 2^32 − 1`);
    const stream = o.stream ?? deviceRuntime(op).defaultStream(pl.device);
    const flags = (interleaved ? ROPE_FLAG.interleaved : 0) | (conjugate ? ROPE_FLAG.conjugate : 0) |
      (pos && pos.dtype === "int64" ? ROPE_FLAG.positionsInt64 : 0) | (rotaryLaunchTuning.l2Line ? ROPE_FLAG.l2Line : 0);
    // A bad position is reported by the first launch only, so the error word counts each token once.
    let report = true;
    for (const t of k ? [q, k] : [q]) {
      if (t.numel === 0) continue;
      launchRotary(op, pl.device, stream, t as DeviceTensor, cache as DeviceTensor, pos as DeviceTensor | null, off, flags, report);
      report = false;
    }
    return [query, k];
  }
  if (pl.backend === "cuda") {
    // Host tensors on a forced device backend: rotate contiguous device copies, then write the elements back
    // into the caller's views (a bad position throws at that sync, before anything is written).
    const staged = [q, cache, k, pos].map((t) => (t ? (onDevice(t, pl.device) as DeviceTensor) : null));
    try {
      const [dq, dc, dk, dp] = staged;
      applyRotary(dq!, dc!, { key: dk ?? undefined, positions: dp ?? undefined, interleaved, conjugate, seqlenOffset: off });
      const hq = onHost(dq!);
      const hk = onHost(dk);
      copyInto(op, q, hq);
      if (k && hk) copyInto(op, k, hk);
    } finally {
      disposeStaged(...staged);
    }
    return [query, k];
  }

  const args = { interleaved, conjugate, seqlenOffset: off };
  const hq = onHost(q) as HostTensor;
  const hk = onHost(k);
  // Every row is computed (and checked) before anything is written.
  const rows = rotaryRows(op, B, S, onHost(pos), off, R);
  const hc = onHost(cache) as HostTensor;
  rotateRef(hq, hc, rows, args);
  if (hk) rotateRef(hk, hc, rows, args);
  if (pl.staged) {
    writeBackSpan(op, q as DeviceTensor, hq);
    if (k && hk) writeBackSpan(op, k as DeviceTensor, hk);
  }
  return [query, k];
}

// ---- CUDA launch ------------------------------------------------------------------------------------------

const packet = new LaunchPacket(RopeParams);
const W = packet.w;
const THREADS = 256;

/** A signed 64-bit field from a safe integer (two's complement words). */
function i64(word: number, v: number): void {
  packet.u32(word, v >>> 0);
  packet.u32(word + 1, Math.floor(v / 4294967296) >>> 0);
}

/** Blocks of rope.cu's kernel resident per SM (its __launch_bounds__ minimum): the persistent grid's size. */
const BLOCKS_PER_SM = 3;
/**
 * Dynamic shared memory of rope.cu's block (Rope<_, 2>::kSmemBytes): 2 slots of 6 × 16 bytes per thread (x vectors
 * and cos/sin) and two 8-byte position words.
 */
const SMEM_BYTES = 53248;

/**
 * Internal launch tuning of applyRotary, for A/B runs and tests (not part of the API). `carveout`: the preferred
 * shared-memory carveout of the kernels in percent (cuFuncSetAttribute PREFERRED_SHARED_MEMORY_CARVEOUT): 100
 * (default) asks for the most shared memory, so that 3 blocks of 53 KiB certainly fit; -1 leaves the choice to the
 * driver (measured the same on the H200). Read when a kernel's function handle is first used in the process and
 * whenever the value changes. `l2Line`: the view's 16-byte loads carry the L2::128B prefetch-size hint (rope.cu
 * kFlagL2Line): an L2 miss fetches the whole 128-byte line, so the second half of a head (the thread's other
 * vector) is there or in flight (same bytes; a view whose heads are not whole lines may fetch bytes it does not
 * use). Default on: measured on the H200 (bench/rope_tuning.ts, 2026-11-30), 78.0 / 89.7% of copy (MLA / NeoX at
 * 16384) against 76.8 / 88.1% without. (The kernel template's 3- and 4-pass forms measured 73.9 / 82.9% and are
 * not built.)
 */
export const rotaryLaunchTuning = { carveout: 100, l2Line: true };

/**
 * Geometry of rope.cu's launch table: V = 16 / element bytes, C = D / 2V chunks per head, P = 2 (fp32) or 1 heads
 * per pass, L = min(nextPow2(⌈H / P⌉), 256 / C) head lanes, teams = 256 / (C·L) tokens per block pass; grid
 * min(⌈B·S / teams⌉, 3 · SMs): the blocks that fit at once (3 by registers and by shared memory).
 */
export function rotaryLaunch(smCount: number, tokens: number, heads: number, dim: number, dtype: string): { grid: number } {
  const elemBytes = dtype === "fp32" ? 4 : 2;
  const v = 16 / elemBytes;
  const chunks = dim / (2 * v);
  const perPass = elemBytes === 4 ? 2 : 1;
  const need = Math.ceil(heads / perPass);
  let lanes = 1;
  while (lanes < need && 2 * lanes * chunks <= THREADS) lanes *= 2;
  const teams = THREADS / (chunks * lanes);
  return { grid: Math.max(1, Math.min(Math.ceil(tokens / teams), BLOCKS_PER_SM * smCount)) };
}

function launchRotary(op: string, device: Device, stream: Stream, x: DeviceTensor, cache: DeviceTensor, pos: DeviceTensor | null, off: number, flags: number, report: boolean): void {
  const four = x.shape.length === 4;
  const B = four ? x.shape[0] : 1;
  const S = x.shape[four ? 1 : 0];
  const H = x.shape[four ? 2 : 1];
  const D = x.shape[four ? 3 : 2];
  const { grid } = rotaryLaunch(config.getNumSms(device), B * S, H, D, x.dtype);
  // function handles are cached by ffi/cuda.ts; the attributes are set once per handle (and carveout change)
  const fn = kernelFunctionWithSmem(op, device, `tk_apply_rotary__${x.dtype}`, SMEM_BYTES, rotaryLaunchTuning.carveout);
  const p = packet;
  // Strides of size-1 dims are never used: 0 keeps them from disabling the vector path.
  const sb = four && B > 1 ? x.strides[0] : 0;
  const ss = S > 1 ? x.strides[four ? 1 : 0] : 0;
  const sh = H > 1 ? x.strides[four ? 2 : 1] : 0;
  p.u64(W.x, x.addr);
  p.u64(W.cos_sin, cache.addr);
  p.u64(W.positions, pos ? pos.addr : 0);
  p.u64(W.error_word, report ? errorWordPtr(op, device) : 0);
  i64(W.x_stride_b, sb);
  i64(W.x_stride_s, ss);
  i64(W.x_stride_h, sh);
  i64(W.cos_sin_stride, cache.shape[0] > 1 ? cache.strides[0] : 0);
  i64(W.pos_stride_b, pos && four && B > 1 ? pos.strides[0] : 0);
  i64(W.pos_stride_s, pos && S > 1 ? pos.strides[pos.strides.length - 1] : 0);
  i64(W.seqlen_offset, off);
  p.u64(W.num_rows, cache.shape[0]);
  p.u32(W.batch, B);
  p.u32(W.seqlen, S);
  p.u32(W.heads, H);
  p.u32(W.dim, D);
  p.u32(W.flags, flags);
  p.u32(W.op_id, OP_ID);
  p.setLaunch(fn, stream.handle, grid, THREADS, SMEM_BYTES, false, device.index);
  p.launch(op);
}

/** True when two views start at the same element of the same storage. */
function sameStart(a: Tensor, b: Tensor): boolean {
  if (a instanceof DeviceTensor || b instanceof DeviceTensor) {
    return a instanceof DeviceTensor && b instanceof DeviceTensor && a.addr === b.addr;
  }
  return a.data.buffer === b.data.buffer && a.data.byteOffset + a.offset * bytesOf(a) === b.data.byteOffset + b.offset * bytesOf(b);
}

function bytesOf(t: Tensor): number {
  return t.dtype === "fp32" ? 4 : 2;
}

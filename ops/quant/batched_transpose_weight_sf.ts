/**
 * `batchedTransposeWeightSf` (spec/API.md §3.1; layouts and legal arguments: spec/quant.md §9.1, §11.1).
 * Checks, then dispatch to the CPU reference (`batched_transpose_weight_sf.ref.ts`) or the CUDA kernel
 * (`kernels-src/cuda/quant/transpose_weight_sf.cu`, one launch per weight for all its groups).
 * @module
 */
import { type OpOptions, place, type Placement } from "../../core/backend.ts";
import { checkContiguous, checkOptions, checkOutTensor, checkTensor, describe, oneOf, overlaps } from "../../core/checks.ts";
import { config } from "../../core/config.ts";
import { TkError } from "../../core/errors.ts";
import { deliverHostResult, onHost, runOnDeviceStaged } from "../../core/stage.ts";
import { type Device, deviceEmptyStrided, deviceRuntime, DeviceTensor, type HostTensor, type Stream, type Tensor } from "../../core/tensor.ts";
import { kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { type WeightSfGeometry, batchedTransposeWeightSfRef, weightSfGeometry } from "./batched_transpose_weight_sf.ref.ts";
import { TransposeWeightSfParams } from "./per_channel_cast.params.ts";

/** Options of {@link batchedTransposeWeightSf}. */
export interface BatchedTransposeWeightSfOptions extends OpOptions {
  /** Weight block size of the scales: 32 or 128. */
  blockSize: number;
  /** Per weight: return sf1 as `[G?, ⌈nS/4⌉, k]` (same storage) instead of `[G?, k, ⌈nS/4⌉]`. */
  transposeSf1: readonly boolean[];
  /** Per weight, a previously returned `[sf0, sf1]` pair to rewrite in place, or null for new outputs. */
  out?: readonly (readonly [Tensor, Tensor] | null)[];
}

const KEYS = ["blockSize", "transposeSf1"];

// ---- CUDA launch ------------------------------------------------------------------------------------------

const packet = new LaunchPacket(TransposeWeightSfParams);
const THREADS = 256;

/** Both outputs of one weight on the device (new, or the caller's `out` pair), then one launch. */
function runOnDevice(op: string, device: Device, stream: Stream, sf: Tensor, bs: number, geo: WeightSfGeometry, out: [Tensor, Tensor] | null): [Tensor, Tensor] {
  const sf0 = out?.[0] ?? deviceEmptyStrided(op, device, geo.sf0.shape, geo.sf0.strides, "int32", geo.storage0, stream);
  const sf1 = out?.[1] ?? deviceEmptyStrided(op, device, geo.sf1.shape, geo.sf1.strides, "int32", geo.storage1, stream);
  const dense = sf.shape.length === 2;
  const G = dense ? 1 : sf.shape[0];
  const nS = sf.shape[dense ? 0 : 1];
  const kS = sf.shape[dense ? 1 : 2];
  if (geo.storage0 + geo.storage1 === 0) return [sf0, sf1];
  // grid.x of transpose_weight_sf.cu's launch table: min(G·(P0 + P1), 8 · SMs), one output row per block at a time
  const rows = G * (Math.ceil(kS / 4) + Math.ceil(nS / 4));
  const p = packet;
  const w = p.w;
  p.u64(w.sf, (sf as DeviceTensor).addr);
  p.u64(w.sf0, (sf0 as DeviceTensor).addr);
  p.u64(w.sf1, (sf1 as DeviceTensor).addr);
  p.u32(w.groups, G);
  p.u32(w.n_blocks, nS);
  p.u32(w.k_blocks, kS);
  p.u32(w.block_size, bs);
  const grid = Math.max(1, Math.min(rows, 8 * config.getNumSms(device)));
  p.setLaunch(kernelFunction(op, device, "tk_transpose_weight_sf"), stream.handle, grid, THREADS, 0, false, device.index);
  p.launch(op);
  return [sf0, sf1];
}

/** Checks `t` against an expected int32 output geometry and 32-byte alignment (§9.1). */
function checkOutPair(op: string, arg: string, t: unknown, shape: readonly number[], strides: readonly number[], inputs: readonly Tensor[]): Tensor {
  const o = checkOutTensor(op, arg, t, "int32");
  const ok = o.shape.length === shape.length && shape.every((d, i) => o.shape[i] === d && (d <= 1 || o.strides[i] === strides[i]));
  if (!ok) {
    throw new TkError(op, arg, "OUT_MISMATCH", `expected shape [${shape.join(", ")}] with strides [${strides.join(", ")}], got [${o.shape.join(", ")}] / [${o.strides.join(", ")}]`);
  }
  const addr = o instanceof DeviceTensor ? o.addr : (o as HostTensor).data.byteOffset + o.offset * 4;
  if (addr % 32 !== 0) throw new TkError(op, arg, "OUT_MISMATCH", `storage must be 32-byte aligned (starts at byte offset ${addr})`);
  for (const i of inputs) if (overlaps(o, i)) throw new TkError(op, arg, "OUT_MISMATCH", "overlaps an input");
  return o;
}

/**
 * Converts the fp32 power-of-two block scales of several weights into the two packed-UE8M0 layouts DeepGEMM
 * reads (spec/quant.md §9.1). `sfs[i]` is fp32 contiguous `[nS, kS]` or `[G, nS, kS]` (`G > 0`) for an
 * `n × k` weight with `n = nS·blockSize`, `k = kS·blockSize`, both multiples of 128. Per weight it returns
 * `[sf0, sf1]`, int32: sf0 `[G?, n, ⌈kS/4⌉]` with strides `[…, 1, n]` (row index fastest), sf1
 * `[G?, k, ⌈nS/4⌉]` with strides `[…, 1, k]`, or with `transposeSf1[i]` the same storage as
 * `[G?, ⌈nS/4⌉, k]`. Each word packs the exponent bytes `(bits >>> 23) & 0xFF` of four consecutive blocks, the
 * first in the low byte. `out[i]`, when given, is a previously returned pair, rewritten in place.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { batchedTransposeWeightSf, tensor } from "../../mod.ts";
 * const sf = tensor([1, 2, 4, 0.5], [1, 4], "fp32"); // a 128 × 512 weight, blocks of 128
 * const [[sf0, sf1]] = batchedTransposeWeightSf([sf], { blockSize: 128, transposeSf1: [false] });
 * assert.deepEqual([sf0.shape, sf0.strides, sf1.shape], [[128, 1], [1, 128], [512, 1]]);
 * assert.equal((sf0 as { data: Int32Array }).data[0], 0x7e81807f); // bytes 127, 128, 129, 126
 * ```
 */
export function batchedTransposeWeightSf(sfs: readonly Tensor[], options: BatchedTransposeWeightSfOptions): [Tensor, Tensor][] {
  const op = "batchedTransposeWeightSf";
  checkOptions(op, options, KEYS);
  if (options === undefined) throw new TkError(op, "options", "VALUE", "blockSize and transposeSf1 are required");
  if (!Array.isArray(sfs)) throw new TkError(op, "sfs", "VALUE", `expected an array of fp32 tensors, got ${describe(sfs)}`);
  const bs = oneOf(op, "blockSize", options.blockSize, [32, 128]);
  const tr = options.transposeSf1;
  if (!Array.isArray(tr) || tr.length !== sfs.length || tr.some((b) => typeof b !== "boolean")) {
    throw new TkError(op, "transposeSf1", "VALUE", `expected ${sfs.length} booleans, one per scale tensor (got ${describe(tr)})`);
  }
  const outs = options.out;
  if (outs !== undefined && (!Array.isArray(outs) || outs.length !== sfs.length)) {
    throw new TkError(op, "out", "VALUE", `expected ${sfs.length} entries ([sf0, sf1] or null), got ${describe(outs)}`);
  }
  const checked: { sf: Tensor; out: [Tensor, Tensor] | null; pl: Placement; geo: WeightSfGeometry }[] = [];
  sfs.forEach((s, i) => {
    const arg = `sfs[${i}]`;
    const t = checkTensor(op, arg, s, ["fp32"]);
    if (t.shape.length !== 2 && t.shape.length !== 3) throw new TkError(op, arg, "SHAPE", `expected [nS, kS] or [G, nS, kS], got [${t.shape.join(", ")}]`);
    checkContiguous(op, arg, t);
    const dense = t.shape.length === 2;
    if (!dense && t.shape[0] <= 0) throw new TkError(op, arg, "SHAPE", `the group count G must be positive (got ${t.shape[0]})`);
    const [nS, kS] = dense ? t.shape : t.shape.slice(1);
    if ((nS * bs) % 128 !== 0) throw new TkError(op, arg, "SHAPE", `n = ${nS}·${bs} must be a multiple of 128`);
    if ((kS * bs) % 128 !== 0) throw new TkError(op, arg, "SHAPE", `k = ${kS}·${bs} must be a multiple of 128`);
    let out: [Tensor, Tensor] | null = null;
    const o = outs?.[i];
    const geo = weightSfGeometry(dense ? null : t.shape[0], nS, kS, bs, tr[i]);
    if (o !== undefined && o !== null) {
      if (!Array.isArray(o) || o.length !== 2) throw new TkError(op, `out[${i}]`, "VALUE", `expected an [sf0, sf1] pair or null, got ${describe(o)}`);
      const o0 = checkOutPair(op, `out[${i}][0]`, o[0], geo.sf0.shape, geo.sf0.strides, sfs);
      const o1 = checkOutPair(op, `out[${i}][1]`, o[1], geo.sf1.shape, geo.sf1.strides, sfs);
      if (overlaps(o0, o1)) throw new TkError(op, `out[${i}][1]`, "OUT_MISMATCH", "overlaps its sf0");
      for (const c of checked) if (c.out && c.out.some((p) => overlaps(p, o0) || overlaps(p, o1))) throw new TkError(op, `out[${i}]`, "OUT_MISMATCH", "overlaps another out entry");
      out = [o0, o1];
    }
    const pl = place(op, options.backend, sfs[0], t, out?.[0], out?.[1]);
    checked.push({ sf: t, out, pl, geo });
  });
  return checked.map(({ sf, out, pl, geo }, i) => {
    if (pl.backend === "cuda" && !pl.staged) {
      return runOnDevice(op, pl.device, options.stream ?? deviceRuntime(op).defaultStream(pl.device), sf, bs, geo, out);
    }
    if (pl.backend === "cuda") {
      const [d0, d1] = runOnDeviceStaged(op, pl.device, [sf], [out?.[0] ?? null, out?.[1] ?? null], ([dsf]) => {
        const stream = deviceRuntime(op).defaultStream(pl.device);
        return runOnDevice(op, pl.device, stream, dsf!, bs, geo, null);
      });
      return [d0, d1];
    }
    const [sf0, sf1] = batchedTransposeWeightSfRef(onHost(sf) as HostTensor, bs, tr[i]);
    return [deliverHostResult(op, sf0, out?.[0] ?? null, pl), deliverHostResult(op, sf1, out?.[1] ?? null, pl)];
  });
}

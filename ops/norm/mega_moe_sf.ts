/**
 * `megaMoeSf` of `normForwardAndPerTokenCast` (spec/norm-rope-rand.md A.1, A.4, D.10): the cast's UE8M0 scale bytes
 * also written, four to an int32, into DeepGEMM's mega-MoE M-major layout. Checks, the CPU writer, and the launch of
 * the device scatter (`kernels-src/cuda/norm/mega_moe_sf.cu`).
 * @module
 */
import { config } from "../../core/config.ts";
import { checkTensor, describe, overlaps } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { type Device, DeviceTensor, HostTensor, type Stream, type Tensor } from "../../core/tensor.ts";
import { kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { shapeText } from "./checks.ts";
import { MegaMoeSfParams } from "./mega_moe_sf.params.ts";

/** A checked `megaMoeSf` request: the target, m, and the view of every word the op may write. */
export interface MegaMoe {
  readonly target: Tensor;
  readonly m: number;
  /** `[rows, H/128]` with strides `[1, R]` over the target's storage: rows = ⌈T/m⌉·align(m, 128). */
  readonly span: Tensor;
}

/** align(m, 128)·⌈T/m⌉: the rows of each column that ρ can reach. */
function spanRows(T: number, m: number): number {
  return Math.ceil(T / m) * Math.ceil(m / 128) * 128;
}

/**
 * D.10's checks of `megaMoeSf` / `megaMoeBlockM` (both or neither; then 2-D x, 32 channels, roundSf, H % 128 == 0,
 * an int32 `[T, H/128]` target with stride(0) = 1 and stride(1) ≥ ⌈T/m⌉·align(m, 128), an integer m ≥ 1), plus
 * what the layout implies: every word ρ(t) can reach lies inside the target's allocation, and that span does not
 * overlap `others`. Returns null when neither is given.
 */
export function checkMegaMoe(
  op: string,
  megaMoeSf: unknown,
  megaMoeBlockM: unknown,
  x: Tensor,
  numPerChannels: number,
  roundSf: boolean,
  others: readonly [string, Tensor | null | undefined][],
): MegaMoe | null {
  const mGiven = megaMoeBlockM !== undefined && megaMoeBlockM !== 0;
  if (megaMoeSf === undefined || megaMoeSf === null) {
    if (mGiven) throw new TkError(op, "megaMoeBlockM", "VALUE", `is only used with megaMoeSf (got ${describe(megaMoeBlockM)} without it)`);
    return null;
  }
  if (!mGiven) throw new TkError(op, "megaMoeBlockM", "VALUE", "must be given (an integer ≥ 1) with megaMoeSf");
  const m = megaMoeBlockM;
  if (typeof m !== "number" || !Number.isInteger(m) || m < 1 || m > 2 ** 31 - 1) {
    throw new TkError(op, "megaMoeBlockM", "VALUE", `must be an integer ≥ 1 (got ${describe(m)})`);
  }
  if (x.shape.length !== 2) throw new TkError(op, "x", "SHAPE", `megaMoeSf needs a 2-D x, got shape ${shapeText(x.shape)}`);
  if (numPerChannels !== 32) throw new TkError(op, "numPerChannels", "VALUE", `must be 32 with megaMoeSf (got ${numPerChannels})`);
  if (!roundSf) throw new TkError(op, "roundSf", "VALUE", "must be true with megaMoeSf (UE8M0 scales are powers of two)");
  const [T, H] = x.shape;
  if (H % 128 !== 0) throw new TkError(op, "x", "SHAPE", `megaMoeSf needs a hidden size that is a multiple of 128 (got ${H})`);
  const t = checkTensor(op, "megaMoeSf", megaMoeSf, ["int32"]);
  const G = H / 128;
  if (t.shape.length !== 2 || t.shape[0] !== T || t.shape[1] !== G) {
    throw new TkError(op, "megaMoeSf", "SHAPE", `expected shape [${T}, ${G}] ([T, H/128]), got ${shapeText(t.shape)}`);
  }
  const rows = spanRows(T, m);
  if (T > 0 && t.strides[0] !== 1) throw new TkError(op, "megaMoeSf", "LAYOUT", `must be M-major (stride(0) = 1), got strides [${t.strides.join(", ")}]`);
  if (T > 0 && G > 1 && t.strides[1] < rows) {
    throw new TkError(op, "megaMoeSf", "LAYOUT", `stride(1) must be ≥ ⌈T/m⌉·align(m, 128) = ${rows}, got ${t.strides[1]}`);
  }
  const R = G > 1 ? t.strides[1] : rows;
  const last = t.offset + (G - 1) * R + rows; // one past the highest word ρ can reach
  const capacity = t instanceof HostTensor ? t.data.length : Math.floor((t as DeviceTensor).storage.nbytes / 4);
  if (T > 0 && last > capacity) {
    throw new TkError(op, "megaMoeSf", "LAYOUT", `its allocation ends before row ${rows - 1} of column ${G - 1} (⌈T/m⌉·align(m, 128) rows a column are written)`);
  }
  const span = T === 0 ? t : t instanceof HostTensor
    ? new HostTensor(t.data, "int32", [rows, G], [1, R], t.offset)
    : new DeviceTensor((t as DeviceTensor).storage, "int32", [rows, G], [1, R], t.offset);
  for (const [name, o] of others) {
    if (o && overlaps(span, o)) {
      if (span !== t && span instanceof DeviceTensor) span.dispose();
      throw new TkError(op, "megaMoeSf", "VALUE", `the words it receives overlap ${name}`);
    }
  }
  return { target: t, m, span };
}

/** Releases the span view of a device target (the target itself stays the caller's). */
export function releaseMegaMoe(mm: MegaMoe | null): void {
  if (mm && mm.span !== mm.target && mm.span instanceof DeviceTensor) mm.span.dispose();
}

/** ρ(t) of A.1: the row of token t's words. */
export function megaMoeRow(t: number, m: number): number {
  const i = t % m;
  return Math.floor(t / m) * Math.ceil(m / 128) * 128 + Math.floor(i / 128) * 128 + (i % 32) * 4 + Math.floor((i % 128) / 32);
}

/**
 * The CPU writer: token t's UE8M0 bytes of sf columns 4g … 4g + 3 (fp32 power-of-two scales: their exponent
 * field; packed: the bytes themselves) into the int32 at (ρ(t), g) of `span` (a host `[rows, G]`, strides `[1, R]`).
 * Other words keep their bits.
 */
export function writeMegaMoeRef(sf: HostTensor, packed: boolean, T: number, G: number, m: number, span: HostTensor): void {
  const [s0, s1] = sf.strides;
  const u = new Uint32Array(sf.data.buffer, sf.data.byteOffset, sf.data.length);
  const out = span.data as Int32Array;
  const R = span.strides[1];
  for (let t = 0; t < T; t++) {
    const rho = megaMoeRow(t, m);
    for (let g = 0; g < G; g++) {
      let word = 0;
      for (let k = 0; k < 4; k++) {
        const c = 4 * g + k;
        const b = packed ? (u[sf.offset + t * s0 + (c >> 2) * s1] >>> (8 * (c & 3))) & 0xff : (u[sf.offset + t * s0 + c * s1] >>> 23) & 0xff;
        word |= b << (8 * k);
      }
      out[span.offset + rho + g * R] = word;
    }
  }
}

const packet = new LaunchPacket(MegaMoeSfParams);
const W = packet.w;
const THREADS = 256;

/** Enqueues mega_moe_sf.cu's scatter on `stream` (nothing for T = 0): the device form of {@link writeMegaMoeRef}. */
export function launchMegaMoeSf(op: string, device: Device, stream: Stream, sf: DeviceTensor, packed: boolean, T: number, G: number, mm: MegaMoe): void {
  if (T === 0 || G === 0) return;
  const t = mm.target as DeviceTensor;
  const fn = kernelFunction(op, device, "tk_mega_moe_sf__scatter");
  const p = packet;
  p.u64(W.sf, sf.addr);
  p.u64(W.out, t.addr);
  p.u64(W.sf_stride0, sf.strides[0]);
  p.u64(W.sf_stride1, sf.strides[1]);
  p.u64(W.out_stride1, mm.span.strides[1]);
  p.u32(W.num_tokens, T);
  p.u32(W.groups, G);
  p.u32(W.block_m, mm.m);
  p.u32(W.packed, packed ? 1 : 0);
  const grid = Math.max(1, Math.min(Math.ceil((T * G) / THREADS), 4 * config.getNumSms(device)));
  p.setLaunch(fn, stream.handle, grid, THREADS, 0, false, device.index);
  p.launch(op);
}

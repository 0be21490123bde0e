/**
 * Roofline cases of the SwiGLU family: swigluForwardAndPerTokenCast, swigluBackward and
 * swigluBackwardAndPerTokenCast at 8192 and 16384 tokens × H = 7168 (input width 2H) in the psum layout, tokens
 * spread over 64 experts (alignment 128), with row weights. Bytes: what must be read (real rows of x and
 * actXGrad, x scales, weights) plus what must be written (outputs of every row the op writes).
 * @module
 */
import { swigluBackward, swigluBackwardAndPerTokenCast, swigluForwardAndPerTokenCast } from "../mod.ts";
import { empty, tensor, toDevice, toHost } from "../core/tensor.ts";
import type { DeviceTensor, HostTensor } from "../core/tensor.ts";
import { swigluRealRows } from "../ops/quant/swiglu.ref.ts";
import type { BenchCase } from "./cases.ts";
import { randomBf16Host } from "./common.ts";

const H = 7168;
const E = 64;
const A = 128;

/** psum of T tokens spread evenly over E experts (each expert's count leaves room for its aligned start). */
export function psumFor(T: number): { psum: Int32Array; real: number } {
  const p = new Int32Array(E);
  const per = Math.floor(T / E) - 1; // T / E is a multiple of A: one padding row per expert
  let start = 0, real = 0;
  for (let e = 0; e < E; e++) {
    p[e] = start + per;
    real += per;
    start = Math.ceil(p[e] / A) * A;
  }
  return { psum: p, real };
}

/**
 * The device inputs of a SwiGLU forward A/B (bench/swr11_tuning.ts, bench/swf15_tuning.ts) at T tokens: x the
 * roofline's bf16 pattern, or random rows; weights 0.25; the psum of {@link psumFor}, its real-row mask; with
 * `withOut` a bf16 [T, H] output for swigluForward.
 */
export function abInputs(T: number, random: boolean, withOut = false) {
  const { psum, real } = psumFor(T);
  const hx = random ? randomBf16Host(T, 2 * H, T + 7) : tensor(new Uint16Array(T * 2 * H).map((_, i) => 0x3f00 + (i % 97)), [T, 2 * H], "bf16");
  const ps = tensor(psum, [E], "int32");
  return {
    T,
    real,
    mask: swigluRealRows("bench", T, ps, A),
    x: toDevice(hx) as DeviceTensor,
    w: toDevice(tensor(new Float32Array(T).fill(0.25), [T], "fp32")) as DeviceTensor,
    ps: toDevice(ps) as DeviceTensor,
    y: withOut ? empty([T, H], "bf16", { device: 0 }) as DeviceTensor : undefined,
  };
}

/** The bytes of a device tensor of T rows (T = mask.length) with the rows `mask` marks as padding zeroed. */
export async function realBytes(t: DeviceTensor, mask: Uint8Array): Promise<Uint8Array> {
  const h = (await toHost(t)) as HostTensor;
  const b = new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength).slice();
  const row = b.length / mask.length;
  for (let r = 0; r < mask.length; r++) if (!mask[r]) b.fill(0, r * row, (r + 1) * row);
  return b;
}

function dispose(...ts: unknown[]): void {
  for (const t of ts.flat(2)) if (t && typeof (t as DeviceTensor).dispose === "function") (t as DeviceTensor).dispose();
}

/** The SwiGLU roofline cases (needs a CUDA device). */
export function cases(): BenchCase[] {
  const out: BenchCase[] = [];
  for (const T of [8192, 16384]) {
    const { psum, real } = psumFor(T);
    const x = toDevice(tensor(new Uint16Array(T * 2 * H).map((_, i) => 0x3f00 + (i % 97)), [T, 2 * H], "bf16"));
    const dy = toDevice(tensor(new Uint16Array(T * H).map((_, i) => 0x3e00 + (i % 89)), [T, H], "bf16"));
    const q = toDevice(tensor(new Uint8Array(T * 2 * H).map((_, i) => 0x30 + (i % 13)), [T, 2 * H], "e4m3"));
    const qsf = toDevice(tensor(new Float32Array((T * 2 * H) / 128).fill(0.5), [T, (2 * H) / 128], "fp32"));
    const w = toDevice(tensor(new Float32Array(T).fill(0.25), [T], "fp32"));
    const ps = toDevice(tensor(psum, [E], "int32"));
    const xGrad = toDevice(tensor(new Uint16Array(T * 2 * H), [T, 2 * H], "bf16"));
    const common = { psumNumTokensPerExpert: ps, tokenAlignment: A, topkWeights: w } as const;
    const fwdOpts = { fmt: "e4m3", numPerChannels: 128, ...common } as const;
    const bwdOpts = { fmt: "bf16", out: xGrad, ...common } as const;
    const castOpts = { fmt: "e4m3", numPerChannels: 128, ...common } as const;
    out.push({
      op: "swigluForwardAndPerTokenCast",
      tokens: T,
      hidden: H,
      variant: `bf16→e4m3 128, ${E} experts`,
      bytes: real * (2 * H * 2 + 4) + real * (H + (H / 128) * 4),
      run: () => dispose(swigluForwardAndPerTokenCast(x, fwdOpts)),
      dispose: () => {},
    });
    out.push({
      op: "swigluBackward",
      tokens: T,
      hidden: H,
      variant: `bf16→bf16 + weightGrad, ${E} experts`,
      bytes: real * (2 * H * 2 + H * 2 + 4) + T * (2 * H * 2 + 4),
      run: () => {
        const [, wg] = swigluBackward(x, dy, bwdOpts);
        dispose(wg);
      },
      dispose: () => {},
    });
    out.push({
      op: "swigluBackwardAndPerTokenCast",
      tokens: T,
      hidden: H,
      variant: `e4m3 x, bf16 dy → bf16 + e4m3 128 + weightGrad, ${E} experts`,
      bytes: real * (2 * H + (2 * H / 128) * 4 + H * 2 + 4) + T * (2 * H * 2 + 2 * H + (2 * H / 128) * 4 + 4),
      run: () => {
        const [g, pair, wg] = swigluBackwardAndPerTokenCast([q, qsf], dy, castOpts);
        dispose(g, pair, wg);
      },
      dispose: () => {},
    });
    out[out.length - 1] = { ...out[out.length - 1], dispose: () => dispose(x, dy, q, qsf, w, ps, xGrad) };
  }
  return out;
}

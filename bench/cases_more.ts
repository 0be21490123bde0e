/**
 * Roofline cases of the exported ops that no other case file covers, at 8192 and 16384 tokens × 7168 (T × H).
 * Inputs are bf16 values of `randomBf16` (uniform in [−4, 4)); quantized inputs are made on the device by our own
 * ops (perTokenCast, perTokenCastWithSfOnly, perBlockCast, perBlockCastWithSfOnly) during the case's setup. Outputs
 * are preallocated wherever the op takes `out`. `casesOn([256], "cpu")` builds the same calls on host tensors: a
 * dry run of every call's argument checks through the CPU references, without a GPU (swigluForward's psum layout
 * needs T a multiple of 64 · 128).
 *
 * Each case sets itself up on its first call (the first warm-up call of `deviceTimeUs`, untimed) and frees
 * everything in `dispose`, so only one case's tensors (plus the shared bf16 input of its token count) are live at
 * a time (under 1 GB at 16384 tokens) and a setup error costs only that row.
 *
 * Bytes counted = what the op must read + write, once (no scratch, no second read), with sf storage counted
 * including its alignment padding (`sfBytes`: fp32 4 B, e4m3 1 B, packed UE8M0 one int32 per 4 scales; TMA
 * column-major pads the row count to a multiple of 4, 16 for e4m3). nbk = H/128 = 56 scale columns, sf128 =
 * sfBytes(T, 56, fp32) = 224·T.
 *
 *   perTokenCastWithSfOnly         bf16 → e4m3 128 fp32 sf:    read 2TH, write sf128
 *                                  packed-ue8m0 (TMA):         read 2TH, write 4·align(T,4)·⌈56/4⌉
 *   perTokenCastWithPrecomputedSf  bf16 + fp32 sf → e4m3 128:  read 2TH + sf128, write TH
 *   perTokenCastBack               e4m3 + fp32 sf [1,128] → bf16: read TH + sf128, write 2TH
 *   perTokenCast                   bf16 → e2m1 [1,32] packed-ue8m0 (TMA, MXFP4): read 2TH, write TH/2 + 4·align(T,4)·56
 *                                  bf16 → e2m1 [1,16] e4m3 sf (NVFP4): read 2TH, write TH/2 + T·H/16
 *   perBlockCastWithSfOnly         bf16 → [128,128] fp32 sf:   read 2TH, write (T/128)·56·4
 *   perBlockCastWithPrecomputedSf  bf16 + fp32 [128,128] sf → e4m3: read 2TH + (T/128)·56·4, write TH
 *   perBlockCastLossless           e2m1 + fp32 pow-2 sf [1,32] → e4m3 [128,128], fp32 sf or packed-ue8m0 (TMA):
 *                                  read TH/2 + T·(H/32)·4, write TH + out sf
 *   perChannelCastFused            bf16 rows gathered by a permutation posToToken → e4m3 [128,1]:
 *                                  read 2TH + 4T, write TH + (T/128)·H·4
 *                                  e4m3 + fp32 sf [1,128] gathered: read TH + sf128 + 4T, same writes
 *   castBack                       e4m3 [128,128] → fp32: read TH + (T/128)·56·4, write 4TH
 *                                  e4m3 [1,128] → bf16: read TH + sf128, write 2TH
 *                                  e2m1 [1,32] fp32 sf → bf16: read TH/2 + T·(H/32)·4, write 2TH
 *   unpackFromE2m1fnX2             e2m1x2 [T, H/2] → bf16 / fp32 [T, H]: read TH/2, write 2TH / 4TH
 *   swigluForward                  bf16 [T, 2H] → bf16 [T, H], psum layout of cases_swiglu.ts (64 experts,
 *                                  alignment 128, one padding row per expert), fp32 row weights: real rows only,
 *                                  read real·(4H + 4), write real·2H
 *   addRmsnormForwardAndPerTokenCast  bf16 x, residual (in place), weight → e4m3 128 packed-ue8m0 (TMA):
 *                                  read 2TH + 2TH + 2H, write 2TH (residual) + TH + packed sf + 4T (rstd, which
 *                                  the op writes and does not return). No `out`: data, sf and rstd are allocated
 *                                  by each call (stream-ordered pool); data and sf are disposed in the call, rstd
 *                                  is left to the finalizer.
 *   randnLike                      bf16 [T, H] like a template: write 2TH (allocated by each call, disposed in it)
 * @module
 */
import {
  addRmsnormForwardAndPerTokenCast,
  castBack,
  type DeviceTensor,
  empty,
  type HostTensor,
  perBlockCast,
  perBlockCastLossless,
  perBlockCastWithPrecomputedSf,
  perBlockCastWithSfOnly,
  perChannelCastFused,
  perTokenCast,
  perTokenCastBack,
  perTokenCastWithPrecomputedSf,
  perTokenCastWithSfOnly,
  type Quantized,
  randnLike,
  swigluForward,
  type Tensor,
  tensor,
  toDevice,
  unpackFromE2m1fnX2,
} from "../mod.ts";
import type { BenchCase } from "./cases.ts";
import { randomBf16Host } from "./common.ts";
import { psumFor } from "./cases_swiglu.ts";

const H = 7168;
const TOKENS = [8192, 16384];
const NBK = H / 128;

const align = (a: number, b: number) => Math.ceil(a / b) * b;

/** Storage bytes of an sf grid nbm × nbk (see the module header). */
function sfBytes(nbm: number, nbk: number, kind: "fp32" | "e4m3" | "packed", colMajor = false): number {
  const cols = kind === "packed" ? Math.ceil(nbk / 4) : nbk;
  const rows = colMajor ? align(nbm, kind === "e4m3" ? 16 : 4) : nbm;
  return rows * cols * (kind === "e4m3" ? 1 : 4);
}

/**
 * Where the cases' tensors live: device 0 for the roofline; "cpu" only for a dry run of every call's argument
 * checks through the CPU references at a small token count ({@link casesOn}), which needs no GPU.
 */
let target: 0 | "cpu" = 0;
const dev = (shape: number[], dtype: Parameters<typeof empty>[1]) =>
  empty(shape, dtype, { device: target }) as DeviceTensor;
const up = (t: HostTensor) => (target === "cpu" ? t : toDevice(t)) as DeviceTensor;
const randomInput = (T: number, W: number, seed: number) => up(randomBf16Host(T, W, seed));

function free(...ts: (Tensor | null | undefined)[]): void {
  for (const t of ts) if (t) (t as DeviceTensor).dispose();
}

/** An input shared by the cases of one token count: made on first use, freed when its last case is disposed. */
class Shared {
  #t: DeviceTensor | null = null;
  #users = 0;
  readonly #make: () => DeviceTensor;
  constructor(make: () => DeviceTensor) {
    this.#make = make;
  }
  /** Registers one more case that will call `release` once. */
  use(): this {
    this.#users++;
    return this;
  }
  get(): DeviceTensor {
    return (this.#t ??= this.#make());
  }
  release(): void {
    if (--this.#users === 0 && this.#t) {
      this.#t.dispose();
      this.#t = null;
    }
  }
}

/** What a case's setup hands back: the timed call and the cleanup of what setup made. */
interface Ready {
  run: () => void;
  free: () => void;
}

/**
 * A case whose setup runs on its first call (deviceTimeUs' first warm-up call, not timed) and is undone by
 * `dispose`. `x`: the shared bf16 `[T, H]` input of its token count, registered here, handed to `setup` and
 * released by `dispose` (null for a case that makes its own inputs).
 */
function deferred(
  op: string,
  T: number,
  variant: string,
  bytes: number,
  x: Shared | null,
  setup: () => Ready,
): BenchCase {
  x?.use();
  let ready: Ready | null = null;
  let done = false;
  return {
    op,
    tokens: T,
    hidden: H,
    variant,
    bytes,
    run: () => {
      if (ready === null) {
        if (done) throw new Error("case already disposed");
        ready = setup();
      }
      ready.run();
    },
    dispose: () => {
      if (done) return;
      done = true;
      try {
        ready?.free();
      } finally {
        ready = null;
        x?.release();
      }
    },
  };
}

/** A deferred case on the shared bf16 input `x`. */
function lazy(
  op: string,
  T: number,
  variant: string,
  bytes: number,
  x: Shared,
  setup: (xd: DeviceTensor) => Ready,
): BenchCase {
  return deferred(op, T, variant, bytes, x, () => setup(x.get()));
}

/** A deferred case with inputs of its own. */
function own(op: string, T: number, variant: string, bytes: number, setup: () => Ready): BenchCase {
  return deferred(op, T, variant, bytes, null, setup);
}

// ---- per-token ------------------------------------------------------------------------------------------------

const PT_FP32 = { fmt: "e4m3", numPerChannels: 128 } as const;
const PT_PACKED = {
  fmt: "e4m3",
  numPerChannels: 128,
  roundSf: true,
  usePackedUe8m0: true,
  useTmaAlignedColMajorSf: true,
} as const;

function perTokenCases(T: number, x: Shared): BenchCase[] {
  const n = T * H;
  const sf128 = sfBytes(T, NBK, "fp32");
  const out: BenchCase[] = [];
  for (
    const [name, o, sfb] of [["fp32-sf", PT_FP32, sf128], [
      "packed-ue8m0",
      PT_PACKED,
      sfBytes(T, NBK, "packed", true),
    ]] as const
  ) {
    out.push(lazy("perTokenCastWithSfOnly", T, `bf16→e4m3 128 ${name}`, 2 * n + sfb, x, (xd) => {
      const sf = perTokenCastWithSfOnly(xd, o) as DeviceTensor;
      const opts = { ...o, out: sf };
      return { run: () => void perTokenCastWithSfOnly(xd, opts), free: () => free(sf) };
    }));
  }
  out.push(lazy("perTokenCastWithPrecomputedSf", T, "bf16 + fp32 sf → e4m3 128", 2 * n + sf128 + n, x, (xd) => {
    const sf = perTokenCastWithSfOnly(xd, PT_FP32) as DeviceTensor;
    const data = dev([T, H], "e4m3");
    const opts = { fmt: "e4m3", numPerChannels: 128, out: data } as const;
    return { run: () => void perTokenCastWithPrecomputedSf(xd, sf, opts), free: () => free(sf, data) };
  }));
  out.push(lazy("perTokenCastBack", T, "e4m3 128 fp32 sf → bf16", n + sf128 + 2 * n, x, (xd) => {
    const q = perTokenCast(xd, PT_FP32);
    const y = dev([T, H], "bf16");
    const opts = { fmt: "bf16", numPerChannels: 128, out: y } as const;
    return { run: () => void perTokenCastBack(q, opts), free: () => free(q[0], q[1], y) };
  }));
  const fp4 = [
    {
      name: "bf16→e2m1 [1,32] packed-ue8m0 (MXFP4)",
      o: {
        fmt: "e2m1",
        numPerChannels: 32,
        roundSf: true,
        usePackedUe8m0: true,
        useTmaAlignedColMajorSf: true,
      } as const,
      sfb: sfBytes(T, H / 32, "packed", true),
    },
    {
      name: "bf16→e2m1 [1,16] e4m3 sf (NVFP4)",
      o: { fmt: "e2m1", numPerChannels: 16, useE4m3Sf: true } as const,
      sfb: sfBytes(T, H / 16, "e4m3"),
    },
  ];
  for (const v of fp4) {
    out.push(lazy("perTokenCast", T, v.name, 2 * n + n / 2 + v.sfb, x, (xd) => {
      const [data, sf] = perTokenCast(xd, v.o);
      const opts = { ...v.o, out: { data, sf } };
      return { run: () => void perTokenCast(xd, opts), free: () => free(data, sf) };
    }));
  }
  return out;
}

// ---- per-block ------------------------------------------------------------------------------------------------

const PB_FP32 = { fmt: "e4m3", blockSize: [128, 128] } as const;

function perBlockCases(T: number, x: Shared): BenchCase[] {
  const n = T * H;
  const sfBlk = sfBytes(T / 128, NBK, "fp32");
  return [
    lazy("perBlockCastWithSfOnly", T, "bf16→e4m3 128x128 fp32-sf", 2 * n + sfBlk, x, (xd) => {
      const sf = perBlockCastWithSfOnly(xd, PB_FP32) as DeviceTensor;
      const opts = { ...PB_FP32, out: sf };
      return { run: () => void perBlockCastWithSfOnly(xd, opts), free: () => free(sf) };
    }),
    lazy("perBlockCastWithPrecomputedSf", T, "bf16 + fp32 sf → e4m3 128x128", 2 * n + sfBlk + n, x, (xd) => {
      const sf = perBlockCastWithSfOnly(xd, PB_FP32) as DeviceTensor;
      const data = dev([T, H], "e4m3");
      const opts = { ...PB_FP32, out: data };
      return { run: () => void perBlockCastWithPrecomputedSf(xd, sf, opts), free: () => free(sf, data) };
    }),
  ];
}

// ---- FP4 input: lossless re-blocking, cast back, unpack -------------------------------------------------------

/** The MXFP4-style input of the FP4 cases: e2m1x2 `[T, H/2]` with power-of-two fp32 scales `[T, H/32]`. */
function fp4Input(xd: DeviceTensor): Quantized {
  return perTokenCast(xd, { fmt: "e2m1", numPerChannels: 32, roundSf: true });
}

function fp4Cases(T: number, x: Shared): BenchCase[] {
  const n = T * H;
  const inBytes = n / 2 + sfBytes(T, H / 32, "fp32");
  const out: BenchCase[] = [];
  const lossless = [
    {
      name: "fp32-sf",
      o: { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128] } as const,
      sfb: sfBytes(T / 128, NBK, "fp32"),
    },
    {
      name: "packed-ue8m0",
      o: {
        fmt: "e4m3",
        xBlockSize: [1, 32],
        outBlockSize: [128, 128],
        roundSf: true,
        usePackedUe8m0: true,
        useTmaAlignedColMajorSf: true,
      } as const,
      sfb: sfBytes(T / 128, NBK, "packed", true),
    },
  ];
  for (const v of lossless) {
    out.push(lazy("perBlockCastLossless", T, `e2m1 [1,32] → e4m3 128x128 ${v.name}`, inBytes + n + v.sfb, x, (xd) => {
      const q = fp4Input(xd);
      const [data, sf] = perBlockCastLossless(q, v.o);
      const opts = { ...v.o, out: { data, sf } };
      return { run: () => void perBlockCastLossless(q, opts), free: () => free(q[0], q[1], data, sf) };
    }));
  }
  out.push(lazy("castBack", T, "e2m1 [1,32] fp32 sf → bf16", inBytes + 2 * n, x, (xd) => {
    const q = fp4Input(xd);
    const y = dev([T, H], "bf16");
    const opts = { fmt: "bf16", xBlockSize: [1, 32], out: y } as const;
    return { run: () => void castBack(q, opts), free: () => free(q[0], q[1], y) };
  }));
  for (const dtype of ["bf16", "fp32"] as const) {
    out.push(lazy("unpackFromE2m1fnX2", T, `e2m1x2 → ${dtype}`, n / 2 + n * (dtype === "bf16" ? 2 : 4), x, (xd) => {
      const q = fp4Input(xd);
      const y = dev([T, H], dtype);
      const opts = { dtype, out: y };
      return { run: () => void unpackFromE2m1fnX2(q[0], opts), free: () => free(q[0], q[1], y) };
    }));
  }
  return out;
}

// ---- castBack (e4m3) ------------------------------------------------------------------------------------------

function castBackCases(T: number, x: Shared): BenchCase[] {
  const n = T * H;
  return [
    lazy("castBack", T, "e4m3→fp32 [128,128] fp32 sf", n + sfBytes(T / 128, NBK, "fp32") + 4 * n, x, (xd) => {
      const q = perBlockCast(xd, PB_FP32);
      const y = dev([T, H], "fp32");
      const opts = { fmt: "fp32", xBlockSize: [128, 128], out: y } as const;
      return { run: () => void castBack(q, opts), free: () => free(q[0], q[1], y) };
    }),
    lazy("castBack", T, "e4m3→bf16 [1,128] fp32 sf", n + sfBytes(T, NBK, "fp32") + 2 * n, x, (xd) => {
      const q = perTokenCast(xd, PT_FP32);
      const y = dev([T, H], "bf16");
      const opts = { fmt: "bf16", xBlockSize: [1, 128], out: y } as const;
      return { run: () => void castBack(q, opts), free: () => free(q[0], q[1], y) };
    }),
  ];
}

// ---- perChannelCastFused (row gather) -------------------------------------------------------------------------

/** posToToken: output row p reads input row (p · 7919) mod T, a permutation (7919 is odd, T a power of two). */
function gather(T: number): DeviceTensor {
  return up(tensor(Int32Array.from({ length: T }, (_, p) => (p * 7919) % T), [T], "int32"));
}

function fusedCases(T: number, x: Shared): BenchCase[] {
  const n = T * H;
  const writes = n + (T / 128) * H * 4;
  return [
    lazy("perChannelCastFused", T, "bf16 gathered → e4m3 [128,1]", 2 * n + 4 * T + writes, x, (xd) => {
      const pos = gather(T);
      const data = dev([T, H], "e4m3");
      const sf = dev([T / 128, H], "fp32");
      const opts = { fmt: "e4m3", numPerTokens: 128, posToToken: pos, out: { data, sf } } as const;
      return { run: () => void perChannelCastFused(xd, opts), free: () => free(pos, data, sf) };
    }),
    lazy(
      "perChannelCastFused",
      T,
      "e4m3 [1,128] gathered → e4m3 [128,1]",
      n + sfBytes(T, NBK, "fp32") + 4 * T + writes,
      x,
      (xd) => {
        const q = perTokenCast(xd, PT_FP32);
        const pos = gather(T);
        const data = dev([T, H], "e4m3");
        const sf = dev([T / 128, H], "fp32");
        const opts = {
          fmt: "e4m3",
          numPerTokens: 128,
          numPerChannels: 128,
          posToToken: pos,
          out: { data, sf },
        } as const;
        return { run: () => void perChannelCastFused(q, opts), free: () => free(q[0], q[1], pos, data, sf) };
      },
    ),
  ];
}

// ---- swigluForward (unfused) ----------------------------------------------------------------------------------

const E = 64;
const A = 128;

function swigluCase(T: number): BenchCase {
  const { psum, real } = psumFor(T);
  return own("swigluForward", T, `bf16→bf16 + weights, ${E} experts`, real * (2 * H * 2 + 4) + real * H * 2, () => {
    // x [T, 2H] with the bf16 pattern of cases_swiglu.ts
    const xs = up(tensor(new Uint16Array(T * 2 * H).map((_, i) => 0x3f00 + (i % 97)), [T, 2 * H], "bf16"));
    const w = up(tensor(new Float32Array(T).fill(0.25), [T], "fp32"));
    const ps = up(tensor(psum, [E], "int32"));
    const y = dev([T, H], "bf16");
    const opts = { fmt: "bf16", psumNumTokensPerExpert: ps, tokenAlignment: A, topkWeights: w, out: y } as const;
    return { run: () => void swigluForward(xs, opts), free: () => free(xs, w, ps, y) };
  });
}

// ---- addRmsnormForwardAndPerTokenCast, randnLike ----------------------------------------------------------------

function normCase(T: number, x: Shared): BenchCase {
  const n = T * H;
  const o = { eps: 1e-6, ...PT_PACKED } as const;
  const bytes = 2 * n + 2 * n + 2 * H + 2 * n + n + sfBytes(T, NBK, "packed", true) + 4 * T;
  return lazy(
    "addRmsnormForwardAndPerTokenCast",
    T,
    "bf16→e4m3 128 packed-ue8m0, residual in place",
    bytes,
    x,
    (xd) => {
      // residual grows by x at each call (about 150 calls: |values| stay below 10^3, far from bf16's range)
      const residual = randomInput(T, H, 5);
      const w1 = randomInput(1, H, 2);
      const w = w1.view([H]);
      return {
        run: () => {
          const [d, s] = addRmsnormForwardAndPerTokenCast(xd, residual, w, o);
          free(d, s);
        },
        free: () => free(residual, w, w1),
      };
    },
  );
}

function randnLikeCase(T: number): BenchCase {
  return own("randnLike", T, "bf16 [T, H] (binary64 Box–Muller)", 2 * T * H, () => {
    const like = dev([T, H], "bf16");
    const opts = { seed: 1n };
    return { run: () => void (randnLike(like, opts) as DeviceTensor).dispose(), free: () => free(like) };
  });
}

/** The cases of this family (called only with a CUDA device present; nothing is allocated before a case runs). */
export function cases(): BenchCase[] {
  return casesOn(TOKENS, 0);
}

/**
 * The cases at `tokens` (each a multiple of 128) with tensors on `where`. `"cpu"` runs every call through the CPU
 * references: a check, without a GPU, that no call trips an argument check (a TkError loses the row on the GPU).
 */
export function casesOn(tokens: readonly number[], where: 0 | "cpu"): BenchCase[] {
  target = where;
  const out: BenchCase[] = [];
  for (const T of tokens) {
    const x = new Shared(() => randomInput(T, H, T + 7));
    out.push(
      ...perTokenCases(T, x),
      ...perBlockCases(T, x),
      ...fp4Cases(T, x),
      ...castBackCases(T, x),
      ...fusedCases(T, x),
      swigluCase(T),
      normCase(T, x),
      randnLikeCase(T),
    );
  }
  return out;
}

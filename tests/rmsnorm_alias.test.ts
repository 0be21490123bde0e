/**
 * The deprecated alias `rmsnormForwardAndPerTokenCast` (spec/norm-rope-rand.md D.5, D.10): on the CPU it equals
 * `perTokenCast(normForward(x, w, { eps })[0], { fmt: "e4m3", numPerChannels, …SfOptions })` byte for byte, for 128
 * channels and the whole row, fp32 and bf16, every sf layout, 0 rows, and with 128 channels also
 * `normForwardAndPerTokenCast(…)[0]`; bad inputs are TkErrors naming the op and argument, raised before anything is
 * written (tests/refuses.ts). With `backend: "cuda"` host inputs run the kernels (BACKEND_UNAVAILABLE without one).
 * @module
 */
import { type HostTensor, normForward, normForwardAndPerTokenCast, perTokenCast, type Quantized, rmsnormForwardAndPerTokenCast, type Tensor, tensor } from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { assertBytesEqual, hasGpu, rng, test } from "./harness.ts";
import { cudaOrUnavailable, refuses } from "./refuses.ts";

const OP = "rmsnormForwardAndPerTokenCast";
const SF: [string, { useTmaAlignedColMajorSf?: boolean; roundSf?: boolean; usePackedUe8m0?: boolean }][] = [
  ["fp32", {}],
  ["fp32-round", { roundSf: true }],
  ["fp32-col", { useTmaAlignedColMajorSf: true }],
  ["packed-row", { roundSf: true, usePackedUe8m0: true }],
  ["packed-col", { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }],
];

function rows(rand: () => number, T: number, H: number, dtype: "fp32" | "bf16"): HostTensor {
  const f = Float32Array.from({ length: T * H }, () => Math.fround((rand() * 2 - 1) * 2 ** (rand() * 16 - 8)));
  return (dtype === "fp32" ? tensor(f, [T, H], "fp32") : tensor(Uint16Array.from(f, (v) => encodeBf16(v)), [T, H], "bf16")) as HostTensor;
}

function sameQuantized(got: Quantized, want: Quantized, label: string): void {
  for (let k = 0; k < 2; k++) {
    const a = got[k] as HostTensor, b = want[k] as HostTensor;
    if (a.shape.join() !== b.shape.join()) throw new Error(`${label}: ${k === 0 ? "data" : "sf"} shape [${a.shape}] != [${b.shape}]`);
    if (a.strides.join() !== b.strides.join()) throw new Error(`${label}: ${k === 0 ? "data" : "sf"} strides [${a.strides}] != [${b.strides}]`);
    assertBytesEqual(a.bytes, b.bytes, `${label} ${k === 0 ? "data" : "sf"}`);
  }
}

test(`${OP} = perTokenCast(normForward(x, w)[0]) byte for byte: 128 channels and the whole row, fp32 and bf16, every sf layout, 0 rows (seed 13301)`, () => {
  const rand = rng(13301);
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const [T, H] of [[0, 256], [1, 128], [7, 384], [33, 1024]]) {
      const x = rows(rand, T, H, dtype);
      const w = rows(rand, 1, H, dtype).view([H]) as HostTensor;
      for (const N of H === 128 ? [128] : [128, H]) {
        for (const [name, o] of SF) {
          const label = `${dtype} ${T}x${H} npc ${N} ${name}`;
          const got = rmsnormForwardAndPerTokenCast(x, w, { eps: 1e-6, fmt: "e4m3", numPerChannels: N, ...o });
          const want = perTokenCast(normForward(x, w, { eps: 1e-6 })[0], { fmt: "e4m3", numPerChannels: N, ...o });
          sameQuantized(got, want, label);
          if (N === 128) sameQuantized(got, normForwardAndPerTokenCast(x, w, { eps: 1e-6, fmt: "e4m3", numPerChannels: 128, ...o })[0], `${label} (fused)`);
        }
      }
    }
  }
});

const x = rows(rng(13302), 4, 256, "fp32");
const w = rows(rng(13303), 1, 256, "fp32").view([256]) as HostTensor;
const ALL: Tensor[] = [x, w];
const base = { eps: 1e-6, fmt: "e4m3", numPerChannels: 128 } as const;

test(`${OP} refuses a 3-D x (the alias is 2-D only)`, () => refuses(OP, "x", "SHAPE", () => rmsnormForwardAndPerTokenCast(x.view([2, 2, 256]), w, base), ALL));
test(`${OP} refuses a strided x`, () => refuses(OP, "x", "LAYOUT", () => rmsnormForwardAndPerTokenCast(x.slice(1, 0, 128), w.slice(0, 0, 128), base), ALL));
test(`${OP} refuses a hidden size that is not a multiple of 128`, () => refuses(OP, "x", "SHAPE", () => rmsnormForwardAndPerTokenCast(tensor(new Float32Array(2 * 192), [2, 192], "fp32"), tensor(new Float32Array(192), [192], "fp32"), { ...base, numPerChannels: 192 }), ALL));
test(`${OP} refuses a null weight`, () => refuses(OP, "weight", "VALUE", () => rmsnormForwardAndPerTokenCast(x, null as never, base), ALL));
test(`${OP} refuses a weight of another dtype`, () => refuses(OP, "weight", "DTYPE", () => rmsnormForwardAndPerTokenCast(x, tensor(new Uint16Array(256), [256], "bf16"), base), ALL));
test(`${OP} refuses numPerChannels 32 (128 or the hidden size only)`, () => refuses(OP, "numPerChannels", "VALUE", () => rmsnormForwardAndPerTokenCast(x, w, { ...base, numPerChannels: 32 }), ALL));
test(`${OP} refuses fmt e2m1`, () => refuses(OP, "fmt", "VALUE", () => rmsnormForwardAndPerTokenCast(x, w, { ...base, fmt: "e2m1" as never }), ALL));
test(`${OP} refuses a negative eps (whole row: before the norm runs)`, () => refuses(OP, "eps", "VALUE", () => rmsnormForwardAndPerTokenCast(x, w, { ...base, eps: -1, numPerChannels: 256 }), ALL));
test(`${OP} refuses usePackedUe8m0 without roundSf (whole row: before the norm runs)`, () => refuses(OP, "usePackedUe8m0", "VALUE", () => rmsnormForwardAndPerTokenCast(x, w, { ...base, numPerChannels: 256, usePackedUe8m0: true }), ALL));
test(`${OP} refuses useE4m3Sf (not an option of the norm casts)`, () => refuses(OP, "useE4m3Sf", "VALUE", () => rmsnormForwardAndPerTokenCast(x, w, { ...base, useE4m3Sf: true } as never), ALL));
test(`${OP} refuses out (the op allocates its outputs)`, () => refuses(OP, "out", "VALUE", () => rmsnormForwardAndPerTokenCast(x, w, { ...base, out: {} } as never), ALL));
test(`${OP} with backend "cuda" runs the kernels, or is BACKEND_UNAVAILABLE without a GPU`, () => {
  for (const N of [128, 256]) cudaOrUnavailable(OP, () => rmsnormForwardAndPerTokenCast(x, w, { ...base, numPerChannels: N, backend: "cuda" }), hasGpu);
});

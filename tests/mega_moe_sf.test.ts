/**
 * `megaMoeSf` / `megaMoeBlockM` of `normForwardAndPerTokenCast` on the CPU (spec/norm-rope-rand.md A.1, A.4, D.10; the
 * conformance vectors do not cover it, golden/README.md): for every token t and group g the int32 at
 * (ρ(t), g) holds the UE8M0 exponent bytes of sf columns 4g … 4g + 3 (here computed independently, as log2 of the
 * decoded scale + 127), every other word of the allocation keeps its sentinel, and q equals the call without
 * megaMoeSf byte for byte — over m ∈ {1, 7, 32, 128, 200, 300}, T ∈ {0, 1, 5, 130, 300}, fp32 and bf16, fp32 and packed
 * scales, row- and column-major, row pitches at the minimum and above. Bad arguments are TkErrors before anything is
 * written (tests/refuses.ts, the target's bytes included). With `backend: "cuda"` host inputs run the kernels
 * (BACKEND_UNAVAILABLE without a device).
 * @module
 */
import assert from "node:assert/strict";
import { HostTensor, normForwardAndPerTokenCast, type Tensor, tensor } from "../mod.ts";
import { decodeUe8m0, encodeBf16 } from "../core/dtype.ts";
import { assertBytesEqual, hasGpu, rng, test } from "./harness.ts";
import { cudaOrUnavailable, refuses } from "./refuses.ts";
import { SF_LAYOUTS_FP32 } from "./gpu_util.ts";

const OP = "normForwardAndPerTokenCast";
const SENTINEL = 0x5a5a5a5a;
/** The rounded scale layouts (megaMoeSf needs roundSf): fp32 and packed, row- and column-major. */
const SF_ROUND = SF_LAYOUTS_FP32.filter(([, o]) => o.roundSf === true);

function rows(rand: () => number, T: number, H: number, dtype: "fp32" | "bf16"): HostTensor {
  const f = Float32Array.from({ length: T * H }, () => Math.fround((rand() * 2 - 1) * 2 ** (rand() * 30 - 15)));
  return (dtype === "fp32" ? tensor(f, [T, H], "fp32") : tensor(Uint16Array.from(f, (v) => encodeBf16(v)), [T, H], "bf16")) as HostTensor;
}

/** ρ(t) of A.1, written out independently of ops/norm/mega_moe_sf.ts. */
function rho(t: number, m: number): number {
  const i = t % m;
  const pitch = 128 * Math.ceil(m / 128);
  return Math.floor(t / m) * pitch + 128 * Math.floor(i / 128) + 4 * (i % 32) + Math.floor((i % 128) / 32);
}

/** The scale of (token t, sf column c) as a number, whatever the layout. */
function scaleAt(sf: HostTensor, packed: boolean, t: number, c: number): number {
  const [s0, s1] = sf.strides;
  if (!packed) return (sf.data as Float32Array)[sf.offset + t * s0 + c * s1];
  const w = (sf.data as Int32Array)[sf.offset + t * s0 + (c >> 2) * s1];
  return decodeUe8m0((w >>> (8 * (c & 3))) & 0xff);
}

/** A target of `[T, G]` int32 with strides [1, R] at element offset `off` of a sentinel-filled buffer of `total` words. */
function target(T: number, G: number, R: number, off: number, total: number): HostTensor {
  const buf = new Int32Array(total).fill(SENTINEL);
  return new HostTensor(buf, "int32", [T, G], [1, R], off);
}

test(`${OP} megaMoeSf: every token's UE8M0 bytes at (ρ(t), g), every other word untouched, q unchanged (seed 13501)`, () => {
  const rand = rng(13501);
  let cases = 0;
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const [T, H] of [[0, 128], [1, 128], [5, 256], [130, 384], [300, 128]]) {
      const x = rows(rand, T, H, dtype);
      const w = rows(rand, 1, H, dtype).view([H]) as HostTensor;
      const G = H / 128;
      for (const m of [1, 7, 32, 128, 200, 300]) {
        for (const [name, o] of SF_ROUND) {
          const minRows = Math.ceil(T / m) * 128 * Math.ceil(m / 128);
          const R = minRows + (cases % 3 === 0 ? 0 : 5);
          const off = cases % 2;
          const total = off + (G - 1) * R + minRows + 3;
          const mm = target(T, G, R, off, total);
          const label = `${dtype} ${T}x${H} m ${m} ${name} R ${R}`;
          const opts = { eps: 1e-6, fmt: "e4m3", numPerChannels: 32, ...o } as const;
          const [q] = normForwardAndPerTokenCast(x, w, { ...opts, megaMoeSf: mm, megaMoeBlockM: m });
          const [q0] = normForwardAndPerTokenCast(x, w, opts);
          assertBytesEqual((q[0] as HostTensor).bytes, (q0[0] as HostTensor).bytes, `${label}: data`);
          assertBytesEqual((q[1] as HostTensor).bytes, (q0[1] as HostTensor).bytes, `${label}: sf`);
          const want = new Int32Array(total).fill(SENTINEL);
          const packed = o.usePackedUe8m0 === true;
          for (let t = 0; t < T; t++) {
            for (let g = 0; g < G; g++) {
              let word = 0;
              for (let k = 0; k < 4; k++) {
                const s = scaleAt(q[1] as HostTensor, packed, t, 4 * g + k);
                const e = s === Infinity ? 255 : Math.log2(s) + 127;
                assert.ok(Number.isInteger(e) && e >= 0 && e <= 255, `${label}: scale ${s} is not a UE8M0 power of two`);
                word |= e << (8 * k);
              }
              const at = off + rho(t, m) + g * R;
              assert.equal(want[at], SENTINEL, `${label}: ρ hits word ${at} twice`);
              want[at] = word;
            }
          }
          assertBytesEqual(new Uint8Array((mm.data as Int32Array).buffer), new Uint8Array(want.buffer), `${label}: megaMoeSf allocation`);
          cases++;
        }
      }
    }
  }
  assert.ok(cases >= 200, `${cases} cases`);
});

const x = rows(rng(13502), 6, 256, "fp32");
const w = rows(rng(13503), 1, 256, "fp32").view([256]) as HostTensor;
const base = { eps: 1e-6, fmt: "e4m3", numPerChannels: 32, roundSf: true } as const;
const good = () => target(6, 2, 128, 0, 256);
const t0 = good();
const ALL: Tensor[] = [x, w, t0];

test(`${OP} refuses megaMoeSf without megaMoeBlockM`, () => refuses(OP, "megaMoeBlockM", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: t0 }), ALL));
test(`${OP} refuses megaMoeBlockM without megaMoeSf`, () => refuses(OP, "megaMoeBlockM", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeBlockM: 4 }), ALL));
test(`${OP} refuses a megaMoeBlockM that is not an integer ≥ 1`, () => {
  for (const m of [1.5, -2, NaN]) refuses(OP, "megaMoeBlockM", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: t0, megaMoeBlockM: m }), ALL);
});
test(`${OP} refuses megaMoeSf with 128 channels`, () => refuses(OP, "numPerChannels", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, numPerChannels: 128, megaMoeSf: t0, megaMoeBlockM: 4 }), ALL));
test(`${OP} refuses megaMoeSf without roundSf`, () => refuses(OP, "roundSf", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, roundSf: false, megaMoeSf: t0, megaMoeBlockM: 4 }), ALL));
test(`${OP} refuses megaMoeSf with a 3-D x`, () => refuses(OP, "x", "SHAPE", () => normForwardAndPerTokenCast(x.view([2, 3, 256]), w, { ...base, megaMoeSf: t0, megaMoeBlockM: 4 }), ALL));
test(`${OP} refuses megaMoeSf with a hidden size that is not a multiple of 128`, () => {
  const x160 = rows(rng(1), 6, 160, "fp32");
  refuses(OP, "x", "SHAPE", () => normForwardAndPerTokenCast(x160, null, { ...base, megaMoeSf: t0, megaMoeBlockM: 4 }), [...ALL, x160]);
});
test(`${OP} refuses a megaMoeSf that is not int32`, () => refuses(OP, "megaMoeSf", "DTYPE", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: tensor(new Float32Array(256), [128, 2], "fp32").slice(0, 0, 6), megaMoeBlockM: 4 }), ALL));
test(`${OP} refuses a megaMoeSf of the wrong shape`, () => refuses(OP, "megaMoeSf", "SHAPE", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: target(6, 3, 128, 0, 512), megaMoeBlockM: 4 }), ALL));
test(`${OP} refuses a row-major megaMoeSf (stride(0) must be 1)`, () => refuses(OP, "megaMoeSf", "LAYOUT", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: tensor(new Int32Array(12), [6, 2], "int32"), megaMoeBlockM: 4 }), ALL));
test(`${OP} refuses a row pitch below ⌈T/m⌉·align(m, 128)`, () => {
  // T = 6, m = 4: 2 blocks of align(4, 128) = 128 rows, so R ≥ 256
  refuses(OP, "megaMoeSf", "LAYOUT", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: target(6, 2, 200, 0, 1024), megaMoeBlockM: 4 }), ALL);
});
test(`${OP} refuses a megaMoeSf whose allocation ends before the last word ρ can reach`, () => {
  // m = 8: one block, rows 0 … 127 of each column; R = 128, the last column's rows end at 256 > 200
  refuses(OP, "megaMoeSf", "LAYOUT", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: target(6, 2, 128, 0, 200), megaMoeBlockM: 8 }), ALL);
});
test(`${OP} refuses a megaMoeSf whose words overlap out.data`, () => {
  const buf = new Int32Array(1024);
  const mm = new HostTensor(buf, "int32", [6, 2], [1, 256], 0);
  const data = new HostTensor(new Uint8Array(buf.buffer), "e4m3", [6, 256], [256, 1], 0);
  refuses(OP, "megaMoeSf", "VALUE", () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: mm, megaMoeBlockM: 8, out: { data } }), [...ALL, mm]);
});
test(`${OP} megaMoeSf with backend "cuda" runs the kernels, or is BACKEND_UNAVAILABLE without a GPU`, () => {
  cudaOrUnavailable(OP, () => normForwardAndPerTokenCast(x, w, { ...base, megaMoeSf: good(), megaMoeBlockM: 4, backend: "cuda" }), hasGpu);
});

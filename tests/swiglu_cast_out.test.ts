/**
 * `out` of `swigluForwardAndPerTokenCast` (spec/API.md §1.5; the op used to ignore it): on the CPU, `{ data, sf }`,
 * `{ data }` and `{ sf }` give the bytes of the allocating call and return the given tensors, for fp32 and packed
 * row-major scales, with and without the psum layout and weights; bad outs are TkErrors before anything is written
 * (tests/refuses.ts: the outs' bytes included). With `backend: "cuda"` host inputs run the kernels
 * (BACKEND_UNAVAILABLE without a device).
 * @module
 */
import assert from "node:assert/strict";
import { type HostTensor, swigluForwardAndPerTokenCast, type Tensor, tensor } from "../mod.ts";
import { assertBytesEqual, hasGpu, test } from "./harness.ts";
import { cudaOrUnavailable, refuses, seededValues, sentinelLike } from "./refuses.ts";

const OP = "swigluForwardAndPerTokenCast";
const T = 12, H = 256;
const x = tensor(seededValues(13701, T * 2 * H, 6), [T, 2 * H], "fp32") as HostTensor;
const psum = tensor(new Int32Array([4, 8]), [2], "int32");
const w = tensor(new Float32Array(T).map((_, i) => 0.25 + i / 16), [T], "fp32");

test(`${OP} writes out.data / out.sf: the allocating call's bytes, the given tensors returned (fp32 and packed sf, psum, weights)`, () => {
  for (const extra of [{}, { psumNumTokensPerExpert: psum, tokenAlignment: 4, topkWeights: w, routedScalingFactor: 1.5 }]) {
    for (const sfo of [{}, { roundSf: true, usePackedUe8m0: true }]) {
      const o = { fmt: "e4m3", numPerChannels: 32, ...sfo, ...extra } as const;
      const [d, s] = swigluForwardAndPerTokenCast(x, o) as [HostTensor, HostTensor];
      for (const keys of [["data", "sf"], ["data"], ["sf"]]) {
        const out: { data?: HostTensor; sf?: HostTensor } = {};
        if (keys.includes("data")) out.data = sentinelLike(d);
        if (keys.includes("sf")) out.sf = sentinelLike(s);
        const [gd, gs] = swigluForwardAndPerTokenCast(x, { ...o, out }) as [HostTensor, HostTensor];
        const label = `${JSON.stringify(sfo)} ${Object.keys(extra).length ? "psum" : "plain"} out ${keys}`;
        if (out.data) assert.equal(gd, out.data, `${label}: returns out.data`);
        if (out.sf) assert.equal(gs, out.sf, `${label}: returns out.sf`);
        assertBytesEqual(gd.bytes, d.bytes, `${label}: data`);
        assertBytesEqual(gs.bytes, s.bytes, `${label}: sf`);
      }
    }
  }
});

const base = { fmt: "e4m3", numPerChannels: 32 } as const;
const [d0, s0] = swigluForwardAndPerTokenCast(x, base) as [HostTensor, HostTensor];
const od = sentinelLike(d0), os = sentinelLike(s0);
const ALL: Tensor[] = [x, od, os];

test(`${OP} refuses an out that is not { data?, sf? }`, () => {
  refuses(OP, "out", "VALUE", () => swigluForwardAndPerTokenCast(x, { ...base, out: od } as never), ALL);
  refuses(OP, "out.xGrad", "VALUE", () => swigluForwardAndPerTokenCast(x, { ...base, out: { data: od, xGrad: os } } as never), ALL);
});
test(`${OP} refuses an out.data of the wrong dtype`, () => refuses(OP, "out.data", "OUT_MISMATCH", () => swigluForwardAndPerTokenCast(x, { ...base, out: { data: tensor(new Float32Array(T * H), [T, H], "fp32") } }), ALL));
test(`${OP} refuses an out.data of the wrong shape`, () => refuses(OP, "out.data", "OUT_MISMATCH", () => swigluForwardAndPerTokenCast(x, { ...base, out: { data: tensor(new Uint8Array(T * 2 * H), [T, 2 * H], "e4m3") } }), ALL));
test(`${OP} refuses a strided out.data`, () => refuses(OP, "out.data", "OUT_MISMATCH", () => swigluForwardAndPerTokenCast(x, { ...base, out: { data: tensor(new Uint8Array(T * 2 * H), [T, 2 * H], "e4m3").slice(1, 0, H) } }), ALL));
test(`${OP} refuses an out.sf with useTmaAlignedColMajorSf (a given sf is row-major)`, () => refuses(OP, "out.sf", "OUT_MISMATCH", () => swigluForwardAndPerTokenCast(x, { ...base, useTmaAlignedColMajorSf: true, out: { sf: os } }), ALL));
test(`${OP} refuses an out.sf of the wrong layout's dtype (packed scales are int32)`, () => refuses(OP, "out.sf", "OUT_MISMATCH", () => swigluForwardAndPerTokenCast(x, { ...base, roundSf: true, usePackedUe8m0: true, out: { sf: os } }), ALL));
test(`${OP} refuses an out.data that overlaps x`, () => {
  const xb = tensor(new Uint8Array(T * 2 * H * 4), [T * 2 * H * 4], "uint8");
  const xs = tensor(new Float32Array(xb.data.buffer as ArrayBuffer), [T, 2 * H], "fp32");
  const ov = tensor(new Uint8Array(xb.data.buffer as ArrayBuffer, 0, T * H), [T, H], "e4m3");
  refuses(OP, "out.data", "OUT_MISMATCH", () => swigluForwardAndPerTokenCast(xs, { ...base, out: { data: ov } }), [xs]);
});
test(`${OP} refuses out.data and out.sf that overlap each other`, () => {
  const buf = new Uint8Array(T * H + 64);
  const dd = tensor(new Uint8Array(buf.buffer, 0, T * H), [T, H], "e4m3");
  const ss = tensor(new Float32Array(buf.buffer, 0, T * (H / 32)), [T, H / 32], "fp32");
  refuses(OP, "out.sf", "OUT_MISMATCH", () => swigluForwardAndPerTokenCast(x, { ...base, out: { data: dd, sf: ss } }), [x, dd, ss]);
});
test(`${OP} with out and backend "cuda" runs the kernels into the given host tensors, or is BACKEND_UNAVAILABLE without a GPU`, () => {
  cudaOrUnavailable(OP, () => swigluForwardAndPerTokenCast(x, { ...base, backend: "cuda", out: { data: sentinelLike(d0), sf: sentinelLike(s0) } }), hasGpu);
});

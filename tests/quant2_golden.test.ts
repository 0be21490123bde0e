/**
 * The CPU references of perChannelCast, perChannelCastFused, perChannelCastAndTranspose, perBlockCastLossless and
 * batchedTransposeWeightSf against the conformance vectors, byte for byte (golden/README.md): every case of
 * quant_per_channel_cast, quant_per_block_cast_lossless and quant_batched_transpose_weight_sf, one test per case
 * and op. Then the compositions spec/quant.md states, on random inputs (fixed seed, printed in every failure).
 *
 * Known disagreements (vectors outside the spec's legal arguments, spec/quant.md §5.1 / §11.1: `perChannelCast`
 * needs `H % 128 == 0`): the public op refuses them (TkError, arg "x", SHAPE), and its reference, which handles
 * any H, must still reproduce the vector byte for byte. Tests named "known disagreement: …", counted, never
 * skipped:
 * - quant_per_channel_cast c000 (H = 64) and c001 (H = 192) for perChannelCast. Both are legal for
 *   perChannelCastFused (§11.1 sets no H rule for it) and c000 for perChannelCastAndTranspose (H % 64), which
 *   must match them.
 * @module
 */
import assert from "node:assert/strict";
import {
  batchedTransposeWeightSf,
  castBack,
  type HostTensor,
  perBlockCastLossless,
  perChannelCast,
  perChannelCastAndTranspose,
  perChannelCastFused,
  type Quantized,
  type Tensor,
  tensor,
  TkError,
} from "../mod.ts";
import { encodeBf16, encodeE4m3, f32Bits } from "../core/dtype.ts";
import { contiguousHost, hostZeros } from "../core/tensor.ts";
import { perChannelCastFusedRef, perChannelCastRef } from "../ops/quant/per_channel_cast.ref.ts";
import { amaxClampFor } from "../ops/quant/scale.ref.ts";
import { asCodes, type GoldenCase, type GoldenFile, loadGolden, logicalBytes, opOptions, toColMajor } from "./golden.ts";
import { assertBytesEqual, rng, test } from "./harness.ts";

function checkOut(g: GoldenFile, c: GoldenCase, role: string, got: Tensor, label: string): void {
  assertBytesEqual(logicalBytes(got as HostTensor), logicalBytes(g.tensors[`${c.id}.${role}`]), `${label} ${c.id} ${role}`);
}

function bytesOf(t: Tensor): Uint8Array {
  return logicalBytes(t as HostTensor);
}

/** The transpose of a 2-D host tensor as a contiguous copy (any element type). */
function transposed(t: Tensor): HostTensor {
  return contiguousHost((t as HostTensor).transpose());
}

// ---- quant_per_channel_cast ------------------------------------------------------------------------------

const perChannel = loadGolden("quant", "quant_per_channel_cast");
let perChannelDisagreements = 0;
for (const c of perChannel.cases) {
  const p = c.params as { tokens: number; hidden: number; inDtype: string; numPerTokens: number; roundSf: boolean };
  const x = perChannel.tensors[`${c.id}.x`];
  const o = opOptions(c) as { fmt: "e4m3"; numPerTokens: number; roundSf: boolean };
  const name = `${c.id} ${p.tokens}x${p.hidden} ${p.inDtype} [${p.numPerTokens}, 1]${p.roundSf ? " roundSf" : ""}`;
  if (p.hidden % 128 === 0) {
    test(`perChannelCast reference matches vector ${name}`, () => {
      const [data, sf] = perChannelCast(x, o);
      checkOut(perChannel, c, "data", data, "cpu");
      checkOut(perChannel, c, "sf", sf, "cpu");
    });
  } else {
    perChannelDisagreements++;
    test(`known disagreement: perChannelCast refuses H = ${p.hidden} of vector ${name}, its reference matches it`, () => {
      assert.throws(() => perChannelCast(x, o), (e: unknown) => e instanceof TkError && e.op === "perChannelCast" && e.arg === "x" && e.code === "SHAPE");
      const rule = { fmt: "e4m3", roundSf: o.roundSf, packedUe8m0: false, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) } as const;
      const { data, sf } = perChannelCastRef(x, { tokens: p.tokens, hidden: p.hidden, numPerTokens: o.numPerTokens, rule });
      checkOut(perChannel, c, "data", data, "ref");
      checkOut(perChannel, c, "sf", sf, "ref");
    });
  }
  test(`perChannelCastFused reference matches vector ${name}`, () => {
    const [data, sf] = perChannelCastFused(x, o);
    checkOut(perChannel, c, "data", data, "fused");
    checkOut(perChannel, c, "sf", sf, "fused");
  });
  if (p.inDtype === "bf16" && p.hidden % 64 === 0) {
    test(`perChannelCastAndTranspose reference matches the transpose of vector ${name}`, () => {
      const [data, sf] = perChannelCastAndTranspose(x, o);
      assert.deepEqual(data.shape, [p.hidden, p.tokens]);
      assertBytesEqual(bytesOf(transposed(data)), logicalBytes(perChannel.tensors[`${c.id}.data`]), `transpose ${c.id} data`);
      checkOut(perChannel, c, "sf", sf, "transpose");
    });
  }
}
test("quant_per_channel_cast has exactly 2 known perChannelCast disagreements (c000, c001)", () => assert.equal(perChannelDisagreements, 2));

// ---- per-channel compositions ----------------------------------------------------------------------------

const SEED = 20261130;

/** Random fp32 `[T, H]` with per-column magnitudes spread over many binades, one all-zero column, −0 entries. */
function randomX(T: number, H: number, seed: number): HostTensor {
  const r = rng(seed);
  const colScale = Array.from({ length: H }, () => 2 ** Math.floor(r() * 40 - 20));
  const v = new Float32Array(T * H).map((_, i) => ((i % H) === 3 ? -0 : (r() - 0.5) * 8 * colScale[i % H]));
  return tensor(v, [T, H], "fp32");
}

function toBf16(x: HostTensor): HostTensor {
  return tensor(Uint16Array.from(x.data as Float32Array, encodeBf16), [...x.shape], "bf16");
}

for (const [npt, roundSf] of [[32, false], [128, true], [32, true]] as const) {
  test(`perChannelCastAndTranspose data is the transpose of perChannelCast data, sf equal (numPerTokens ${npt}, roundSf ${roundSf}, seed ${SEED})`, () => {
    const x = toBf16(randomX(256, 384, SEED + npt));
    const [d, s] = perChannelCast(x, { fmt: "e4m3", numPerTokens: npt, roundSf });
    const [dt, st] = perChannelCastAndTranspose(x, { fmt: "e4m3", numPerTokens: npt, roundSf });
    assertBytesEqual(bytesOf(dt), bytesOf(transposed(d)), `seed ${SEED} data`);
    assertBytesEqual(bytesOf(st), bytesOf(s), `seed ${SEED} sf`);
  });
}

test(`perChannelCast with token-packed UE8M0 holds the exponent bytes of the roundSf fp32 scales (seed ${SEED})`, () => {
  for (const npt of [32, 128]) {
    const x = randomX(384, 256, SEED + 1);
    const [d, s] = perChannelCast(x, { fmt: "e4m3", numPerTokens: npt, roundSf: true });
    const [dp, sp] = perChannelCast(x, { fmt: "e4m3", numPerTokens: npt, roundSf: true, usePackedUe8m0: true });
    const nbm = 384 / npt;
    assert.deepEqual(sp.shape, [Math.ceil(nbm / 4), 256]);
    assertBytesEqual(bytesOf(dp), bytesOf(d), `seed ${SEED} data`);
    const words = (sp as HostTensor).data as Int32Array;
    const f = (s as HostTensor).data as Float32Array;
    for (let m = 0; m < Math.ceil(nbm / 4) * 4; m++) {
      for (let k = 0; k < 256; k++) {
        const byte = (words[(m >> 2) * 256 + k] >>> (8 * (m & 3))) & 0xff;
        assert.equal(byte, m < nbm ? f32Bits(f[m * 256 + k]) >>> 23 : 0, `seed ${SEED} npt ${npt} block (${m}, ${k})`);
      }
    }
    // castBack reads the token-packed layout back to the same values.
    const back = castBack([dp, sp], { fmt: "fp32", xBlockSize: [npt, 1] });
    assertBytesEqual(bytesOf(back), bytesOf(castBack([d, s], { fmt: "fp32", xBlockSize: [npt, 1] })), `seed ${SEED} castBack`);
  }
});

/** A quantized per-token input `[q, s_in]` with power-of-two and arbitrary scales, in the layout asked for. */
function quantizedInput(T: number, H: number, npc: number, seed: number, layout: "row" | "col" | "packed"): Quantized {
  const r = rng(seed);
  const q = tensor(Uint8Array.from({ length: T * H }, () => Math.floor(r() * 256) & 0xff).map((b) => ((b & 0x7f) === 0x7f ? 0x7e : b)), [T, H], "e4m3");
  const nbk = H / npc;
  const pow = layout === "packed";
  const s = tensor(Float32Array.from({ length: T * nbk }, () => (pow ? 2 ** Math.floor(r() * 20 - 10) : r() * 3 + 1e-3)), [T, nbk], "fp32");
  if (layout === "col") return [q, toColMajor(s)];
  if (layout === "row") return [q, s];
  const words = new Int32Array(T * Math.ceil(nbk / 4));
  const f = s.data as Float32Array;
  for (let t = 0; t < T; t++) for (let k = 0; k < nbk; k++) words[t * Math.ceil(nbk / 4) + (k >> 2)] |= (f32Bits(f[t * nbk + k]) >>> 23) << (8 * (k & 3));
  return [q, tensor(words, [T, Math.ceil(nbk / 4)], "int32")];
}

for (const layout of ["row", "col", "packed"] as const) {
  test(`perChannelCast of a quantized input (${layout} sf) equals perChannelCast of its fp32 dequantization (seed ${SEED})`, () => {
    for (const npc of [32, 128]) {
      const x = quantizedInput(256, 256, npc, SEED + npc, layout);
      const deq = castBack(x, { fmt: "fp32", xBlockSize: [1, npc] });
      for (const npt of [32, 128]) {
        const [d, s] = perChannelCast(x, { fmt: "e4m3", numPerTokens: npt, numPerChannels: npc });
        const [d2, s2] = perChannelCast(deq, { fmt: "e4m3", numPerTokens: npt });
        assertBytesEqual(bytesOf(d), bytesOf(d2), `seed ${SEED} npc ${npc} npt ${npt} data`);
        assertBytesEqual(bytesOf(s), bytesOf(s2), `seed ${SEED} npc ${npc} npt ${npt} sf`);
      }
    }
  });
}

test(`perChannelCastFused without gather equals perChannelCast with numPerTokens 128, plain and quantized (seed ${SEED})`, () => {
  const x = randomX(256, 384, SEED + 7);
  for (const roundSf of [false, true]) {
    const [d, s] = perChannelCast(x, { fmt: "e4m3", numPerTokens: 128, roundSf });
    const [df, sf] = perChannelCastFused(x, { fmt: "e4m3", numPerTokens: 128, roundSf });
    assertBytesEqual(bytesOf(df), bytesOf(d), "data");
    assertBytesEqual(bytesOf(sf), bytesOf(s), "sf");
  }
  const q = quantizedInput(256, 256, 128, SEED + 8, "row");
  const [d, s] = perChannelCast(q, { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128 });
  const [df, sf] = perChannelCastFused(q, { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128 });
  assertBytesEqual(bytesOf(df), bytesOf(d), "quantized data");
  assertBytesEqual(bytesOf(sf), bytesOf(s), "quantized sf");
});

/**
 * A plain re-computation of §5.2 with `numPerTokens = 128` and no roundSf, written out from the spec formulas:
 * gathered rows (zeros for negative indices); per column and block of up to 128 real rows, `a = max(amax, clamp)`,
 * `sf = fl(a / 448)`, `inv = fl(448 / a)`, `code = e4m3(fl(x · inv))`.
 */
function plainFused(x: HostTensor, pos: Int32Array, H: number): { data: Uint8Array; sf: Float32Array } {
  const T = pos.length;
  const xv = x.data as Float32Array;
  const val = (p: number, k: number) => (pos[p] < 0 ? 0 : xv[pos[p] * H + k]);
  const nbm = Math.ceil(T / 128);
  const data = new Uint8Array(T * H);
  const sf = new Float32Array(nbm * H);
  const clamp = Math.fround(1e-4);
  for (let m = 0; m < nbm; m++) {
    for (let k = 0; k < H; k++) {
      let amax = 0;
      for (let p = m * 128; p < Math.min(T, (m + 1) * 128); p++) amax = Math.max(amax, Math.abs(val(p, k)));
      const a = Math.max(amax, clamp);
      sf[m * H + k] = Math.fround(a / 448);
      const inv = Math.fround(448 / a);
      for (let p = m * 128; p < Math.min(T, (m + 1) * 128); p++) data[p * H + k] = encodeE4m3(Math.fround(val(p, k) * inv));
    }
  }
  return { data, sf };
}

function randomPos(n: number, T: number, seed: number): Int32Array {
  const r = rng(seed);
  return Int32Array.from({ length: n }, () => (r() < 0.1 ? -1 : Math.floor(r() * T)));
}

for (const tOut of [1, 127, 129, 4001]) {
  test(`perChannelCastFused reference: a partial last block of ${tOut} gathered tokens covers only real rows (public op refuses T_out % 16 ≠ 0; seed ${SEED})`, () => {
    const H = 128;
    const x = randomX(512, H, SEED + tOut);
    const pos = randomPos(tOut, 512, SEED + tOut);
    const posT = tensor(pos, [tOut], "int32");
    assert.throws(() => perChannelCastFused(x, { fmt: "e4m3", numPerTokens: 128, posToToken: posT }), (e: unknown) => e instanceof TkError && e.arg === "posToToken" && e.code === "SHAPE");
    const rule = { fmt: "e4m3", roundSf: false, packedUe8m0: false, e4m3Sf: false, clamp: amaxClampFor("e4m3", false) } as const;
    const got = perChannelCastFusedRef("perChannelCastFused", x, posT, { tokens: 512, hidden: H, numPerTokens: 128, rule });
    const want = plainFused(x, pos, H);
    assert.deepEqual(got.sf.shape, [Math.ceil(tOut / 128), H]);
    assertBytesEqual(bytesOf(got.data), want.data, `seed ${SEED} T_out ${tOut} data`);
    assertBytesEqual(bytesOf(got.sf), new Uint8Array(want.sf.buffer), `seed ${SEED} T_out ${tOut} sf`);
  });
}

for (const tOut of [16, 144, 4000]) {
  test(`perChannelCastFused with ${tOut} gathered tokens (partial last block) matches a plain re-computation (seed ${SEED})`, () => {
    const H = 256;
    const x = randomX(384, H, SEED + tOut);
    const pos = randomPos(tOut, 384, SEED + tOut);
    const [data, sf] = perChannelCastFused(x, { fmt: "e4m3", numPerTokens: 128, posToToken: tensor(pos, [tOut], "int32") });
    const want = plainFused(x, pos, H);
    assertBytesEqual(bytesOf(data), want.data, `seed ${SEED} T_out ${tOut} data`);
    assertBytesEqual(bytesOf(sf), new Uint8Array(want.sf.buffer), `seed ${SEED} T_out ${tOut} sf`);
  });
}

test(`perChannelCastFused gathering a quantized input equals perChannelCast of the gathered dequantized rows (seed ${SEED})`, () => {
  const q = quantizedInput(256, 256, 128, SEED + 9, "row");
  const pos = randomPos(256, 256, SEED + 9);
  const [df, sf] = perChannelCastFused(q, { fmt: "e4m3", numPerTokens: 128, numPerChannels: 128, posToToken: tensor(pos, [256], "int32") });
  const deq = (castBack(q, { fmt: "fp32", xBlockSize: [1, 128] }) as HostTensor).data as Float32Array;
  const g = hostZeros([256, 256], "fp32");
  pos.forEach((r, p) => r >= 0 && (g.data as Float32Array).set(deq.subarray(r * 256, r * 256 + 256), p * 256));
  const [d, s] = perChannelCast(g, { fmt: "e4m3", numPerTokens: 128 });
  assertBytesEqual(bytesOf(df), bytesOf(d), `seed ${SEED} data`);
  assertBytesEqual(bytesOf(sf), bytesOf(s), `seed ${SEED} sf`);
});

test("perChannelCastFused reference throws DEVICE_VALUE for posToToken ≥ T before writing", () => {
  const x = randomX(128, 128, SEED);
  const pos = tensor(new Int32Array(16).fill(3).map((v, i) => (i === 9 ? 128 : v)), [16], "int32");
  const out = { data: hostZeros([16, 128], "e4m3"), sf: hostZeros([1, 128], "fp32") };
  assert.throws(() => perChannelCastFused(x, { fmt: "e4m3", numPerTokens: 128, posToToken: pos, out }), (e: unknown) => e instanceof TkError && e.arg === "posToToken" && e.code === "DEVICE_VALUE");
  assert.ok(out.data.bytes.every((b) => b === 0) && out.sf.bytes.every((b) => b === 0));
});

// ---- quant_per_block_cast_lossless ------------------------------------------------------------------------

const lossless = loadGolden("quant", "quant_per_block_cast_lossless");
for (const c of lossless.cases) {
  const p = c.params as { tokens: number; hidden: number; xBlockSize: [number, number]; outBlockSize: [number, number]; inSfLayout: { useTmaAlignedColMajorSf: boolean }; usePackedUe8m0: boolean; useTmaAlignedColMajorSf: boolean };
  const name = `${c.id} ${p.tokens}x${p.hidden} in[${p.xBlockSize}] out[${p.outBlockSize}]${p.inSfLayout.useTmaAlignedColMajorSf ? " colMajorIn" : ""}${p.useTmaAlignedColMajorSf ? " colMajorOut" : ""}${p.usePackedUe8m0 ? " packed" : ""}`;
  test(`perBlockCastLossless reference matches vector ${name}`, () => {
    const data = asCodes(lossless.tensors[`${c.id}.xData`], "e2m1x2");
    let sf = lossless.tensors[`${c.id}.xSf`];
    if (p.inSfLayout.useTmaAlignedColMajorSf) sf = toColMajor(sf);
    const [d, s] = perBlockCastLossless([data, sf], opOptions(c) as never);
    checkOut(lossless, c, "data", d, "cpu");
    checkOut(lossless, c, "sf", s, "cpu");
    // Exact: the dequantized values are unchanged.
    const before = castBack([data, sf], { fmt: "fp32", xBlockSize: p.xBlockSize });
    const after = castBack([d, s], { fmt: "fp32", xBlockSize: p.outBlockSize });
    assertBytesEqual(bytesOf(after), bytesOf(before), `${c.id} dequantized values`);
  });
}

test("perBlockCastLossless reads packed UE8M0 input scales like their fp32 powers of two", () => {
  const c = lossless.cases.find((k) => (k.params as { tokens: number }).tokens === 130)!;
  const data = asCodes(lossless.tensors[`${c.id}.xData`], "e2m1x2");
  const sf = lossless.tensors[`${c.id}.xSf`];
  const [T, nbk] = sf.shape;
  const words = new Int32Array(T * Math.ceil(nbk / 4));
  const f = sf.data as Float32Array;
  for (let t = 0; t < T; t++) for (let k = 0; k < nbk; k++) words[t * Math.ceil(nbk / 4) + (k >> 2)] |= ((f32Bits(f[t * nbk + k]) >>> 23) & 0xff) << (8 * (k & 3));
  const packed = tensor(words, [T, Math.ceil(nbk / 4)], "int32");
  const o = opOptions(c) as never;
  const [d1, s1] = perBlockCastLossless([data, sf], o);
  const [d2, s2] = perBlockCastLossless([data, packed], o);
  assertBytesEqual(bytesOf(d2), bytesOf(d1), "data");
  assertBytesEqual(bytesOf(s2), bytesOf(s1), "sf");
});

test("perBlockCastLossless throws DEVICE_VALUE when an input block is more than 2^11 below its output block's largest, writing nothing", () => {
  const data = tensor(new Uint8Array(64 * 64).fill(0x22), [64, 64], "e2m1x2");
  const s = new Float32Array(64 * 4).fill(1);
  s[5] = 2 ** 12; // exponent spread 12 in output block (0, 0)
  const sf = tensor(s, [64, 4], "fp32");
  const out = { data: hostZeros([64, 128], "e4m3"), sf: hostZeros([1, 1], "fp32") };
  assert.throws(() => perBlockCastLossless([data, sf], { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128], out }), (e: unknown) => e instanceof TkError && e.op === "perBlockCastLossless" && e.code === "DEVICE_VALUE");
  assert.ok(out.data.bytes.every((b) => b === 0) && out.sf.bytes.every((b) => b === 0));
  s[5] = 2 ** 11; // spread 11: still exact
  const [d] = perBlockCastLossless([data, sf], { fmt: "e4m3", xBlockSize: [1, 32], outBlockSize: [128, 128] });
  assert.equal(bytesOf(d)[0], 0x10); // 1.0 · 2^(127 − 132) = 2^-5
});

// ---- quant_batched_transpose_weight_sf --------------------------------------------------------------------

const transposeSf = loadGolden("quant", "quant_batched_transpose_weight_sf");
for (const c of transposeSf.cases) {
  const p = c.params as { blockSize: number; transposeSf1: boolean[]; sfShapes: number[][] };
  const o = { blockSize: p.blockSize, transposeSf1: p.transposeSf1 }; // sfShapes is a setup key (golden/README.md)
  const name = `${c.id} blockSize ${p.blockSize} shapes ${JSON.stringify(p.sfShapes)} transposeSf1 [${p.transposeSf1}]`;
  test(`batchedTransposeWeightSf reference matches vector ${name}, with the physical strides of §9.1`, () => {
    const sfs = p.sfShapes.map((_, i) => transposeSf.tensors[`${c.id}.sfs${i}`]);
    const res = batchedTransposeWeightSf(sfs, o);
    assert.equal(res.length, sfs.length);
    res.forEach(([sf0, sf1], i) => {
      checkOut(transposeSf, c, `w${i}Sf0`, sf0, "cpu");
      checkOut(transposeSf, c, `w${i}Sf1`, sf1, "cpu");
      const s = p.sfShapes[i];
      const [nS, kS] = s.slice(-2);
      const [n, k, p0, p1] = [nS * p.blockSize, kS * p.blockSize, Math.ceil(kS / 4), Math.ceil(nS / 4)];
      const lead = s.length === 3 ? 1 : 0;
      assert.deepEqual(sf0.strides.slice(lead), [1, n]);
      assert.deepEqual(sf1.strides.slice(lead), p.transposeSf1[i] ? [k, 1] : [1, k]);
      if (lead) assert.deepEqual([sf0.strides[0], sf1.strides[0]], [p0 * n, p1 * k]);
    });
    // Rewriting the returned pairs in place gives the same bytes.
    if (res.length === 0) return;
    for (const [a, b] of res) ((a as HostTensor).data as Int32Array).fill(-1), ((b as HostTensor).data as Int32Array).fill(-1);
    const again = batchedTransposeWeightSf(sfs, { ...o, out: res });
    again.forEach(([sf0, sf1], i) => {
      assert.ok(sf0 === res[i][0] && sf1 === res[i][1]);
      checkOut(transposeSf, c, `w${i}Sf0`, sf0, "out");
      checkOut(transposeSf, c, `w${i}Sf1`, sf1, "out");
    });
  });
}

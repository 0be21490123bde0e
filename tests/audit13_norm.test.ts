/**
 * Audit 13 (docs/audit13.md), norm and transform families: what the other suites left open.
 *
 * - A refused call leaves valid preallocated outputs (and an accumulated `weightGrad`, the in-place `residual`)
 *   byte for byte as they were; the same call with the bad argument fixed then writes them.
 * - 0 rows (2-D `[0, H]`, 3-D `[0, T, H]` / `[B, 0, H]`) and empty RoPE inputs: legal, empty outputs
 *   (spec/norm-rope-rand.md D.10); `normBackward` zero-fills an allocated `weightGrad` (D.3).
 * - Row-strided views, which `normForward`, `normForwardAndPerTokenCast` and `normBackward` accept (last stride 1):
 *   byte for byte the result of the contiguous copy; strided padding is never read nor written.
 *
 * Random inputs come from a fixed, printed seed.
 * @module
 */
import assert from "node:assert/strict";
import {
  addRmsnormForwardAndPerTokenCast,
  applyRotary,
  type HostTensor,
  normBackward,
  normForward,
  normForwardAndPerTokenCast,
  type Tensor,
  tensor,
} from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { contiguousHost, hostStrided } from "../core/tensor.ts";
import { logicalBytes } from "./golden.ts";
import { assertBytesEqual, test } from "./harness.ts";
import { outSurvives, refuses, seededValues, sentinelLike } from "./refuses.ts";

const SEED = 20261203;
const values = (n: number, salt: number, scale = 4) => seededValues(SEED + salt, n, scale);

function mk(dtype: "fp32" | "bf16", v: number[], shape: number[]): HostTensor {
  return dtype === "fp32" ? tensor(new Float32Array(v), shape, "fp32") : tensor(Uint16Array.from(v, encodeBf16), shape, "bf16");
}

const like = sentinelLike;

/** Storage element indices of the logical elements of a host view. */
function viewElements(t: HostTensor): Set<number> {
  const out = new Set<number>();
  const walk = (d: number, at: number): void => {
    if (d === t.shape.length) return void out.add(at);
    for (let i = 0; i < t.shape[d]; i++) walk(d + 1, at + i * t.strides[d]);
  };
  walk(0, t.offset);
  return out;
}

const bytes = (t: Tensor | null) => logicalBytes(t as HostTensor);
const shapeOf = (t: Tensor | null) => t === null ? null : [...t.shape];

const H = 128;
const x = mk("fp32", values(4 * H, 1), [4, H]);
const res = mk("fp32", values(4 * H, 2), [4, H]);
const w = mk("fp32", values(H, 3), [H]);
const dy = mk("fp32", values(4 * H, 4), [4, H]);
const INPUTS: Tensor[] = [x, res, w, dy];

// ---- a refused call leaves valid outs untouched ---------------------------------------------------------------

test("normForward: a refused call leaves valid out.out, out.rstd and out.residualOut untouched", () => {
  const [o, r, s] = normForward(x, w, { eps: 1e-6, residual: res });
  const outs = { out: like(o), rstd: like(r), residualOut: like(s) };
  outSurvives("normForward", "outScale", "VALUE", (bad) => normForward(x, w, { eps: 1e-6, residual: res, outScale: bad ? NaN : 0.5, out: outs }), [outs.out, outs.rstd, outs.residualOut], INPUTS);
});

test("normBackward: a refused call leaves out.xGrad and an accumulated out.weightGrad untouched", () => {
  const [, rstd] = normForward(x, w, { eps: 1e-6 });
  const outs = { xGrad: like(x), weightGrad: like(w) };
  const bad16 = tensor(new Uint16Array(4), [4], "bf16");
  outSurvives("normBackward", "rstd", "DTYPE", (bad) => normBackward(x, w, dy, bad ? bad16 : rstd, { accumulateWeightGrad: true, out: outs }), [outs.xGrad, outs.weightGrad], [...INPUTS, rstd, bad16]);
});

test("normForwardAndPerTokenCast: a refused call leaves every valid out untouched", () => {
  const o = { eps: 1e-6, residual: res, fmt: "e4m3", numPerChannels: 32, withOutBf16: true } as const;
  const [[d, s], b, r, n] = normForwardAndPerTokenCast(x, w, o);
  const outs = { data: like(d), sf: like(s), outBf16: like(b!), rstd: like(r), residualOut: like(n) };
  outSurvives("normForwardAndPerTokenCast", "numPerChannels", "VALUE", (bad) => normForwardAndPerTokenCast(x, w, { ...o, numPerChannels: bad ? 64 as never : 32, out: outs }), Object.values(outs), INPUTS);
});

test("addRmsnormForwardAndPerTokenCast: a refused call leaves the in-place residual untouched", () => {
  const r = mk("fp32", values(4 * H, 5), [4, H]);
  const op = "addRmsnormForwardAndPerTokenCast";
  const base = { eps: 1e-6, fmt: "e4m3", numPerChannels: 128 } as const;
  refuses(op, "eps", "VALUE", () => addRmsnormForwardAndPerTokenCast(x, r, w, { ...base, eps: -1 }), [...INPUTS, r]);
  refuses(op, "weight", "SHAPE", () => addRmsnormForwardAndPerTokenCast(x, r, tensor(new Float32Array(64), [64], "fp32"), base), [...INPUTS, r]);
  refuses(op, "residual", "SHAPE", () => addRmsnormForwardAndPerTokenCast(x, mk("fp32", values(2 * H, 6), [2, H]), w, base), [...INPUTS, r]);
  refuses(op, "usePackedUe8m0", "VALUE", () => addRmsnormForwardAndPerTokenCast(x, r, w, { ...base, usePackedUe8m0: true }), [...INPUTS, r]);
  const before = r.bytes.slice();
  addRmsnormForwardAndPerTokenCast(x, r, w, base);
  assert.notDeepEqual(r.bytes, before, "the accepted call writes residual");
});

test("applyRotary: a refused call rotates neither query nor key", () => {
  const q = mk("fp32", values(3 * 2 * 64, 7), [3, 2, 64]), k = mk("fp32", values(3 * 64, 8), [3, 1, 64]);
  const cache = mk("fp32", values(8 * 64, 9), [8, 64]);
  const op = "applyRotary";
  refuses(op, "conjugate", "VALUE", () => applyRotary(q, cache, { key: k, conjugate: "yes" as never }), [q, k, cache]);
  refuses(op, "positions", "LAYOUT", () => applyRotary(q, cache, { key: k, positions: hostStrided([3], [2], "int32", 6) }), [q, k, cache]);
  refuses(op, "key", "SHAPE", () => applyRotary(q, cache, { key: tensor(new Float32Array(3 * 32), [3, 1, 32], "fp32") }), [q, k, cache]);
  refuses(op, "cosSinCache", "SHAPE", () => applyRotary(q, tensor(new Float32Array(0), [0, 64], "fp32"), { key: k, positions: tensor(new Int32Array(3), [3], "int32") }), [q, k, cache]);
  refuses(op, "out", "VALUE", () => applyRotary(q, cache, { key: k, out: q } as never), [q, k, cache]);
  const before = q.bytes.slice();
  applyRotary(q, cache, { key: k, seqlenOffset: 2 });
  assert.notDeepEqual(q.bytes, before, "the accepted call rotates query");
});

// ---- 0 rows ----------------------------------------------------------------------------------------------------

test("normForward takes 0 rows in 2-D and 3-D, with and without residual and outs", () => {
  for (const shape of [[0, 64], [0, 3, 64], [2, 0, 64]]) {
    const e = tensor(new Float32Array(0), shape, "fp32");
    const [o, r, s] = normForward(e, null, { eps: 1e-6 });
    assert.deepEqual([shapeOf(o), shapeOf(r), s], [shape, shape.slice(0, -1), e]);
    const eb = tensor(new Uint16Array(0), shape, "bf16");
    const [o2, r2, s2] = normForward(eb, tensor(new Uint16Array(64).fill(0x3f80), [64], "bf16"), { eps: 0, residual: tensor(new Uint16Array(0), shape, "bf16"), out: { rstd: tensor(new Float32Array(0), shape.slice(0, -1), "fp32") } });
    assert.deepEqual([o2.dtype, shapeOf(o2), shapeOf(r2), s2.dtype, shapeOf(s2)], ["bf16", shape, shape.slice(0, -1), "bf16", shape]);
  }
});

test("normForwardAndPerTokenCast takes 0 rows in 2-D, with every sf layout and withOutBf16", () => {
  const e = tensor(new Float32Array(0), [0, 256], "fp32");
  for (const sfo of [{}, { useTmaAlignedColMajorSf: true }, { roundSf: true, usePackedUe8m0: true }]) {
    const [[d, s], b, r, n] = normForwardAndPerTokenCast(e, null, { eps: 1e-6, fmt: "e4m3", numPerChannels: 32, withOutBf16: true, ...sfo });
    assert.deepEqual([shapeOf(d), s.shape[0], s.numel, shapeOf(b), shapeOf(r), n], [[0, 256], 0, 0, [0, 256], [0], e], JSON.stringify(sfo));
  }
  const [qd, qs] = addRmsnormForwardAndPerTokenCast(e, tensor(new Float32Array(0), [0, 256], "fp32"), tensor(new Float32Array(256), [256], "fp32"), { eps: 1e-6, fmt: "e4m3", numPerChannels: 128 });
  assert.deepEqual([shapeOf(qd), shapeOf(qs)], [[0, 256], [0, 2]]);
});

test("normBackward with 0 rows returns an empty xGrad and a +0-filled allocated weightGrad (fp32 and bf16)", () => {
  for (const dtype of ["fp32", "bf16"] as const) {
    const e = mk(dtype, [], [0, 64]);
    const wt = mk(dtype, values(64, 10), [64]);
    for (const weightGradDtype of ["fp32", "bf16"] as const) {
      const [g, wg] = normBackward(e, wt, e, tensor(new Float32Array(0), [0], "fp32"), { weightGradDtype });
      assert.deepEqual([shapeOf(g), wg!.dtype, shapeOf(wg)], [[0, 64], weightGradDtype, [64]]);
      assert.ok((wg as HostTensor).bytes.every((b) => b === 0), `${dtype}/${weightGradDtype}: weightGrad is not +0`);
    }
    const [, none] = normBackward(e, null, e, tensor(new Float32Array(0), [0], "fp32"));
    assert.equal(none, null);
  }
});

test("applyRotary with nothing to rotate is a no-op, also with an empty cache", () => {
  const cache = mk("fp32", values(8 * 64, 11), [8, 64]);
  const empty = tensor(new Float32Array(0), [0, 64], "fp32");
  for (const [q, c, o] of [
    [tensor(new Float32Array(0), [0, 2, 64], "fp32"), cache, {}],
    [tensor(new Float32Array(0), [3, 0, 64], "fp32"), cache, { seqlenOffset: 5 }],
    [tensor(new Float32Array(0), [0, 2, 64], "fp32"), empty, { key: tensor(new Float32Array(0), [0, 1, 64], "fp32"), positions: tensor(new Int32Array(0), [0], "int32") }],
    [tensor(new Uint16Array(0), [0, 5, 2, 64], "bf16"), cache, { positions: tensor(new BigInt64Array(0), [0, 5], "int64") }],
  ] as const) {
    const [rq, rk] = applyRotary(q, c, o);
    assert.ok(rq === q && (rk === null || rk === (o as { key?: Tensor }).key), `[${q.shape}]`);
  }
});

// ---- row-strided views -----------------------------------------------------------------------------------------

/** `shape` over storage whose rows (and batches) are padded with NaN, which must never be read. */
function padded(dtype: "fp32" | "bf16", shape: number[], salt: number): HostTensor {
  const h = shape[shape.length - 1], rowStride = h + 32;
  const full = [...shape.slice(0, -1), rowStride];
  if (full.length === 3) full[1] += 1; // one padding row per batch
  const n = full.reduce((a, b) => a * b, 1);
  const v = values(n, salt).map((a, i) => (i % rowStride >= h ? NaN : a));
  let t = mk(dtype, v, full).slice(-1, 0, h);
  if (full.length === 3) t = t.slice(1, 0, shape[1]);
  return t;
}

test(`normForward on row-strided views equals the contiguous copy, and leaves the padding alone (seed ${SEED})`, () => {
  let salt = 100;
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const shape of [[5, 128], [2, 3, 64]]) {
      const label = `seed ${SEED}+${++salt} ${dtype} [${shape}]`;
      const v = padded(dtype, shape, salt), r = padded(dtype, shape, salt + 50);
      const wt = mk(dtype, values(shape[shape.length - 1], salt + 60), [shape[shape.length - 1]]);
      const storage = v.bytes.slice();
      const [o1, s1, n1] = normForward(v, wt, { eps: 1e-6, outScale: 0.3, residual: r });
      const [o2, s2, n2] = normForward(contiguousHost(v), wt, { eps: 1e-6, outScale: 0.3, residual: contiguousHost(r) });
      assertBytesEqual(bytes(o1), bytes(o2), `${label} out`);
      assertBytesEqual(bytes(s1), bytes(s2), `${label} rstd`);
      assertBytesEqual(bytes(n1), bytes(n2), `${label} normInput`);
      assertBytesEqual(v.bytes, storage, `${label}: x's storage`);
      // In place into the strided residual: only its logical elements change.
      const rs = r.bytes.slice();
      normForward(v, wt, { eps: 1e-6, residual: r, out: { residualOut: r } });
      assertBytesEqual(bytes(r), bytes(n2), `${label} residualOut in place`);
      const inView = viewElements(r), now = r.bytes, eb = now.length / r.data.length;
      for (let i = 0; i < now.length; i++) if (!inView.has(Math.floor(i / eb))) assert.equal(now[i], rs[i], `${label}: padding byte ${i} written`);
    }
  }
});

test(`normForwardAndPerTokenCast on a row-strided view equals the contiguous copy (seed ${SEED})`, () => {
  let salt = 200;
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const shape of [[6, 256], [2, 3, 128]]) {
      for (const sfo of [{}, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }]) {
        const label = `seed ${SEED}+${++salt} ${dtype} [${shape}] ${JSON.stringify(sfo)}`;
        const v = padded(dtype, shape, salt);
        const o = { eps: 1e-6, fmt: "e4m3", numPerChannels: 32, withOutBf16: true, ...sfo } as const;
        const [[d1, s1], b1, r1] = normForwardAndPerTokenCast(v, null, o);
        const [[d2, s2], b2, r2] = normForwardAndPerTokenCast(contiguousHost(v), null, o);
        assertBytesEqual(bytes(d1), bytes(d2), `${label} data`);
        assertBytesEqual(bytes(s1), bytes(s2), `${label} sf`);
        assertBytesEqual(bytes(b1), bytes(b2), `${label} outBf16`);
        assertBytesEqual(bytes(r1), bytes(r2), `${label} rstd`);
      }
    }
  }
});

test(`normBackward on row-strided x, gradOut and residualOutGrad equals the contiguous copies (seed ${SEED})`, () => {
  let salt = 300;
  for (const dtype of ["fp32", "bf16"] as const) {
    const label = `seed ${SEED}+${++salt} ${dtype}`;
    const xv = padded(dtype, [7, 128], salt), gv = padded(dtype, [7, 128], salt + 1), rv = padded(dtype, [7, 128], salt + 2);
    const wt = mk(dtype, values(128, salt + 3), [128]);
    const [, rstd] = normForward(xv, wt, { eps: 1e-6 });
    const [g1, w1] = normBackward(xv, wt, gv, rstd, { outScale: 0.3, residualOutGrad: rv });
    const [g2, w2] = normBackward(contiguousHost(xv), wt, contiguousHost(gv), rstd, { outScale: 0.3, residualOutGrad: contiguousHost(rv) });
    assertBytesEqual(bytes(g1), bytes(g2), `${label} xGrad`);
    assertBytesEqual(bytes(w1), bytes(w2), `${label} weightGrad`);
  }
});

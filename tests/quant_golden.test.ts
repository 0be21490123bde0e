/**
 * The CPU references of perBlockCast, cast and perTokenCastAndCastBack against the conformance vectors, byte for
 * byte (golden/README.md): every case of quant_per_block_cast, quant_cast and quant_per_token_cast_and_cast_back,
 * one test per case. Then each composite op against the composition of its parts on random inputs (fixed seed,
 * printed in every failure message).
 *
 * Known disagreements (vectors outside the spec's legal arguments, spec/quant.md §3 / §2.5 / §11.1): the public op
 * refuses them as the spec requires (TkError, arg "x"), and the reference function, which handles partial blocks
 * and groups generally (§4), must still reproduce the vector byte for byte. They are tests named "known
 * disagreement: …", counted like every other test, never skipped:
 * - quant_per_block_cast: every case with T % 128 ≠ 0 or H % 128 ≠ 0 (1×64, 7×256, 33×576 — partial edge blocks).
 * - quant_per_token_cast_and_cast_back: c004 (H = 64 with numPerChannels 128, so H % numPerChannels ≠ 0).
 * @module
 */
import assert from "node:assert/strict";
import {
  cast,
  castBack,
  type HostTensor,
  perBlockCast,
  perBlockCastWithPrecomputedSf,
  perBlockCastWithSfOnly,
  perTokenCast,
  perTokenCastAndCastBack,
  perTokenCastBack,
  type Quantized,
  type Tensor,
  tensor,
  TkError,
  unpackFromE2m1fnX2,
} from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { type BlockCastArgs, perBlockCastRef } from "../ops/quant/per_block_cast.ref.ts";
import { perTokenCastAndCastBackRef } from "../ops/quant/per_token_cast_and_cast_back.ref.ts";
import { amaxClampFor, type QuantFmt } from "../ops/quant/scale.ref.ts";
import { caseName, type GoldenCase, type GoldenFile, loadGolden, logicalBytes, opOptions } from "./golden.ts";
import { assertBytesEqual, rng, test } from "./harness.ts";

/** A fresh copy of a stored tensor (the vectors stay untouched by in-place ops). */
function copyOf(t: HostTensor): HostTensor {
  return tensor(t.data.slice(t.offset, t.offset + t.numel) as Float32Array, [...t.shape], t.dtype);
}

/** Asserts the public op refuses a case outside the spec's legal arguments, naming `x`. */
function refusesX(op: string, f: () => unknown): void {
  assert.throws(f, (e: unknown) => e instanceof TkError && e.op === op && e.arg === "x" && (e.code === "SHAPE"));
}

function checkOut(g: GoldenFile, c: GoldenCase, role: string, got: Tensor, label: string): void {
  assertBytesEqual(logicalBytes(got as HostTensor), logicalBytes(g.tensors[`${c.id}.${role}`]), `${label} ${c.id} ${role}`);
}

// ---- quant_per_block_cast --------------------------------------------------------------------------------

const perBlock = loadGolden("quant", "quant_per_block_cast");
for (const c of perBlock.cases) {
  const p = c.params as { fmt: QuantFmt; blockSize: [number, number]; tokens: number; hidden: number; roundSf: boolean; usePackedUe8m0: boolean; useTmaAlignedColMajorSf: boolean };
  const x = perBlock.tensors[`${c.id}.x`];
  const legal = p.tokens % 128 === 0 && p.hidden % 128 === 0;
  if (legal) {
    test(`perBlockCast reference matches vector ${caseName(c)} [${p.blockSize}]`, () => {
      const [data, sf] = perBlockCast(x, opOptions(c) as never);
      checkOut(perBlock, c, "data", data, "cpu");
      checkOut(perBlock, c, "sf", sf, "cpu");
      checkOut(perBlock, c, "sf", perBlockCastWithSfOnly(x, opOptions(c) as never), "sf-only");
    });
    continue;
  }
  test(`known disagreement: perBlockCast refuses partial blocks of vector ${caseName(c)} [${p.blockSize}], its reference matches it`, () => {
    refusesX("perBlockCast", () => perBlockCast(x, opOptions(c) as never));
    refusesX("perBlockCastWithSfOnly", () => perBlockCastWithSfOnly(x, opOptions(c) as never));
    const a: BlockCastArgs = {
      tokens: p.tokens,
      hidden: p.hidden,
      blockRows: p.blockSize[0],
      blockCols: p.blockSize[1],
      rule: { fmt: p.fmt, roundSf: p.roundSf, packedUe8m0: p.usePackedUe8m0, e4m3Sf: false, clamp: amaxClampFor(p.fmt, false) },
      layout: { kind: p.usePackedUe8m0 ? "packed" : "fp32", colMajor: p.useTmaAlignedColMajorSf },
    };
    const { data, sf } = perBlockCastRef(x, a, true);
    checkOut(perBlock, c, "data", data!, "reference");
    checkOut(perBlock, c, "sf", sf, "reference");
  });
}

// ---- quant_cast ------------------------------------------------------------------------------------------

const generic = loadGolden("quant", "quant_cast");
for (const c of generic.cases) {
  test(`cast reference matches vector ${caseName(c)} ${c.params.dtype} [${c.params.blockSize}]${c.params.precomputedSf ? " precomputed sf" : ""}`, () => {
    const o = opOptions(c);
    delete o.precomputedSf; // a setup key: the vector's sf is an input
    if (c.inputs.includes("sf")) o.sf = generic.tensors[`${c.id}.sf`];
    const res = cast(generic.tensors[`${c.id}.x`], o as never);
    if (c.outputs.length === 1) {
      checkOut(generic, c, "data", res as Tensor, "cpu");
    } else {
      const [data, sf] = res as Quantized;
      checkOut(generic, c, "data", data, "cpu");
      checkOut(generic, c, "sf", sf, "cpu");
    }
  });
}

// ---- quant_per_token_cast_and_cast_back -------------------------------------------------------------------

const castAndBack = loadGolden("quant", "quant_per_token_cast_and_cast_back");
for (const c of castAndBack.cases) {
  const p = c.params as { fmt: QuantFmt; numPerChannels: number; roundSf: boolean; tokens: number; hidden: number };
  if (p.hidden % p.numPerChannels === 0) {
    test(`perTokenCastAndCastBack reference matches vector ${caseName(c)}`, () => {
      const x = copyOf(castAndBack.tensors[`${c.id}.x`]);
      const res = perTokenCastAndCastBack(x, opOptions(c) as never);
      assert.equal(res, x, "the op returns x itself");
      checkOut(castAndBack, c, "out", x, "cpu");
    });
    continue;
  }
  test(`known disagreement: perTokenCastAndCastBack refuses H % numPerChannels ≠ 0 of vector ${caseName(c)}, its reference matches it`, () => {
    const x = copyOf(castAndBack.tensors[`${c.id}.x`]);
    const before = x.bytes.slice();
    refusesX("perTokenCastAndCastBack", () => perTokenCastAndCastBack(x, opOptions(c) as never));
    assert.deepEqual(x.bytes, before, "a refused call modified x");
    perTokenCastAndCastBackRef(x, {
      tokens: p.tokens,
      hidden: p.hidden,
      numPerChannels: p.numPerChannels,
      rule: { fmt: p.fmt, roundSf: p.roundSf, packedUe8m0: false, e4m3Sf: false, clamp: amaxClampFor(p.fmt, false) },
      layout: { kind: "fp32", colMajor: false },
    });
    checkOut(castAndBack, c, "out", x, "reference");
  });
}

// ---- compositions on random inputs ------------------------------------------------------------------------

const SEED = 20240611;

/** Random `[T, H]` values with a few wide-range rows (×1e4, ×1e-30, zeros), from `seed`. */
function randomX(seed: number, T: number, H: number, dtype: "fp32" | "bf16", rowStride = H): HostTensor {
  const r = rng(seed);
  const v = new Float32Array(T * rowStride).map((_, i) => {
    const row = Math.floor(i / rowStride);
    const scale = row % 7 === 3 ? 1e4 : row % 7 === 5 ? 1e-30 : row % 7 === 6 ? 0 : 1;
    return (r() * 2 - 1) * 3 * scale;
  });
  const t = dtype === "fp32" ? tensor(v, [T, rowStride], "fp32") : tensor(Uint16Array.from(v, encodeBf16), [T, rowStride], "bf16");
  return rowStride === H ? t : t.slice(1, 0, H);
}

const bytes = (t: Tensor): Uint8Array => logicalBytes(t as HostTensor);

test(`perTokenCastAndCastBack equals perTokenCastBack(perTokenCast(x)) in x's dtype (seed ${SEED})`, () => {
  let seed = SEED;
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const fmt of ["e4m3", "e2m1"] as const) {
      for (const numPerChannels of [16, 32, 64, 128]) {
        for (const sfo of [{}, { roundSf: true }, { useE4m3Sf: true }]) {
          const label = `seed ${++seed} ${dtype} ${fmt}/${numPerChannels} ${JSON.stringify(sfo)}`;
          const x = randomX(seed, 9, 256, dtype, 320);
          const expected = perTokenCastBack(perTokenCast(x, { fmt, numPerChannels, ...sfo }), { fmt: dtype, numPerChannels });
          const pad = x.data.slice();
          perTokenCastAndCastBack(x, { fmt, numPerChannels, ...sfo });
          assertBytesEqual(bytes(x), bytes(expected), label);
          for (let t = 0; t < 9; t++) for (let j = 256; j < 320; j++) assert.equal(x.data[t * 320 + j], pad[t * 320 + j], `${label}: row padding written`);
        }
      }
    }
  }
});

test(`perBlockCastWithSfOnly and perBlockCastWithPrecomputedSf agree with perBlockCast (seed ${SEED})`, () => {
  let seed = SEED + 1000;
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const fmt of ["e4m3", "e2m1"] as const) {
      for (const blockSize of [[32, 32], [32, 128], [128, 32], [128, 128]] as const) {
        for (const sfo of [{}, { roundSf: true }, { roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true }]) {
          const label = `seed ${++seed} ${dtype} ${fmt} [${blockSize}] ${JSON.stringify(sfo)}`;
          const x = randomX(seed, 256, 384, dtype);
          const [data, sf] = perBlockCast(x, { fmt, blockSize, ...sfo });
          assertBytesEqual(bytes(perBlockCastWithSfOnly(x, { fmt, blockSize, ...sfo })), bytes(sf), `${label} sf-only`);
          if (sfo.roundSf && !("usePackedUe8m0" in sfo)) {
            // Power-of-two scales: fl(1 / 2^e) = 2^-e is the cast's own inverse, so the data must agree.
            assertBytesEqual(bytes(perBlockCastWithPrecomputedSf(x, sf, { fmt, blockSize })), bytes(data), `${label} precomputed`);
          }
          // The generic cast with the same blocks is perBlockCast (spec/quant.md §7.1).
          const [cd, cs] = cast(x, { dtype: fmt === "e4m3" ? "e4m3" : "e2m1x2", blockSize, ...sfo }) as Quantized;
          assertBytesEqual(bytes(cd), bytes(data), `${label} cast data`);
          assertBytesEqual(bytes(cs), bytes(sf), `${label} cast sf`);
        }
      }
    }
  }
});

test(`cast with [1, c] blocks equals perTokenCast, plain and re-quantized (seed ${SEED})`, () => {
  let seed = SEED + 2000;
  for (const fmt of ["e4m3", "e2m1"] as const) {
    for (const numPerChannels of [16, 32, 64, 128]) {
      for (const sfo of [{}, { roundSf: true, usePackedUe8m0: true }, { useE4m3Sf: true, useTmaAlignedColMajorSf: true }]) {
        const label = `seed ${++seed} ${fmt}/${numPerChannels} ${JSON.stringify(sfo)}`;
        const x = randomX(seed, 33, 192, "bf16");
        const dtype = fmt === "e4m3" ? "e4m3" : "e2m1x2";
        const [pd, ps] = perTokenCast(x, { fmt, numPerChannels, ...sfo });
        const [cd, cs] = cast(x, { dtype, blockSize: [1, numPerChannels], ...sfo }) as Quantized;
        assertBytesEqual(bytes(cd), bytes(pd), `${label} data`);
        assertBytesEqual(bytes(cs), bytes(ps), `${label} sf`);
        // Re-quantization of the pair (§4.4 order) to e4m3 per 32 channels.
        const [rd, rs] = perTokenCast([pd, ps], { fmt: "e4m3", numPerChannels: 32, xBlockSize: [1, numPerChannels] });
        const [cd2, cs2] = cast([pd, ps], { dtype: "e4m3", blockSize: [1, 32], xBlockSize: [1, numPerChannels] }) as Quantized;
        assertBytesEqual(bytes(cd2), bytes(rd), `${label} requant data`);
        assertBytesEqual(bytes(cs2), bytes(rs), `${label} requant sf`);
      }
    }
  }
});

test(`cast element conversion: bf16 → e4m3 equals bf16 → fp32 → e4m3, fp32 → bf16 is encodeBf16 (seed ${SEED})`, () => {
  const r = rng(SEED + 3000);
  const v = new Float32Array(1000).map(() => (r() * 2 - 1) * 10 ** (r() * 8 - 4));
  const x = tensor(v, [10, 100], "fp32");
  const b = cast(x, { dtype: "bf16" }) as HostTensor;
  assert.deepEqual([...(b.data as Uint16Array)], Array.from(v, encodeBf16), `seed ${SEED + 3000}`);
  const viaFp32 = cast(cast(b, { dtype: "fp32" }) as Tensor, { dtype: "e4m3" });
  assertBytesEqual(bytes(cast(b, { dtype: "e4m3" }) as Tensor), bytes(viaFp32 as Tensor), `seed ${SEED + 3000} bf16 → e4m3`);
  const h = cast(x, { dtype: "fp16" }) as Tensor;
  assertBytesEqual(bytes(cast(cast(h, { dtype: "e4m3" }) as Tensor, { dtype: "e4m3" }) as Tensor), bytes(cast(h, { dtype: "e4m3" }) as Tensor), "e4m3 → e4m3 copies");
});

test(`unpackFromE2m1fnX2 · sf equals castBack of an e2m1 per-token pair (seed ${SEED})`, () => {
  const x = randomX(SEED + 4000, 7, 128, "fp32");
  const [data, sf] = perTokenCast(x, { fmt: "e2m1", numPerChannels: 32 });
  const back = castBack([data, sf], { fmt: "fp32", xBlockSize: [1, 32] }) as HostTensor;
  const u = unpackFromE2m1fnX2(data) as HostTensor;
  assert.deepEqual(u.shape, [7, 128]);
  const s = (sf as HostTensor).data as Float32Array;
  const ud = u.data as Float32Array;
  const expected = new Float32Array(7 * 128).map((_, i) => Math.fround(ud[i] * s[Math.floor(i / 128) * 4 + Math.floor((i % 128) / 32)]));
  assertBytesEqual(bytes(back), new Uint8Array(expected.buffer), `seed ${SEED + 4000}`);
  const ub = unpackFromE2m1fnX2(data, { dtype: "bf16" }) as HostTensor;
  assert.deepEqual([...(ub.data as Uint16Array)], Array.from(ud, encodeBf16), "bf16 output is the exact fp32 value in bf16");
});

test("golden inputs are left unchanged by the tests above", () => {
  // The in-place cases worked on copies: the stored x of every cast-and-cast-back case still differs from its out
  // somewhere (else the in-place test could not fail).
  let differing = 0;
  for (const c of castAndBack.cases) {
    const a = logicalBytes(castAndBack.tensors[`${c.id}.x`]);
    const b = logicalBytes(castAndBack.tensors[`${c.id}.out`]);
    if (a.some((v, i) => v !== b[i])) differing++;
  }
  assert.ok(differing > 0);
});

/**
 * `normForwardAndPerTokenCast` and `addRmsnormForwardAndPerTokenCast` against the norm-family conformance vectors
 * (golden/README.md "Norm tolerances"): data/sf byte for byte when quantizing the stored `normalized`; from the
 * reference's own `normalized`, normalized within 1 bf16 / 8 fp32 ulp, rstd within 4 ulp, residualOut bytes, data
 * within 1 e4m3 code and sf within 2 ulp. Also the identity of spec/norm-rope-rand.md §A.4 / D.5 on random inputs:
 * the fused cast equals `perTokenCast(normForward(...)[0])` byte for byte.
 * @module
 */
import assert from "node:assert/strict";
import { decodeBf16, encodeBf16, f32Bits } from "../core/dtype.ts";
import { contiguousHost, type HostTensor, tensor } from "../core/tensor.ts";
import { addRmsnormForwardAndPerTokenCast, normForward, normForwardAndPerTokenCast } from "../ops/norm/mod.ts";
import { perTokenCast } from "../ops/quant/per_token_cast.ts";
import { type GoldenCase, type GoldenFile, loadGolden, logicalBytes, knownDisagreements } from "./golden.ts";
import { assertBytesEqual, rng, test } from "./harness.ts";

type SfFlags = { useTmaAlignedColMajorSf?: boolean; roundSf?: boolean; usePackedUe8m0?: boolean };

/** Distance in units in the last place between two fp32 / bf16 bit patterns (0 for two NaNs). */
function ulps(a: number, b: number, sign: number): number {
  const ord = (v: number) => (v & sign ? -(v & (sign - 1)) : v);
  return Math.abs(ord(a) - ord(b));
}

/** Bit patterns of the logical elements (fp32, bf16, int32 or bytes), row-major. */
function bitsOf(t: HostTensor): number[] {
  const c = contiguousHost(t);
  const d = c.data;
  const out: number[] = [];
  for (let i = 0; i < c.numel; i++) {
    const v = Number(d[c.offset + i]);
    out.push(c.dtype === "fp32" ? f32Bits(v) : c.dtype === "int32" ? v >>> 0 : v);
  }
  return out;
}

/** Asserts every element is within `max` ulp (fp32/bf16) or, for e4m3 codes, `max` code steps; names the first miss. */
function assertWithin(actual: HostTensor, expected: HostTensor, max: number, label: string): void {
  assert.deepEqual([...actual.shape], [...expected.shape], `${label}: shape`);
  const a = bitsOf(actual);
  const e = bitsOf(expected);
  const sign = expected.dtype === "fp32" ? 0x80000000 : expected.dtype === "bf16" ? 0x8000 : 0x80;
  for (let i = 0; i < e.length; i++) {
    if (expected.dtype === "int32") {
      // Packed UE8M0: each exponent byte is one power-of-two scale; its ulp is one exponent step.
      for (let k = 0; k < 32; k += 8) {
        const d = Math.abs(((a[i] >>> k) & 0xff) - ((e[i] >>> k) & 0xff));
        if (d > max) throw new Error(`${label}: word ${i} byte ${k / 8}: exponents ${(a[i] >>> k) & 0xff} vs ${(e[i] >>> k) & 0xff}`);
      }
      continue;
    }
    const d = ulps(a[i], e[i], sign);
    if (d > max) throw new Error(`${label}: element ${i}: got 0x${a[i].toString(16)}, expected 0x${e[i].toString(16)} (${d} apart, allowed ${max})`);
  }
}

/** Reinterprets a stored U8 tensor as e4m3 codes. */
function codes(t: HostTensor): HostTensor {
  return tensor(new Uint8Array(logicalBytes(t)), [...t.shape], "e4m3");
}

/** Batch `b` of a 3-D tensor as a contiguous 2-D copy (the tensor itself for 2-D). */
function batch(t: HostTensor, b: number): HostTensor {
  if (t.shape.length === 2) return t;
  const c = contiguousHost(t.slice(0, b, b + 1));
  return c.view([c.shape[1], c.shape[2]]);
}

function sfFlags(p: Record<string, unknown>): SfFlags {
  return { useTmaAlignedColMajorSf: p.useTmaAlignedColMajorSf as boolean, roundSf: p.roundSf as boolean, usePackedUe8m0: p.usePackedUe8m0 as boolean };
}

/** data/sf of the vector equal perTokenCast of the stored normalized tensor, byte for byte (per batch for 3-D). */
function checkStoredCast(g: GoldenFile, c: GoldenCase): void {
  const t = (r: string) => g.tensors[`${c.id}.${r}`];
  const normalized = t("normalized");
  const B = normalized.shape.length === 3 ? normalized.shape[0] : 1;
  for (let b = 0; b < B; b++) {
    const [data, sf] = perTokenCast(batch(normalized, b), { fmt: "e4m3", numPerChannels: c.params.numPerChannels as number, ...sfFlags(c.params) });
    assertBytesEqual(logicalBytes(data as HostTensor), logicalBytes(batch(t("data"), b)), `${c.id} batch ${b} data from stored normalized`);
    assertBytesEqual(logicalBytes(sf as HostTensor), logicalBytes(batch(t("sf"), b)), `${c.id} batch ${b} sf from stored normalized`);
  }
}

function name(c: GoldenCase): string {
  const p = c.params;
  const bits = [`${p.batch ? `${p.batch}x` : ""}${p.tokens}x${p.hidden}`, String(p.inDtype), `g${p.numPerChannels}`];
  for (const k of ["withWeight", "withResidual", "useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0"]) if (p[k]) bits.push(k);
  if (p.outScale !== undefined && p.outScale !== 1) bits.push(`outScale ${p.outScale}`);
  return `${c.id} ${bits.join(" ")}`;
}

/**
 * Cases where the spec and a vector disagree beyond the stated tolerance: id → reason. The reference follows the
 * spec; these cases still run, must still fail the stated tolerance (else the list is stale), and must meet the
 * looser bound the reason explains.
 */
const known = knownDisagreements({
  // sf = amax ⊗ (1/448) inherits the distance of the row's amax, and an fp32 `normalized` may be 8 ulp from the
  // vector (stated tolerance, fixed tree of D.2 vs upstream's order); the stated 2 ulp on sf is tighter than that.
  "norm_forward_and_per_token_cast/c012": "fp32 sf 3 ulp from the vector: the amax element moved within its 8-ulp normalized tolerance",
});


// ---- normForwardAndPerTokenCast ----------------------------------------------------------------------------

const fused = loadGolden("norm", "norm_forward_and_per_token_cast");
test("the norm_forward_and_per_token_cast vectors hold 10 cases", () => assert.equal(fused.cases.length, 10));
for (const c of fused.cases) {
  test(`normForwardAndPerTokenCast vector ${name(c)}: data/sf are perTokenCast of the stored normalized, byte for byte`, () => checkStoredCast(fused, c));
  test(`normForwardAndPerTokenCast reference matches vector ${name(c)} within the stated tolerances`, () => {
    const t = (r: string) => fused.tensors[`${c.id}.${r}`];
    const x = contiguousHost(t("x"));
    const residual = c.inputs.includes("residual") ? contiguousHost(t("residual")) : undefined;
    const weight = c.inputs.includes("weight") ? t("weight") : null;
    const p = c.params;
    const [[data, sf], outBf16, rstd, normInput] = normForwardAndPerTokenCast(x, weight, {
      eps: p.eps as number,
      outScale: p.outScale as number,
      residual,
      fmt: "e4m3",
      numPerChannels: p.numPerChannels as 32 | 128,
      withOutBf16: true,
      ...sfFlags(p),
    });
    const [normalized] = normForward(x, weight, { eps: p.eps as number, outScale: p.outScale as number, residual: residual && contiguousHost(residual) });
    assertWithin(normalized as HostTensor, t("normalized"), x.dtype === "bf16" ? 1 : 8, `${c.id} normalized`);
    assertWithin(rstd as HostTensor, t("rstd"), 4, `${c.id} rstd`);
    if (residual) assertBytesEqual(logicalBytes(normInput as HostTensor), logicalBytes(t("residualOut")), `${c.id} residualOut`);
    else assert.equal(normInput, x);
    assertWithin(codes(data as HostTensor), codes(t("data")), 1, `${c.id} data`);
    known.compare(`norm_forward_and_per_token_cast/${c.id}`, () => assertWithin(sf as HostTensor, t("sf"), 2, `${c.id} sf`), () => assertWithin(sf as HostTensor, t("sf"), 8, `${c.id} sf`));
    // withOutBf16: RNbf16 of the x-dtype normalized output.
    const nb = bitsOf(normalized as HostTensor);
    const ob = bitsOf(outBf16 as HostTensor);
    for (let i = 0; i < nb.length; i++) {
      const want = x.dtype === "bf16" ? nb[i] : encodeBf16((contiguousHost(normalized as HostTensor).data as Float32Array)[i]);
      if (ob[i] !== want) throw new Error(`${c.id} outBf16 element ${i}: 0x${ob[i].toString(16)} vs 0x${want.toString(16)}`);
    }
  });
}

test("the fused-cast vectors disagree with the spec only where listed (1 fp32 sf case)", () => {
  assert.equal(known.seen, known.listed);
  assert.equal(known.seen, 1);
});

// ---- addRmsnormForwardAndPerTokenCast -------------------------------------------------------------------------

const add = loadGolden("norm", "add_rmsnorm_forward_and_per_token_cast");
test("the add_rmsnorm_forward_and_per_token_cast vectors hold 4 cases", () => assert.equal(add.cases.length, 4));
for (const c of add.cases) {
  test(`addRmsnormForwardAndPerTokenCast vector ${name(c)}: data/sf are perTokenCast of the stored normalized, byte for byte`, () => checkStoredCast(add, c));
  test(`addRmsnormForwardAndPerTokenCast reference matches vector ${name(c)}; residual is updated in place, x unchanged`, () => {
    const t = (r: string) => add.tensors[`${c.id}.${r}`];
    const x = contiguousHost(t("x"));
    const xBefore = x.bytes.slice();
    const residual = contiguousHost(t("residual"));
    const p = c.params;
    const [data, sf] = addRmsnormForwardAndPerTokenCast(x, residual, t("weight"), {
      eps: p.eps as number,
      fmt: "e4m3",
      numPerChannels: p.numPerChannels as 32 | 128,
      ...sfFlags(p),
    });
    assertBytesEqual(logicalBytes(residual), logicalBytes(t("residualOut")), `${c.id} residual (in place)`);
    assertBytesEqual(x.bytes, xBefore, `${c.id} x unchanged`);
    const [normalized] = normForward(residual, t("weight"), { eps: p.eps as number });
    assertWithin(normalized as HostTensor, t("normalized"), x.dtype === "bf16" ? 1 : 8, `${c.id} normalized`);
    assertWithin(codes(data as HostTensor), codes(t("data")), 1, `${c.id} data`);
    assertWithin(sf as HostTensor, t("sf"), 2, `${c.id} sf`);
  });
}

// ---- §A.4 / D.5: fused == perTokenCast(normForward(...)[0]) byte for byte ----------------------------------------

const SEED = 20250607;
test(`normForwardAndPerTokenCast equals perTokenCast of normForward byte for byte on random inputs (seed ${SEED})`, () => {
  const rand = rng(SEED);
  const sfConfigs: SfFlags[] = [{}, { roundSf: true }, { useTmaAlignedColMajorSf: true }, { useTmaAlignedColMajorSf: true, roundSf: true, usePackedUe8m0: true }];
  let checked = 0;
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const [B, T, H] of [[0, 5, 128], [0, 1, 64], [0, 9, 384], [2, 3, 256], [3, 0, 128]]) {
      for (const N of [32, 128] as const) {
        for (const sfo of sfConfigs) {
          if (H % N !== 0) continue;
          const withWeight = rand() < 0.5;
          const withResidual = rand() < 0.5;
          const outScale = rand() < 0.5 ? 1 : 0.3;
          const shape = B ? [B, T, H] : [T, H];
          const n = shape.reduce((a, b) => a * b, 1);
          // Values spanning several binades, with a row scaled far up to exercise the amax.
          const vals = Array.from({ length: n }, (_, i) => (rand() - 0.5) * 2 ** Math.floor(rand() * 12 - 6) * (i < H ? 1e3 : 1));
          const mk = (v: number[], s: number[]) => dtype === "fp32" ? tensor(new Float32Array(v), s, "fp32") : tensor(new Uint16Array(v.map(encodeBf16)), s, "bf16");
          const x = mk(vals, shape);
          const weight = withWeight ? mk(Array.from({ length: H }, () => rand() * 2 - 0.5), [H]) : null;
          const residual = withResidual ? mk(Array.from({ length: n }, () => rand() - 0.5), shape) : undefined;
          const label = `seed ${SEED} ${dtype} [${shape}] g${N} ${JSON.stringify(sfo)} w=${withWeight} r=${withResidual} os=${outScale}`;
          const [[data, sf], , rstd] = normForwardAndPerTokenCast(x, weight, { eps: 1e-6, outScale, residual, fmt: "e4m3", numPerChannels: N, ...sfo });
          const [out, rstd2] = normForward(x, weight, { eps: 1e-6, outScale, residual });
          assertBytesEqual((rstd as HostTensor).bytes, (rstd2 as HostTensor).bytes, `${label} rstd`);
          for (let b = 0; b < (B || 1); b++) {
            const [d2, s2] = perTokenCast(batch(out as HostTensor, b), { fmt: "e4m3", numPerChannels: N, ...sfo });
            assertBytesEqual(logicalBytes(batch(data as HostTensor, b)), logicalBytes(d2 as HostTensor), `${label} batch ${b} data`);
            const fusedSf = B ? contiguousHost((sf as HostTensor).slice(0, b, b + 1)) : sf as HostTensor;
            assertBytesEqual(logicalBytes(fusedSf), logicalBytes(s2 as HostTensor), `${label} batch ${b} sf`);
            checked++;
          }
        }
      }
    }
  }
  assert.ok(checked >= 100, `checked ${checked} casts`);
});

test("normForwardAndPerTokenCast lays a 3-D TMA-aligned sf out per batch", () => {
  const x = tensor(new Float32Array(2 * 5 * 64).map((_, i) => Math.sin(i)), [2, 5, 64], "fp32");
  const [[, sf]] = normForwardAndPerTokenCast(x, null, { eps: 1e-6, fmt: "e4m3", numPerChannels: 32, useTmaAlignedColMajorSf: true });
  assert.deepEqual([...sf.shape], [2, 5, 2]);
  assert.deepEqual([...sf.strides], [16, 1, 8]); // token dimension padded to 8 per batch (4 fp32 = 16 bytes)
});

test("normForwardAndPerTokenCast returns outBf16 only with withOutBf16, and bf16 x gives its own bits", () => {
  const x = tensor(new Uint16Array(2 * 64).map((_, i) => encodeBf16(Math.cos(i))), [2, 64], "bf16");
  const [, none] = normForwardAndPerTokenCast(x, null, { eps: 1e-6, fmt: "e4m3", numPerChannels: 32 });
  assert.equal(none, null);
  const [, ob] = normForwardAndPerTokenCast(x, null, { eps: 1e-6, fmt: "e4m3", numPerChannels: 32, withOutBf16: true });
  const [out] = normForward(x, null, { eps: 1e-6 });
  assertBytesEqual((ob as HostTensor).bytes, (out as HostTensor).bytes, "outBf16 of bf16 x");
  assert.ok(decodeBf16(((ob as HostTensor).data as Uint16Array)[0]) > 0);
});

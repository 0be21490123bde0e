/**
 * The CPU reference of the per-token cast family against the conformance vectors, byte for byte
 * (golden/README.md): quant_per_token_cast, quant_per_token_cast_requant, and the per-token cases of
 * quant_cast_back through perTokenCastBack. The same cases run through the CUDA kernels in
 * per_token_cast_gpu.test.ts.
 * @module
 */
import { HostTensor, perTokenCast, perTokenCastBack, type Quantized, type Tensor } from "../mod.ts";
import { asCodes, type GoldenCase, type GoldenFile, loadGolden, logicalBytes, toColMajor } from "./golden.ts";
import { assertBytesEqual, test } from "./harness.ts";

const SETUP_KEYS = ["tokens", "hidden", "inDtype", "rowStride", "inFmt", "inSfLayout", "batch"];

/** Op options of a case: its params minus the setup keys (golden/README.md). */
export function opOptions(c: GoldenCase): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c.params)) if (!SETUP_KEYS.includes(k)) o[k] = v;
  return o;
}

/** The op input `x` of a per-token case, in the layout the case asks for. */
export function caseInput(g: GoldenFile, c: GoldenCase): Tensor | Quantized {
  const p = c.params as { hidden: number; inFmt?: string; inSfLayout?: { useTmaAlignedColMajorSf: boolean } };
  if (c.inputs.includes("xData")) {
    const data = asCodes(g.tensors[`${c.id}.xData`], p.inFmt === "e2m1" ? "e2m1x2" : "e4m3");
    let sf = g.tensors[`${c.id}.xSf`];
    if (p.inSfLayout?.useTmaAlignedColMajorSf) sf = toColMajor(sf);
    return [data, sf];
  }
  const x = g.tensors[`${c.id}.x`];
  return x.shape[1] > p.hidden ? x.slice(1, 0, p.hidden) : x;
}

/** Checks `[data, sf]` against a case's stored outputs, byte for byte. */
export function checkQuantized(g: GoldenFile, c: GoldenCase, data: HostTensor, sf: HostTensor, label: string): void {
  assertBytesEqual(logicalBytes(data), logicalBytes(g.tensors[`${c.id}.data`]), `${label} ${c.id} data`);
  assertBytesEqual(logicalBytes(sf), logicalBytes(g.tensors[`${c.id}.sf`]), `${label} ${c.id} sf`);
}

/** A short readable description of a case for test names. */
export function caseName(c: GoldenCase): string {
  const p = c.params;
  const bits = [`${p.tokens}x${p.hidden}`];
  for (const k of ["inDtype", "inFmt", "fmt", "numPerChannels"]) if (p[k] !== undefined) bits.push(String(p[k]));
  if (p.xBlockSize) bits.push(`in[${p.xBlockSize}]`);
  for (const k of ["useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0", "useE4m3Sf"]) if (p[k]) bits.push(k);
  if (p.rowStride && p.rowStride !== p.hidden) bits.push(`stride${p.rowStride}`);
  return `${c.id} ${bits.join(" ")}`;
}

const perToken = loadGolden("quant", "quant_per_token_cast");
for (const c of perToken.cases) {
  test(`perTokenCast reference matches vector ${caseName(c)}`, () => {
    const [data, sf] = perTokenCast(caseInput(perToken, c), opOptions(c) as never);
    checkQuantized(perToken, c, data as HostTensor, sf as HostTensor, "cpu");
  });
}

const requant = loadGolden("quant", "quant_per_token_cast_requant");
for (const c of requant.cases) {
  test(`perTokenCast reference re-quantizes as vector ${caseName(c)}`, () => {
    const [data, sf] = perTokenCast(caseInput(requant, c), opOptions(c) as never);
    checkQuantized(requant, c, data as HostTensor, sf as HostTensor, "cpu");
  });
}

const castBack = loadGolden("quant", "quant_cast_back");
for (const c of castBack.cases) {
  const bs = c.params.xBlockSize as [number, number];
  if (bs[0] !== 1) continue; // per-block shapes belong to castBack (quantization-family issue)
  test(`perTokenCastBack reference matches vector ${caseName(c)} → ${c.params.fmt}`, () => {
    const opts = { fmt: c.params.fmt as "fp32" | "bf16", numPerChannels: bs[1] };
    const out = perTokenCastBack(caseInput(castBack, c) as Quantized, opts);
    assertBytesEqual(logicalBytes(out as HostTensor), logicalBytes(castBack.tensors[`${c.id}.out`]), `cpu ${c.id} out`);
  });
}

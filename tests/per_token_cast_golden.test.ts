/**
 * The CPU reference of the per-token cast family against the conformance vectors, byte for byte
 * (golden/README.md): quant_per_token_cast, quant_per_token_cast_requant, and the per-token cases of
 * quant_cast_back through perTokenCastBack, and every case of quant_cast_back through castBack. The same cases run through the CUDA kernels in
 * per_token_cast_gpu.test.ts.
 * @module
 */
import { castBack as castBackOp, type HostTensor, perTokenCast, perTokenCastBack, type Quantized } from "../mod.ts";
import { caseInput, caseName, checkQuantized, loadGolden, logicalBytes, opOptions } from "./golden.ts";
import { assertBytesEqual, test } from "./harness.ts";

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

for (const c of castBack.cases) {
  test(`castBack reference matches vector ${caseName(c)} → ${c.params.fmt}`, () => {
    const opts = { fmt: c.params.fmt as "fp32" | "bf16", xBlockSize: c.params.xBlockSize as [number, number] };
    const out = castBackOp(caseInput(castBack, c) as Quantized, opts);
    assertBytesEqual(logicalBytes(out as HostTensor), logicalBytes(castBack.tensors[`${c.id}.out`]), `cpu ${c.id} out`);
  });
}

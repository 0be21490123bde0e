/**
 * castBack / perTokenCastBack to fp32 write every NaN result as the one pattern 0x7FC00000, whatever made it (a NaN
 * code, a NaN scale, 0 · ±Inf): the pattern the kernels write (cast_back.cu), so the CPU reference and the GPU agree
 * byte for byte on every input. The bits of an arithmetic NaN are not the same everywhere (x86 gives 0xFFC00000 for
 * 0 · Inf, and a JavaScript engine may or may not keep them when it stores to a Float32Array); this was found by the
 * twentieth device run, where the reference wrote x86's pattern under Deno. bf16 NaN is 0x7FC0 (spec/quant.md §1.5).
 * @module
 */
import assert from "node:assert/strict";
import { castBack, type HostTensor, perTokenCastBack, type Quantized, tensor } from "../mod.ts";
import { dispose, sameAllocation, up } from "./gpu_util.ts";
import { gpuTest, rng, test } from "./harness.ts";

// e4m3 codes of one row of 64: 0 (for 0 · Inf), 0x7F / 0xFF (NaN), 0x38 (1.0), 0xB8 (−1.0), repeated
const CODES = Uint8Array.from({ length: 64 }, (_, j) => [0x00, 0x80, 0x7f, 0xff, 0x38, 0xb8][j % 6]);

function words(t: HostTensor): Uint32Array {
  const d = t.data as Float32Array;
  return new Uint32Array(d.buffer, d.byteOffset, d.length);
}

/** [row of 64 codes, one fp32 scale a 32-column group]: scales s0, s1. */
function pair(s0: number, s1: number): [HostTensor, HostTensor] {
  return [tensor(CODES.slice(), [1, 64], "e4m3") as HostTensor, tensor(Float32Array.of(s0, s1), [1, 2], "fp32") as HostTensor];
}

for (const [s0, s1] of [[Infinity, -Infinity], [NaN, 2], [0, -0], [1.5, -3]]) {
  test(`castBack e4m3 → fp32, scales ${s0} / ${s1}: every NaN result is 0x7FC00000, the rest fl(q · s)`, () => {
    for (const run of [
      (p: [HostTensor, HostTensor]) => castBack(p, { fmt: "fp32", xBlockSize: [1, 32] }),
      (p: [HostTensor, HostTensor]) => perTokenCastBack(p, { fmt: "fp32", numPerChannels: 32 }),
    ]) {
      const out = run(pair(s0, s1)) as HostTensor;
      const w = words(out);
      const v = out.data as Float32Array;
      for (let j = 0; j < 64; j++) {
        const q = [0, -0, NaN, NaN, 1, -1][j % 6];
        const want = Math.fround(q * (j < 32 ? s0 : s1));
        if (want !== want) assert.equal(w[j], 0x7fc00000, `column ${j}: NaN written as 0x${w[j].toString(16)}`);
        else assert.ok(Object.is(v[j], want), `column ${j}: ${v[j]}, expected ${want}`);
      }
    }
  });
}

test("castBack e4m3 → bf16: a NaN result (0 · Inf, a NaN code) is 0x7FC0", () => {
  const out = castBack(pair(Infinity, 1), { fmt: "bf16", xBlockSize: [1, 32] }) as HostTensor;
  const h = out.data as Uint16Array;
  for (let j = 0; j < 64; j++) if (j < 32 ? j % 6 < 4 : j % 6 === 2 || j % 6 === 3) assert.equal(h[j], 0x7fc0, `column ${j}`);
});

gpuTest("castBack / perTokenCastBack e4m3 → fp32 and bf16 on the GPU = the CPU reference with every code and scales of ±Inf, NaN, ±0 (seed 20001)", () => {
  const rand = rng(20001);
  const special = [Infinity, -Infinity, NaN, 0, -0, 1e-40, 3e38];
  for (const [T, H] of [[5, 7168], [37, 2112], [1, 64]]) {
    const codes = tensor(Uint8Array.from({ length: T * H }, () => Math.floor(rand() * 256)), [T, H], "e4m3") as HostTensor;
    const nbk = H / 32;
    const sf = tensor(Float32Array.from({ length: T * nbk }, () => rand() < 0.3 ? special[Math.floor(rand() * special.length)] : (rand() - 0.5) * 2 ** (rand() * 40 - 20)), [T, nbk], "fp32") as HostTensor;
    const host: Quantized = [codes, sf];
    const dev = up(host) as Quantized;
    try {
      for (const fmt of ["fp32", "bf16"] as const) {
        const want = castBack(host, { fmt, xBlockSize: [1, 32] });
        const got = castBack(dev, { fmt, xBlockSize: [1, 32] });
        const gotT = perTokenCastBack(dev, { fmt, numPerChannels: 32 });
        try {
          sameAllocation(got, want, `castBack ${T}x${H} ${fmt}`);
          sameAllocation(gotT, want, `perTokenCastBack ${T}x${H} ${fmt}`);
        } finally {
          dispose(got, gotT);
        }
      }
    } finally {
      dispose(dev);
    }
  }
});

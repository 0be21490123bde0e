/**
 * `deno task demo` (or `bun tools/demo.ts`): quantizes a random 4096 × 7168 bf16 matrix to FP8 E4M3 with one
 * scale per 128 channels on the best backend present (the GPU when there is one, else the CPU reference), and
 * prints the time, the bandwidth and the dequantization error.
 * @module
 */
import {
  deviceInfo,
  devices,
  type HostTensor,
  perTokenCast,
  perTokenCastBack,
  synchronize,
  tensor,
  toDevice,
  toHost,
} from "../mod.ts";
import { decodeBf16, encodeBf16 } from "../core/dtype.ts";

const T = 4096;
const H = 7168;
const bits = new Uint16Array(T * H);
let seed = 12345;
for (let i = 0; i < bits.length; i++) {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  const u = (seed >>> 8) / 16777216;
  bits[i] = encodeBf16(Math.fround(Math.tan((u - 0.5) * 3))); // heavy-tailed values
}
const x = tensor(bits, [T, H], "bf16");
const opts = { fmt: "e4m3", numPerChannels: 128 } as const;
const gpu = devices().length > 0;
console.log(`@tk/kernels demo: perTokenCast of a ${T} × ${H} bf16 matrix → e4m3, one fp32 scale per 128 channels`);

let data: HostTensor, sf: HostTensor, ms: number;
if (gpu) {
  const info = deviceInfo(0);
  console.log(`backend: cuda (${info.name}, ${info.arch})`);
  const dx = toDevice(x);
  perTokenCast(dx, opts).forEach((t) => t.dispose()); // first call loads the module
  await synchronize(0);
  const n = 50;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) perTokenCast(dx, opts).forEach((t) => t.dispose());
  await synchronize(0);
  ms = (performance.now() - t0) / n;
  const [d, s] = perTokenCast(dx, opts);
  data = await toHost(d);
  sf = await toHost(s);
} else {
  console.log("backend: cpu (no CUDA device found: the byte-exact CPU reference runs instead)");
  const t0 = performance.now();
  [data, sf] = perTokenCast(x, opts) as [HostTensor, HostTensor];
  ms = performance.now() - t0;
}
const bytes = 3 * T * H + sf.numel * 4;
const time = ms >= 10 ? `${ms.toFixed(0)} ms` : `${(ms * 1000).toFixed(1)} µs`;
const gbps = bytes / (ms * 1e6);
console.log(`time: ${time} per call, ${gbps >= 1 ? gbps.toFixed(0) : gbps.toFixed(3)} GB/s (reads 2·T·H, writes T·H + scales)`);

const back = perTokenCastBack([data, sf], { fmt: "fp32", numPerChannels: 128 }) as HostTensor;
const y = back.data as Float32Array;
let num = 0, den = 0, maxRel = 0;
for (let i = 0; i < bits.length; i++) {
  const v = decodeBf16(bits[i]);
  num += (y[i] - v) ** 2;
  den += v * v;
  if (Math.abs(v) > 1e-3) maxRel = Math.max(maxRel, Math.abs(y[i] - v) / Math.abs(v));
}
console.log(`dequantization error: relative RMS ${Math.sqrt(num / den).toExponential(3)}, max relative ${maxRel.toExponential(3)} (e4m3 has 3 mantissa bits: ≤ 6.25% by construction)`);

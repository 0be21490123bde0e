/**
 * `deno task bench:decode` (or `bun bench/decode.ts`): the decode case of the RMSNorm and RoPE family, 1 … 64
 * tokens. For each op and token count: device time per call (CUDA events around 100 calls queued behind a 4 GiB
 * copy, so the GPU runs them back to back and never waits for the host: `queuedDeviceTimeUs`), the rate of
 * back-to-back calls issued by the host (events around the calls, no lead: what a decode loop that launches one op
 * at a time gets) and host time per call (bursts of calls below the launch-queue depth), next to an empty kernel
 * launch through the same launch path. Shapes are DeepSeek V3's: hidden 7168 bf16 with a bf16 weight (normForward,
 * normForwardAndPerTokenCast to e4m3 with 128 channels per scale) and the trailing 64 rope dims of the MLA query
 * `[T, 128, 192]` bf16 (applyRotary, interleaved, in place). Every output is preallocated where the op takes `out`.
 * `--json FILE` writes the rows as JSON.
 * @module
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import {
  applyRotary,
  deviceInfo,
  type DeviceTensor,
  devices,
  empty,
  normForward,
  normForwardAndPerTokenCast,
  tensor,
  toDevice,
  zeros,
} from "../mod.ts";
import { driverVersion } from "../ffi/cuda.ts";
import { runtimeName } from "../core/env.ts";
import { bareLaunch, deviceTimeUs, hostUs, queuedDeviceTimeUs, randomBf16 } from "./common.ts";

const args = process.argv.slice(2);
const jf = args.includes("--json") ? args[args.indexOf("--json") + 1] : undefined;

if (devices().length === 0) {
  console.log("bench:decode needs a CUDA device; none found");
  process.exit(0);
}

const H = 7168;
const HEADS = 128;
const ROPE_DIM = 64;
const TOKENS = [1, 2, 4, 8, 16, 32, 64];

interface Row {
  op: string;
  tokens: number;
  deviceUs: number;
  /** true: the host issued the 100 calls more slowly than the lead copy ran, so deviceUs is an upper bound */
  hostBound: boolean;
  issuedUs: number;
  hostUs: number;
}
const rows: Row[] = [];
const measure = (op: string, tokens: number, f: () => void) => {
  const q = queuedDeviceTimeUs(f);
  rows.push({ op, tokens, deviceUs: q.us, hostBound: q.hostBound, issuedUs: deviceTimeUs(f, 100, 9), hostUs: hostUs(f, 500) });
};

measure("empty kernel launch", 0, bareLaunch());

const w = randomBf16(1, H, 2).view([H]);
const cache = (() => {
  const c = new Float32Array(4096 * ROPE_DIM);
  for (let r = 0; r < 4096; r++) {
    for (let i = 0; i < ROPE_DIM / 2; i++) {
      const theta = r * 10000 ** (-2 * i / ROPE_DIM);
      c[r * ROPE_DIM + i] = Math.cos(theta);
      c[r * ROPE_DIM + ROPE_DIM / 2 + i] = Math.sin(theta);
    }
  }
  return toDevice(tensor(c, [4096, ROPE_DIM], "fp32"));
})();

for (const T of TOKENS) {
  const x = randomBf16(T, H, 1);
  const out = empty([T, H], "bf16", { device: 0 }) as DeviceTensor;
  const rstd = empty([T], "fp32", { device: 0 }) as DeviceTensor;
  measure("normForward", T, () => void normForward(x, w, { eps: 1e-6, out: { out, rstd } }));

  const data = empty([T, H], "e4m3", { device: 0 }) as DeviceTensor;
  const sf = empty([T, H / 128], "fp32", { device: 0 }) as DeviceTensor;
  const castOpts = { eps: 1e-6, fmt: "e4m3", numPerChannels: 128, out: { data, sf, rstd } } as const;
  measure("normForwardAndPerTokenCast", T, () => void normForwardAndPerTokenCast(x, w, castOpts));

  const storage = zeros([T, HEADS, 192], "bf16", { device: 0 }) as DeviceTensor;
  const q = storage.slice(-1, 192 - ROPE_DIM, 192);
  const positions = toDevice(tensor(Int32Array.from({ length: T }, (_, t) => 4000 + t), [T], "int32"));
  const ropeOpts = { positions, interleaved: true };
  measure("applyRotary", T, () => void applyRotary(q, cache, ropeOpts));

  for (const t of [x, out, rstd, data, sf, q, storage, positions]) t.dispose();
}
w.dispose();
cache.dispose();

const info = deviceInfo(0);
console.log(`${info.name} (${info.arch}, ${info.smCount} SMs), driver ${driverVersion()}, ${runtimeName}`);
console.log(`decode case: hidden ${H} bf16; RoPE on the trailing ${ROPE_DIM} of [T, ${HEADS}, 192]\n`);
console.log(`${"op".padEnd(30)}${"tokens".padEnd(8)}${"device µs".padEnd(12)}${"issued µs".padEnd(12)}host µs`);
for (const r of rows) {
  const dev = r.deviceUs.toFixed(2) + (r.hostBound ? " ≤" : "");
  console.log(
    `${r.op.padEnd(30)}${String(r.tokens || "-").padEnd(8)}${dev.padEnd(12)}${r.issuedUs.toFixed(2).padEnd(12)}${r.hostUs.toFixed(2)}`,
  );
}
console.log("device: queued behind a copy (the kernel's own time); issued: events around back-to-back calls from the host");
if (jf) writeFileSync(jf, JSON.stringify({ device: info, driver: driverVersion(), runtime: runtimeName, rows }, null, 2));

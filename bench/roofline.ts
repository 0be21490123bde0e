/**
 * `deno task bench:roofline` (or `bun bench/roofline.ts`): the per-token cast on the device as µs, GB/s and % of
 * the same run's cuMemcpyDtoD rate; host time per call (tiny tensors, N back-to-back calls, with and without
 * preallocated outputs, next to a bare launch); and the first call of a fresh process. With `--peers FILE`
 * (the JSON of bench/peers.py from the same device command) PyTorch eager / torch.compile rows are shown beside
 * ours; `--json FILE` writes everything as JSON.
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import process from "node:process";
import { deviceInfo, type DeviceTensor, devices, empty, perTokenCast } from "../mod.ts";
import { driverVersion } from "../ffi/cuda.ts";
import { runtimeName } from "../core/env.ts";
import { type BenchCase, type CaseFactory, FAMILIES } from "./cases.ts";
import { bareLaunch, CASES, castBytes, copyRateGBs, deviceTimeUs, hostUs, randomBf16 } from "./common.ts";

const args = process.argv.slice(2);
const argOf = (k: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : undefined);

if (devices().length === 0) {
  console.log("bench:roofline needs a CUDA device; none found");
  process.exit(0);
}
const info = deviceInfo(0);
const rows: Record<string, unknown>[] = [];
const copy = copyRateGBs(2 ** 30);
console.log(`${info.name} (${info.arch}, ${info.smCount} SMs), driver ${driverVersion()}, ${runtimeName}`);
console.log(`cuMemcpyDtoD 1 GiB: ${copy.us.toFixed(1)} µs, ${copy.gbps.toFixed(0)} GB/s (read + write) = 100%`);

for (const T of [4096, 16384]) {
  const x = randomBf16(T, 7168);
  for (const c of CASES) {
    const packed = !!c.opts.usePackedUe8m0;
    const outData = empty([T, 7168], "e4m3", { device: 0 }) as DeviceTensor;
    const [, sf0] = perTokenCast(x, c.opts);
    const out = { data: outData, sf: sf0 as DeviceTensor };
    const us = deviceTimeUs(() => void perTokenCast(x, { ...c.opts, out }), 20, 9);
    const bytes = castBytes(T, 7168, packed);
    const gbps = bytes / (us * 1e3);
    rows.push({ impl: "tk", op: "perTokenCast", tokens: T, hidden: 7168, variant: c.name, us, gbps, pct_copy: (100 * gbps) / copy.gbps });
    outData.dispose();
    out.sf.dispose();
  }
  x.dispose();
}

// Every other family's cases (bench/cases.ts): `--only <op,op>` restricts them (`--only none`: none at all).
const only = argOf("--only")?.split(",");
for (const fam of FAMILIES) {
  if (only?.includes("none")) break;
  const mod = await import(`./${fam}`) as { cases: CaseFactory };
  let cases: BenchCase[] = [];
  try {
    cases = mod.cases();
  } catch (e) {
    console.log(`${fam}: setup failed: ${(e as Error).message}`);
  }
  for (const c of cases) {
    if (only && !only.includes(c.op)) {
      c.dispose();
      continue;
    }
    try {
      const us = deviceTimeUs(c.run, 20, 7);
      const gbps = c.bytes / (us * 1e3);
      rows.push({ impl: "tk", op: c.op, tokens: c.tokens, hidden: c.hidden, variant: c.variant, us, gbps, pct_copy: (100 * gbps) / copy.gbps });
    } catch (e) {
      console.log(`${c.op} ${c.variant} ${c.tokens}: failed: ${(e as Error).message}`);
    } finally {
      c.dispose();
    }
  }
}

// Host time per call: tiny tensors, N back-to-back calls (common.ts hostUs).
const tiny = randomBf16(1, 128);
const o = { fmt: "e4m3", numPerChannels: 128 } as const;
const [td, ts] = perTokenCast(tiny, o);
const oOut = { ...o, out: { data: td, sf: ts } };
const withOut = hostUs(() => void perTokenCast(tiny, oOut), 500);
const fresh = hostUs(() => {
  const [d, s] = perTokenCast(tiny, o);
  d.dispose();
  s.dispose();
}, 500);
const bareUs = hostUs(bareLaunch(), 500);
const host = { runtime: runtimeName, outUs: withOut, freshUs: fresh, bareLaunchUs: bareUs };

// First call, fresh process.
const fcArgs = runtimeName === "deno" ? ["run", "-A", new URL("./first_call.ts", import.meta.url).pathname] : [new URL("./first_call.ts", import.meta.url).pathname];
const fc = spawnSync(process.execPath, fcArgs, { encoding: "utf8" });
let first: Record<string, number> | null = null;
try {
  first = JSON.parse(fc.stdout.trim().split("\n").pop() ?? "");
} catch {
  console.log(`first-call run failed: ${fc.stderr}`);
}

let peers: { copy_gbps: number; rows: Record<string, unknown>[] } | null = null;
const pf = argOf("--peers");
if (pf) {
  try {
    peers = JSON.parse(readFileSync(pf, "utf8"));
  } catch (e) {
    console.log(`no peers file (${(e as Error).message})`);
  }
}

const pad = (s: string, n: number) => s.padEnd(n);
console.log(`\n${pad("impl", 16)}${pad("op", 34)}${pad("tokens", 11)}${pad("variant", 22)}${pad("µs", 10)}${pad("GB/s", 9)}% of copy`);
// Peers' rows (every op of bench/peers.py; its tiny host-overhead row excluded) beside ours: grouped by op in the
// order ops first appear, then by tokens; the sort is stable, so ours come first within a group.
const all = [...rows, ...(peers?.rows ?? []).filter((r) => (r.tokens as number) > 1)];
const opOf = (r: Record<string, unknown>) => String(r.op ?? "perTokenCast");
const opOrder = [...new Set(all.map(opOf))];
all.sort((a, b) => opOrder.indexOf(opOf(a)) - opOrder.indexOf(opOf(b)) || (a.tokens as number) - (b.tokens as number));
for (const r of all) {
  const pct = r.pct_copy == null ? "-" : `${(r.pct_copy as number).toFixed(1)}%`;
  const write = r.pct_write == null ? "" : ` (${(r.pct_write as number).toFixed(1)}% of write-only)`;
  console.log(`${pad(String(r.impl), 16)}${pad(opOf(r), 34)}${pad(String(r.tokens), 11)}${pad(String(r.variant), 22)}${pad((r.us as number).toFixed(1), 10)}${pad((r.gbps as number).toFixed(0), 9)}${pct}${write}`);
}
if (peers) console.log(`(peers' % is of their own copy measurement: ${peers.copy_gbps.toFixed(0)} GB/s; ours: ${copy.gbps.toFixed(0)} GB/s)`);
console.log(`\nhost time per call (${runtimeName}, 1×128 bf16 device tensor): out= ${withOut.toFixed(2)} µs, fresh outputs ${fresh.toFixed(2)} µs, bare launch ${bareUs.toFixed(2)} µs`);
if (first) {
  console.log(`first call in a fresh process: library part ${first.libraryPartMs.toFixed(1)} ms (shim hash ${first.shimHashMs.toFixed(1)}, dlopen ${first.shimOpenMs.toFixed(1)}, cubin hash ${first.moduleHashMs.toFixed(1)}, module load ${first.moduleLoadMs.toFixed(1)}, first launch host ${first.firstCallHostMs.toFixed(1)}); driver part ${first.driverPartMs.toFixed(1)} ms (cuInit ${first.driverInitMs.toFixed(1)}, context ${first.contextMs.toFixed(1)})`);
}
const jf = argOf("--json");
if (jf) writeFileSync(jf, JSON.stringify({ device: info, driver: driverVersion(), runtime: runtimeName, copy, rows, host, first, peers }, null, 2));

/**
 * Runs a snippet in a fresh process of the current runtime (Deno or Bun), for behaviour that is decided once
 * per process (driver loading) or must not disturb the test process.
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import process from "node:process";
import { runtimeName } from "../core/env.ts";

/** Runs `code` (an ES module body; `MOD` is the URL of mod.ts) with extra env; returns stdout, stderr, status. */
export function runSnippet(code: string, env: Record<string, string>): { stdout: string; stderr: string; status: number | null } {
  const file = `/tmp/tk-snippet-${process.pid}-${Math.random().toString(36).slice(2)}.ts`;
  const mod = new URL("../mod.ts", import.meta.url).href;
  writeFileSync(file, `const MOD = ${JSON.stringify(mod)};\n${code}\n`);
  const args = runtimeName === "deno" ? ["run", "-A", file] : [file];
  const r = spawnSync(process.execPath, args, { env: { ...process.env, NO_COLOR: "1", ...env }, encoding: "utf8" });
  return { stdout: r.stdout ?? "", stderr: r.stderr ?? "", status: r.status };
}

/** As {@link runSnippet}, without blocking this process's event loop (so it can serve the child meanwhile). */
export function runSnippetAsync(code: string, env: Record<string, string>): Promise<{ stdout: string; stderr: string; status: number | null }> {
  const file = `/tmp/tk-snippet-${process.pid}-${Math.random().toString(36).slice(2)}.ts`;
  const mod = new URL("../mod.ts", import.meta.url).href;
  writeFileSync(file, `const MOD = ${JSON.stringify(mod)};\n${code}\n`);
  const args = runtimeName === "deno" ? ["run", "-A", file] : [file];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, NO_COLOR: "1", ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Uint8Array) => (stdout += new TextDecoder().decode(d)));
    child.stderr.on("data", (d: Uint8Array) => (stderr += new TextDecoder().decode(d)));
    child.on("close", (status: number | null) => resolve({ stdout, stderr, status }));
  });
}

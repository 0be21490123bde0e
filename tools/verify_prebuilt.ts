/**
 * `deno task verify-prebuilt`: rebuilds nothing. Fails (exit 1) when a binary is not the one the manifest names,
 * when a source changed since its binaries were built, when an entry's `inputs` line does not match its binary and
 * sources (a merge that paired one side's binary with the other side's source hashes), when a generated Params
 * header no longer matches its TypeScript declaration, or when a kernel source or shim has no binary.
 * @module
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import process from "node:process";
import type { Manifest } from "../ffi/loader.ts";
import { CUDA_TARGETS, cubinName, inputsDigest, kernelSources, SHIM_TARGETS } from "./build.ts";
import { GENERATED_HEADERS, headerText } from "./params_registry.ts";

const ROOT = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
process.chdir(ROOT);
const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/** Problems found, one line each (empty when everything matches). */
export function verifyPrebuilt(): string[] {
  const problems: string[] = [];
  if (!existsSync("prebuilt/manifest.json")) return ["prebuilt/manifest.json is missing: run deno task build"];
  const m = JSON.parse(readFileSync("prebuilt/manifest.json", "utf8")) as Manifest;
  for (const [rel, e] of Object.entries(m.binaries)) {
    const path = `prebuilt/${rel}`;
    if (!existsSync(path)) {
      problems.push(`${rel}: missing`);
      continue;
    }
    const b = readFileSync(path);
    if (sha(b) !== e.sha256 || b.length !== e.size) problems.push(`${rel}: sha256 ${sha(b)} is not the manifest's ${e.sha256}`);
    if (e.inputs !== inputsDigest(e)) {
      problems.push(`${rel}: its inputs line does not match its sha256 and sources (an entry merged from two builds?): rebuild it`);
    }
    for (const [src, h] of Object.entries(e.sources)) {
      if (!existsSync(src)) problems.push(`${rel}: source ${src} no longer exists`);
      else if (sha(readFileSync(src)) !== h) problems.push(`${rel}: source ${src} changed since the binary was built`);
    }
  }
  for (const h of GENERATED_HEADERS) {
    if (!existsSync(h.path) || readFileSync(h.path, "utf8") !== headerText(h)) {
      problems.push(`${h.path}: differs from its declaration in ${h.from}`);
    }
  }
  for (const src of kernelSources()) {
    for (const dir of Object.keys(CUDA_TARGETS)) {
      if (!m.binaries[`cuda/${dir}/${cubinName(src)}`]) problems.push(`${src}: no ${dir} cubin in the manifest`);
    }
  }
  for (const dir of Object.keys(SHIM_TARGETS)) {
    if (!m.binaries[`cuda/${dir}/libtk_cuda.so`]) problems.push(`cuda/${dir}/libtk_cuda.so: not in the manifest`);
  }
  return problems;
}

if (import.meta.main) {
  const p = verifyPrebuilt();
  if (p.length) {
    console.error(`verify-prebuilt: ${p.length} problem(s):\n  ${p.join("\n  ")}`);
    process.exit(1);
  }
  console.log("verify-prebuilt: every binary matches the manifest and its sources");
}

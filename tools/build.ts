/**
 * `deno task build`: regenerates the Params headers from their TypeScript declarations, compiles every kernel
 * source in kernels-src/cuda/ to cubins for sm_90a and sm_100a, builds the launch shim for linux x86_64 and
 * aarch64 (tools/build_shim.sh), and writes prebuilt/manifest.json (sha256, size, source hashes, compiler and
 * flags, kernel symbols of every binary).
 *
 *   deno task build            # everything
 *   deno task build --kernels  # headers + cubins only
 *   deno task build --shim     # shims only
 *   deno task build --force    # rebuild cubins whose sources did not change too
 * @module
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import process from "node:process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { elfFunctionSymbols } from "./elf.ts";
import { GENERATED_HEADERS, headerText } from "./params_registry.ts";
import type { Manifest, ManifestEntry } from "../ffi/loader.ts";

const ROOT = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
process.chdir(ROOT);

/** Targets: prebuilt directory → nvcc arch. */
export const CUDA_TARGETS: Readonly<Record<string, string>> = { sm90a: "sm_90a", sm100a: "sm_100a" };
/** nvcc flags of every kernel (no FMA contraction: spec/quant.md §1.1-2). */
export const NVCC_FLAGS: readonly string[] = ["-std=c++17", "-O3", "-fmad=false", "-cubin", "-Xptxas=-warn-spills", "-Ikernels-src/cuda"];
/** Shim flavours: prebuilt directory → arch name used by the loader. */
export const SHIM_TARGETS: Readonly<Record<string, string>> = { "linux-x86_64": "x86_64", "linux-aarch64": "aarch64" };

const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/**
 * The `inputs` line of a manifest entry: sha256 over the binary's sha256 and its sources (path and hash, sorted).
 * A merge of two branches that each rebuilt the binary (or changed one of its sources) conflicts on this line,
 * where merging the entry's lines one by one could pair the binary of one side with the source hashes of both;
 * verify-prebuilt recomputes it.
 */
export function inputsDigest(e: Pick<ManifestEntry, "sha256" | "sources">): string {
  const lines = Object.keys(e.sources).sort().map((k) => `${k} ${e.sources[k]}`);
  return sha([e.sha256, ...lines].join("\n"));
}

/** The entry with its `inputs` line, placed right after sha256. */
export function withInputs(e: ManifestEntry): ManifestEntry {
  const { sha256, inputs: _old, ...rest } = e;
  return { sha256, inputs: inputsDigest(e), ...rest };
}
const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });

/** Kernel sources: every .cu under kernels-src/cuda except common/ and generated/. */
export function kernelSources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory() && !e.name.startsWith("_")) walk(p); // _scratch dirs are never shipped
      else if (e.name.endsWith(".cu")) out.push(p);
    }
  };
  walk("kernels-src/cuda");
  return out.sort();
}

/** The cubin name of a source: kernels-src/cuda/quant/per_token_cast.cu → quant_per_token_cast.cubin. */
export function cubinName(src: string): string {
  return src.replace(/^kernels-src\/cuda\//, "").replace(/\.cu$/, "").replaceAll("/", "_") + ".cubin";
}

/** Files (inside the repo) a kernel source depends on, itself first, from `nvcc -M`. */
function dependencies(src: string): string[] {
  const text = run("nvcc", ["-M", "-std=c++17", "-Ikernels-src/cuda", "-arch=sm_90a", src]);
  const files = text.replace(/\\\n/g, " ").split(/\s+/).filter((f) => f.startsWith("kernels-src/"));
  return [src, ...files.filter((f) => f !== src)].filter((f, i, a) => a.indexOf(f) === i).sort();
}

function hashes(files: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of files) out[f] = sha(readFileSync(f));
  return out;
}

function writeIfChanged(path: string, text: string): void {
  if (!existsSync(path) || readFileSync(path, "utf8") !== text) writeFileSync(path, text);
}

/**
 * Builds every cubin. With `reuse` (the previous manifest), a cubin whose source hashes, compiler and flags are
 * unchanged and whose file still has the recorded sha256 is kept as is (`--force` rebuilds everything).
 */
function buildKernels(binaries: Record<string, ManifestEntry>, reuse: Manifest | null): void {
  for (const h of GENERATED_HEADERS) writeIfChanged(h.path, headerText(h));
  const nvccVersion = run("nvcc", ["--version"]).trim().split("\n").pop()!;
  for (const src of kernelSources()) {
    const deps = dependencies(src);
    for (const [dir, arch] of Object.entries(CUDA_TARGETS)) {
      const rel = `cuda/${dir}/${cubinName(src)}`;
      mkdirSync(`prebuilt/cuda/${dir}`, { recursive: true });
      const flags = [...NVCC_FLAGS, `-arch=${arch}`];
      const prev = reuse?.binaries[rel];
      const srcHashes = hashes(deps);
      if (
        prev && prev.compiler === nvccVersion && JSON.stringify(prev.flags) === JSON.stringify(flags) &&
        JSON.stringify(prev.sources) === JSON.stringify(srcHashes) && existsSync(`prebuilt/${rel}`) &&
        sha(readFileSync(`prebuilt/${rel}`)) === prev.sha256
      ) {
        binaries[rel] = withInputs(prev);
        continue;
      }
      console.log(`nvcc ${flags.join(" ")} ${src}`);
      run("nvcc", [...flags, "-o", `prebuilt/${rel}`, src]);
      const bytes = readFileSync(`prebuilt/${rel}`);
      binaries[rel] = withInputs({
        sha256: sha(bytes),
        size: bytes.length,
        kind: "cubin",
        arch,
        sources: srcHashes,
        compiler: nvccVersion,
        flags,
        symbols: elfFunctionSymbols(bytes).filter((s) => s.startsWith("tk_")),
      });
    }
  }
}

function buildShims(binaries: Record<string, ManifestEntry>): void {
  run("bash", ["tools/build_shim.sh"]);
  const sources = hashes(["ffi/native/tk_cuda.c", "ffi/native/tk_cuda.h", "tools/build_shim.sh"]);
  for (const [dir, arch] of Object.entries(SHIM_TARGETS)) {
    const rel = `cuda/${dir}/libtk_cuda.so`;
    const bytes = readFileSync(`prebuilt/${rel}`);
    const cc = arch === "x86_64" ? "gcc" : "aarch64-linux-gnu-gcc";
    binaries[rel] = withInputs({
      sha256: sha(bytes),
      size: bytes.length,
      kind: "shim",
      arch,
      sources,
      compiler: run(cc, ["--version"]).split("\n")[0],
      flags: ["see tools/build_shim.sh"],
    });
  }
}

if (import.meta.main) {
  const args = Deno.args;
  const only = args.includes("--kernels") ? "kernels" : args.includes("--shim") ? "shim" : "all";
  const old: Manifest | null = existsSync("prebuilt/manifest.json") ? JSON.parse(readFileSync("prebuilt/manifest.json", "utf8")) : null;
  const binaries: Record<string, ManifestEntry> = {};
  if (old) {
    for (const [k, v] of Object.entries(old.binaries)) {
      if (only === "kernels" && v.kind === "shim") binaries[k] = withInputs(v);
      if (only === "shim" && v.kind === "cubin") binaries[k] = withInputs(v);
    }
  }
  if (only !== "shim") buildKernels(binaries, args.includes("--force") ? null : old);
  if (only !== "kernels") buildShims(binaries);
  const sorted: Record<string, ManifestEntry> = {};
  for (const k of Object.keys(binaries).sort()) sorted[k] = binaries[k];
  const manifest: Manifest = { format: "tk-prebuilt/1", binaries: sorted };
  writeFileSync("prebuilt/manifest.json", JSON.stringify(manifest, null, 2) + "\n");
  let total = 0;
  for (const v of Object.values(sorted)) total += v.size;
  console.log(`prebuilt/manifest.json: ${Object.keys(sorted).length} binaries, ${(total / 1048576).toFixed(2)} MiB`);
}


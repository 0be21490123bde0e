/**
 * Finds, fetches, hashes and caches the prebuilt binaries (DESIGN §7).
 *
 * - Binaries sit next to the package: `new URL("../prebuilt/…", import.meta.url)`. A `file:` package is read in
 *   place; an `https:` package (installed from JSR) is fetched once by {@link ready} into the cache
 *   (`TK_CACHE_DIR`, else `$XDG_CACHE_HOME/tk-kernels`, else `~/.cache/tk-kernels`), each file named by its
 *   sha256 and written atomically (temporary file + rename, so concurrent processes never see a partial file).
 * - Every binary's sha256 is checked against `prebuilt/manifest.json` before it is loaded or dlopen'ed; a
 *   mismatch is an `INTEGRITY` error naming the file.
 * - `TK_CUDA_DRIVER` names the driver library to open instead of libcuda.so.1.
 * - `TK_PREBUILT_DIR` replaces the whole prebuilt tree (its own `manifest.json` included): a directory, or an
 *   `http(s)://` base URL served like a remote package (a mirror); `TK_SHIM_PATH` names a
 *   shim of the user's own build, loaded as is (not checked: it is not one of ours); `TK_OFFLINE=1` forbids
 *   network access.
 * @module
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { getEnv } from "../core/env.ts";
import { TkError } from "../core/errors.ts";

/** One binary of the manifest. */
export interface ManifestEntry {
  readonly sha256: string;
  /**
   * sha256 of the binary's sha256 and every source path and hash (tools/build.ts `inputsDigest`): one line that
   * changes whenever the binary or any of its sources does, so two branches that rebuilt the same binary conflict
   * on it in a merge instead of merging their source lines into an entry no build produced.
   */
  readonly inputs?: string;
  readonly size: number;
  readonly kind: "cubin" | "shim";
  readonly arch?: string; // "sm_90a" | "sm_100a" for cubins, "x86_64" | "aarch64" for shims
  readonly sources: Readonly<Record<string, string>>;
  readonly compiler: string;
  readonly flags: readonly string[];
  readonly symbols?: readonly string[];
}

/** `prebuilt/manifest.json`. */
export interface Manifest {
  readonly format: "tk-prebuilt/1";
  readonly binaries: Readonly<Record<string, ManifestEntry>>;
}

const OP = "loader";

/** Where prebuilt files come from: a local directory or a remote base URL. */
export type PrebuiltBase = { readonly kind: "dir"; readonly dir: string } | { readonly kind: "url"; readonly url: URL };

/** Resolves the prebuilt tree (TK_PREBUILT_DIR or the package's own). */
export function prebuiltBase(): PrebuiltBase {
  const env = getEnv("TK_PREBUILT_DIR");
  if (env && /^https?:\/\//.test(env)) return { kind: "url", url: new URL(env.endsWith("/") ? env : env + "/") };
  if (env) return { kind: "dir", dir: env.replace(/\/+$/, "") };
  const u = new URL("../prebuilt/", import.meta.url);
  if (u.protocol === "file:") return { kind: "dir", dir: fileURLToPath(u).replace(/\/+$/, "") };
  return { kind: "url", url: u };
}

/** The cache directory for fetched binaries. */
export function cacheDir(): string {
  const env = getEnv("TK_CACHE_DIR");
  if (env) return env;
  const xdg = getEnv("XDG_CACHE_HOME");
  if (xdg) return `${xdg}/tk-kernels`;
  const home = getEnv("HOME");
  if (!home) throw new TkError(OP, "TK_CACHE_DIR", "IO", "no cache directory: set TK_CACHE_DIR (or HOME)");
  return `${home}/.cache/tk-kernels`;
}

/** Hex sha256 of bytes. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

let manifestCache: { key: string; m: Manifest } | null = null;

function baseKey(b: PrebuiltBase): string {
  return b.kind === "dir" ? b.dir : b.url.href;
}

/** Reads (and memoises) the manifest of the current prebuilt tree. */
export function manifest(): Manifest {
  const b = prebuiltBase();
  const key = baseKey(b);
  if (manifestCache?.key === key) return manifestCache.m;
  let text: string;
  if (b.kind === "dir") {
    try {
      text = readFileSync(`${b.dir}/manifest.json`, "utf8");
    } catch (e) {
      throw new TkError(OP, "manifest", "IO", `cannot read ${b.dir}/manifest.json (${(e as Error).message})`);
    }
  } else {
    const p = `${cacheDir()}/manifest-${sha256Hex(new TextEncoder().encode(b.url.href))}.json`;
    if (!existsSync(p)) {
      throw new TkError(OP, "manifest", "BACKEND_UNAVAILABLE", `binaries of ${b.url.href} are not cached yet: call \`await ready()\` once (needs --allow-net and --allow-write)`);
    }
    text = readFileSync(p, "utf8");
  }
  const m = JSON.parse(text) as Manifest;
  if (m.format !== "tk-prebuilt/1" || typeof m.binaries !== "object") {
    throw new TkError(OP, "manifest", "INTEGRITY", `unknown manifest format ${JSON.stringify(m.format)}`);
  }
  manifestCache = { key, m };
  return m;
}

/** Forgets the memoised manifest (tests switch TK_PREBUILT_DIR). */
export function resetLoaderCache(): void {
  manifestCache = null;
}

function entry(rel: string): ManifestEntry {
  const e = manifest().binaries[rel];
  if (!e) throw new TkError(OP, rel, "INTEGRITY", "is not listed in prebuilt/manifest.json");
  return e;
}

function verify(rel: string, bytes: Uint8Array, e: ManifestEntry): void {
  const h = sha256Hex(bytes);
  if (h !== e.sha256 || bytes.length !== e.size) {
    throw new TkError(OP, rel, "INTEGRITY", `sha256 ${h} (${bytes.length} bytes) does not match the manifest's ${e.sha256} (${e.size} bytes); refusing to load it`);
  }
}

/**
 * Local path of a verified prebuilt file (`rel` relative to prebuilt/): in place for a local tree, in the cache
 * for a remote one. Throws `INTEGRITY` on a hash mismatch.
 */
export function verifiedPath(rel: string): string {
  const e = entry(rel);
  const b = prebuiltBase();
  const path = b.kind === "dir" ? `${b.dir}/${rel}` : `${cacheDir()}/${e.sha256}-${rel.split("/").pop()}`;
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    const hint = b.kind === "url" ? ": call `await ready()` once to fetch it" : "";
    throw new TkError(OP, rel, "IO", `cannot read ${path} (${(err as Error).message})${hint}`);
  }
  verify(rel, bytes, e);
  return path;
}

/** Bytes of a verified prebuilt file. */
export function verifiedBytes(rel: string): Uint8Array {
  const path = verifiedPath(rel);
  const bytes = readFileSync(path);
  verify(rel, bytes, entry(rel));
  return bytes;
}

function writeAtomic(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, path);
}

/**
 * Makes the binaries usable: for a remote package, fetches the manifest and the files this machine needs (the
 * shim of its architecture and every cubin) into the cache, checking each sha256 before it is written. For a
 * local package it only checks that the manifest is readable. Idempotent.
 */
export async function ready(): Promise<void> {
  const b = prebuiltBase();
  if (b.kind === "dir") {
    manifest();
    return;
  }
  if (getEnv("TK_OFFLINE") === "1") throw new TkError(OP, "TK_OFFLINE", "BACKEND_UNAVAILABLE", "network access is off and the binaries are not cached");
  const dir = cacheDir();
  mkdirSync(dir, { recursive: true });
  const res = await fetch(new URL("manifest.json", b.url));
  if (!res.ok) throw new TkError(OP, "manifest", "IO", `fetching ${res.url} failed: HTTP ${res.status}`);
  const text = await res.text();
  writeAtomic(`${dir}/manifest-${sha256Hex(new TextEncoder().encode(b.url.href))}.json`, new TextEncoder().encode(text));
  manifestCache = null;
  const m = manifest();
  for (const [rel, e] of Object.entries(m.binaries)) {
    if (e.kind === "shim" && e.arch !== hostArch()) continue;
    const path = `${dir}/${e.sha256}-${rel.split("/").pop()}`;
    if (existsSync(path) && sha256Hex(readFileSync(path)) === e.sha256) continue;
    const r = await fetch(new URL(rel, b.url));
    if (!r.ok) throw new TkError(OP, rel, "IO", `fetching ${r.url} failed: HTTP ${r.status}`);
    const bytes = new Uint8Array(await r.arrayBuffer());
    verify(rel, bytes, e);
    writeAtomic(path, bytes);
  }
}

/** "x86_64" or "aarch64" (the shim flavours we ship), or the raw name. */
export function hostArch(): string {
  const g = globalThis as unknown as { Deno?: { build: { arch: string } }; process?: { arch: string } };
  const a = g.Deno?.build.arch ?? g.process?.arch ?? "unknown";
  return a === "x64" ? "x86_64" : a === "arm64" ? "aarch64" : a;
}

/** Relative path of this machine's shim in prebuilt/. */
export function shimRel(): string {
  return `cuda/linux-${hostArch()}/libtk_cuda.so`;
}

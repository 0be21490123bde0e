/**
 * The loader (DESIGN §7): binaries checked against prebuilt/manifest.json before use, tampered binaries refused,
 * and a clear error without a driver.
 * @module
 */
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import process from "node:process";
import { TkError } from "../mod.ts";
import { manifest, resetLoaderCache, shimRel, verifiedBytes, verifiedPath } from "../ffi/loader.ts";
import { inputsDigest } from "../tools/build.ts";
import { test } from "./harness.ts";
import { runSnippet, runSnippetAsync } from "./subprocess.ts";

const PREBUILT = new URL("../prebuilt/", import.meta.url).pathname;

/** A copy of the prebuilt tree (manifest + the given files) with one byte of `tamper` flipped. */
function tamperedTree(files: string[], tamper: string): string {
  const dir = `/tmp/tk-prebuilt-${process.pid}-${Math.random().toString(36).slice(2)}`;
  copyFileSync(`${PREBUILT}/manifest.json`, mkdirp(dir) + "/manifest.json");
  for (const f of files) {
    const dst = `${dir}/${f}`;
    mkdirp(dst.slice(0, dst.lastIndexOf("/")));
    copyFileSync(`${PREBUILT}/${f}`, dst);
  }
  const b = readFileSync(`${dir}/${tamper}`);
  b[b.length >> 1] ^= 0x01;
  writeFileSync(`${dir}/${tamper}`, b);
  return dir;
}

function mkdirp(d: string): string {
  mkdirSync(d, { recursive: true });
  return d;
}

function withPrebuiltDir<T>(dir: string, f: () => T): T {
  const old = process.env.TK_PREBUILT_DIR;
  process.env.TK_PREBUILT_DIR = dir;
  resetLoaderCache();
  try {
    return f();
  } finally {
    if (old === undefined) delete process.env.TK_PREBUILT_DIR;
    else process.env.TK_PREBUILT_DIR = old;
    resetLoaderCache();
  }
}

const isIntegrity = (rel: string) => (e: unknown) => e instanceof TkError && e.code === "INTEGRITY" && e.message.includes(rel);

test("every shipped binary matches prebuilt/manifest.json", () => {
  const m = manifest();
  const rels = Object.keys(m.binaries);
  assert.ok(rels.includes("cuda/linux-x86_64/libtk_cuda.so") && rels.includes("cuda/linux-aarch64/libtk_cuda.so"));
  for (const rel of rels) assert.equal(verifiedBytes(rel).length, m.binaries[rel].size, rel);
});

test("every manifest entry's inputs line matches its binary and sources; an entry merged from two builds does not", () => {
  const m = manifest();
  for (const [rel, e] of Object.entries(m.binaries)) assert.equal(e.inputs, inputsDigest(e), rel);
  // A line-by-line merge of two branches: one side's binary with a source hash from the other side.
  const [rel, e] = Object.entries(m.binaries).find(([k]) => k.endsWith(".cubin"))!;
  const src = Object.keys(e.sources)[0];
  const merged = { ...e, sources: { ...e.sources, [src]: "0".repeat(64) } };
  assert.notEqual(inputsDigest(merged), e.inputs, `${rel}: a changed source hash must change the inputs line`);
  assert.notEqual(inputsDigest({ ...e, sha256: "f".repeat(64) }), e.inputs, `${rel}: so must another binary`);
});

test("a shim whose bytes do not match the manifest is refused before dlopen", () => {
  const rel = shimRel();
  const dir = tamperedTree([rel], rel);
  withPrebuiltDir(dir, () => assert.throws(() => verifiedPath(rel), isIntegrity(rel)));
  const r = runSnippet(
    `const { devices } = await import(MOD);
     try { devices(); console.log("loaded"); } catch (e) { console.log(e.code + " " + e.message); }`,
    { TK_PREBUILT_DIR: dir },
  );
  assert.match(r.stdout, /^INTEGRITY loader: cuda\/linux-.*libtk_cuda\.so: sha256 .* does not match/m, r.stdout + r.stderr);
});

test("a cubin whose bytes do not match the manifest is refused", () => {
  const cubins = Object.keys(manifest().binaries).filter((k) => k.endsWith(".cubin"));
  assert.ok(cubins.length > 0, "no cubins in the manifest");
  const rel = cubins[0];
  const dir = tamperedTree([rel], rel);
  withPrebuiltDir(dir, () => assert.throws(() => verifiedBytes(rel), isIntegrity(rel)));
});

test("a binary missing from the manifest is refused", () => {
  assert.throws(() => verifiedBytes("cuda/sm90a/not_there.cubin"), isIntegrity("not_there"));
});

test("without a driver, devices() is empty and a device call says why", () => {
  const r = runSnippet(
    `const { devices, perTokenCast, tensor } = await import(MOD);
     console.log("devices " + devices().length);
     try {
       perTokenCast(tensor(new Float32Array(64), [1, 64], "fp32"), { fmt: "e4m3", numPerChannels: 64, backend: "cuda" });
       console.log("ran");
     } catch (e) { console.log(e.code + " " + e.message); }`,
    { TK_CUDA_DRIVER: "/nonexistent/libcuda.so.1" },
  );
  assert.match(r.stdout, /^devices 0$/m, r.stdout + r.stderr);
  assert.match(r.stdout, /^BACKEND_UNAVAILABLE perTokenCast: no usable CUDA driver: .*libcuda.*/m, r.stdout + r.stderr);
});

/** Serves prebuilt/ over HTTP on localhost (optionally with one file's bytes altered); returns its base URL. */
async function servePrebuilt(tamper?: string): Promise<{ url: string; close(): void; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const rel = decodeURIComponent((req.url ?? "/").slice(1));
    hits.push(rel);
    try {
      const b = readFileSync(`${PREBUILT}/${rel}`);
      if (rel === tamper) b[b.length >> 1] ^= 1;
      res.writeHead(200, { "content-length": b.length });
      res.end(b);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/`, close: () => server.close(), hits };
}

test("a remote package is fetched once into the cache, checked, and then used offline", async () => {
  const srv = await servePrebuilt();
  const cache = `/tmp/tk-cache-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    const snippet = `const { ready } = await import(MOD);
      const { verifiedPath, shimRel } = await import(new URL("./ffi/loader.ts", MOD).href);
      try { await ready(); console.log("path " + verifiedPath(shimRel())); } catch (e) { console.log(e.code + " " + e.message); }`;
    const r = await runSnippetAsync(snippet, { TK_PREBUILT_DIR: srv.url, TK_CACHE_DIR: cache });
    assert.match(r.stdout, new RegExp(`^path ${cache}/[0-9a-f]{64}-libtk_cuda\\.so$`, "m"), r.stdout + r.stderr);
    const m = manifest();
    const cubins = Object.keys(m.binaries).filter((k) => k.endsWith(".cubin"));
    for (const rel of cubins) assert.ok(srv.hits.includes(rel), `${rel} was not fetched`);
    for (const rel of cubins) {
      const e = m.binaries[rel];
      assert.equal(readFileSync(`${cache}/${e.sha256}-${rel.split("/").pop()}`).length, e.size);
    }
    const fetched = srv.hits.length;
    const offline = await runSnippetAsync(
      `const { verifiedPath, shimRel } = await import(new URL("./ffi/loader.ts", MOD).href);
       console.log("path " + verifiedPath(shimRel()));`,
      { TK_PREBUILT_DIR: srv.url, TK_CACHE_DIR: cache, TK_OFFLINE: "1" },
    );
    assert.match(offline.stdout, /^path /m, offline.stdout + offline.stderr);
    assert.equal(srv.hits.length, fetched, "the offline run fetched something");
  } finally {
    srv.close();
  }
});

test("a remote binary whose bytes do not match the manifest is refused and never cached", async () => {
  const rel = shimRel();
  const srv = await servePrebuilt(rel);
  const cache = `/tmp/tk-cache-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    const r = await runSnippetAsync(
      `const { ready } = await import(MOD);
       try { await ready(); console.log("fetched"); } catch (e) { console.log(e.code + " " + e.message); }`,
      { TK_PREBUILT_DIR: srv.url, TK_CACHE_DIR: cache },
    );
    assert.match(r.stdout, /^INTEGRITY loader: cuda\/linux-.*libtk_cuda\.so: sha256 .* does not match/m, r.stdout + r.stderr);
    const e = manifest().binaries[rel];
    assert.ok(!existsSync(`${cache}/${e.sha256}-libtk_cuda.so`), "a refused binary was written to the cache");
  } finally {
    srv.close();
  }
});

/**
 * One suite for both runtimes (DESIGN §11): `test()` maps to `Deno.test` or `bun:test`; GPU cases are skipped
 * (and counted as skipped) when no CUDA device is present.
 * @module
 */
import { runtimeName } from "../core/env.ts";
import { devices } from "../mod.ts";

type Fn = () => void | Promise<void>;

interface BunTest {
  test: ((name: string, fn: Fn, timeout?: number) => void) & { skip(name: string, fn: Fn): void };
}

const bun: BunTest | null = runtimeName === "bun"
  ? (import.meta as unknown as { require(id: string): BunTest }).require("bun:test")
  : null;

/** True when a CUDA device with shipped kernels is usable. */
export const hasGpu: boolean = (() => {
  try {
    return devices().length > 0;
  } catch {
    return false;
  }
})();

function register(name: string, fn: Fn, skip: boolean): void {
  if (bun) {
    if (skip) bun.test.skip(name, fn);
    else bun.test(name, fn, 600_000);
    return;
  }
  Deno.test({ name, fn, ignore: skip, sanitizeOps: false, sanitizeResources: false });
}

/** A test that runs everywhere. */
export function test(name: string, fn: Fn): void {
  register(name, fn, false);
}

/** A test that needs a GPU; skipped (and counted as skipped) without one. */
export function gpuTest(name: string, fn: Fn): void {
  register(`[gpu] ${name}`, fn, !hasGpu);
}

/** Deterministic PRNG (mulberry32) so failures can be replayed from the printed seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Compares two byte arrays; on failure names the first differing index and both values. */
export function assertBytesEqual(actual: Uint8Array, expected: Uint8Array, label: string): void {
  if (actual.length !== expected.length) {
    throw new Error(`${label}: length ${actual.length} != expected ${expected.length}`);
  }
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] !== expected[i]) {
      let n = 0;
      for (let j = i; j < actual.length; j++) if (actual[j] !== expected[j]) n++;
      throw new Error(
        `${label}: first difference at byte ${i}: got 0x${actual[i].toString(16).padStart(2, "0")}, expected 0x${
          expected[i].toString(16).padStart(2, "0")
        } (${n} differing bytes of ${actual.length})`,
      );
    }
  }
}

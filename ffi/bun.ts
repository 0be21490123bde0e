/**
 * Bun binding of the shim (`bun:ffi`). TypedArrays are passed to `ptr` arguments directly on every call, never
 * through a cached `ptr()`: Bun may move a small TypedArray's storage, so a cached address can go stale.
 * @module
 */
import { type ArgKind, SHIM_SYMBOLS, type ShimLib } from "./symbols.ts";

interface BunFfi {
  dlopen(path: string, defs: Record<string, { args: string[]; returns: string }>): {
    symbols: Record<string, (...a: unknown[]) => unknown>;
    close(): void;
  };
  CString: new (p: number) => { toString(): string };
}

const KIND: Record<ArgKind, string> = { i32: "i32", u32: "u32", u64: "u64", buf: "ptr" };

/** Opens the shim at `path` with Bun's FFI. */
export function openBun(path: string): ShimLib {
  const ffi = (import.meta as unknown as { require(id: string): BunFfi }).require("bun:ffi");
  const defs: Record<string, { args: string[]; returns: string }> = {
    tk_last_error: { args: [], returns: "ptr" },
  };
  for (const [name, args] of Object.entries(SHIM_SYMBOLS)) {
    defs[name] = { args: (args as readonly ArgKind[]).map((a) => KIND[a]), returns: "i32" };
  }
  const lib = ffi.dlopen(path, defs);
  const sym = lib.symbols;
  return {
    fn: sym as unknown as ShimLib["fn"],
    lastError(): string {
      const p = sym.tk_last_error() as number | null;
      return p ? new ffi.CString(p).toString() : "";
    },
    close(): void {
      lib.close();
    },
  };
}

/**
 * Deno binding of the shim (`Deno.dlopen`). Needs `--allow-ffi`.
 * @module
 */
import { type ArgKind, SHIM_SYMBOLS, type ShimFn, type ShimLib } from "./symbols.ts";

type DenoNative = "i32" | "u32" | "u64" | "buffer" | "pointer";
const KIND: Record<ArgKind, DenoNative> = { i32: "i32", u32: "u32", u64: "u64", buf: "buffer" };

/** Opens the shim at `path` with Deno's FFI. */
export function openDeno(path: string): ShimLib {
  const defs: Record<string, { parameters: DenoNative[]; result: DenoNative }> = {
    tk_last_error: { parameters: [], result: "pointer" },
  };
  for (const [name, args] of Object.entries(SHIM_SYMBOLS)) {
    defs[name] = { parameters: (args as readonly ArgKind[]).map((a) => KIND[a]), result: "i32" };
  }
  // deno-lint-ignore no-explicit-any
  const lib = Deno.dlopen(path, defs as any);
  const sym = lib.symbols as unknown as Record<string, (...a: unknown[]) => unknown>;
  return {
    fn: sym as unknown as ShimLib["fn"],
    lastError(): string {
      const p = sym.tk_last_error() as Deno.PointerValue;
      return p ? Deno.UnsafePointerView.getCString(p) : "";
    },
    close(): void {
      lib.close();
    },
  };
}

export type { ShimFn };

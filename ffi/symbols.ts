/**
 * The C ABI of `libtk_cuda.so` (ffi/native/tk_cuda.h), declared once for both runtime bindings.
 * Argument kinds: `i32`/`u32`/`u64` scalars, `buf` a TypedArray (or null) passed as a pointer for the duration
 * of the call. Every function returns an `i32` status except `tk_last_error` (a C string).
 * @module
 */

/** Argument kinds of the shim's functions. */
export type ArgKind = "i32" | "u32" | "u64" | "buf";

/** Every function of the shim with its argument kinds. */
export const SHIM_SYMBOLS = {
  tk_abi_version: [],
  tk_init: ["buf"],
  tk_last_cuda_error: [],
  tk_driver_version: ["buf"],
  tk_device_count: ["buf"],
  tk_device_name: ["i32", "buf", "i32"],
  tk_device_attribute: ["i32", "i32", "buf"],
  tk_device_total_mem: ["i32", "buf"],
  tk_mem_info: ["i32", "buf", "buf"],
  tk_context_init: ["i32"],
  tk_malloc_async: ["i32", "u64", "u64", "buf"],
  tk_free_async: ["i32", "u64", "u64"],
  tk_memcpy_htod_async: ["i32", "u64", "buf", "u64", "u64"],
  tk_memcpy_dtoh_async: ["i32", "buf", "u64", "u64", "u64"],
  tk_memcpy_dtod_async: ["i32", "u64", "u64", "u64", "u64"],
  tk_memset_d8_async: ["i32", "u64", "u32", "u64", "u64"],
  tk_memcpy_htod: ["i32", "u64", "buf", "u64", "u64"],
  tk_memcpy_dtoh: ["i32", "buf", "u64", "u64", "u64"],
  tk_stream_create: ["i32", "buf"],
  tk_stream_destroy: ["i32", "u64"],
  tk_stream_synchronize: ["i32", "u64"],
  tk_event_create: ["i32", "buf"],
  tk_event_destroy: ["i32", "u64"],
  tk_event_record: ["i32", "u64", "u64"],
  tk_event_synchronize: ["i32", "u64"],
  tk_event_elapsed_ms: ["i32", "u64", "u64", "buf"],
  tk_module_load: ["i32", "buf", "u64", "buf"],
  tk_module_unload: ["i32", "u64"],
  tk_module_function: ["i32", "u64", "buf", "buf"],
  tk_function_set_max_dynamic_smem: ["i32", "u64", "i32"],
  tk_function_set_smem_carveout: ["i32", "u64", "i32"],
  tk_launch: ["buf"],
  tk_error_word_ptr: ["i32", "buf"],
  tk_sync_and_check: ["i32", "u64", "buf"],
} as const satisfies Record<string, readonly ArgKind[]>;

/** Names of the shim's status-returning functions. */
export type ShimFn = keyof typeof SHIM_SYMBOLS;

/** A value passed to the shim. */
export type ShimArg = number | bigint | ArrayBufferView | null;

/** The shim as the runtime bindings expose it: one call per FFI crossing. */
export interface ShimLib {
  /** Status-returning functions by name. */
  readonly fn: { readonly [K in ShimFn]: (...args: ShimArg[]) => number };
  /** Thread-local text of the last failure. */
  lastError(): string;
  close(): void;
}

/**
 * The one error type of the library (spec/API.md §2.6).
 * @module
 */

/** Why a call was refused or failed. */
export type TkErrorCode =
  | "DTYPE"
  | "SHAPE"
  | "LAYOUT"
  | "VALUE"
  | "OUT_MISMATCH"
  | "DEVICE_MISMATCH"
  | "BACKEND_UNAVAILABLE"
  | "UNSUPPORTED"
  | "DISPOSED"
  | "CONFIG"
  | "CUDA"
  | "IO"
  | "INTEGRITY"
  | "DEVICE_VALUE"
  | "OUT_OF_MEMORY";

/**
 * Error thrown by every op and runtime function. The message reads `<op>: <arg>: <what was expected and got>`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TkError } from "./errors.ts";
 * const e = new TkError("perTokenCast", "numPerChannels", "VALUE", "must be one of 16, 32, 64, 128 (got 48)");
 * assert.ok(e.message === "perTokenCast: numPerChannels: must be one of 16, 32, 64, 128 (got 48)");
 * ```
 */
export class TkError extends Error {
  /** The op (or `"runtime"`, `"loader"`, `"config"`) that refused or failed. */
  readonly op: string;
  /** The argument or option at fault, when one is. */
  readonly arg?: string;
  /** What kind of failure (spec/API.md §2.6). */
  readonly code: TkErrorCode;
  /** The driver's CUresult, for code `"CUDA"`. */
  readonly cudaError?: { code: number; name: string };
  /** `detail` says what was expected and what was given. */
  constructor(
    op: string,
    arg: string | undefined,
    code: TkErrorCode,
    detail: string,
    cudaError?: { code: number; name: string },
  ) {
    super(arg === undefined ? `${op}: ${detail}` : `${op}: ${arg}: ${detail}`);
    this.name = "TkError";
    this.op = op;
    if (arg !== undefined) this.arg = arg;
    this.code = code;
    if (cudaError) this.cudaError = cudaError;
  }
}

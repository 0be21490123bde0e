/**
 * Argument checks shared by every op. Each produces a `TkError(op, arg, …)` before anything is launched or
 * written. They are plain comparisons: no allocation on the success path beyond what the caller passes.
 * @module
 */
import type { DType } from "./dtype.ts";
import { TkError } from "./errors.ts";
import { DeviceTensor, HostTensor, isTensor, type Tensor } from "./tensor.ts";

/** Options every op accepts (spec/API.md §1.2). */
export const COMMON_OPTIONS: readonly string[] = ["backend", "stream", "out"];

const allowedSets = new WeakMap<readonly string[], Set<string>>();

/** Refuses options objects that are not plain objects, and unknown keys (a typo must not pass silently). */
export function checkOptions(op: string, opts: unknown, allowed: readonly string[]): void {
  if (opts === undefined) return;
  if (typeof opts !== "object" || opts === null || Array.isArray(opts)) {
    throw new TkError(op, "options", "VALUE", `expected an options object, got ${opts === null ? "null" : typeof opts}`);
  }
  let set = allowedSets.get(allowed);
  if (!set) allowedSets.set(allowed, set = new Set([...allowed, ...COMMON_OPTIONS]));
  for (const k in opts) {
    if (!set.has(k)) {
      throw new TkError(op, k, "VALUE", `unknown option (expected one of ${[...set].join(", ")})`);
    }
  }
}

/** An optional boolean option, defaulting to false. */
export function optBool(op: string, name: string, v: unknown): boolean {
  if (v === undefined) return false;
  if (typeof v !== "boolean") throw new TkError(op, name, "VALUE", `expected a boolean, got ${describe(v)}`);
  return v;
}

/** A required option from a list of allowed values. */
export function oneOf<T extends string | number>(op: string, name: string, v: unknown, allowed: readonly T[]): T {
  if (v === undefined) throw new TkError(op, name, "VALUE", `is required (one of ${allowed.join(", ")})`);
  if (!allowed.includes(v as T)) throw new TkError(op, name, "VALUE", `must be one of ${allowed.join(", ")} (got ${describe(v)})`);
  return v as T;
}

/** A required integer. */
export function checkInt(op: string, name: string, v: unknown, min = -Infinity): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw new TkError(op, name, "VALUE", `expected an integer, got ${describe(v)}`);
  if (v < min) throw new TkError(op, name, "VALUE", `must be ≥ ${min} (got ${v})`);
  return v;
}

/** A required tensor of one of `dtypes` with the given rank; device tensors must be live. */
export function checkTensor(op: string, arg: string, t: unknown, dtypes: readonly DType[], rank?: number): Tensor {
  if (!isTensor(t)) throw new TkError(op, arg, "VALUE", `expected a tensor, got ${describe(t)}`);
  if (t instanceof DeviceTensor) t.assertLive(op, arg);
  if (!dtypes.includes(t.dtype)) throw new TkError(op, arg, "DTYPE", `expected dtype ${dtypes.join(" or ")}, got ${t.dtype}`);
  if (rank !== undefined && t.shape.length !== rank) {
    throw new TkError(op, arg, "SHAPE", `expected a ${rank}-D tensor, got shape [${t.shape.join(", ")}]`);
  }
  return t;
}

/** Requires an exact shape. */
export function checkShapeIs(op: string, arg: string, t: Tensor, shape: readonly number[]): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new TkError(op, arg, "SHAPE", `expected shape [${shape.join(", ")}], got [${t.shape.join(", ")}]`);
  }
}

/** Requires a row-major contiguous tensor. */
export function checkContiguous(op: string, arg: string, t: Tensor): void {
  if (!t.isContiguous()) throw new TkError(op, arg, "LAYOUT", `must be contiguous, got strides [${t.strides.join(", ")}]`);
}

/** True when two views of the same storage touch a common element byte range. */
export function overlaps(a: Tensor, b: Tensor): boolean {
  const sa = a instanceof HostTensor ? a.data.buffer : a.storage;
  const sb = b instanceof HostTensor ? b.data.buffer : b.storage;
  if (sa !== sb) return false;
  const ra = byteRange(a);
  const rb = byteRange(b);
  return ra !== null && rb !== null && ra[0] < rb[1] && rb[0] < ra[1];
}

function byteRange(t: Tensor): [number, number] | null {
  const eb = t.dtype === "fp32" || t.dtype === "int32" ? 4 : t.dtype === "int64" ? 8 : t.dtype === "bf16" || t.dtype === "fp16" ? 2 : 1;
  let lo = t.offset;
  let hi = t.offset;
  for (let i = 0; i < t.shape.length; i++) {
    if (t.shape[i] === 0) return null;
    const e = (t.shape[i] - 1) * t.strides[i];
    if (e < 0) lo += e;
    else hi += e;
  }
  const base = t instanceof HostTensor ? t.data.byteOffset : 0;
  return [base + lo * eb, base + (hi + 1) * eb];
}

/** A short description of a value for error messages. */
export function describe(v: unknown): string {
  if (v === null) return "null";
  if (v === undefined) return "undefined";
  if (isTensor(v)) return `a ${v.dtype} tensor [${v.shape.join(", ")}]`;
  if (Array.isArray(v)) return `[${v.map(describe).join(", ")}]`;
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  return typeof v;
}

/** An `out` tensor: exact dtype (else `OUT_MISMATCH`), live when on a device. */
export function checkOutTensor(op: string, arg: string, t: unknown, dtype: DType): Tensor {
  if (!isTensor(t)) throw new TkError(op, arg, "VALUE", `expected a tensor, got ${describe(t)}`);
  if (t instanceof DeviceTensor) t.assertLive(op, arg);
  if (t.dtype !== dtype) throw new TkError(op, arg, "OUT_MISMATCH", `expected dtype ${dtype}, got ${t.dtype}`);
  return t;
}

/**
 * True when two logical elements of a view share one address: with the dimensions of size > 1 sorted by
 * |stride|, each stride must be at least the span of the smaller-stride dimensions (spec/norm-rope-rand.md D.10).
 */
export function selfOverlapping(t: Tensor): boolean {
  const dims: number[] = [];
  for (let i = 0; i < t.shape.length; i++) {
    if (t.shape[i] === 0) return false;
    if (t.shape[i] > 1) dims.push(i);
  }
  dims.sort((a, b) => Math.abs(t.strides[a]) - Math.abs(t.strides[b]));
  let span = 1;
  for (const d of dims) {
    const s = Math.abs(t.strides[d]);
    if (s < span) return true;
    span += s * (t.shape[d] - 1);
  }
  return false;
}

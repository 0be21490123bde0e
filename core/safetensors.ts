/**
 * Safetensors read/write (spec/API.md §2.5). Tensors are stored contiguous, little-endian; `e2m1x2` is stored as
 * `U8` tagged by the metadata key `tk.dtype.<name>`.
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { allocArray, type DType, elementBytes } from "./dtype.ts";
import { TkError } from "./errors.ts";
import { contiguousHost, type Device, HostTensor, type Stream, type Tensor, toDevice, toHostSync } from "./tensor.ts";

const TO_ST: Record<DType, string> = {
  fp32: "F32",
  bf16: "BF16",
  fp16: "F16",
  e4m3: "F8_E4M3",
  e2m1x2: "U8",
  ue8m0: "F8_E8M0",
  int8: "I8",
  uint8: "U8",
  int32: "I32",
  int64: "I64",
  bool: "BOOL",
};
const FROM_ST: Record<string, DType> = {
  F32: "fp32",
  BF16: "bf16",
  F16: "fp16",
  F8_E4M3: "e4m3",
  F8_E8M0: "ue8m0",
  I8: "int8",
  U8: "uint8",
  I32: "int32",
  I64: "int64",
  BOOL: "bool",
};

/** Parses a safetensors image into host tensors (copies, so every TypedArray is aligned). */
export function decodeSafetensors(
  bytes: Uint8Array,
  names?: readonly string[],
): { tensors: Record<string, HostTensor>; metadata: Record<string, string> } {
  const op = "readSafetensors";
  if (bytes.length < 8) throw new TkError(op, "src", "IO", "not a safetensors file (shorter than 8 bytes)");
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(dv.getBigUint64(0, true));
  if (8 + n > bytes.length) throw new TkError(op, "src", "IO", `header of ${n} bytes exceeds the file`);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))) as Record<string, unknown>;
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>;
  const tensors: Record<string, HostTensor> = {};
  const base = 8 + n;
  for (const [name, v] of Object.entries(header)) {
    if (name === "__metadata__" || (names && !names.includes(name))) continue;
    const e = v as { dtype: string; shape: number[]; data_offsets: [number, number] };
    let dtype = FROM_ST[e.dtype];
    if (!dtype) throw new TkError(op, name, "DTYPE", `unsupported safetensors dtype ${e.dtype}`);
    if (metadata[`tk.dtype.${name}`] === "e2m1x2") dtype = "e2m1x2";
    const [b0, b1] = e.data_offsets;
    const numel = e.shape.reduce((a, b) => a * b, 1);
    if (b1 - b0 !== numel * elementBytes(dtype) || base + b1 > bytes.length) {
      throw new TkError(op, name, "IO", `data offsets [${b0}, ${b1}) do not fit ${e.dtype} [${e.shape.join(", ")}]`);
    }
    const arr = allocArray(dtype, numel);
    new Uint8Array(arr.buffer).set(bytes.subarray(base + b0, base + b1));
    const strides = e.shape.map((_, i) => e.shape.slice(i + 1).reduce((a, b) => a * b, 1));
    tensors[name] = new HostTensor(arr, dtype, e.shape, strides);
  }
  return { tensors, metadata };
}

/**
 * Reads a safetensors file (path, `file:` URL or bytes). With `device`, tensors are uploaded there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encodeSafetensors, readSafetensors, tensor } from "../mod.ts";
 * const bytes = await encodeSafetensors({ w: tensor([1, 2], [2], "fp32") });
 * const { tensors } = await readSafetensors(bytes);
 * assert.ok(tensors.w.shape[0] === 2);
 * ```
 */
export function readSafetensors(
  src: string | URL | Uint8Array,
  opts?: { device?: Device | "cpu"; names?: string[]; stream?: Stream },
): Promise<{ tensors: Record<string, Tensor>; metadata: Record<string, string> }> {
  let bytes: Uint8Array;
  if (src instanceof Uint8Array) bytes = src;
  else {
    try {
      bytes = readFileSync(src);
    } catch (e) {
      return Promise.reject(new TkError("readSafetensors", "src", "IO", `cannot read ${String(src)} (${(e as Error).message})`));
    }
  }
  const r = decodeSafetensors(bytes, opts?.names);
  const dev = opts?.device;
  if (dev === undefined || dev === "cpu") return Promise.resolve(r);
  const tensors: Record<string, Tensor> = {};
  for (const [k, t] of Object.entries(r.tensors)) tensors[k] = toDevice(t, dev, { stream: opts?.stream });
  return Promise.resolve({ tensors, metadata: r.metadata });
}

/** Serialises tensors (device tensors are copied to the host; strided views written contiguous). */
export function encodeSafetensors(tensors: Record<string, Tensor>, metadata?: Record<string, string>): Promise<Uint8Array> {
  const meta: Record<string, string> = { ...(metadata ?? {}) };
  const parts: Uint8Array[] = [];
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const [name, t0] of Object.entries(tensors)) {
    const h = toHostSync(t0);
    const t = h.isContiguous() ? h : contiguousHost(h);
    const eb = elementBytes(t.dtype);
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset + t.offset * eb, t.numel * eb);
    header[name] = { dtype: TO_ST[t.dtype], shape: [...t.shape], data_offsets: [off, off + bytes.length] };
    if (t.dtype === "e2m1x2") meta[`tk.dtype.${name}`] = "e2m1x2";
    parts.push(bytes);
    off += bytes.length;
  }
  if (Object.keys(meta).length) header.__metadata__ = meta;
  let json = new TextEncoder().encode(JSON.stringify(header));
  const pad = (8 - (json.length % 8)) % 8;
  if (pad) json = new TextEncoder().encode(JSON.stringify(header) + " ".repeat(pad));
  const out = new Uint8Array(8 + json.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let p = 8 + json.length;
  for (const b of parts) {
    out.set(b, p);
    p += b.length;
  }
  return Promise.resolve(out);
}

/** Writes tensors to a safetensors file. */
export async function writeSafetensors(dst: string | URL, tensors: Record<string, Tensor>, metadata?: Record<string, string>): Promise<void> {
  const bytes = await encodeSafetensors(tensors, metadata);
  try {
    writeFileSync(dst, bytes);
  } catch (e) {
    throw new TkError("writeSafetensors", "dst", "IO", `cannot write ${String(dst)} (${(e as Error).message})`);
  }
}

/**
 * Loads the conformance vectors (`tests/golden/<family>/<name>.safetensors.gz`, copied from shared/golden as is)
 * and turns stored tensors into the layouts an op must be fed (golden/README.md).
 * @module
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { decodeSafetensors } from "../core/safetensors.ts";
import { contiguousHost, HostTensor, hostStrided } from "../core/tensor.ts";
import { elementBytes } from "../core/dtype.ts";

/** One case of a vector file. */
export interface GoldenCase {
  id: string;
  op: string;
  params: Record<string, unknown>;
  inputs: string[];
  outputs: string[];
}

/** A decoded vector file: its cases and tensors by `<case>.<role>`. */
export interface GoldenFile {
  cases: GoldenCase[];
  tensors: Record<string, HostTensor>;
  compare: unknown;
}

/** Reads `tests/golden/<family>/<name>.safetensors.gz`. */
export function loadGolden(family: string, name: string): GoldenFile {
  const gz = readFileSync(new URL(`./golden/${family}/${name}.safetensors.gz`, import.meta.url));
  const { tensors, metadata } = decodeSafetensors(gunzipSync(gz));
  return { cases: JSON.parse(metadata.cases), tensors, compare: JSON.parse(metadata.compare ?? "null") };
}

/** Reinterprets a stored `U8` tensor as e4m3 / e2m1x2 codes (same bytes). */
export function asCodes(t: HostTensor, dtype: "e4m3" | "e2m1x2"): HostTensor {
  return new HostTensor(t.data as Uint8Array, dtype, t.shape, t.strides, t.offset);
}

/** A copy of a logical 2-D tensor in TMA-aligned column-major storage: strides [1, align(rows, 16/bytes)]. */
export function toColMajor(t: HostTensor): HostTensor {
  const [r, c] = t.shape;
  const p = Math.ceil(r / (16 / elementBytes(t.dtype))) * (16 / elementBytes(t.dtype));
  const out = hostStrided([r, c], [1, p === 0 ? 1 : p], t.dtype, p * c);
  const d = out.data as Float32Array;
  const s = t.data as Float32Array;
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) d[j * p + i] = s[t.offset + i * t.strides[0] + j * t.strides[1]];
  return out;
}

/** The bytes of a tensor's logical elements, row-major (what the vectors store). */
export function logicalBytes(t: HostTensor): Uint8Array {
  const c = t.isContiguous() ? t : contiguousHost(t);
  const eb = elementBytes(c.dtype);
  return new Uint8Array(c.data.buffer, c.data.byteOffset + c.offset * eb, c.numel * eb);
}

/**
 * Loads the conformance vectors (`tests/golden/<family>/<name>.safetensors.gz`, copied from shared/golden as is)
 * and turns stored tensors into the layouts an op must be fed (golden/README.md).
 * @module
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { decodeSafetensors } from "../core/safetensors.ts";
import { contiguousHost, HostTensor, hostStrided, tensor } from "../core/tensor.ts";
import { elementBytes } from "../core/dtype.ts";
import type { Quantized, Tensor } from "../core/tensor.ts";
import { assertBytesEqual } from "./harness.ts";

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

const SETUP_KEYS = ["tokens", "hidden", "inDtype", "rowStride", "inFmt", "inSfLayout", "batch"];

/** Op options of a case: its params minus the setup keys (golden/README.md). */
export function opOptions(c: GoldenCase): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c.params)) if (!SETUP_KEYS.includes(k)) o[k] = v;
  return o;
}

/** The op input `x` of a per-token case, in the layout the case asks for. */
export function caseInput(g: GoldenFile, c: GoldenCase): Tensor | Quantized {
  const p = c.params as { hidden: number; inFmt?: string; inSfLayout?: { useTmaAlignedColMajorSf: boolean } };
  if (c.inputs.includes("xData")) {
    const data = asCodes(g.tensors[`${c.id}.xData`], p.inFmt === "e2m1" ? "e2m1x2" : "e4m3");
    let sf = g.tensors[`${c.id}.xSf`];
    if (p.inSfLayout?.useTmaAlignedColMajorSf) sf = toColMajor(sf);
    return [data, sf];
  }
  const x = g.tensors[`${c.id}.x`];
  return x.shape[1] > p.hidden ? x.slice(1, 0, p.hidden) : x;
}

/** Checks `[data, sf]` against a case's stored outputs, byte for byte. */
export function checkQuantized(g: GoldenFile, c: GoldenCase, data: HostTensor, sf: HostTensor, label: string): void {
  assertBytesEqual(logicalBytes(data), logicalBytes(g.tensors[`${c.id}.data`]), `${label} ${c.id} data`);
  assertBytesEqual(logicalBytes(sf), logicalBytes(g.tensors[`${c.id}.sf`]), `${label} ${c.id} sf`);
}

/** A short readable description of a case for test names. */
export function caseName(c: GoldenCase): string {
  const p = c.params;
  const bits = [`${p.tokens}x${p.hidden}`];
  for (const k of ["inDtype", "inFmt", "fmt", "numPerChannels"]) if (p[k] !== undefined) bits.push(String(p[k]));
  if (p.xBlockSize) bits.push(`in[${p.xBlockSize}]`);
  for (const k of ["useTmaAlignedColMajorSf", "roundSf", "usePackedUe8m0", "useE4m3Sf"]) if (p[k]) bits.push(k);
  if (p.rowStride && p.rowStride !== p.hidden) bits.push(`stride${p.rowStride}`);
  return `${c.id} ${bits.join(" ")}`;
}


/**
 * The known disagreements between the spec and some vectors of one test file (case key → reason). The reference
 * follows the spec; `compare` runs a listed case's stated comparison, requires it to FAIL (else the list is
 * stale), then requires the looser bound the reason explains; `seen` counts them, so a file can assert that
 * exactly its listed cases ran. Unlisted cases just run the stated comparison.
 */
export function knownDisagreements(list: Readonly<Record<string, string>>): {
  compare(key: string, stated: () => void, looser: () => void): void;
  readonly seen: number;
  readonly listed: number;
} {
  let seen = 0;
  return {
    compare(key: string, stated: () => void, looser: () => void): void {
      if (!(key in list)) return stated();
      assertThrows(stated, `${key} is listed as a known disagreement (${list[key]}) but now meets the stated tolerance`);
      seen++;
      looser();
    },
    get seen() {
      return seen;
    },
    listed: Object.keys(list).length,
  };
}

function assertThrows(f: () => void, message: string): void {
  try {
    f();
  } catch {
    return;
  }
  throw new Error(message);
}

const SWIGLU_SETUP_KEYS = ["tokens", "hidden", "inDtype", "experts", "actXGradDtype"];

/**
 * Op options of a SwiGLU case (forward or backward): its params minus the setup keys, plus the tensor-valued
 * options (psum, weights) and a fresh copy of `clampedCount` (the op adds to it).
 */
export function swigluCaseOptions(g: GoldenFile, c: GoldenCase): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c.params)) if (!SWIGLU_SETUP_KEYS.includes(k)) o[k] = v;
  for (const role of ["psumNumTokensPerExpert", "topkWeights"]) if (c.inputs.includes(role)) o[role] = g.tensors[`${c.id}.${role}`];
  if (c.inputs.includes("clampedCount")) {
    const t = g.tensors[`${c.id}.clampedCount`];
    o.clampedCount = tensor((t.data as BigInt64Array).slice(t.offset, t.offset + 4), [4], "int64");
  }
  return o;
}

/** Logical bytes of `t` with the rows the case's `excludeRows` mask lists for `role` zeroed (the vectors store 0). */
export function maskExcludedRows(g: GoldenFile, c: GoldenCase, role: string, t: HostTensor): Uint8Array {
  const b = logicalBytes(t).slice();
  const ex = (c as GoldenCase & { excludeRows?: { mask: string; outputs: string[] } }).excludeRows;
  if (!ex || !ex.outputs.includes(role)) return b;
  const mask = g.tensors[`${c.id}.${ex.mask}`].data as Uint8Array;
  const rowBytes = t.shape[0] === 0 ? 0 : b.length / t.shape[0];
  for (let r = 0; r < t.shape[0]; r++) if (mask[r]) b.fill(0, r * rowBytes, (r + 1) * rowBytes);
  return b;
}

/**
 * Host and device tensors (DESIGN §2, spec/API.md §2.2).
 *
 * A tensor is a dtype, a shape, strides in elements and an element offset over shared storage: a TypedArray on
 * the host, one stream-ordered allocation on a device. Views (`slice`, `transpose`, `view`, `viewAs`) share the
 * storage; a device allocation is freed when its last view is disposed (or, as a safety net, collected).
 *
 * The device side is reached through a {@link DeviceRuntime} that `ffi/` registers; `core/` never imports `ffi/`.
 * @module
 */
import { allocArray, arrayMatches, type DType, elementBytes, encodeNumber, isDType, type TypedArray } from "./dtype.ts";

const ELEMENT_BYTES_OF: Readonly<Record<DType, number>> = {
  fp32: 4, bf16: 2, fp16: 2, e4m3: 1, e2m1x2: 1, ue8m0: 1, int8: 1, uint8: 1, int32: 4, int64: 8, bool: 1,
};
import { TkError } from "./errors.ts";

/** A device of a device backend. */
export interface Device {
  /** The backend. */
  readonly kind: "cuda" | "ascend";
  /** Device ordinal within the backend. */
  readonly index: number;
}

/** An ordered queue of device work (a CUDA stream). */
export interface Stream extends Disposable {
  /** The device the stream belongs to. */
  readonly device: Device;
  /** Driver handle (0 is the device's default stream). Handles and device addresses are plain numbers inside
   * the library: they are below 2^53 on every 64-bit platform CUDA supports, and numbers cost no allocation. */
  readonly handle: number;
  /** Waits for the stream's work and checks the device error word (DESIGN §6). */
  synchronize(): Promise<void>;
}

/** What `ffi/` provides to `core/` for device tensors. */
export interface DeviceRuntime {
  defaultStream(device: Device): Stream;
  alloc(device: Device, nbytes: number, stream: Stream): number;
  /** Returns an allocation of `nbytes` (stream-ordered on `stream`). */
  free(device: Device, ptr: number, stream: Stream, nbytes: number): void;
  copyHtoD(device: Device, dst: number, src: Uint8Array, stream: Stream): void;
  /** Copies, synchronises the stream and checks the device error word (DESIGN §6). */
  copyDtoH(device: Device, dst: Uint8Array, src: number, stream: Stream): void;
  copyDtoD(device: Device, dst: number, src: number, nbytes: number, stream: Stream): void;
  memset(device: Device, dst: number, byte: number, nbytes: number, stream: Stream): void;
}

let runtime: DeviceRuntime | null = null;

/** Called once by `ffi/` to make device tensors work. */
export function registerDeviceRuntime(rt: DeviceRuntime): void {
  runtime = rt;
}

/** The registered device runtime, or a `BACKEND_UNAVAILABLE` error. */
export function deviceRuntime(op: string): DeviceRuntime {
  if (!runtime) throw new TkError(op, undefined, "BACKEND_UNAVAILABLE", "no device runtime is loaded");
  return runtime;
}

/** Shape and stride helpers shared by both tensor kinds. */
function contiguousStrides(shape: readonly number[]): number[] {
  const st = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

function checkShape(op: string, arg: string, shape: readonly number[]): void {
  if (!Array.isArray(shape)) throw new TkError(op, arg, "SHAPE", `expected an array of sizes, got ${typeof shape}`);
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new TkError(op, arg, "SHAPE", `sizes must be non-negative integers, got [${shape.join(", ")}]`);
    }
  }
}

function numelOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Element span [min, max] touched by a view (offsets in elements); null when the view is empty. */
export function viewSpan(
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
): [number, number] | null {
  let lo = offset;
  let hi = offset;
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === 0) return null;
    const ext = (shape[i] - 1) * strides[i];
    if (ext < 0) lo += ext;
    else hi += ext;
  }
  return [lo, hi];
}

/** What host and device tensors share: dtype, shape, strides in elements, offset, and views. */
export abstract class TensorBase {
  /** Element type. */
  readonly dtype: DType;
  /** Sizes (for `e2m1x2`, the physical shape: the last dimension counts bytes). */
  readonly shape: readonly number[];
  /** Strides in elements. */
  readonly strides: readonly number[];
  /** Offset of element [0, …, 0] in the storage, in elements. */
  readonly offset: number;
  /** Number of elements (product of the shape). */
  readonly numel: number;
  /** Shared by both tensor kinds. */
  protected constructor(dtype: DType, shape: readonly number[], strides: readonly number[], offset: number) {
    this.dtype = dtype;
    // Arrays the library made and froze are shared as they are; anything else is copied and frozen.
    this.shape = Object.isFrozen(shape) ? shape : Object.freeze([...shape]);
    this.strides = Object.isFrozen(strides) ? strides : Object.freeze([...strides]);
    this.offset = offset;
    this.numel = numelOf(shape);
  }
  /** True when the elements are laid out row-major without gaps. */
  isContiguous(): boolean {
    let s = 1;
    for (let i = this.shape.length - 1; i >= 0; i--) {
      if (this.shape[i] !== 1 && this.strides[i] !== s) return false;
      s *= this.shape[i];
    }
    return true;
  }
  /** A new view of the same storage (each kind builds its own). */
  protected abstract make(dtype: DType, shape: readonly number[], strides: readonly number[], offset: number): this;

  /** A view with another shape over the same elements (contiguous tensors only). */
  view(shape: number[]): this {
    checkShape("view", "shape", shape);
    if (numelOf(shape) !== this.numel) {
      throw new TkError("view", "shape", "SHAPE", `[${shape.join(", ")}] has ${numelOf(shape)} elements, the tensor ${this.numel}`);
    }
    if (!this.isContiguous()) throw new TkError("view", "shape", "LAYOUT", "the tensor is not contiguous; clone it first");
    return this.make(this.dtype, shape, contiguousStrides(shape), this.offset);
  }
  /** Reinterprets the bytes of a contiguous tensor as another dtype; the last dimension is rescaled. */
  viewAs(dtype: DType): this {
    if (!isDType(dtype)) throw new TkError("viewAs", "dtype", "DTYPE", `unknown dtype ${String(dtype)}`);
    const a = elementBytes(this.dtype);
    const b = elementBytes(dtype);
    if (a === b) return this.make(dtype, this.shape, this.strides, this.offset);
    if (!this.isContiguous()) throw new TkError("viewAs", "dtype", "LAYOUT", "the tensor is not contiguous");
    const shape = [...this.shape];
    const last = shape.length ? shape[shape.length - 1] : 1;
    if ((last * a) % b !== 0 || (this.offset * a) % b !== 0) {
      throw new TkError("viewAs", "dtype", "SHAPE", `last dimension of ${last} × ${a} bytes does not divide into ${b}-byte elements`);
    }
    if (shape.length) shape[shape.length - 1] = (last * a) / b;
    else throw new TkError("viewAs", "dtype", "SHAPE", "a 0-d tensor cannot change element size");
    return this.make(dtype, shape, contiguousStrides(shape), (this.offset * a) / b);
  }
  /** Swaps two dimensions (default the last two); strides only. */
  transpose(a = -2, b = -1): this {
    const n = this.shape.length;
    const i = a < 0 ? a + n : a;
    const j = b < 0 ? b + n : b;
    if (!(i >= 0 && i < n && j >= 0 && j < n)) throw new TkError("transpose", "dims", "SHAPE", `dims ${a}, ${b} out of range for rank ${n}`);
    const shape = [...this.shape];
    const strides = [...this.strides];
    [shape[i], shape[j]] = [shape[j], shape[i]];
    [strides[i], strides[j]] = [strides[j], strides[i]];
    return this.make(this.dtype, shape, strides, this.offset);
  }
  /** Elements `[start, end)` of dimension `dim`. */
  slice(dim: number, start: number, end?: number): this {
    const n = this.shape.length;
    const d = dim < 0 ? dim + n : dim;
    if (!(d >= 0 && d < n)) throw new TkError("slice", "dim", "SHAPE", `dim ${dim} out of range for rank ${n}`);
    const e = end ?? this.shape[d];
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(e) || start < 0 || e < start || e > this.shape[d]) {
      throw new TkError("slice", "start", "SHAPE", `[${start}, ${e}) is not inside 0..${this.shape[d]}`);
    }
    const shape = [...this.shape];
    shape[d] = e - start;
    return this.make(this.dtype, shape, this.strides, this.offset + start * this.strides[d]);
  }
}

/** A tensor whose elements live in a TypedArray in this process. */
export class HostTensor extends TensorBase {
  /** Always `"cpu"`. */
  readonly device = "cpu" as const;
  /** The TypedArray this tensor views (see `offset` and `strides`). */
  readonly data: TypedArray;
  /** A view of `data`; prefer {@link tensor}, which checks the arguments. */
  constructor(data: TypedArray, dtype: DType, shape: readonly number[], strides: readonly number[], offset = 0) {
    super(dtype, shape, strides, offset);
    this.data = data;
  }
  /** A host view of the same data (reinterpreted for another element size). */
  protected make(dtype: DType, shape: readonly number[], strides: readonly number[], offset: number): this {
    const data = dtype === this.dtype ? this.data : reinterpret(this.data, dtype);
    return new HostTensor(data, dtype, shape, strides, offset) as this;
  }
  /** No-op, so code can dispose host and device results alike (`using`). */
  dispose(): void {}
  /** No-op (see {@link HostTensor.dispose}). */
  [Symbol.dispose](): void {}
  /** The raw bytes of the storage (all of it, not just this view). */
  get bytes(): Uint8Array {
    return new Uint8Array(this.data.buffer, this.data.byteOffset, this.data.byteLength);
  }
}

function reinterpret(data: TypedArray, dtype: DType): TypedArray {
  const n = data.byteLength / elementBytes(dtype);
  const proto = allocArray(dtype, 0).constructor as unknown as new (b: ArrayBufferLike, o: number, n: number) => TypedArray;
  return new proto(data.buffer, data.byteOffset, n);
}

/** Storage of device tensors: one allocation, reference counted by its live views. */
export class DeviceStorage {
  /** Where the allocation lives. */
  readonly device: Device;
  /** Device address of the allocation. */
  readonly base: number;
  /** Size of the allocation in bytes. */
  readonly nbytes: number;
  /** Live views of this storage. */
  refs = 0;
  /** True once the allocation has been returned. */
  freed = false;
  /** The stream it was allocated on (and is freed on). */
  stream: Stream;
  /** Wraps an allocation made by the device runtime. */
  constructor(device: Device, base: number, nbytes: number, stream: Stream) {
    this.device = device;
    this.base = base;
    this.nbytes = nbytes;
    this.stream = stream;
  }
  /** Drops one view; the last one returns the allocation (stream-ordered). */
  release(): void {
    if (--this.refs === 0 && !this.freed) {
      this.freed = true;
      if (this.nbytes > 0) runtime?.free(this.device, this.base, this.stream, this.nbytes);
    }
  }
}

const registry = new FinalizationRegistry<DeviceStorage>((s) => s.release());

/** A tensor whose elements live in device memory. */
export class DeviceTensor extends TensorBase implements Disposable {
  /** The device the storage lives on. */
  readonly device: Device;
  /** The shared allocation behind this view. */
  readonly storage: DeviceStorage;
  #disposed = false;
  /** A view of `storage` (internal: tensors come from `toDevice`, `empty`, `zeros` or an op). */
  constructor(storage: DeviceStorage, dtype: DType, shape: readonly number[], strides: readonly number[], offset = 0) {
    super(dtype, shape, strides, offset);
    this.device = storage.device;
    this.storage = storage;
    storage.refs++;
    registry.register(this, storage, this);
  }
  /** A device view of the same storage. */
  protected make(dtype: DType, shape: readonly number[], strides: readonly number[], offset: number): this {
    this.assertLive("view");
    return new DeviceTensor(this.storage, dtype, shape, strides, offset) as this;
  }
  /** Device address of element [0, …, 0]. */
  get ptr(): bigint {
    return BigInt(this.addr);
  }
  /** Device address of element [0, …, 0] as a number (what the launch path uses). */
  get addr(): number {
    return this.storage.base + this.offset * ELEMENT_BYTES_OF[this.dtype];
  }
  /** Bytes of the whole allocation behind this view. */
  get byteSize(): number {
    return this.storage.nbytes;
  }
  /** True once this view (or its storage) has been disposed. */
  get disposed(): boolean {
    return this.#disposed || this.storage.freed;
  }
  /** Throws `DISPOSED` when this view (or its storage) has been disposed. */
  assertLive(op: string, arg?: string): void {
    if (this.disposed) throw new TkError(op, arg, "DISPOSED", "the device tensor has been disposed");
  }
  /** Drops this view; the allocation is freed (stream-ordered) when its last view goes. Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    registry.unregister(this);
    this.storage.release();
  }
  /** Same as {@link DeviceTensor.dispose}. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** Any tensor. */
export type Tensor = HostTensor | DeviceTensor;

/** A quantized pair `[data, sf]`. */
export type Quantized = [data: Tensor, sf: Tensor];

/** True for a tensor of either kind. */
export function isTensor(x: unknown): x is Tensor {
  return x instanceof HostTensor || x instanceof DeviceTensor;
}

/**
 * A host tensor over `data` (no copy for a TypedArray of the dtype's kind; `number[]` / `bigint[]` are
 * converted, narrow floats by RNE through binary32).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tensor } from "./tensor.ts";
 * const x = tensor([1, 2, 3, 4, 5, 6], [2, 3], "bf16");
 * assert.ok(x.strides[0] === 3 && x.data[0] === 0x3f80);
 * ```
 */
export function tensor(
  data: TypedArray | number[] | bigint[],
  shape: number[],
  dtype: DType,
  strides?: number[],
): HostTensor {
  const op = "tensor";
  if (!isDType(dtype)) throw new TkError(op, "dtype", "DTYPE", `unknown dtype ${String(dtype)}`);
  checkShape(op, "shape", shape);
  let arr: TypedArray;
  if (Array.isArray(data)) {
    arr = allocArray(dtype, data.length);
    if (dtype === "int64") {
      for (let i = 0; i < data.length; i++) (arr as BigInt64Array)[i] = BigInt(data[i]);
    } else {
      for (let i = 0; i < data.length; i++) (arr as Float32Array)[i] = encodeNumber(dtype, Number(data[i]));
    }
  } else {
    if (!arrayMatches(dtype, data)) {
      throw new TkError(op, "data", "DTYPE", `a ${dtype} tensor needs ${allocArray(dtype, 0).constructor.name}, got ${data.constructor.name}`);
    }
    arr = data;
  }
  const st = strides ?? contiguousStrides(shape);
  if (st.length !== shape.length || st.some((s) => !Number.isSafeInteger(s))) {
    throw new TkError(op, "strides", "SHAPE", `expected ${shape.length} integer strides, got [${st.join(", ")}]`);
  }
  const span = viewSpan(shape, st, 0);
  if (span && (span[0] < 0 || span[1] >= arr.length)) {
    throw new TkError(op, "data", "SHAPE", `shape [${shape.join(", ")}] with strides [${st.join(", ")}] needs ${span[1] + 1} elements, data has ${arr.length}`);
  }
  return new HostTensor(arr, dtype, shape, st);
}

/** Contiguous host tensor of zeros. */
export function hostZeros(shape: readonly number[], dtype: DType): HostTensor {
  return new HostTensor(allocArray(dtype, numelOf(shape)), dtype, shape, contiguousStrides(shape));
}

/** Host tensor over fresh zeroed storage of `storage` elements with explicit strides (padded layouts). */
export function hostStrided(shape: readonly number[], strides: readonly number[], dtype: DType, storage: number): HostTensor {
  return new HostTensor(allocArray(dtype, storage), dtype, shape, strides);
}

/** Row-major strides of a shape. */
export { contiguousStrides, numelOf };

function resolveDevice(op: string, device: Device | number | undefined): Device {
  if (device === undefined) return { kind: "cuda", index: 0 };
  if (typeof device === "number") {
    if (!Number.isSafeInteger(device) || device < 0) throw new TkError(op, "device", "VALUE", `expected a device index ≥ 0, got ${device}`);
    return { kind: "cuda", index: device };
  }
  if (typeof device !== "object" || device === null || !Number.isSafeInteger(device.index) || device.index < 0 || (device.kind !== "cuda" && device.kind !== "ascend")) {
    throw new TkError(op, "device", "VALUE", `expected { kind: "cuda", index } or an index, got ${JSON.stringify(device)}`);
  }
  return device;
}

/** Allocates an uninitialised device tensor (stream-ordered) with explicit strides over `storageElems`. */
export function deviceEmptyStrided(
  op: string,
  device: Device,
  shape: readonly number[],
  strides: readonly number[],
  dtype: DType,
  storageElems: number,
  stream?: Stream,
): DeviceTensor {
  const rt = deviceRuntime(op);
  const s = stream ?? rt.defaultStream(device);
  const nbytes = storageElems * elementBytes(dtype);
  const base = nbytes > 0 ? rt.alloc(device, nbytes, s) : 0;
  return new DeviceTensor(new DeviceStorage(device, base, nbytes, s), dtype, shape, strides);
}

/** Copies a host tensor to a device (contiguous copy of the view). Async on `stream`. */
export function toDevice(t: HostTensor, device?: Device | number, opts?: { stream?: Stream }): DeviceTensor {
  const op = "toDevice";
  if (!(t instanceof HostTensor)) throw new TkError(op, "t", "VALUE", "expected a host tensor");
  const dev = resolveDevice(op, device ?? opts?.stream?.device);
  const src = t.isContiguous() ? t : contiguousHost(t);
  const out = deviceEmptyStrided(op, dev, t.shape, contiguousStrides(t.shape), t.dtype, t.numel, opts?.stream);
  if (t.numel > 0) {
    const eb = elementBytes(t.dtype);
    const bytes = new Uint8Array(src.data.buffer, src.data.byteOffset + src.offset * eb, t.numel * eb);
    deviceRuntime(op).copyHtoD(dev, out.addr, bytes, opts?.stream ?? deviceRuntime(op).defaultStream(dev));
  }
  return out;
}

/** A contiguous copy of a host view. */
export function contiguousHost(t: HostTensor): HostTensor {
  const out = hostZeros(t.shape, t.dtype);
  const src = t.data as Float32Array;
  const dst = out.data as Float32Array;
  const n = t.shape.length;
  if (t.numel === 0) return out;
  const idx = new Array<number>(n).fill(0);
  for (let i = 0; i < t.numel; i++) {
    let off = t.offset;
    for (let d = 0; d < n; d++) off += idx[d] * t.strides[d];
    dst[i] = src[off];
    for (let d = n - 1; d >= 0; d--) {
      if (++idx[d] < t.shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

/**
 * Copies a tensor to the host. For a device tensor this synchronises its stream and checks the device error
 * word (DESIGN §6); the result is a host tensor with the same shape and strides over a copy of the storage span
 * it touches (strided views stay strided).
 */
export function toHost(t: Tensor, opts?: { stream?: Stream }): Promise<HostTensor> {
  try {
    return Promise.resolve(toHostSync(t, opts));
  } catch (e) {
    return Promise.reject(e);
  }
}

/** Synchronous form of {@link toHost}. */
export function toHostSync(t: Tensor, opts?: { stream?: Stream }): HostTensor {
  const op = "toHost";
  if (t instanceof HostTensor) return t;
  if (!(t instanceof DeviceTensor)) throw new TkError(op, "t", "VALUE", "expected a tensor");
  t.assertLive(op, "t");
  const rt = deviceRuntime(op);
  const stream = opts?.stream ?? t.storage.stream;
  const span = viewSpan(t.shape, t.strides, t.offset);
  if (!span || span[0] < 0) {
    rt.copyDtoH(t.device, new Uint8Array(0), 0, stream); // still a sync point
    return new HostTensor(allocArray(t.dtype, 0), t.dtype, t.shape, t.strides.map(() => 1), 0);
  }
  const eb = elementBytes(t.dtype);
  const arr = allocArray(t.dtype, span[1] - span[0] + 1);
  rt.copyDtoH(t.device, new Uint8Array(arr.buffer), t.storage.base + span[0] * eb, stream);
  return new HostTensor(arr, t.dtype, t.shape, t.strides, t.offset - span[0]);
}

/** Contiguous uninitialised tensor on the host (zeros) or a device. */
export function empty(
  shape: number[],
  dtype: DType,
  opts?: { device?: Device | number | "cpu"; stream?: Stream },
): Tensor {
  checkShape("empty", "shape", shape);
  if (!isDType(dtype)) throw new TkError("empty", "dtype", "DTYPE", `unknown dtype ${String(dtype)}`);
  if (opts?.device === undefined || opts.device === "cpu") return hostZeros(shape, dtype);
  const dev = resolveDevice("empty", opts.device);
  return deviceEmptyStrided("empty", dev, shape, contiguousStrides(shape), dtype, numelOf(shape), opts.stream);
}

/** Contiguous tensor of zeros on the host or a device. */
export function zeros(
  shape: number[],
  dtype: DType,
  opts?: { device?: Device | number | "cpu"; stream?: Stream },
): Tensor {
  const t = empty(shape, dtype, opts);
  if (t instanceof DeviceTensor && t.byteSize > 0) {
    deviceRuntime("zeros").memset(t.device, t.addr, 0, t.byteSize, opts?.stream ?? t.storage.stream);
  }
  return t;
}

/** A contiguous copy on the same device. */
export function clone(t: Tensor): Tensor {
  if (t instanceof HostTensor) return contiguousHost(t);
  t.assertLive("clone", "t");
  if (t.isContiguous()) {
    const out = deviceEmptyStrided("clone", t.device, t.shape, contiguousStrides(t.shape), t.dtype, t.numel, t.storage.stream);
    if (t.numel > 0) deviceRuntime("clone").copyDtoD(t.device, out.addr, t.addr, t.numel * elementBytes(t.dtype), t.storage.stream);
    return out;
  }
  return toDevice(contiguousHost(toHostSync(t)), t.device, { stream: t.storage.stream });
}

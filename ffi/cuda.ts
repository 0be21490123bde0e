/**
 * The CUDA driver wrapper: loads the shim (through the loader's integrity checks), initialises the driver,
 * owns per-device state (primary context, default stream, loaded modules, function handles, the error word) and
 * implements `core`'s {@link DeviceRuntime}. Ops launch kernels through {@link LaunchPacket}: one reusable byte
 * buffer holding the launch header and the Params struct, one FFI call per launch.
 * @module
 */
import { registerBackendProbe } from "../core/backend.ts";
import { registerSmCountProvider } from "../core/config.ts";
import { getEnv, runtimeName } from "../core/env.ts";
import { TkError } from "../core/errors.ts";
import type { ParamsLayout } from "../core/params.ts";
import { ParamsPacker } from "../core/params.ts";
import { type Device, type DeviceRuntime, registerDeviceRuntime, type Stream } from "../core/tensor.ts";
import { openBun } from "./bun.ts";
import { openDeno } from "./deno.ts";
import { manifest, shimRel, verifiedBytes, verifiedPath } from "./loader.ts";
import { describeErrorWord } from "./op_ids.ts";
import type { ShimArg, ShimFn, ShimLib } from "./symbols.ts";

const ST_NO_DRIVER = 1;
const ST_OOM = 5;

/** Static facts about a device (spec/API.md §2.3). */
export interface DeviceInfo {
  /** The device described. */
  device: Device;
  /** The driver's name for it, e.g. "NVIDIA H200". */
  name: string;
  /** Compute capability as a kernel target, e.g. "sm_90a". */
  arch: string;
  /** Streaming multiprocessors. */
  smCount: number;
  /** Device memory in bytes. */
  totalMemory: number;
  /** Free device memory in bytes, now. */
  freeMemory: number;
  /** Shared memory per SM in bytes. */
  maxSharedMemoryPerSm: number;
  /** Shared memory one block may opt into, in bytes. */
  maxSharedMemoryPerBlockOptin: number;
  /** A shipped cubin matches this arch. */
  kernelsAvailable: boolean;
  /** The prebuilt directory serving it (`sm90a`, `sm100a`), or null. */
  prebuiltTarget: string | null;
}

interface DeviceState {
  readonly index: number;
  readonly cc: number; // major*10 + minor
  readonly smCount: number;
  readonly target: string | null;
  readonly errorWord: number;
  readonly defaultStream: CudaStream;
  readonly modules: Map<string, number>;
  readonly functions: Map<string, number>;
}

let lib: ShimLib | null = null;
/** Where the first call's time goes (milliseconds), for the first-call benchmark. */
export const timings = { shimHashMs: 0, shimOpenMs: 0, driverInitMs: 0, contextMs: 0, moduleHashMs: 0, moduleLoadMs: 0 };
let initError: TkError | null = null;
let deviceCount = 0;
const states: (DeviceState | undefined)[] = [];
const out64 = new BigUint64Array(2);
const out32 = new Int32Array(2);
const errWord = new Uint32Array(4);

/** Throws a TkError for a failed shim status. */
function fail(op: string, status: number): never {
  const text = lib ? lib.lastError() : "shim not loaded";
  if (status === ST_OOM) throw new TkError(op, undefined, "OUT_OF_MEMORY", text);
  if (status === ST_NO_DRIVER) throw new TkError(op, undefined, "BACKEND_UNAVAILABLE", text);
  const code = lib ? lib.fn.tk_last_cuda_error() : 0;
  const name = /CUDA_ERROR_[A-Z_]+/.exec(text)?.[0] ?? `CUresult ${code}`;
  throw new TkError(op, undefined, "CUDA", text, { code, name });
}

function call(op: string, f: ShimFn, ...args: ShimArg[]): void {
  const st = lib!.fn[f](...args);
  if (st !== 0) fail(op, st);
}

/** Opens the shim with the binding of the runtime we are in (both modules only touch their runtime lazily). */
function openShim(path: string): ShimLib {
  if (runtimeName === "deno") return openDeno(path);
  if (runtimeName === "bun") return openBun(path);
  throw new TkError("runtime", undefined, "BACKEND_UNAVAILABLE", "the CUDA backend needs Deno or Bun");
}

/**
 * Loads the shim and initialises the driver once. Returns null when that worked, else the error (kept, so the
 * next call answers at once). `devices()` uses this to answer [] without throwing.
 */
export function tryInit(): TkError | null {
  if (lib) return null;
  if (initError) return initError;
  try {
    let t0 = performance.now();
    const override = getEnv("TK_SHIM_PATH");
    const path = override ? override : verifiedPath(shimRel());
    timings.shimHashMs = performance.now() - t0;
    t0 = performance.now();
    const l = openShim(path);
    timings.shimOpenMs = performance.now() - t0;
    t0 = performance.now();
    const driver = getEnv("TK_CUDA_DRIVER");
    const st = l.fn.tk_init(driver ? new TextEncoder().encode(driver + "\0") : null);
    timings.driverInitMs = performance.now() - t0;
    if (st !== 0) {
      const text = l.lastError();
      l.close();
      initError = new TkError("runtime", undefined, "BACKEND_UNAVAILABLE", `no usable CUDA driver: ${text}`);
      return initError;
    }
    lib = l;
    const n = new Int32Array(1);
    call("runtime", "tk_device_count", n);
    deviceCount = n[0];
    return null;
  } catch (e) {
    if (e instanceof TkError && e.code === "INTEGRITY") throw e; // never hide a tampered binary
    initError = e instanceof TkError ? e : new TkError("runtime", undefined, "BACKEND_UNAVAILABLE", String(e));
    return initError;
  }
}

function requireInit(op: string): ShimLib {
  const e = tryInit();
  if (e) throw new TkError(op, undefined, e.code, e.message.replace(/^runtime: /, ""));
  return lib!;
}

/** Number of CUDA devices (0 without a driver). */
export function cudaDeviceCount(): number {
  return tryInit() ? 0 : deviceCount;
}

function attr(dev: number, a: number): number {
  call("deviceInfo", "tk_device_attribute", dev, a, out32);
  return out32[0];
}

const ATTR = { smCount: 16, ccMajor: 75, ccMinor: 76, smemPerSm: 81, smemOptin: 97 } as const;

function targetFor(cc: number): string | null {
  const t = cc === 90 ? "sm90a" : cc === 100 ? "sm100a" : null;
  if (!t) return null;
  const m = manifest();
  return Object.keys(m.binaries).some((k) => k.startsWith(`cuda/${t}/`)) ? t : null;
}

/** Per-device state, created on first use (context, error word, default stream). */
export function deviceState(op: string, device: Device): DeviceState {
  const s = states[device.index];
  if (s) return s;
  requireInit(op);
  if (device.kind !== "cuda") throw new TkError(op, "device", "BACKEND_UNAVAILABLE", `${device.kind} devices are not supported yet`);
  if (device.index >= deviceCount) {
    throw new TkError(op, "device", "BACKEND_UNAVAILABLE", `cuda:${device.index} does not exist (${deviceCount} device(s))`);
  }
  const t0 = performance.now();
  call(op, "tk_context_init", device.index);
  timings.contextMs += performance.now() - t0;
  const cc = attr(device.index, ATTR.ccMajor) * 10 + attr(device.index, ATTR.ccMinor);
  call(op, "tk_error_word_ptr", device.index, out64);
  const st: DeviceState = {
    index: device.index,
    cc,
    smCount: attr(device.index, ATTR.smCount),
    target: targetFor(cc),
    errorWord: Number(out64[0]),
    defaultStream: new CudaStream({ kind: "cuda", index: device.index }, 0, false),
    modules: new Map(),
    functions: new Map(),
  };
  states[device.index] = st;
  return st;
}

/** A CUDA stream of one device. */
export class CudaStream implements Stream {
  readonly device: Device;
  readonly handle: number;
  readonly #owned: boolean;
  #destroyed = false;
  constructor(device: Device, handle: number, owned: boolean) {
    this.device = device;
    this.handle = handle;
    this.#owned = owned;
  }
  /** Waits for the stream's work and checks the device error word. */
  synchronize(): Promise<void> {
    syncAndCheck(this.device.index, this.handle);
    return Promise.resolve();
  }
  [Symbol.dispose](): void {
    if (!this.#owned || this.#destroyed) return;
    this.#destroyed = true;
    syncAndCheck(this.device.index, this.handle);
    releaseStreamBlocks(this.device.index, this.handle);
    call("Stream.dispose", "tk_stream_destroy", this.device.index, this.handle);
  }
}

/** Synchronises a stream and throws `DEVICE_VALUE` if a kernel reported an illegal value (DESIGN §6). */
export function syncAndCheck(dev: number, stream: number): void {
  call("synchronize", "tk_sync_and_check", dev, stream, errWord);
  if (errWord[0] | errWord[1] | errWord[2]) {
    const { op, detail } = describeErrorWord(errWord);
    throw new TkError(op, undefined, "DEVICE_VALUE", detail);
  }
}

/** A new non-blocking stream on `device` (spec/API.md §1.7). */
export function createStream(device: Device | number = 0): Stream {
  const d: Device = typeof device === "number" ? { kind: "cuda", index: device } : device;
  deviceState("createStream", d);
  call("createStream", "tk_stream_create", d.index, out64);
  return new CudaStream(d, Number(out64[0]), true);
}

/** Function handle of a kernel symbol on a device, loading its cubin on first use. */
export function kernelFunction(op: string, device: Device, symbol: string): number {
  const st = deviceState(op, device);
  const hit = st.functions.get(symbol);
  if (hit !== undefined) return hit;
  if (!st.target) {
    throw new TkError(op, "backend", "BACKEND_UNAVAILABLE", `no kernel image for compute capability ${(st.cc / 10).toFixed(1)} (shipped: sm_90a, sm_100a)`);
  }
  const m = manifest();
  const rel = Object.keys(m.binaries).find((k) => k.startsWith(`cuda/${st.target}/`) && m.binaries[k].symbols?.includes(symbol));
  if (!rel) throw new TkError(op, "variant", "UNSUPPORTED", `kernel ${symbol} is not in the ${st.target} build`);
  let mod = st.modules.get(rel);
  if (mod === undefined) {
    let t0 = performance.now();
    const bytes = verifiedBytes(rel);
    timings.moduleHashMs += performance.now() - t0;
    t0 = performance.now();
    call(op, "tk_module_load", st.index, bytes, bytes.length, out64);
    timings.moduleLoadMs += performance.now() - t0;
    mod = Number(out64[0]);
    st.modules.set(rel, mod);
  }
  call(op, "tk_module_function", st.index, mod, new TextEncoder().encode(symbol + "\0"), out64);
  const fn = Number(out64[0]);
  st.functions.set(symbol, fn);
  return fn;
}

const maxDynamicSmem = new Map<number, number>(); // function handle → the MAX_DYNAMIC_SHARED_SIZE_BYTES it was given
const smemCarveout = new Map<number, number>(); // function handle → the PREFERRED_SHARED_MEMORY_CARVEOUT it was given

/**
 * {@link kernelFunction} for a kernel launched with `bytes` of dynamic shared memory where static + dynamic exceeds
 * 48 KiB: raises the function's MAX_DYNAMIC_SHARED_SIZE_BYTES to `bytes` once (cuFuncSetAttribute), then returns it.
 * `carveoutPercent` (optional): the function's preferred shared-memory carveout, in percent of the unified
 * L1/shared storage (100: the most shared memory, so that the blocks the kernel is tuned for fit beside each
 * other; -1: the driver's choice), set when it changes.
 */
export function kernelFunctionWithSmem(op: string, device: Device, symbol: string, bytes: number, carveoutPercent?: number): number {
  const fn = kernelFunction(op, device, symbol);
  if ((maxDynamicSmem.get(fn) ?? 0) < bytes) {
    call(op, "tk_function_set_max_dynamic_smem", device.index, fn, bytes);
    maxDynamicSmem.set(fn, bytes);
  }
  if (carveoutPercent !== undefined && (smemCarveout.get(fn) ?? -1) !== carveoutPercent) {
    call(op, "tk_function_set_smem_carveout", device.index, fn, carveoutPercent);
    smemCarveout.set(fn, carveoutPercent);
  }
  return fn;
}

let launches = 0;
/** Kernel launches issued by this process (tests use it to prove a refused call launched nothing). */
export function launchCount(): number {
  return launches;
}

/** Bytes of the launch header in front of every Params struct (tk_launch_header). */
export const LAUNCH_HEADER_BYTES = 64;

/**
 * One op's reusable launch buffer: the tk_launch_header (64 bytes: fn 0, stream 8, grid 16, block 28,
 * shared_bytes 40, flags 44, cluster 48, dev 60), then the Params struct. Set the fields, then
 * {@link LaunchPacket.launch}: one FFI call.
 */
export class LaunchPacket<N extends string> extends ParamsPacker<N> {
  constructor(layout: ParamsLayout<N>) {
    super(layout, LAUNCH_HEADER_BYTES);
    for (const word of [5, 6, 8, 9]) this.u32(word, 1); // grid.y/z, block.y/z
  }
  /** Sets function, stream, grid.x, block.x, dynamic shared memory, PDL flag and device. */
  setLaunch(fn: number, stream: number, gridX: number, blockX: number, smem: number, pdl: boolean, dev: number): void {
    this.u64(0, fn);
    this.u64(2, stream);
    this.u32(4, gridX);
    this.u32(7, blockX);
    this.u32(10, smem);
    this.u32(11, pdl ? 1 : 0);
    this.i32(15, dev);
  }
  launch(op: string): void {
    launches++;
    const st = lib!.fn.tk_launch(this.bytes);
    if (st !== 0) fail(op, st);
  }
}

/**
 * Rows one 256-thread block works on at once in the row-team kernels (kernels-src/cuda/common/work.cuh): a row of
 * H elements in chunks of V is shared by w = min(8, nextPow2(⌈H / V / 32⌉)) warps, so a block holds 8 / w rows.
 */
export function rowsPerBlock(hidden: number, v: number): number {
  const chunks = Math.ceil(hidden / v / 32);
  let w = 1;
  while (w < chunks && w < 8) w *= 2;
  return 8 / w;
}

/** Device error word address of a device (kernels receive it in Params). */
export function errorWordPtr(op: string, device: Device): number {
  return deviceState(op, device).errorWord;
}

/** Devices of the CUDA backend ([] without a driver, never a throw — except for a tampered binary). */
export function cudaDevices(): Device[] {
  const n = cudaDeviceCount();
  return Array.from({ length: n }, (_, i) => ({ kind: "cuda" as const, index: i }));
}

/** Name, architecture, SMs, memory and shipped-kernel availability of a device. */
export function cudaDeviceInfo(device: Device | number = 0): DeviceInfo {
  const d: Device = typeof device === "number" ? { kind: "cuda", index: device } : device;
  const st = deviceState("deviceInfo", d);
  const name = new Uint8Array(256);
  call("deviceInfo", "tk_device_name", st.index, name, name.length);
  const free = new BigUint64Array(1);
  const total = new BigUint64Array(1);
  call("deviceInfo", "tk_mem_info", st.index, free, total);
  const major = Math.floor(st.cc / 10);
  const minor = st.cc % 10;
  return {
    device: d,
    name: new TextDecoder().decode(name.subarray(0, name.indexOf(0))),
    arch: major >= 9 && minor === 0 ? `sm_${st.cc}a` : `sm_${st.cc}`,
    smCount: st.smCount,
    totalMemory: Number(total[0]),
    freeMemory: Number(free[0]),
    maxSharedMemoryPerSm: attr(st.index, ATTR.smemPerSm),
    maxSharedMemoryPerBlockOptin: attr(st.index, ATTR.smemOptin),
    kernelsAvailable: st.target !== null,
    prebuiltTarget: st.target,
  };
}

/** The driver version as an integer (e.g. 12080), for benchmark reports. */
export function driverVersion(): number {
  requireInit("driverVersion");
  call("driverVersion", "tk_driver_version", out32);
  return out32[0];
}

/** Events for timing (benchmarks). */
export function createEvent(device: Device): number {
  deviceState("createEvent", device);
  call("createEvent", "tk_event_create", device.index, out64);
  return Number(out64[0]);
}
export function recordEvent(device: Device, ev: number, stream: number): void {
  call("recordEvent", "tk_event_record", device.index, ev, stream);
}
export function elapsedMs(device: Device, a: number, b: number): number {
  call("elapsedMs", "tk_event_synchronize", device.index, b);
  const f = new Float32Array(1);
  call("elapsedMs", "tk_event_elapsed_ms", device.index, a, b, f);
  return f[0];
}
export function destroyEvent(device: Device, ev: number): void {
  call("destroyEvent", "tk_event_destroy", device.index, ev);
}

/**
 * A small stream-ordered block cache over cuMemAllocAsync / cuMemFreeAsync. Steady-state calls allocate the same
 * sizes again and again; a block freed on stream S is handed to the next allocation of that size on S, which is
 * ordered after every earlier use on S, exactly the guarantee cuMemFreeAsync gives. That saves two driver calls
 * per output. Blocks are rounded to 512 bytes; at most POOL_LIMIT bytes per device stay cached, blocks above
 * POOL_BLOCK_MAX are never cached, and an out-of-memory allocation first releases the cache and retries.
 */
const POOL_LIMIT = 1 << 30;
const POOL_BLOCK_MAX = 64 << 20;
const pools: Map<number, Map<number, number[]>>[] = [];
const cachedBytes: number[] = [];

function blockSize(nbytes: number): number {
  return nbytes <= 512 ? 512 : Math.ceil(nbytes / 512) * 512;
}

function pool(dev: number, stream: number): Map<number, number[]> {
  const byStream = pools[dev] ?? (pools[dev] = new Map());
  let p = byStream.get(stream);
  if (!p) byStream.set(stream, p = new Map());
  return p;
}

function releaseStreamBlocks(dev: number, stream: number): void {
  const p = pools[dev]?.get(stream);
  if (!p || !lib) return;
  for (const [size, list] of p) {
    for (const ptr of list) lib.fn.tk_free_async(dev, ptr, stream);
    cachedBytes[dev] -= size * list.length;
  }
  pools[dev].delete(stream);
}

/** Returns every cached block of a device to the driver's pool (stream-ordered frees). */
export function releaseCachedMemory(dev = 0): void {
  const byStream = pools[dev];
  if (!byStream || !lib) return;
  for (const [stream, p] of byStream) {
    for (const list of p.values()) for (const ptr of list) lib.fn.tk_free_async(dev, ptr, stream);
  }
  byStream.clear();
  cachedBytes[dev] = 0;
}

const runtime: DeviceRuntime = {
  defaultStream(device: Device): Stream {
    return deviceState("runtime", device).defaultStream;
  },
  alloc(device: Device, nbytes: number, stream: Stream): number {
    const size = blockSize(nbytes);
    const list = pool(device.index, stream.handle).get(size);
    if (list !== undefined && list.length > 0) {
      cachedBytes[device.index] -= size;
      return list.pop()!;
    }
    let st = lib!.fn.tk_malloc_async(device.index, size, stream.handle, out64);
    if (st === ST_OOM) {
      releaseCachedMemory(device.index);
      st = lib!.fn.tk_malloc_async(device.index, size, stream.handle, out64);
    }
    if (st !== 0) fail("alloc", st);
    return Number(out64[0]);
  },
  free(device: Device, ptr: number, stream: Stream, nbytes: number): void {
    if (!lib) return;
    const size = blockSize(nbytes);
    const cached = cachedBytes[device.index] ?? 0;
    if (size <= POOL_BLOCK_MAX && cached + size <= POOL_LIMIT) {
      const p = pool(device.index, stream.handle);
      const list = p.get(size);
      if (list) list.push(ptr);
      else p.set(size, [ptr]);
      cachedBytes[device.index] = cached + size;
      return;
    }
    lib.fn.tk_free_async(device.index, ptr, stream.handle); // best effort: never throw from a finaliser
  },
  copyHtoD(device: Device, dst: number, src: Uint8Array, stream: Stream): void {
    // Synchronous with respect to the host buffer: the caller's array may be reused right after.
    call("toDevice", "tk_memcpy_htod", device.index, dst, src, src.length, stream.handle);
  },
  copyDtoH(device: Device, dst: Uint8Array, src: number, stream: Stream): void {
    if (dst.length > 0) call("toHost", "tk_memcpy_dtoh_async", device.index, dst, src, dst.length, stream.handle);
    syncAndCheck(device.index, stream.handle);
  },
  copyDtoD(device: Device, dst: number, src: number, nbytes: number, stream: Stream): void {
    call("copy", "tk_memcpy_dtod_async", device.index, dst, src, nbytes, stream.handle);
  },
  memset(device: Device, dst: number, byte: number, nbytes: number, stream: Stream): void {
    call("memset", "tk_memset_d8_async", device.index, dst, byte, nbytes, stream.handle);
  },
};

registerDeviceRuntime(runtime);
registerBackendProbe((op, d) => void deviceState(op, d));
registerSmCountProvider((d) => deviceState("config.getNumSms", d).smCount);

/** Synchronises a device's default stream, or a given stream, and checks the error word. */
export function synchronize(target?: Device | Stream | number): Promise<void> {
  if (target === undefined || typeof target === "number") {
    const st = deviceState("synchronize", { kind: "cuda", index: target ?? 0 });
    syncAndCheck(st.index, 0);
  } else if ("handle" in target) {
    syncAndCheck(target.device.index, target.handle);
  } else {
    syncAndCheck(deviceState("synchronize", target).index, 0);
  }
  return Promise.resolve();
}

/**
 * Shared pieces of the benchmarks: device timing with CUDA events, the device-to-device copy reference, and the
 * per-token cast cases of the roofline table.
 * @module
 */
import process from "node:process";
import { type DeviceTensor, devices, empty, type HostTensor, type PerTokenCastOptions, synchronize, type Tensor, tensor, toDevice, toHost } from "../mod.ts";
import { createEvent, destroyEvent, elapsedMs, kernelFunction, LaunchPacket, recordEvent, syncAndCheck } from "../ffi/cuda.ts";
import { GuardSelftestParams } from "../ops/runtime/guard_selftest.params.ts";
import { deviceRuntime, type Device, type Stream } from "../core/tensor.ts";
import { encodeBf16 } from "../core/dtype.ts";

export const DEV: Device = { kind: "cuda", index: 0 };

/** Median of the per-call device time (µs) of `f` over `reps` repetitions of `iters` back-to-back calls. */
export function deviceTimeUs(f: () => void, iters = 20, reps = 7): number {
  return timeCalls(f, iters, reps, 0).us;
}

/**
 * Device time per call (µs) of `f` when the GPU never waits for the host: each repetition first queues a copy of
 * `leadBytes` (about 2 ms on an H200 at 4 GiB), then `iters` calls of `f` between two events. The calls are all
 * queued before the copy ends as long as the host takes less than the copy to issue them, so the time between the
 * events is the kernels' own, back to back, and not the launch rate (which `deviceTimeUs` measures for short
 * kernels). `hostBound` is true when issuing took longer than the copy in some repetition: the figure is then an
 * upper bound.
 */
export function queuedDeviceTimeUs(f: () => void, iters = 100, reps = 9, leadBytes = 2 ** 32): { us: number; hostBound: boolean } {
  return timeCalls(f, iters, reps, leadBytes);
}

/** The two timings above: events around `iters` calls, after a lead copy of `leadBytes` when it is not 0. */
function timeCalls(f: () => void, iters: number, reps: number, leadBytes: number): { us: number; hostBound: boolean } {
  const lead = leadBytes > 0
    ? { src: empty([leadBytes], "uint8", { device: 0 }) as DeviceTensor, dst: empty([leadBytes], "uint8", { device: 0 }) as DeviceTensor }
    : null;
  const rt = deviceRuntime("bench");
  const s = rt.defaultStream(DEV);
  const c = createEvent(DEV);
  const a = createEvent(DEV);
  const b = createEvent(DEV);
  for (let i = 0; i < 3; i++) f();
  syncAndCheck(0, 0);
  const times: number[] = [];
  let hostBound = false;
  for (let r = 0; r < reps; r++) {
    if (lead) {
      recordEvent(DEV, c, 0);
      rt.copyDtoD(DEV, lead.dst.addr, lead.src.addr, leadBytes, s);
    }
    recordEvent(DEV, a, 0);
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) f();
    const issueUs = (performance.now() - t0) * 1000;
    recordEvent(DEV, b, 0);
    times.push((elapsedMs(DEV, a, b) * 1000) / iters);
    if (lead && issueUs >= elapsedMs(DEV, c, a) * 1000) hostBound = true;
  }
  for (const e of [a, b, c]) destroyEvent(DEV, e);
  lead?.src.dispose();
  lead?.dst.dispose();
  times.sort((x, y) => x - y);
  return { us: times[times.length >> 1], hostBound };
}

/**
 * Per-call device time of a function on one stream after a lead copy, for the A/B benches of launch forms
 * (bench/pdl_tuning.ts, pdl_tuning10.ts, pcb10_tuning.ts): each repetition queues a copy of `leadBytes` on the
 * stream, then `iters` calls of `f` between two events on it (so the calls are queued before the GPU reaches them:
 * programmatic dependent launch only overlaps launches the GPU already holds); the median over `reps`. Unlike
 * {@link queuedDeviceTimeUs}, the events are recorded on the given stream and the lead buffers live as long as the
 * timer (`dispose()` frees them).
 */
export class LeadTimer {
  readonly #src: DeviceTensor;
  readonly #dst: DeviceTensor;
  constructor(readonly leadBytes = 2 ** 31, readonly iters = 20, readonly reps = 7) {
    this.#src = empty([leadBytes], "uint8", { device: 0 }) as DeviceTensor;
    this.#dst = empty([leadBytes], "uint8", { device: 0 }) as DeviceTensor;
  }
  /** Median per-call time (µs) of `f` on `stream` (three warm-up calls first). */
  timeUs(stream: Stream, f: () => void): number {
    const rt = deviceRuntime("bench");
    const a = createEvent(DEV);
    const b = createEvent(DEV);
    for (let i = 0; i < 3; i++) f();
    syncAndCheck(0, stream.handle);
    const times: number[] = [];
    for (let r = 0; r < this.reps; r++) {
      rt.copyDtoD(DEV, this.#dst.addr, this.#src.addr, this.leadBytes, stream);
      recordEvent(DEV, a, stream.handle);
      for (let i = 0; i < this.iters; i++) f();
      recordEvent(DEV, b, stream.handle);
      times.push((elapsedMs(DEV, a, b) * 1000) / this.iters);
    }
    syncAndCheck(0, stream.handle);
    destroyEvent(DEV, a);
    destroyEvent(DEV, b);
    times.sort((x, y) => x - y);
    return times[this.reps >> 1];
  }
  dispose(): void {
    this.#src.dispose();
    this.#dst.dispose();
  }
}

/**
 * The interleaved A/B of the tuning scripts (bench/lsl_tiled_tuning.ts, pcf_pipelined_tuning.ts, …): `rounds` rounds, each timing
 * every setting once with {@link LeadTimer} after `apply(setting)`, the order rotated by one each round; the median
 * of each setting's rounds (µs a call), by name.
 */
export function interleavedMedians<S extends { name: string }>(
  timer: LeadTimer,
  stream: Stream,
  settings: readonly S[],
  rounds: number,
  apply: (s: S) => void,
  run: () => void,
): Map<string, number> {
  const us = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < settings.length; i++) {
      const s = settings[(i + round) % settings.length];
      apply(s);
      us.set(s.name, [...(us.get(s.name) ?? []), timer.timeUs(stream, run)]);
    }
  }
  return new Map([...us].map(([k, v]) => [k, v.sort((a, b) => a - b)[rounds >> 1]]));
}

/** The bytes of a tensor's storage, copied to the host (a device tensor is read back; outputs compared byte for byte). */
export async function hostBytes(t: Tensor): Promise<Uint8Array> {
  const h = (await toHost(t)) as HostTensor;
  return new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength).slice();
}

/**
 * An A/B script's output check across settings: the first output given is the reference, each later one is compared
 * with it byte for byte and a difference is printed as a FAIL line naming the first differing byte and both values.
 * `check` returns the failures it found (0 or 1), for the script's count.
 */
export class FirstOutput {
  #ref: Uint8Array | null = null;
  constructor(private readonly refName: string) {}

  check(got: Uint8Array, label: string): number {
    if (this.#ref === null) {
      this.#ref = got;
      return 0;
    }
    const bad = firstDifference(got, this.#ref);
    if (bad < 0) return 0;
    console.log(`FAIL ${label}: differs from ${this.refName}'s at byte ${bad} (${got[bad]} vs ${this.#ref[bad]})`);
    return 1;
  }
}

/** The first index at which two byte arrays differ (-1 when equal; the shorter length when one is a prefix). */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** Device-to-device copy rate (GB/s, read + write counted) on a buffer of `bytes`. */
export function copyRateGBs(bytes: number): { us: number; gbps: number } {
  const src = empty([bytes], "uint8", { device: 0 }) as DeviceTensor;
  const dst = empty([bytes], "uint8", { device: 0 }) as DeviceTensor;
  const rt = deviceRuntime("bench");
  const s = rt.defaultStream(DEV);
  const us = deviceTimeUs(() => rt.copyDtoD(DEV, dst.addr, src.addr, bytes, s), 10, 7);
  src.dispose();
  dst.dispose();
  return { us, gbps: (2 * bytes) / (us * 1e3) };
}

/**
 * The start of an interleaved A/B script (bench/*_tuning.ts): without a CUDA device prints "<name> needs a CUDA
 * device; none found" and exits 0; otherwise device 0's default stream, a {@link LeadTimer} and the copy rate of
 * 1 GiB (printed as the 100% line every % of the script refers to).
 */
export function abStart(name: string): { stream: Stream; timer: LeadTimer; copy: { us: number; gbps: number } } {
  if (devices().length === 0) {
    console.log(`${name} needs a CUDA device; none found`);
    process.exit(0);
  }
  const stream = deviceRuntime("bench").defaultStream(DEV);
  const timer = new LeadTimer();
  const copy = copyRateGBs(2 ** 30);
  console.log(`cuMemcpyDtoD 1 GiB: ${copy.gbps.toFixed(0)} GB/s = 100%`);
  return { stream, timer, copy };
}

/** The end of an A/B script: "<n> FAIL" and exit 1 when any output differed from main's, else the line `ok`. */
export function abVerdict(failures: number, ok: string): void {
  if (failures > 0) {
    console.log(`${failures} FAIL`);
    process.exit(1);
  }
  console.log(ok);
}

/** A random bf16 `[T, H]` matrix on the host: uniform in [−4, 4), a linear congruential sequence from `seed`. */
export function randomBf16Host(T: number, H: number, seed = 1): HostTensor {
  const b = new Uint16Array(T * H);
  let a = seed >>> 0;
  for (let i = 0; i < b.length; i++) {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    b[i] = encodeBf16(Math.fround(((a >>> 8) / 16777216 - 0.5) * 8));
  }
  return tensor(b, [T, H], "bf16");
}

/** A random bf16 `[T, H]` matrix on the device (the values of {@link randomBf16Host}). */
export function randomBf16(T: number, H: number, seed = 1): DeviceTensor {
  return toDevice(randomBf16Host(T, H, seed));
}

/** The roofline cases: bf16 → e4m3, groups of 128, plain fp32 sf and DeepGEMM's packed UE8M0 layout. */
export const CASES: { name: string; opts: PerTokenCastOptions }[] = [
  { name: "fp32-sf", opts: { fmt: "e4m3", numPerChannels: 128 } },
  { name: "packed-ue8m0", opts: { fmt: "e4m3", numPerChannels: 128, roundSf: true, usePackedUe8m0: true, useTmaAlignedColMajorSf: true } },
];

/** Bytes a bf16 → e4m3 per-token cast must move: read 2·T·H, write T·H codes and the scales. */
export function castBytes(T: number, H: number, packed: boolean): number {
  const nbk = Math.ceil(H / 128);
  const sf = packed ? Math.ceil(T / 4) * 4 * Math.ceil(nbk / 4) * 4 : T * nbk * 4;
  return 3 * T * H + sf;
}

/**
 * Host time per call (µs) of `f`: bursts of `n` back-to-back calls, median of 41. `n` stays below the driver's
 * launch queue depth (about 1000 pending launches), so the host never waits for the GPU and the time is the host's
 * own.
 */
export function hostUs(f: () => void, n = 500): number {
  for (let i = 0; i < 2000; i++) f();
  synchronize(0);
  const times: number[] = [];
  for (let r = 0; r < 41; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) f();
    times.push(((performance.now() - t0) * 1000) / n);
    synchronize(0);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

/** An empty kernel launch (one block of 32 threads that checks nothing), straight through the launch packet. */
export function bareLaunch(): () => void {
  const bare = new LaunchPacket(GuardSelftestParams);
  bare.setLaunch(kernelFunction("bench", DEV, "tk_guard_selftest__i32"), 0, 1, 32, 0, false, 0);
  return () => bare.launch("bench");
}

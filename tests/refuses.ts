/**
 * Shared by the bad-input tests: `refuses` asserts a call throws `TkError(op, arg, code)` with the
 * `op: arg: ` message prefix, launches nothing and leaves every host input's bytes as they were; `fakeDevice`
 * makes a device tensor over a fake address for checks that must fail before any device call.
 * @module
 */
import assert from "node:assert/strict";
import { DeviceStorage, hostStrided } from "../core/tensor.ts";
import { launchCount } from "../ffi/cuda.ts";
import { rng } from "./harness.ts";
import { type Device, DeviceTensor, type DType, HostTensor, type Stream, type Tensor, TkError } from "../mod.ts";

/** Asserts `f` throws TkError(op, arg, code) without launching or modifying the host tensors among `inputs`. */
export function refuses(op: string, arg: string, code: string, f: () => unknown, inputs: readonly Tensor[]): void {
  const hosts = inputs.filter((t): t is HostTensor => t instanceof HostTensor);
  const before = hosts.map((t) => t.bytes.slice());
  const launches = launchCount();
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof TkError, `expected TkError, got ${String(e)}`);
    assert.equal(e.op, op, e.message);
    assert.equal(e.arg, arg, e.message);
    assert.equal(e.code, code, e.message);
    assert.ok(e.message.startsWith(`${op}: ${arg}: `), e.message);
    return true;
  });
  assert.equal(launchCount(), launches, "a refused call launched a kernel");
  hosts.forEach((t, i) => assert.deepEqual(t.bytes, before[i], "a refused call modified an input"));
}

/**
 * A contiguous device tensor over a fake address. Its storage claims 0 bytes, so disposing it never hands the
 * fake address to the runtime's allocator.
 */
export function fakeDevice(dtype: DType, shape: number[], index = 0): DeviceTensor {
  const device: Device = { kind: "cuda", index };
  const stream = { device, handle: 0, synchronize: () => Promise.resolve(), [Symbol.dispose]() {} } as Stream;
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  return new DeviceTensor(new DeviceStorage(device, 0x10000, 0, stream), dtype, shape, strides);
}

/**
 * A call that needs the CUDA backend (host inputs with `backend: "cuda"`): with a usable GPU it runs and returns
 * host tensors; without one it is `TkError(op, …, BACKEND_UNAVAILABLE)` and writes nothing.
 */
export function cudaOrUnavailable(op: string, f: () => unknown, hasGpu: boolean): void {
  if (hasGpu) {
    const r = [f()].flat(2);
    assert.ok(r.every((t) => t === null || t instanceof HostTensor), "host inputs give host results");
    return;
  }
  assert.throws(f, (e: unknown) => e instanceof TkError && e.op === op && e.code === "BACKEND_UNAVAILABLE");
}

/** The byte every {@link sentinelLike} tensor starts with. */
export const SENTINEL = 0xa5;

/** Fresh host storage with the shape and strides of `t`, every byte {@link SENTINEL}. */
export function sentinelLike(t: Tensor): HostTensor {
  const span = t.numel === 0 ? 0 : 1 + t.shape.reduce((a, d, i) => a + (d - 1) * t.strides[i], 0);
  const h = hostStrided(t.shape, t.strides, t.dtype, span);
  h.bytes.fill(SENTINEL);
  return h;
}

/**
 * `call(true)` (one bad argument) is refused with TkError(op, arg, code) and leaves the inputs and every tensor of
 * `outs` (sentinels) unchanged; `call(false)` then succeeds and writes at least one of `outs`, which shows the outs
 * were valid targets.
 */
export function outSurvives(op: string, arg: string, code: string, call: (bad: boolean) => unknown, outs: HostTensor[], inputs: readonly Tensor[]): void {
  for (const o of outs) assert.ok(o.bytes.every((b) => b === SENTINEL), "outs start as sentinels");
  refuses(op, arg, code, () => call(true), [...inputs, ...outs]);
  call(false);
  assert.ok(outs.some((o) => o.bytes.some((b) => b !== SENTINEL)), `${op}: the accepted call wrote none of the outs, so the check above proves nothing`);
}

/** `n` values in (−scale, scale) from `rng(seed)`. */
export function seededValues(seed: number, n: number, scale: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => (r() * 2 - 1) * scale);
}

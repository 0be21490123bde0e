/**
 * Shared by the bad-input tests: `refuses` asserts a call throws `TkError(op, arg, code)` with the
 * `op: arg: ` message prefix, launches nothing and leaves every host input's bytes as they were; `fakeDevice`
 * makes a device tensor over a fake address for checks that must fail before any device call.
 * @module
 */
import assert from "node:assert/strict";
import { DeviceStorage } from "../core/tensor.ts";
import { launchCount } from "../ffi/cuda.ts";
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
 * For ops with a CUDA kernel called with `backend: "cuda"` on host tensors: `f` runs (on the device) where a device
 * runtime is loaded, and answers `TkError(op, "backend", BACKEND_UNAVAILABLE)` where none is.
 */
export function runsOnDeviceOrUnavailable(op: string, f: () => unknown): void {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof TkError, `expected TkError, got ${String(e)}`);
    assert.equal(e.op, op, e.message);
    assert.equal(e.code, "BACKEND_UNAVAILABLE", e.message);
  }
}

/**
 * `placeWithoutKernel` (core/backend.ts), the placement of an op added CPU-first (before its CUDA kernel): host
 * inputs run the CPU reference, device inputs with `backend: "cpu"` are staged through the host, and everything
 * that would need the missing kernel is `UNSUPPORTED` before anything runs. No device is touched: the device
 * tensors here are fakes, refused or placed before any device call.
 * @module
 */
import assert from "node:assert/strict";
import { placeWithoutKernel } from "../core/backend.ts";
import { tensor, TkError } from "../mod.ts";
import { test } from "./harness.ts";
import { fakeDevice } from "./refuses.ts";

const host = tensor(new Float32Array(4), [2, 2], "fp32");

function unsupported(f: () => unknown): void {
  assert.throws(f, (e: unknown) => e instanceof TkError && e.op === "cpuFirstOp" && e.arg === "backend" && e.code === "UNSUPPORTED");
}

test("placeWithoutKernel: host inputs run on the CPU (auto and cpu)", () => {
  for (const b of [undefined, "auto", "cpu"]) {
    const pl = placeWithoutKernel("cpuFirstOp", b, host, null);
    assert.equal(pl.backend, "cpu");
    assert.equal(pl.staged, false);
  }
});

test("placeWithoutKernel: device inputs with backend cpu are staged through the host", () => {
  const pl = placeWithoutKernel("cpuFirstOp", "cpu", fakeDevice("fp32", [2, 2]));
  assert.equal(pl.backend, "cpu");
  assert.equal(pl.staged, true);
  assert.deepEqual(pl.device, { kind: "cuda", index: 0 });
});

test("placeWithoutKernel: what would need the kernel is UNSUPPORTED (device inputs under auto, backend cuda)", () => {
  unsupported(() => placeWithoutKernel("cpuFirstOp", undefined, fakeDevice("fp32", [2, 2])));
  unsupported(() => placeWithoutKernel("cpuFirstOp", "auto", fakeDevice("fp32", [2, 2])));
  unsupported(() => placeWithoutKernel("cpuFirstOp", "cuda", host));
  unsupported(() => placeWithoutKernel("cpuFirstOp", "cuda", fakeDevice("fp32", [2, 2])));
});

test("placeWithoutKernel: a host/device mix is DEVICE_MISMATCH, a bad backend VALUE, Ascend BACKEND_UNAVAILABLE", () => {
  assert.throws(() => placeWithoutKernel("cpuFirstOp", "cpu", host, fakeDevice("fp32", [2, 2])), (e: unknown) => e instanceof TkError && e.code === "DEVICE_MISMATCH");
  assert.throws(() => placeWithoutKernel("cpuFirstOp", "gpu", host), (e: unknown) => e instanceof TkError && e.arg === "backend" && e.code === "VALUE");
  assert.throws(() => placeWithoutKernel("cpuFirstOp", "ascend", host), (e: unknown) => e instanceof TkError && e.code === "BACKEND_UNAVAILABLE");
});

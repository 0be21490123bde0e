/**
 * Host tensors, views, safetensors and config (spec/API.md §2).
 * @module
 */
import assert from "node:assert/strict";
import { config, encodeSafetensors, type HostTensor, readSafetensors, tensor, TkError, writeSafetensors } from "../mod.ts";
import { test } from "./harness.ts";

test("tensor() views a TypedArray without copying and exposes dtype, shape, strides and data", () => {
  const data = new Float32Array(12);
  const t = tensor(data, [3, 4], "fp32");
  assert.equal(t.data, data);
  assert.deepEqual([...t.shape], [3, 4]);
  assert.deepEqual([...t.strides], [4, 1]);
  assert.ok(Object.isFrozen(t.shape) && Object.isFrozen(t.strides));
  assert.equal(t.numel, 12);
  assert.ok(t.isContiguous());
});

test("tensor() converts number[] with RNE for narrow floats", () => {
  const t = tensor([1, 1.00390625, -2, 1e6], [4], "bf16");
  assert.deepEqual([...t.data], [0x3f80, 0x3f80, 0xc000, 0x4974]);
  const e = tensor([448, 500, -0], [3], "e4m3");
  assert.deepEqual([...e.data], [0x7e, 0x7e, 0x80]);
});

test("slice, transpose and view share the data and compute strides", () => {
  const t = tensor(new Float32Array(24).map((_, i) => i), [4, 6], "fp32");
  const s = t.slice(1, 2, 5);
  assert.deepEqual([...s.shape], [4, 3]);
  assert.equal(s.offset, 2);
  assert.equal((s.data as Float32Array)[s.offset + 1 * s.strides[0] + 2 * s.strides[1]], 10);
  assert.ok(!s.isContiguous());
  const tt = t.transpose();
  assert.deepEqual([...tt.strides], [1, 6]);
  assert.throws(() => s.view([12]), TkError);
  assert.deepEqual([...t.view([2, 12]).strides], [12, 1]);
});

test("viewAs reinterprets bytes and rescales the last dimension", () => {
  const t = tensor(new Int32Array([0x04030201, 0x08070605]), [1, 2], "int32");
  const b = t.viewAs("uint8");
  assert.deepEqual([...b.shape], [1, 8]);
  assert.deepEqual([...(b.data as Uint8Array)], [1, 2, 3, 4, 5, 6, 7, 8]);
});

test("safetensors round-trips every dtype, strided views written contiguous", async () => {
  const tensors = {
    a: tensor(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3], "fp32").slice(1, 1),
    b: tensor(new Uint16Array([0x3f80, 0x4000]), [2], "bf16"),
    c: tensor(new Uint8Array([0x38, 0x7e]), [1, 2], "e4m3"),
    d: tensor(new Uint8Array([0x21]), [1, 1], "e2m1x2"),
    e: tensor(new BigInt64Array([-5n, 7n]), [2], "int64"),
    f: tensor(new Int32Array([1, -1]), [2], "int32"),
  };
  const bytes = await encodeSafetensors(tensors, { note: "x" });
  const { tensors: r, metadata } = await readSafetensors(bytes);
  assert.equal(metadata.note, "x");
  assert.deepEqual([...(r.a as HostTensor).data], [2, 3, 5, 6]);
  assert.deepEqual([...(r.a as HostTensor).shape], [2, 2]);
  assert.equal(r.c.dtype, "e4m3");
  assert.equal(r.d.dtype, "e2m1x2");
  assert.deepEqual([...(r.e as HostTensor).data], [-5n, 7n]);
  const path = `/tmp/tk-test-${Math.random().toString(36).slice(2)}.safetensors`;
  await writeSafetensors(path, tensors);
  const back = await readSafetensors(path, { names: ["f"] });
  assert.deepEqual(Object.keys(back.tensors), ["f"]);
  assert.deepEqual([...(back.tensors.f as HostTensor).data], [1, -1]);
});

test("config has upstream's defaults, validates settings and resets", () => {
  config.reset();
  assert.equal(config.amaxClamp.e4m3, Math.fround(1e-4));
  assert.equal(config.amaxClamp.e2m1, 6 * 2 ** -126);
  assert.equal(config.amaxClamp["e4m3/e4m3sf"], 0.875);
  assert.equal(config.amaxClamp["e2m1/e4m3sf"], 0.01171875);
  assert.equal(config.tokenAlignment, 128);
  assert.equal(config.pdl, true);
  assert.equal(config.deterministic, true);
  assert.equal(config.numSms, null);
  config.amaxClamp.e4m3 = 0.5;
  config.tokenAlignment = 64;
  assert.equal(config.amaxClamp.e4m3, 0.5);
  assert.throws(() => (config.tokenAlignment = 0), (e: unknown) => e instanceof TkError && e.code === "CONFIG");
  assert.throws(() => (config.amaxClamp.e4m3 = 0), (e: unknown) => e instanceof TkError && e.code === "CONFIG");
  assert.throws(() => (config.numSms = 1.5), (e: unknown) => e instanceof TkError && e.code === "CONFIG");
  assert.equal((config.toJSON() as { tokenAlignment: number }).tokenAlignment, 64);
  config.reset();
  assert.equal(config.amaxClamp.e4m3, Math.fround(1e-4));
  assert.equal(config.tokenAlignment, 128);
});

test("the amax clamp in config changes the scales of the next cast", async () => {
  const { perTokenCastWithSfOnly } = await import("../mod.ts");
  const x = tensor(new Float32Array(64), [1, 64], "fp32");
  const before = (perTokenCastWithSfOnly(x, { fmt: "e4m3", numPerChannels: 64 }) as HostTensor).data[0];
  assert.equal(before, Math.fround(Math.fround(1e-4) / 448));
  config.amaxClamp.e4m3 = 448;
  try {
    assert.equal((perTokenCastWithSfOnly(x, { fmt: "e4m3", numPerChannels: 64 }) as HostTensor).data[0], 1);
  } finally {
    config.reset();
  }
});

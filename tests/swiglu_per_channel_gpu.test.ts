/**
 * The CUDA kernels of `swigluForwardAndPerChannelCastAndTranspose` (spec/quant.md §8.6) against the CPU reference,
 * byte for byte over every byte of both output allocations, on fresh random inputs from printed seeds: every option
 * combination (numPerTokens, roundSf, clampValue, withoutTranspose) at small and medium shapes, one full-size
 * sample, every bf16 gate pattern (the kernel's expf table), the composition of the device swigluForward and the
 * device per-channel casts, staging and streams. There are no conformance vectors for this op
 * (tests/golden/README.md), and no value inside a device tensor steers an access, so there is no guard to test.
 * Skipped, and counted as skipped, without a GPU.
 * @module
 */
import assert from "node:assert/strict";
import {
  createStream,
  DeviceTensor,
  HostTensor,
  perChannelCast,
  perChannelCastAndTranspose,
  type Quantized,
  swigluForward,
  tensor,
  toDevice,
  toHost,
} from "../mod.ts";
import { encodeBf16 } from "../core/dtype.ts";
import { contiguousHost } from "../core/tensor.ts";
import { launchCount } from "../ffi/cuda.ts";
import { swigluForwardAndPerChannelCastAndTranspose as fused, type SwigluForwardAndPerChannelCastAndTransposeOptions } from "../ops/quant/swiglu_per_channel.ts";
import { logicalBytes } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, readAllocation, storageBytes, uploadView } from "./gpu_util.ts";
import { randomX } from "./swiglu_per_channel_util.ts";

type Opts = SwigluForwardAndPerChannelCastAndTransposeOptions;

/** Runs the op on a host input (CPU reference) and on its device copy; compares both whole allocations. */
function compare(label: string, x: HostTensor, dx: DeviceTensor, o: Opts): void {
  const [cd, cs] = fused(x, o);
  const [gd, gs] = fused(dx, o);
  try {
    assertBytesEqual(readAllocation(gd as DeviceTensor), storageBytes(cd as HostTensor), `${label} data`);
    assertBytesEqual(readAllocation(gs as DeviceTensor), storageBytes(cs as HostTensor), `${label} sf`);
    assert.deepEqual([...gd.shape, ...gd.strides, ...gs.shape, ...gs.strides], [...cd.shape, ...cd.strides, ...cs.shape, ...cs.strides], `${label} geometry`);
  } finally {
    dispose(gd, gs);
  }
}

const BASE = { fmt: "e4m3" } as const;
const CLAMPS = [undefined, 6.5, 0.1];

for (const numPerTokens of [32, 128] as const) {
  for (const withoutTranspose of [false, true]) {
    const seed = 9000 + numPerTokens + (withoutTranspose ? 1 : 0);
    gpuTest(`swigluForwardAndPerChannelCastAndTranspose kernel = reference: numPerTokens ${numPerTokens}, withoutTranspose ${withoutTranspose}, roundSf and clamp both ways, 128x64 … 512x1088 (seed ${seed})`, () => {
      console.log(`swiglu per-channel seed ${seed}`);
      const rand = rng(seed);
      for (const [T, H] of [[128, 64], [256, 192], [384, 320], [512, 1088], [0, 128]]) {
        const x = randomX(rand, T, H);
        const dx = uploadView(x);
        for (const roundSf of [false, true]) {
          for (const clampValue of CLAMPS) {
            compare(`${T}x${H} round=${roundSf} clamp=${clampValue}`, x, dx, { ...BASE, numPerTokens, roundSf, withoutTranspose, clampValue });
          }
        }
        dispose(dx);
      }
    });
  }
}

gpuTest("swigluForwardAndPerChannelCastAndTranspose kernel = reference at full size: 4096 x 2·7168, numPerTokens 128, transposed (seed 9300)", () => {
  const x = randomX(rng(9300), 4096, 7168);
  const dx = uploadView(x);
  compare("4096x7168", x, dx, { ...BASE, numPerTokens: 128 });
  dispose(dx);
});

gpuTest("swigluForwardAndPerChannelCastAndTranspose kernel = reference for every bf16 gate pattern (the expf table), with and without clamp", () => {
  // 65536 gates (every pattern once), up = 1.5, in a [256, 2·256] input: rows and columns both see all kinds
  const T = 256, H = 256;
  const v = new Uint16Array(T * 2 * H);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < H; j++) {
      v[t * 2 * H + j] = (t * H + j) & 0xffff;
      v[t * 2 * H + H + j] = encodeBf16(1.5);
    }
  }
  const x = tensor(v, [T, 2 * H], "bf16");
  const dx = uploadView(x);
  for (const clampValue of [undefined, 3.3]) {
    for (const numPerTokens of [32, 128] as const) compare(`all gates clamp=${clampValue} r${numPerTokens}`, x, dx, { ...BASE, numPerTokens, clampValue, withoutTranspose: true });
  }
  dispose(dx);
});

gpuTest("swigluForwardAndPerChannelCastAndTranspose on the device equals perChannelCast(AndTranspose) of the device bf16 swigluForward (seed 9400)", async () => {
  const rand = rng(9400);
  for (const [T, H] of [[256, 512], [384, 192]]) {
    const dx = uploadView(randomX(rand, T, H));
    for (const clampValue of CLAMPS) {
      const act = swigluForward(dx, { fmt: "bf16", clampValue });
      for (const numPerTokens of [32, 128] as const) {
        for (const roundSf of [false, true]) {
          const label = `${T}x${H} r${numPerTokens} round=${roundSf} clamp=${clampValue}`;
          const o = { ...BASE, numPerTokens, roundSf };
          const [ft, fs] = fused(dx, { ...o, clampValue });
          const [et, es] = perChannelCastAndTranspose(act, o);
          assertBytesEqual(readAllocation(ft as DeviceTensor), readAllocation(et as DeviceTensor), `${label} transposed data`);
          assertBytesEqual(readAllocation(fs as DeviceTensor), readAllocation(es as DeviceTensor), `${label} transposed sf`);
          const [fd, fs2] = fused(dx, { ...o, clampValue, withoutTranspose: true });
          // perChannelCast needs H % 128 == 0; otherwise compare with the host transpose of the transposed cast
          const plain = H % 128 === 0 ? perChannelCast(act, o) : null;
          const want = plain ? readAllocation(plain[0] as DeviceTensor) : logicalBytes(contiguousHost((await toHost(et)).transpose()));
          assertBytesEqual(readAllocation(fd as DeviceTensor), want, `${label} data`);
          assertBytesEqual(readAllocation(fs2 as DeviceTensor), readAllocation(es as DeviceTensor), `${label} sf`);
          dispose(ft, fs, et, es, fd, fs2, plain);
        }
      }
      dispose(act);
    }
    dispose(dx);
  }
});

gpuTest("swigluForwardAndPerChannelCastAndTranspose: host input with backend cuda equals the CPU reference; device input with backend cpu equals the kernel", async () => {
  const x = randomX(rng(9500), 256, 320);
  const o = { ...BASE, numPerTokens: 32, roundSf: true, clampValue: 6.5 } as const;
  const [cd, cs] = fused(x, o);
  const [hd, hs] = fused(x, { ...o, backend: "cuda" });
  assert.ok(hd instanceof HostTensor && hs instanceof HostTensor, "staged results come back to the host");
  assertBytesEqual(storageBytes(hd), storageBytes(cd as HostTensor), "staged data");
  assertBytesEqual(storageBytes(hs), storageBytes(cs as HostTensor), "staged sf");
  const dx = uploadView(x);
  const [kd, ks] = fused(dx, o);
  const [rd, rs] = fused(dx, { ...o, backend: "cpu" });
  assert.ok(rd instanceof DeviceTensor && rs instanceof DeviceTensor, "a cpu run of device inputs returns device tensors");
  assertBytesEqual(logicalBytes(await toHost(kd)), logicalBytes(await toHost(rd)), "device data");
  assertBytesEqual(logicalBytes(await toHost(ks)), logicalBytes(await toHost(rs)), "device sf");
  dispose(dx, kd, ks, rd, rs);
});

gpuTest("swigluForwardAndPerChannelCastAndTranspose runs on a created stream (seed 9600)", async () => {
  const s = createStream(0);
  const x = randomX(rng(9600), 384, 448);
  const dx = toDevice(x, 0, { stream: s });
  const [d, sf] = fused(dx, { ...BASE, numPerTokens: 128, stream: s }) as Quantized;
  await s.synchronize();
  const [cd, cs] = fused(x, { ...BASE, numPerTokens: 128 });
  assertBytesEqual(readAllocation(d as DeviceTensor), storageBytes(cd as HostTensor), "data");
  assertBytesEqual(readAllocation(sf as DeviceTensor), storageBytes(cs as HostTensor), "sf");
  dispose(dx, d, sf);
  s[Symbol.dispose]();
});

gpuTest("swigluForwardAndPerChannelCastAndTranspose with 0 tokens launches nothing and returns [H, 0] data and [0, H] sf", () => {
  const dx = toDevice(tensor(new Uint16Array(0), [0, 256], "bf16"));
  const before = launchCount();
  const [d, s] = fused(dx, { ...BASE, numPerTokens: 32 });
  const [d2, s2] = fused(dx, { ...BASE, numPerTokens: 128, withoutTranspose: true });
  assert.equal(launchCount(), before);
  assert.deepEqual([[...d.shape], [...s.shape], [...d2.shape], [...s2.shape]], [[128, 0], [0, 128], [0, 128], [0, 128]]);
  dispose(dx, d, s, d2, s2);
});

/**
 * `swigluForwardAndPerChannelCastAndTranspose` (CPU reference, spec/quant.md §8.6): equal, byte for byte, to the
 * composition of its parts (bf16 `swigluForward`, then `perChannelCastAndTranspose`; `withoutTranspose` gives its
 * transpose) on random
 * inputs from a printed seed; and the refusals of bad inputs.
 * @module
 */
import assert from "node:assert/strict";
import { type HostTensor, perChannelCastAndTranspose, swigluForward, tensor } from "../mod.ts";
import { swigluForwardAndPerChannelCastAndTranspose } from "../ops/quant/swiglu_per_channel.ts";
import { logicalBytes } from "./golden.ts";
import { assertBytesEqual, hasGpu, rng, test } from "./harness.ts";
import { cudaOrUnavailable, fakeDevice, refuses } from "./refuses.ts";

test("swigluForwardAndPerChannelCastAndTranspose equals perChannelCastAndTranspose of the bf16 swigluForward; withoutTranspose is its transpose", () => {
  const seed = 20261130;
  const r = rng(seed);
  for (const [T, H] of [[128, 64], [256, 192]] as const) {
    const x = tensor(Array.from({ length: T * 2 * H }, () => (r() - 0.5) * 30 * (r() < 0.05 ? 100 : 1)), [T, 2 * H], "bf16");
    for (const numPerTokens of [32, 128] as const) {
      for (const roundSf of [false, true]) {
        for (const clampValue of [undefined, 6.5]) {
          const label = `seed ${seed} T=${T} H=${H} r=${numPerTokens} round=${roundSf} clamp=${clampValue}`;
          const act = swigluForward(x, { fmt: "bf16", clampValue }) as HostTensor;
          const [td, ts] = swigluForwardAndPerChannelCastAndTranspose(x, { fmt: "e4m3", numPerTokens, roundSf, clampValue });
          const [ed, es] = perChannelCastAndTranspose(act, { fmt: "e4m3", numPerTokens, roundSf });
          assertBytesEqual(logicalBytes(td as HostTensor), logicalBytes(ed as HostTensor), `${label} data`);
          assertBytesEqual(logicalBytes(ts as HostTensor), logicalBytes(es as HostTensor), `${label} sf`);
          const [nd, ns] = swigluForwardAndPerChannelCastAndTranspose(x, { fmt: "e4m3", numPerTokens, roundSf, clampValue, withoutTranspose: true });
          const t = (td as HostTensor).data as Uint8Array, n = (nd as HostTensor).data as Uint8Array;
          const back = new Uint8Array(T * H);
          for (let i = 0; i < T; i++) for (let j = 0; j < H; j++) back[i * H + j] = t[j * T + i];
          assert.deepEqual([...nd.shape], [T, H], `${label} withoutTranspose shape`);
          assertBytesEqual(n.subarray(0, T * H), back, `${label} data (withoutTranspose)`);
          assertBytesEqual(logicalBytes(ns as HostTensor), logicalBytes(ts as HostTensor), `${label} sf (withoutTranspose)`);
        }
      }
    }
  }
});

test("swigluForwardAndPerChannelCastAndTranspose refuses bad inputs, naming the argument", () => {
  const op = "swigluForwardAndPerChannelCastAndTranspose";
  const f = swigluForwardAndPerChannelCastAndTranspose;
  const x = tensor(new Uint16Array(128 * 128), [128, 128], "bf16");
  const o = { fmt: "e4m3", numPerTokens: 32 } as const;
  refuses(op, "x", "DTYPE", () => f(tensor(new Float32Array(128 * 128), [128, 128], "fp32"), o), []);
  refuses(op, "x", "SHAPE", () => f(tensor(new Uint16Array(64 * 128), [64, 128], "bf16"), o), []);
  refuses(op, "x", "SHAPE", () => f(tensor(new Uint16Array(128 * 192), [128, 192], "bf16"), o), []);
  refuses(op, "numPerTokens", "VALUE", () => f(x, { fmt: "e4m3", numPerTokens: 64 as never }), [x]);
  refuses(op, "fmt", "VALUE", () => f(x, { fmt: "e2m1" as never, numPerTokens: 32 }), [x]);
  refuses(op, "clampValue", "VALUE", () => f(x, { ...o, clampValue: NaN }), [x]);
  refuses(op, "withoutTranspose", "VALUE", () => f(x, { ...o, withoutTranspose: 1 as never }), [x]);
  refuses(op, "out", "VALUE", () => f(x, { ...o, out: x } as never), [x]);
  refuses(op, "x", "SHAPE", () => f(fakeDevice("bf16", [64, 128]), o), []);
});

test("swigluForwardAndPerChannelCastAndTranspose with backend cuda runs its kernel on host inputs (BACKEND_UNAVAILABLE without a device)", () => {
  const x = tensor(new Uint16Array(128 * 128), [128, 128], "bf16");
  cudaOrUnavailable("swigluForwardAndPerChannelCastAndTranspose", () => swigluForwardAndPerChannelCastAndTranspose(x, { fmt: "e4m3", numPerTokens: 32, backend: "cuda" }), hasGpu);
});

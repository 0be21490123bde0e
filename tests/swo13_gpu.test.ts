/**
 * GPU test of `out` of swigluForwardAndPerTokenCast (ops/quant/swiglu.ts castOuts): device `out.data` / `out.sf`
 * receive the CPU reference's bytes and are returned, on the aligned forms (bf16 H = 7168: `_anrt`; H = 2048:
 * `_anl`), main's kernel (fp32 x; a data view one byte off 8-byte alignment), fp32 and packed row-major scales, only
 * one of the two given, 0 rows, and host tensors with `backend: "cuda"` (staged, the outs written back). The symbol
 * of each device launch is asserted (swigluLastLaunch). Skips without a GPU, as the other GPU tests.
 */
import assert from "node:assert/strict";
import { type DeviceTensor, empty, HostTensor, swigluForwardAndPerTokenCast } from "../mod.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { swigluLastLaunch } from "../ops/quant/swiglu_launch.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, sameAllocation, samePair, uploadView } from "./gpu_util.ts";

function swFn(name: string): number {
  return kernelFunction("test", { kind: "cuda", index: 0 }, `tk_swiglu_forward__${name}`);
}

gpuTest("swigluForwardAndPerTokenCast with out { data?, sf? } on the device = the CPU reference, the given tensors returned: _anrt, _anl, main's kernel, fp32 and packed sf, 0 rows, staged host outs (seed 13801)", () => {
  const rand = rng(13801);
  for (const [dtype, T, H, sym] of [["bf16", 33, 7168, "bf16_e4m3_g128_anrt"], ["bf16", 70, 2048, "bf16_e4m3_g128_anl"], ["fp32", 9, 2048, "fp32_e4m3_g128"], ["bf16", 0, 2048, null]] as const) {
    const x = randomInput(rand, T, 2 * H, dtype);
    const dx = uploadView(x);
    try {
      for (const sfo of [{}, { roundSf: true, usePackedUe8m0: true }]) {
        const o = { fmt: "e4m3", numPerChannels: 128, ...sfo } as const;
        const want = swigluForwardAndPerTokenCast(x, o) as [HostTensor, HostTensor];
        const label = `${dtype} ${T}x${H} ${JSON.stringify(sfo)}`;
        // both given, one given each
        for (const keys of [["data", "sf"], ["data"], ["sf"]]) {
          const data = keys.includes("data") ? empty([T, H], "e4m3", { device: 0 }) as DeviceTensor : undefined;
          const sf = keys.includes("sf") ? empty([...want[1].shape], want[1].dtype, { device: 0 }) as DeviceTensor : undefined;
          const got = swigluForwardAndPerTokenCast(dx, { ...o, out: { data, sf } });
          if (sym) assert.equal(swigluLastLaunch().fn, swFn(sym), `${label} out ${keys}: symbol`);
          if (data) assert.equal(got[0], data, `${label}: returns out.data`);
          if (sf) assert.equal(got[1], sf, `${label}: returns out.sf`);
          samePair(got, want, `${label} out ${keys}`);
        }
        // a data view one byte into its allocation: main's kernel (no aligned form), same bytes
        if (T > 0 && dtype === "bf16") {
          // (the allocation around the view holds 0x5A sentinels, which must survive: byte 0 and the 7 after it)
          const back = uploadView(new HostTensor(new Uint8Array(T * H + 8).fill(0x5a), "e4m3", [T * H + 8], [1]));
          const view = back.slice(0, 1, 1 + T * H).view([T, H]) as DeviceTensor;
          const got = swigluForwardAndPerTokenCast(dx, { ...o, out: { data: view } });
          assert.equal(swigluLastLaunch().fn, swFn("bf16_e4m3_g128"), `${label} data off alignment: main's kernel`);
          assert.equal(got[0], view, `${label} data off alignment: returns out.data`);
          const whole = new Uint8Array(T * H + 8).fill(0x5a);
          whole.set(want[0].bytes, 1);
          assertBytesEqual(readAllocation(back), whole, `${label} data off alignment (whole allocation)`);
          sameAllocation(got[1], want[1], `${label} data off alignment: sf`);
          dispose(got[1], view, back);
        }
        // host tensors on the device backend: staged, written back into the host outs
        const hd = new HostTensor(new Uint8Array(T * H).fill(0xa5), "e4m3", [T, H], [H, 1]);
        const hs = new HostTensor(want[1].dtype === "fp32" ? new Float32Array(want[1].numel) : new Int32Array(want[1].numel), want[1].dtype, [...want[1].shape], [...want[1].strides]);
        const got = swigluForwardAndPerTokenCast(x, { ...o, backend: "cuda", out: { data: hd, sf: hs } });
        assert.equal(got[0], hd, `${label} staged: returns out.data`);
        assert.equal(got[1], hs, `${label} staged: returns out.sf`);
        assertBytesEqual(hd.bytes, want[0].bytes, `${label} staged data`);
        assertBytesEqual(hs.bytes, want[1].bytes, `${label} staged sf`);
      }
    } finally {
      dispose(dx);
    }
  }
});

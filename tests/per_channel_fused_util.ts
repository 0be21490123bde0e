/**
 * The device-index check shared by the perChannelCastFused form tests (tests/pcfb25_gpu.test.ts: bf16 input,
 * tests/pcf_pipelined_gpu.test.ts: e4m3 input): a gather of 400 rows from T = 200 with three indices ≥ T — in the
 * first block, the third and the partial last one — must raise DEVICE_VALUE once per bad entry (3) and write those
 * rows as the reference writes index −1 (zeros), for every form and grid size.
 */
import assert from "node:assert/strict";
import { type DeviceTensor, type HostTensor, perChannelCastFused, type PerChannelCastFusedOptions, type Quantized, tensor, TkError, toDevice, toHost } from "../mod.ts";
import { perChannelLastSymbol } from "../ops/quant/per_channel_cast.ts";
import { dispose, gatherPositions, sameAllocation, up } from "./gpu_util.ts";

/**
 * Runs the check on host input `x` ([200, H] rows: a bf16 tensor or a quantized pair) with options `extra`; each form
 * runs under `withTuning(form, sms, …)` for sms = all, 1 and 3 and must launch `symOf(form)`.
 */
export async function checkBadIndices<F extends string>(
  rand: () => number,
  x: HostTensor | Quantized,
  extra: Omit<PerChannelCastFusedOptions, "fmt" | "numPerTokens" | "posToToken">,
  forms: readonly F[],
  withTuning: <R>(form: F, sms: number | null, f: () => R) => R,
  symOf: (form: F) => string,
  label: string,
): Promise<void> {
  const T = 200;
  const pos = gatherPositions(rand, 400, T); // four blocks: bad entries in the first, the third and the partial last one
  const idx = pos.data as Int32Array;
  idx[3] = T;
  idx[260] = 1 << 30;
  idx[390] = 0x7fffffff;
  const fixed = tensor(Int32Array.from(idx, (v) => (v >= T ? -1 : v)), [400], "int32");
  const o = { fmt: "e4m3", numPerTokens: 128, ...extra } as const;
  const [cd, cs] = perChannelCastFused(x as never, { ...o, posToToken: fixed });
  const dx = up(x as never) as DeviceTensor | Quantized;
  const dpos = toDevice(pos);
  try {
    for (const form of forms) {
      for (const sms of [null, 1, 3]) {
        const l = `${label} ${form || "base"} sms ${sms}`;
        const [d, s] = withTuning(form, sms, () => perChannelCastFused(dx as never, { ...o, posToToken: dpos }));
        assert.equal(perChannelLastSymbol(), symOf(form), l);
        await assert.rejects(toHost(d), (e: unknown) =>
          e instanceof TkError && e.code === "DEVICE_VALUE" && e.op === "perChannelCastFused" && /3 illegal value\(s\).*posToToken/.test(e.message), l);
        sameAllocation(d, cd, `${l} data`);
        sameAllocation(s, cs, `${l} sf`);
        dispose(d, s);
      }
    }
  } finally {
    dispose(dx, dpos, cd, cs);
  }
}

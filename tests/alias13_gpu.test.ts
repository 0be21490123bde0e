/**
 * GPU test of the deprecated alias `rmsnormForwardAndPerTokenCast` (ops/norm/norm_forward_and_per_token_cast.ts):
 * device inputs give the CPU reference's bytes — 128 channels through the fused norm + cast kernel, the whole row
 * through normForward then perTokenCast on one stream (the temporary rows released in stream order) — for fp32 and
 * bf16, every sf layout, 0 rows, and 4001 × 7168; the whole-row result also equals the two device calls made by
 * hand. Skips without a GPU, as the other GPU tests.
 */
import { type HostTensor, normForward, perTokenCast, rmsnormForwardAndPerTokenCast } from "../mod.ts";
import { gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, samePair, SF_LAYOUTS_FP32, uploadView } from "./gpu_util.ts";

gpuTest("rmsnormForwardAndPerTokenCast on the device = the CPU reference: 128 channels (fused kernel) and the whole row (normForward + perTokenCast), fp32 and bf16, every sf layout, 0 rows, 4001 × 7168 (seed 13401)", () => {
  const rand = rng(13401);
  for (const dtype of ["fp32", "bf16"] as const) {
    for (const [T, H] of [[0, 256], [1, 128], [33, 1024], [257, 7168], [4001, 7168]] as const) {
      const x = randomInput(rand, T, H, dtype);
      const w = randomInput(rand, 1, H, dtype).view([H]) as HostTensor;
      const dx = uploadView(x);
      const dw = uploadView(w);
      try {
        for (const N of H === 128 ? [128] : [128, H]) {
          for (const [name, o] of SF_LAYOUTS_FP32) {
            if (T === 4001 && name !== (N === 128 ? "packed-col" : "fp32")) continue;
            const label = `${dtype} ${T}x${H} npc ${N} ${name}`;
            const opts = { eps: 1e-6, fmt: "e4m3", numPerChannels: N, ...o } as const;
            const want = rmsnormForwardAndPerTokenCast(x, w, opts);
            const got = rmsnormForwardAndPerTokenCast(dx, dw, opts);
            samePair(got, want, label);
            if (N === H) {
              const [n, rstd] = normForward(dx, dw, { eps: 1e-6 });
              const byHand = perTokenCast(n, { fmt: "e4m3", numPerChannels: N, ...o });
              samePair(byHand, want, `${label} (normForward + perTokenCast by hand)`);
              dispose(n, rstd, ...byHand);
            }
            dispose(...got);
          }
        }
      } finally {
        dispose(dx, dw);
      }
    }
  }
});

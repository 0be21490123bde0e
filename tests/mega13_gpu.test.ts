/**
 * GPU test of `megaMoeSf` (kernels-src/cuda/norm/mega_moe_sf.cu, launched after the fused norm + cast): device inputs
 * give the CPU reference's bytes on the whole megaMoeSf allocation (the words at (ρ(t), g) and every other word's
 * sentinel) and on q, for m ∈ {1, 7, 128, 200, 4096}, T up to 8192 × 7168, fp32 and packed scales, row- and
 * column-major, pitches at the minimum and above, an element offset; device inputs with `backend: "cpu"` (the words'
 * span staged through the host) give the same bytes. Skips without a GPU, as the other GPU tests.
 */
import { HostTensor, normForwardAndPerTokenCast, toHost } from "../mod.ts";
import { kernelFunction } from "../ffi/cuda.ts";
import { logicalBytes } from "./golden.ts";
import { assertBytesEqual, gpuTest, rng } from "./harness.ts";
import { dispose, randomInput, readAllocation, samePair, SF_LAYOUTS_FP32, storageBytes, uploadView } from "./gpu_util.ts";

const SENTINEL = 0x5a5a5a5a;
/** The rounded scale layouts (megaMoeSf needs roundSf): fp32 and packed, row- and column-major. */
const LAYOUTS = SF_LAYOUTS_FP32.filter(([, o]) => o.roundSf === true);

gpuTest("normForwardAndPerTokenCast megaMoeSf on the device = the CPU reference on the whole allocation, and with backend \"cpu\" on device inputs (seed 13601)", async () => {
  const rand = rng(13601);
  // (the scatter kernel is loadable: a missing symbol would fail here rather than inside the op)
  kernelFunction("test", { kind: "cuda", index: 0 }, "tk_mega_moe_sf__scatter");
  let k = 0;
  for (const [T, H, ms] of [[1, 128, [1, 7]], [130, 512, [1, 7, 128, 200]], [4001, 7168, [128, 4096]], [8192, 7168, [200]]] as const) {
    for (const dtype of ["bf16", "fp32"] as const) {
      if (T >= 4001 && dtype === "fp32") continue;
      const x = randomInput(rand, T, H, dtype);
      const w = randomInput(rand, 1, H, dtype).view([H]) as HostTensor;
      const dx = uploadView(x);
      const dw = uploadView(w);
      const G = H / 128;
      try {
        for (const m of ms) {
          for (const [name, o] of LAYOUTS) {
            if (T >= 4001 && name !== (k % 2 === 0 ? "packed-col" : "fp32-round")) continue;
            const rows = Math.ceil(T / m) * 128 * Math.ceil(m / 128);
            const R = rows + (k % 3 === 0 ? 0 : 9);
            const off = k % 2;
            const total = off + (G - 1) * R + rows + 5;
            const host = new HostTensor(new Int32Array(total).fill(SENTINEL), "int32", [T, G], [1, R], off);
            const label = `${dtype} ${T}x${H} m ${m} ${name} R ${R} +${off}`;
            const opts = { eps: 1e-6, fmt: "e4m3", numPerChannels: 32, ...o, megaMoeBlockM: m } as const;
            const dmm = uploadView(host);
            const [qc] = normForwardAndPerTokenCast(x, w, { ...opts, megaMoeSf: host });
            const [qg] = normForwardAndPerTokenCast(dx, dw, { ...opts, megaMoeSf: dmm });
            samePair(qg, qc, `${label}: q`);
            assertBytesEqual(readAllocation(dmm), storageBytes(host), `${label}: megaMoeSf (kernel)`);
            dispose(...qg);
            // device inputs with backend "cpu": the same bytes through the host
            const dmm2 = uploadView(new HostTensor(new Int32Array(total).fill(SENTINEL), "int32", [T, G], [1, R], off));
            const [q2] = normForwardAndPerTokenCast(dx, dw, { ...opts, megaMoeSf: dmm2, backend: "cpu" });
            // (a host-staged result comes back as a contiguous copy of the logical tensor, as every op's)
            for (let i = 0; i < 2; i++) {
              assertBytesEqual(logicalBytes(await toHost(q2[i])), logicalBytes(qc[i] as HostTensor), `${label}: q[${i}] (backend cpu)`);
            }
            assertBytesEqual(readAllocation(dmm2), storageBytes(host), `${label}: megaMoeSf (backend cpu)`);
            dispose(...q2, dmm, dmm2);
            k++;
          }
        }
      } finally {
        dispose(dx, dw);
      }
    }
  }
});

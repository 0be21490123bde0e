/**
 * `deno task bench`: perTokenCast on device tensors (4096 and 16384 tokens × 7168, bf16 → e4m3, groups of 128,
 * with and without packed UE8M0). Each iteration enqueues 20 casts and waits for them, so the time per
 * iteration / 20 is the device time per cast plus a share of one sync. `deno task bench:roofline` prints the same
 * cases as µs, GB/s and % of the copy rate.
 * @module
 */
import { devices, perTokenCast, synchronize } from "../mod.ts";
import { CASES, randomBf16 } from "./common.ts";

const gpu = devices().length > 0;
for (const T of [4096, 16384]) {
  const x = gpu ? randomBf16(T, 7168) : null;
  for (const c of CASES) {
    Deno.bench({
      name: `perTokenCast ${T}x7168 bf16 → e4m3/128 ${c.name} (×20)`,
      ignore: !gpu,
      async fn() {
        for (let i = 0; i < 20; i++) {
          const [d, s] = perTokenCast(x!, c.opts);
          d.dispose();
          s.dispose();
        }
        await synchronize(0);
      },
    });
  }
}

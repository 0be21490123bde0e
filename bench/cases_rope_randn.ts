/**
 * Roofline cases of the rope and randn family: `applyRotary` in place on DeepSeek MLA's query (the trailing 64
 * rope dims of [T, 128, 192] bf16, interleaved) and on a contiguous [T, 128, 64] bf16 query (NeoX), and `randn`
 * into a preallocated 2^28-element fp32 tensor. Bytes are what the op must touch: the rotated elements read and
 * written, one cos/sin row and one position per token; randn writes only.
 * @module
 */
import { applyRotary, type DeviceTensor, empty, randn, tensor, toDevice, zeros } from "../mod.ts";
import type { BenchCase } from "./cases.ts";

const HEADS = 128;
const ROPE_DIM = 64;

/** An fp32 cos/sin cache [rows, 64] of true rotations (bench data only; the library builds no cache). */
function rotationCache(rows: number): DeviceTensor {
  const c = new Float32Array(rows * ROPE_DIM);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < ROPE_DIM / 2; i++) {
      const theta = r * 10000 ** (-2 * i / ROPE_DIM);
      c[r * ROPE_DIM + i] = Math.cos(theta);
      c[r * ROPE_DIM + ROPE_DIM / 2 + i] = Math.sin(theta);
    }
  }
  return toDevice(tensor(c, [rows, ROPE_DIM], "fp32"));
}

function rotaryCase(T: number, width: number, interleaved: boolean): BenchCase {
  // The kernel has no data-dependent path, so zeros time like any values (and set up in no time at 800 MB).
  const storage = zeros([T, HEADS, width], "bf16", { device: 0 }) as DeviceTensor;
  const q = storage.slice(-1, width - ROPE_DIM, width);
  const cache = rotationCache(T);
  const positions = toDevice(tensor(Int32Array.from({ length: T }, (_, t) => (t * 7919) % T), [T], "int32"));
  const options = { positions, interleaved };
  return {
    op: "applyRotary",
    tokens: T,
    hidden: HEADS * ROPE_DIM,
    variant: width === ROPE_DIM ? "bf16 [T,128,64] NeoX" : `bf16 MLA q[..., ${width - ROPE_DIM}:${width}] of [T,128,${width}] interleaved`,
    bytes: T * HEADS * ROPE_DIM * 2 * 2 + T * ROPE_DIM * 4 + T * 4,
    run: () => void applyRotary(q, cache, options),
    dispose: () => {
      q.dispose();
      storage.dispose();
      cache.dispose();
      positions.dispose();
    },
  };
}

function randnCase(): BenchCase {
  const n = 2 ** 28;
  const out = empty([n], "fp32", { device: 0 }) as DeviceTensor;
  const options = { seed: 1n, out };
  return {
    op: "randn",
    tokens: n,
    hidden: 1,
    variant: "fp32 2^28 (binary64 Box–Muller, compute-bound by design)",
    bytes: n * 4,
    run: () => void randn([n], options),
    dispose: () => out.dispose(),
  };
}

/** The cases of this family, set up on device 0. */
export function cases(): BenchCase[] {
  const out: BenchCase[] = [];
  for (const T of [8192, 16384]) {
    out.push(rotaryCase(T, 192, true));
    out.push(rotaryCase(T, ROPE_DIM, false));
  }
  out.push(randnCase());
  return out;
}

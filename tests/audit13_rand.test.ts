/**
 * Audit 13 (docs/audit13.md), rand family: bad inputs of `randnLike` and `setSeed` beyond the ones in
 * tests/randn.test.ts (each refused call also leaves the global `(seed, offset)` state alone), empty tensors (an
 * unseeded call advances the offset exactly once, also for 0 elements: spec/norm-rope-rand.md §C.3), and
 * `randnLike` of a strided view (contiguous result, the values of `randn` of its shape).
 * @module
 */
import assert from "node:assert/strict";
import { type HostTensor, tensor } from "../core/tensor.ts";
import { hostStrided } from "../core/tensor.ts";
import { randn, randnLike, setSeed } from "../ops/rand/mod.ts";
import { test } from "./harness.ts";
import { refuses } from "./refuses.ts";

const DEFAULT_SEED = 67280421310721;
const bytes = (t: unknown) => (t as HostTensor).bytes.slice();

/** Runs `f` after `setSeed(seed)`, restoring the default state afterwards (the state is process-wide). */
function withSeed(seed: number, f: () => void): void {
  setSeed(seed);
  try {
    f();
  } finally {
    setSeed(DEFAULT_SEED);
  }
}

/** The next unseeded call must be the one with offset `offset` of `seed`: the refused calls did not advance it. */
function assertNextOffset(seed: number, offset: bigint, label: string): void {
  assert.deepEqual(bytes(randn([8])), bytes(randn([8], { seed: BigInt(seed), offset })), label);
}

test("randnLike refuses bad inputs, naming the argument, and consumes no offset", () => {
  const t = tensor(new Float32Array(4), [4], "fp32");
  withSeed(41, () => {
    refuses("randnLike", "seed", "VALUE", () => randnLike(t, { seed: 1 as never }), [t]);
    refuses("randnLike", "seed", "VALUE", () => randnLike(t, { seed: -1n }), [t]);
    refuses("randnLike", "offset", "VALUE", () => randnLike(t, { offset: 1n }), [t]);
    refuses("randnLike", "offset", "VALUE", () => randnLike(t, { seed: 1n, offset: 1n << 64n }), [t]);
    refuses("randnLike", "t", "VALUE", () => randnLike([1, 2] as never), [t]);
    refuses("randnLike", "t", "DTYPE", () => randnLike(tensor(new Uint8Array(4), [4], "e4m3")), [t]);
    refuses("randnLike", "dtype", "VALUE", () => randnLike(t, { dtype: "bf16" } as never), [t]);
    refuses("randnLike", "backend", "BACKEND_UNAVAILABLE", () => randnLike(t, { backend: "ascend" }), [t]);
    assertNextOffset(41, 0n, "refused randnLike calls advanced the offset");
  });
});

test("setSeed refuses bad seeds and offsets and leaves the state as it was", () => {
  withSeed(42, () => {
    refuses("setSeed", "seed", "VALUE", () => setSeed("1" as never), []);
    refuses("setSeed", "seed", "VALUE", () => setSeed(NaN), []);
    refuses("setSeed", "seed", "VALUE", () => setSeed(2 ** 60), []); // not a safe integer: use a bigint
    refuses("setSeed", "seed", "VALUE", () => setSeed(1n << 64n), []);
    refuses("setSeed", "offset", "VALUE", () => setSeed(1, 1n << 64n), []);
    refuses("setSeed", "offset", "VALUE", () => setSeed(1, 0.5), []);
    assertNextOffset(42, 0n, "a refused setSeed changed the state");
  });
});

test("a refused unseeded randn consumes no offset", () => {
  withSeed(43, () => {
    refuses("randn", "dtype", "DTYPE", () => randn([2], { dtype: "e4m3" as never }), []);
    refuses("randn", "shape", "SHAPE", () => randn([2 ** 27, 2 ** 27]), []);
    refuses("randn", "sed", "VALUE", () => randn([2], { sed: 1n } as never), []);
    assertNextOffset(43, 0n, "refused randn calls advanced the offset");
  });
});

test("randn and randnLike of empty shapes return empty tensors; an unseeded one advances the offset once", () => {
  withSeed(44, () => {
    for (const dtype of ["fp32", "bf16", "fp16"] as const) {
      const z = randn([2, 0, 3], { dtype });
      assert.deepEqual([z.dtype, [...z.shape], z.numel], [dtype, [2, 0, 3], 0]);
    }
    const e = randnLike(tensor(new Uint16Array(0), [0, 4], "bf16"));
    assert.deepEqual([e.dtype, [...e.shape]], ["bf16", [0, 4]]);
    assert.equal(randn([0], { seed: 5n, offset: 9n }).numel, 0); // seeded: the state is not touched
    assert.equal(randn([0], { out: tensor(new Float32Array(0), [0], "fp32") }).numel, 0);
    // Unseeded calls so far: 3 (randn) + 1 (randnLike) + 1 (randn with out) = 5.
    assertNextOffset(44, 5n, "empty unseeded calls must advance the offset exactly once each");
  });
});

test("randnLike of a strided view is contiguous and has the values of randn of its shape", () => {
  const base = tensor(new Uint16Array(6 * 10), [6, 10], "fp16");
  for (const v of [base.slice(1, 2, 7), base.transpose(), base.slice(0, 1, 5).transpose()]) {
    const r = randnLike(v, { seed: 7n, offset: 3n });
    assert.ok(r.isContiguous() && r.dtype === "fp16" && r.shape.every((d, i) => d === v.shape[i]), `[${v.shape}]`);
    assert.deepEqual(bytes(r), bytes(randn([...v.shape], { dtype: "fp16", seed: 7n, offset: 3n })), `[${v.shape}] strides [${v.strides}]`);
  }
  assert.ok(base.bytes.every((b) => b === 0), "randnLike wrote into its argument");
});

test("randn into a strided out writes its logical elements only", () => {
  const o = hostStrided([3, 4], [1, 5], "fp32", 20); // column-major, two padding elements after each column
  o.bytes.fill(0xa5);
  randn([3, 4], { seed: 11n, out: o });
  const want = (randn([3, 4], { seed: 11n }) as HostTensor).data as Float32Array;
  const d = o.data as Float32Array;
  for (let i = 0; i < 3; i++) for (let j = 0; j < 4; j++) assert.ok(Object.is(d[i + 5 * j], want[i * 4 + j]), `(${i}, ${j})`);
  for (let j = 0; j < 4; j++) for (const b of new Uint8Array(d.buffer, (3 + 5 * j) * 4, 8)) assert.equal(b, 0xa5, `padding after column ${j}`);
});

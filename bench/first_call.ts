/**
 * First call in a fresh process: how long the library's own part takes (shim hash check + dlopen, cubin hash
 * check + module load, the first launch) next to the driver's part (cuInit, primary context). Prints one JSON
 * line. Run by bench/roofline.ts in a child process; also runnable alone.
 * @module
 */
const t0 = performance.now();
const { perTokenCast, synchronize, devices } = await import("../mod.ts");
const { timings } = await import("../ffi/cuda.ts");
const { toDevice, tensor } = await import("../mod.ts");
const tImport = performance.now() - t0;
const t1 = performance.now();
const n = devices().length;
const x = toDevice(tensor(new Uint16Array(128 * 7168), [128, 7168], "bf16"));
await synchronize(0);
const tSetup = performance.now() - t1;
const t2 = performance.now();
const [d, s] = perTokenCast(x, { fmt: "e4m3", numPerChannels: 128 });
const tFirst = performance.now() - t2;
await synchronize(0);
const tFirstDone = performance.now() - t2;
const t3 = performance.now();
const [d2, s2] = perTokenCast(x, { fmt: "e4m3", numPerChannels: 128 });
const tSecond = performance.now() - t3;
await synchronize(0);
for (const t of [x, d, s, d2, s2]) (t as { dispose(): void }).dispose();
const library = timings.shimHashMs + timings.shimOpenMs + timings.moduleHashMs + timings.moduleLoadMs + (tFirst - timings.moduleHashMs - timings.moduleLoadMs);
console.log(JSON.stringify({
  devices: n,
  importMs: tImport,
  ...timings,
  firstCallHostMs: tFirst,
  firstCallDoneMs: tFirstDone,
  secondCallHostMs: tSecond,
  setupMs: tSetup,
  libraryPartMs: library,
  driverPartMs: timings.driverInitMs + timings.contextMs,
}));

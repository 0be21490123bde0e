/**
 * The roofline cases of every op family beyond the per-token cast. Each family adds a file
 * `bench/cases_<family>.ts` exporting `cases(): BenchCase[]` and lists it in FAMILIES below; `bench/roofline.ts`
 * times every case (device time, CUDA events) next to the same run's cuMemcpyDtoD rate.
 * @module
 */

/** One roofline row: an op at one shape, its setup done, timed by calling `run` (which must enqueue work only). */
export interface BenchCase {
  /** API name of the op, e.g. "perBlockCast". */
  readonly op: string;
  /** Tokens (rows) of the case. */
  readonly tokens: number;
  /** Hidden size (row width) of the case. */
  readonly hidden: number;
  /** Short variant label, e.g. "bf16→e4m3 128x128". */
  readonly variant: string;
  /** Bytes the op must move at least (reads + writes), the numerator of GB/s. */
  readonly bytes: number;
  /** Enqueues one call (preallocated outputs, no sync). */
  readonly run: () => void;
  /** Frees what setup allocated. */
  readonly dispose: () => void;
}

/** A family's case factory; called only with a CUDA device present. */
export type CaseFactory = () => BenchCase[];

/** Families, in table order: module path (relative to bench/) → loaded lazily. */
export const FAMILIES: readonly string[] = [
  "cases_per_block.ts",
  "cases_elem.ts",
  "cases_cast_block.ts",
  "cases_per_channel.ts",
  "cases_swiglu.ts",
  "cases_swiglu_per_channel.ts",
  "cases_norm.ts",
  "cases_rope_randn.ts",
  "cases_more.ts",
  // one line per family: "cases_<family>.ts",
];

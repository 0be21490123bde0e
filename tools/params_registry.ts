/**
 * Which TypeScript parameter declarations generate which C header (DESIGN §5). `deno task build` writes the
 * headers; `deno task verify-prebuilt` regenerates them in memory and fails when a header on disk (and so the
 * cubins built from it) no longer matches its declaration.
 * @module
 */
import { type ParamsLayout, paramsHeader } from "../core/params.ts";
import { CastBackParams } from "../ops/quant/cast_back.params.ts";
import { PerTokenCastParams } from "../ops/quant/per_token_cast.params.ts";
import { GuardSelftestParams } from "../ops/runtime/guard_selftest.params.ts";
import { SwigluParams } from "../ops/quant/swiglu.params.ts";

/** A generated header: its path, the declarations it comes from, and the structs. */
export interface GeneratedHeader {
  readonly path: string;
  readonly from: string;
  readonly layouts: readonly ParamsLayout[];
}

export const GENERATED_HEADERS: readonly GeneratedHeader[] = [
  { path: "kernels-src/cuda/generated/quant_params.h", from: "ops/quant/*.params.ts", layouts: [PerTokenCastParams, CastBackParams] },
  { path: "kernels-src/cuda/generated/runtime_params.h", from: "ops/runtime/*.params.ts", layouts: [GuardSelftestParams] },
  { path: "kernels-src/cuda/generated/swiglu_params.h", from: "ops/quant/swiglu.params.ts", layouts: [SwigluParams] },
  // one line per family header, e.g. kernels-src/cuda/generated/<family>_params.h
];

/** The text a generated header must have. */
export function headerText(h: GeneratedHeader): string {
  return paramsHeader(h.from, h.layouts);
}

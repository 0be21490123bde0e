/**
 * Which TypeScript parameter declarations generate which C header (DESIGN §5). `deno task build` writes the
 * headers; `deno task verify-prebuilt` regenerates them in memory and fails when a header on disk (and so the
 * cubins built from it) no longer matches its declaration.
 * @module
 */
import { type ParamsLayout, paramsHeader } from "../core/params.ts";
import { NormBackwardParams } from "../ops/norm/norm_backward.params.ts";
import { NormForwardParams } from "../ops/norm/norm_forward.params.ts";
import { MegaMoeSfParams } from "../ops/norm/mega_moe_sf.params.ts";
import { CastBackParams } from "../ops/quant/cast_back.params.ts";
import { PerTokenCastParams } from "../ops/quant/per_token_cast.params.ts";
import { PerChannelCastParams, TransposeWeightSfParams } from "../ops/quant/per_channel_cast.params.ts";
import { PerBlockCastLosslessParams, PerBlockCastParams } from "../ops/quant/per_block_cast.params.ts";
import { CastAndCastBackParams, CastParams, UnpackParams } from "../ops/quant/elem.params.ts";
import { GuardSelftestParams } from "../ops/runtime/guard_selftest.params.ts";
import { RandnParams } from "../ops/rand/randn.params.ts";
import { RopeParams } from "../ops/transform/rope.params.ts";
import { SwigluParams } from "../ops/quant/swiglu.params.ts";
import { SwigluPerChannelParams } from "../ops/quant/swiglu_per_channel.params.ts";
import { CastBlockParams } from "../ops/quant/cast_block.params.ts";

/** A generated header: its path, the declarations it comes from, and the structs. */
export interface GeneratedHeader {
  readonly path: string;
  readonly from: string;
  readonly layouts: readonly ParamsLayout[];
}

export const GENERATED_HEADERS: readonly GeneratedHeader[] = [
  { path: "kernels-src/cuda/generated/quant_params.h", from: "ops/quant/*.params.ts", layouts: [PerTokenCastParams, CastBackParams] },
  { path: "kernels-src/cuda/generated/runtime_params.h", from: "ops/runtime/*.params.ts", layouts: [GuardSelftestParams] },
  { path: "kernels-src/cuda/generated/per_channel_params.h", from: "ops/quant/per_channel_cast.params.ts", layouts: [PerChannelCastParams, TransposeWeightSfParams] },
  { path: "kernels-src/cuda/generated/per_block_params.h", from: "ops/quant/per_block_cast.params.ts", layouts: [PerBlockCastParams, PerBlockCastLosslessParams] },
  { path: "kernels-src/cuda/generated/rope_randn_params.h", from: "ops/transform/rope.params.ts, ops/rand/randn.params.ts", layouts: [RopeParams, RandnParams] },
  { path: "kernels-src/cuda/generated/norm_params.h", from: "ops/norm/*.params.ts", layouts: [NormForwardParams, NormBackwardParams] },
  { path: "kernels-src/cuda/generated/elem_params.h", from: "ops/quant/elem.params.ts", layouts: [CastParams, CastAndCastBackParams, UnpackParams] },
  { path: "kernels-src/cuda/generated/swiglu_params.h", from: "ops/quant/swiglu.params.ts", layouts: [SwigluParams] },
  { path: "kernels-src/cuda/generated/swiglu_per_channel_params.h", from: "ops/quant/swiglu_per_channel.params.ts", layouts: [SwigluPerChannelParams] },
  { path: "kernels-src/cuda/generated/cast_block_params.h", from: "ops/quant/cast_block.params.ts", layouts: [CastBlockParams] },
  { path: "kernels-src/cuda/generated/mega_moe_params.h", from: "ops/norm/mega_moe_sf.params.ts", layouts: [MegaMoeSfParams] },
  // one line per family header, e.g. kernels-src/cuda/generated/<family>_params.h
];

/** The text a generated header must have. */
export function headerText(h: GeneratedHeader): string {
  return paramsHeader(h.from, h.layouts);
}

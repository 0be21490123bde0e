/**
 * The quantization family (`jsr:@tk/kernels/quant`).
 * @module
 */
export {
  perTokenCast,
  type PerTokenCastOptions,
  perTokenCastWithPrecomputedSf,
  type PerTokenCastWithPrecomputedSfOptions,
  perTokenCastWithSfOnly,
  type PerTokenCastWithSfOnlyOptions,
  type QuantFmt,
  type SfOptions,
} from "./per_token_cast.ts";
export { castBack, type CastBackOptions, perTokenCastBack, type PerTokenCastBackOptions } from "./cast_back.ts";

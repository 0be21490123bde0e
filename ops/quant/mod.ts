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
export {
  perBlockCast,
  type PerBlockCastOptions,
  perBlockCastWithPrecomputedSf,
  type PerBlockCastWithPrecomputedSfOptions,
  perBlockCastWithSfOnly,
  type PerBlockCastWithSfOnlyOptions,
} from "./per_block_cast.ts";
export { perTokenCastAndCastBack, type PerTokenCastAndCastBackOptions } from "./per_token_cast_and_cast_back.ts";
export { cast, type CastOptions } from "./cast.ts";
export { stochasticCast, type StochasticCastOptions } from "./stochastic_cast.ts";
export type { StochasticDtype } from "./stochastic.ref.ts";
export { unpackFromE2m1fnX2, type UnpackFromE2m1fnX2Options } from "./unpack.ts";
export {
  perChannelCast,
  perChannelCastAndTranspose,
  type PerChannelCastAndTransposeOptions,
  perChannelCastFused,
  type PerChannelCastFusedOptions,
  type PerChannelCastOptions,
} from "./per_channel_cast.ts";
export { perBlockCastLossless, type PerBlockCastLosslessOptions } from "./per_block_cast_lossless.ts";
export { batchedTransposeWeightSf, type BatchedTransposeWeightSfOptions } from "./batched_transpose_weight_sf.ts";
// The runtime types the quant signatures mention, so that this entry point documents on its own.
export type { Backend, OpOptions } from "../../core/backend.ts";
export type { DType, TypedArray } from "../../core/dtype.ts";
export {
  type Device,
  DeviceStorage,
  DeviceTensor,
  HostTensor,
  type Quantized,
  type Stream,
  type Tensor,
  TensorBase,
} from "../../core/tensor.ts";
export {
  swigluForward,
  swigluForwardAndPerTokenCast,
  type SwigluCommonOptions,
  type SwigluForwardAndPerTokenCastOptions,
  type SwigluForwardOptions,
} from "./swiglu.ts";
export {
  swigluBackward,
  swigluBackwardAndPerTokenCast,
  type SwigluBackwardAndPerTokenCastOptions,
  type SwigluBackwardCommonOptions,
  type SwigluBackwardOptions,
} from "./swiglu_backward.ts";
export {
  swigluForwardAndPerChannelCastAndTranspose,
  type SwigluForwardAndPerChannelCastAndTransposeOptions,
} from "./swiglu_per_channel.ts";

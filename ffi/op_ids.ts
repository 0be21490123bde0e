/**
 * Op ids and condition bits reported through the device error word (DESIGN §6). A kernel that meets an illegal
 * value inside a device tensor records its op id (first fault wins) and ORs a condition bit; the next sync point
 * turns that into a `TkError` with code `DEVICE_VALUE` naming the op and the condition.
 * @module
 */

/** Registered ops: id → name and the meaning of each condition bit. */
const OPS: Record<number, { name: string; conditions: Record<number, string> }> = {};

/** Registers an op id (unique, > 0) with its condition texts; returns the id. */
export function registerOpId(id: number, name: string, conditions: Record<number, string>): number {
  const prev = OPS[id];
  if (prev && prev.name !== name) throw new Error(`op id ${id} is taken by ${prev.name}`);
  OPS[id] = { name, conditions };
  return id;
}

/** Human text of an error word `[opId, bits, count, _]`. */
export function describeErrorWord(w: Uint32Array): { op: string; detail: string } {
  const entry = OPS[w[0]];
  const names: string[] = [];
  for (let b = 0; b < 32; b++) {
    const bit = 2 ** b;
    if ((w[1] >>> 0) & bit) names.push(entry?.conditions[bit] ?? `condition bit ${b}`);
  }
  return {
    op: entry?.name ?? `op #${w[0]}`,
    detail: `a kernel met ${w[2]} illegal value(s) inside a device tensor: ${names.join("; ") || "unspecified"}`,
  };
}

/**
 * Reserved ids (each op file registers its own with {@link registerOpId} and the condition texts its kernels use):
 * quant 4 perBlockCast, 5 perBlockCastWithSfOnly, 6 perBlockCastWithPrecomputedSf, 7 perBlockCastLossless,
 * 8 perChannelCast, 9 perChannelCastFused, 10 perChannelCastAndTranspose, 11 batchedTransposeWeightSf, 12 cast,
 * 13 stochasticCast, 14 perTokenCastAndCastBack, 15 unpackFromE2m1fnX2, 16 swigluForward,
 * 17 swigluForwardAndPerTokenCast, 18 swigluBackward, 19 swigluBackwardAndPerTokenCast,
 * 20 swigluForwardAndPerChannelCastAndTranspose; norm 100 normForward, 101 normForwardAndPerTokenCast,
 * 102 addRmsnormForwardAndPerTokenCast, 103 normBackward; transform 110 applyRotary; rand 120 randn.
 */
/** Ids of the ops of this issue; later families take the next ranges (quant 1–99, norm 100–199, …). */
export const OP_ID = {
  perTokenCast: registerOpId(1, "perTokenCast", {}),
  perTokenCastBack: registerOpId(2, "perTokenCastBack", {}),
  castBack: registerOpId(3, "castBack", {}),
  guardSelftest: registerOpId(1000, "guardSelftest", { 1: "index out of range" }),
} as const;

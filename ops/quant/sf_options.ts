/**
 * The scale-factor options shared by every cast (spec/API.md §3.1 `SfOptions`, spec/quant.md §4) and the one check
 * of their combinations (§4.3: packed ⇒ roundSf; roundSf and packed each exclude useE4m3Sf).
 * @module
 */
import { optBool } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";

/** Scale-factor options shared by the casts (spec/API.md §3.1 `SfOptions`). */
export interface SfOptions {
  /** Store sf column-major with the token dimension padded to 16 bytes (DeepGEMM's layout). Default false. */
  useTmaAlignedColMajorSf?: boolean;
  /** Round each scale up to a power of two. Default false. */
  roundSf?: boolean;
  /** Store power-of-two scales as UE8M0 bytes packed four per int32; requires `roundSf`. Default false. */
  usePackedUe8m0?: boolean;
  /** Store scales as e4m3 bytes (NVFP4-style); not with `roundSf` or packing. Default false. */
  useE4m3Sf?: boolean;
}

/** The checked flags of {@link SfOptions}. */
export interface SfFlags {
  readonly colMajor: boolean;
  readonly roundSf: boolean;
  readonly packed: boolean;
  readonly e4m3Sf: boolean;
}

/** Checks the flags and their legal combinations for `op` (every flag an optional boolean). */
export function checkSfOptions(op: string, o: SfOptions): SfFlags {
  const colMajor = optBool(op, "useTmaAlignedColMajorSf", o.useTmaAlignedColMajorSf);
  const roundSf = optBool(op, "roundSf", o.roundSf);
  const packed = optBool(op, "usePackedUe8m0", o.usePackedUe8m0);
  const e4m3Sf = optBool(op, "useE4m3Sf", o.useE4m3Sf);
  if (packed && !roundSf) throw new TkError(op, "usePackedUe8m0", "VALUE", "requires roundSf: true (UE8M0 stores powers of two)");
  if (roundSf && e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "cannot be combined with roundSf");
  if (packed && e4m3Sf) throw new TkError(op, "useE4m3Sf", "VALUE", "cannot be combined with usePackedUe8m0");
  return { colMajor, roundSf, packed, e4m3Sf };
}

/**
 * Process-wide settings, mirroring upstream `tile_kernels/config.py` (spec/API.md §2.4, DESIGN §8).
 * Values are read at call time, so a change takes effect on the next op.
 * @module
 */
import { TkError } from "./errors.ts";
import type { Device } from "./tensor.ts";

/** Keys of the amax clamp table (spec/quant.md §2.2). */
export type AmaxClampKey = "e4m3" | "e2m1" | "e4m3/e4m3sf" | "e2m1/e4m3sf";

const QMAX: Record<AmaxClampKey, number> = { "e4m3": 448, "e2m1": 6, "e4m3/e4m3sf": 448, "e2m1/e4m3sf": 6 };

/** Upstream's defaults, as binary32 values. */
export const AMAX_CLAMP_DEFAULTS: Readonly<Record<AmaxClampKey, number>> = Object.freeze({
  "e4m3": Math.fround(1e-4), // f32(0x38D1B717)
  "e2m1": 6 * 2 ** -126, // f32(0x01C00000)
  "e4m3/e4m3sf": 448 * 2 ** -9,
  "e2m1/e4m3sf": 6 * 2 ** -9,
});

let smCountOf: ((d: Device) => number) | null = null;
/** Called by `ffi/` so `config.getNumSms` can ask the device. */
export function registerSmCountProvider(f: (d: Device) => number): void {
  smCountOf = f;
}

/** The amax clamp table of {@link config} (keys of {@link AmaxClampKey}). */
export class AmaxClampTable {
  #v: Record<AmaxClampKey, number> = { ...AMAX_CLAMP_DEFAULTS };
  #def(key: AmaxClampKey) {
    Object.defineProperty(this, key, {
      enumerable: true,
      get: () => this.#v[key],
      set: (x: unknown) => {
        const f = typeof x === "number" ? Math.fround(x) : NaN;
        if (!Number.isFinite(f) || f < QMAX[key] * 2 ** -126) {
          throw new TkError("config", `amaxClamp["${key}"]`, "CONFIG", `expected a finite number ≥ ${QMAX[key]}·2^-126, got ${String(x)}`);
        }
        this.#v[key] = f;
      },
    });
  }
  constructor() {
    for (const k of Object.keys(QMAX) as AmaxClampKey[]) this.#def(k);
    Object.seal(this);
  }
  /** Restores upstream's defaults. */
  reset(): void {
    this.#v = { ...AMAX_CLAMP_DEFAULTS };
  }
}

/** The settings object behind {@link config}. */
export class Config {
  #numSms: number | null = null;
  #pdl = true;
  #deterministic = true;
  #tokenAlignment = 128;
  #defaultDevice: Device | null = null;
  /** Lower bounds on amax before a scale is computed (upstream `get_amax_clamp_for_quant`). */
  readonly amaxClamp = new AmaxClampTable() as AmaxClampTable & Record<AmaxClampKey, number>;

  /** SM-count override (upstream `set_num_sms`); null means the device's own count. */
  get numSms(): number | null {
    return this.#numSms;
  }
  set numSms(v: number | null) {
    if (v !== null && (!Number.isSafeInteger(v) || v < 1)) {
      throw new TkError("config", "numSms", "CONFIG", `expected a positive integer or null, got ${String(v)}`);
    }
    this.#numSms = v;
  }
  /** SMs used to size persistent grids on `device`: the override, capped by the device's count. */
  getNumSms(device: Device = { kind: "cuda", index: 0 }): number {
    const real = smCountOf ? smCountOf(device) : 0;
    if (this.#numSms !== null) {
      if (real && this.#numSms > real) {
        throw new TkError("config", "numSms", "CONFIG", `${this.#numSms} exceeds the ${real} SMs of device ${device.index}`);
      }
      return this.#numSms;
    }
    return real;
  }
  /**
   * Programmatic dependent launch on sm_90a+ (upstream `get_pdl`; default on). Launches that use it today:
   * - perTokenCast bf16 → e4m3 with groups of 128 and no stochasticCast (and `cast` of bf16 with [1, 128] blocks,
   *   which runs it);
   * - perTokenCast bf16 → e4m3 with stochasticCast and groups of 128 on 16-byte-accessible x and data (its
   *   `_g128_sr_wu12` kernel);
   * - perTokenCastAndCastBack bf16 → e4m3 with groups of 128 on aligned rows of H ≤ 8192 (its `_r1` kernel);
   * - normForward on aligned views (`_tp16hr`); normForwardAndPerTokenCast e4m3 on aligned views (`_br4y`; with a
   *   residual `_tp16c_res`) and addRmsnormForwardAndPerTokenCast e4m3 on aligned views (`_tp16c_res`);
   * - swigluForward bf16 → bf16, swigluForwardAndPerTokenCast bf16 → e4m3 with groups of 128 without a clamp and
   *   swigluBackward bf16 → bf16, where their aligned-only forms run (`_a`, `_an`, `_g128_anl`; at
   *   H = 7168 `_anrps` and `_g128_anrs`; backward `_a`);
   * - castBack / perTokenCastBack e4m3 → bf16 with H / 8 ≥ 256 (the segmented kernel);
   * - perBlockCastWithSfOnly (not perBlockCast nor perBlockCastWithPrecomputedSf, which run the same kernels
   *   plainly; docs/perf-notes/perf10-pdl.md);
   * - normBackward's fold when `normLaunchTuning.backwardFoldPdl` is set.
   * Not the element casts (cast, stochasticCast). It changes when a kernel may start, never the bits: every such
   * kernel waits for its predecessor before its first global memory access.
   */
  get pdl(): boolean {
    return this.#pdl;
  }
  set pdl(v: boolean) {
    if (typeof v !== "boolean") throw new TkError("config", "pdl", "CONFIG", `expected a boolean, got ${String(v)}`);
    this.#pdl = v;
  }
  /** Fixed-order reductions everywhere (default true). */
  get deterministic(): boolean {
    return this.#deterministic;
  }
  set deterministic(v: boolean) {
    if (typeof v !== "boolean") throw new TkError("config", "deterministic", "CONFIG", `expected a boolean, got ${String(v)}`);
    this.#deterministic = v;
  }
  /** Per-expert token alignment of the psum expert layout (upstream `set_token_alignment`), default 128. */
  get tokenAlignment(): number {
    return this.#tokenAlignment;
  }
  set tokenAlignment(v: number) {
    if (!Number.isSafeInteger(v) || v < 1) throw new TkError("config", "tokenAlignment", "CONFIG", `expected a positive integer, got ${String(v)}`);
    this.#tokenAlignment = v;
  }
  /** Device used when host inputs are forced onto a device backend; null means device 0. */
  get defaultDevice(): Device | null {
    return this.#defaultDevice;
  }
  set defaultDevice(v: Device | null) {
    if (v !== null && (typeof v !== "object" || !Number.isSafeInteger(v.index) || v.index < 0)) {
      throw new TkError("config", "defaultDevice", "CONFIG", `expected a device or null, got ${JSON.stringify(v)}`);
    }
    this.#defaultDevice = v;
  }
  /** Restores every default. */
  reset(): void {
    this.#numSms = null;
    this.#pdl = true;
    this.#deterministic = true;
    this.#tokenAlignment = 128;
    this.#defaultDevice = null;
    this.amaxClamp.reset();
  }
  /** The settings as a plain object. */
  toJSON(): Record<string, unknown> {
    return {
      numSms: this.#numSms,
      pdl: this.#pdl,
      deterministic: this.#deterministic,
      tokenAlignment: this.#tokenAlignment,
      amaxClamp: { ...this.amaxClamp },
      defaultDevice: this.#defaultDevice,
    };
  }
}

/**
 * The process-wide configuration.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { config } from "./config.ts";
 * config.tokenAlignment = 64;
 * assert.ok(config.toJSON().tokenAlignment === 64);
 * config.reset();
 * ```
 */
export const config: Config = new Config();

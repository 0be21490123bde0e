/**
 * Backend choice per call site (DESIGN §3, spec/API.md §1.6): device tensors run where they live; host tensors
 * run the CPU reference unless `backend` (or `TK_BACKEND`, read once at import) names a device backend.
 * @module
 */
import { config } from "./config.ts";
import { getEnv } from "./env.ts";
import { TkError } from "./errors.ts";
import { type Device, DeviceTensor, type Stream, type Tensor } from "./tensor.ts";

/** Backends an op may be asked for. */
export type Backend = "auto" | "cpu" | "cuda" | "ascend";

/** Options every op takes. */
export interface OpOptions {
  /** Where to run: "auto" (default) follows the inputs. */
  backend?: Backend;
  /** Stream of a device run; default: the device's default stream. */
  stream?: Stream;
}

/** Where a call runs. `staged`: inputs are copied to that side and results copied back. */
export type Placement =
  | { readonly backend: "cpu"; readonly staged: false; readonly device: null }
  | { readonly backend: "cpu"; readonly staged: true; readonly device: Device }
  | { readonly backend: "cuda"; readonly staged: boolean; readonly device: Device };

const BACKENDS: readonly Backend[] = ["auto", "cpu", "cuda", "ascend"];
const ENV_BACKEND = getEnv("TK_BACKEND");

function envBackend(): Backend {
  if (ENV_BACKEND === undefined || ENV_BACKEND === "") return "cpu";
  if (ENV_BACKEND === "cpu" || ENV_BACKEND === "cuda" || ENV_BACKEND === "ascend") return ENV_BACKEND;
  throw new TkError("runtime", "TK_BACKEND", "CONFIG", `must be cpu, cuda or ascend (got ${JSON.stringify(ENV_BACKEND)})`);
}

let probe: ((op: string, device: Device) => void) | null = null;
/** Called by `ffi/`: makes sure a device backend is usable for `op` (driver, device index), else throws. */
export function registerBackendProbe(f: (op: string, device: Device) => void): void {
  probe = f;
}

function usable(op: string, device: Device): Device {
  if (!probe) throw new TkError(op, "backend", "BACKEND_UNAVAILABLE", "no device runtime is loaded");
  probe(op, device);
  return device;
}

const CPU: Placement = Object.freeze({ backend: "cpu", staged: false, device: null });

/**
 * Resolves the placement of one call from `opts.backend` and up to four tensor arguments (null/undefined are
 * skipped). Throws `DEVICE_MISMATCH` for host/device mixes or two devices, `BACKEND_UNAVAILABLE` for
 * Ascend.
 */
export function place(
  op: string,
  backend: unknown,
  t0: Tensor | null | undefined,
  t1?: Tensor | null,
  t2?: Tensor | null,
  t3?: Tensor | null,
): Placement {
  if (backend !== undefined && !BACKENDS.includes(backend as Backend)) {
    throw new TkError(op, "backend", "VALUE", `must be one of ${BACKENDS.join(", ")} (got ${JSON.stringify(backend)})`);
  }
  let device: Device | null = null;
  let host = false;
  for (let i = 0; i < 4; i++) {
    const t = i === 0 ? t0 : i === 1 ? t1 : i === 2 ? t2 : t3;
    if (!t) continue;
    if (t instanceof DeviceTensor) {
      if (device && (device.kind !== t.device.kind || device.index !== t.device.index)) {
        throw new TkError(op, "device", "DEVICE_MISMATCH", `inputs live on ${device.kind}:${device.index} and ${t.device.kind}:${t.device.index}`);
      }
      device = t.device;
    } else host = true;
  }
  if (device && host) throw new TkError(op, "device", "DEVICE_MISMATCH", "inputs mix host and device tensors");
  const asked = (backend ?? "auto") as Backend;
  if (asked === "ascend" || (device && device.kind === "ascend")) {
    throw new TkError(op, "backend", "BACKEND_UNAVAILABLE", "the Ascend backend is not built yet (prebuilt/ascend/README.md)");
  }
  if (device) {
    if (asked === "cpu") return { backend: "cpu", staged: true, device };
    return { backend: "cuda", staged: false, device: usable(op, device) };
  }
  const b = asked === "auto" ? envBackend() : asked;
  if (b === "ascend") throw new TkError(op, "backend", "BACKEND_UNAVAILABLE", "the Ascend backend is not built yet (prebuilt/ascend/README.md)");
  if (b === "cuda") return { backend: "cuda", staged: true, device: usable(op, config.defaultDevice ?? { kind: "cuda", index: 0 }) };
  return CPU;
}

/** Where a call of an op without a CUDA kernel runs: the CPU, or the CPU with device tensors staged through it. */
export type HostPlacement = Extract<Placement, { backend: "cpu" }>;

/**
 * `place()` for an op without a CUDA kernel. Host inputs run the CPU reference; device inputs with
 * `backend: "cpu"` are staged through the host. Everything that would need the (missing) kernel — device inputs
 * with `backend` "auto" or "cuda", host inputs with `backend: "cuda"` or `TK_BACKEND=cuda` — is refused with
 * `UNSUPPORTED` before anything is written. Backend values, device mixes and Ascend are checked by `place()`.
 */
export function placeWithoutKernel(
  op: string,
  backend: unknown,
  t0: Tensor | null | undefined,
  t1?: Tensor | null,
  t2?: Tensor | null,
  t3?: Tensor | null,
): HostPlacement {
  const onDevice = t0 instanceof DeviceTensor || t1 instanceof DeviceTensor || t2 instanceof DeviceTensor ||
    t3 instanceof DeviceTensor;
  // Device inputs under "auto", and an explicit "cuda", are placed as for "cpu" first, so that device mixes are
  // reported as such and no device runtime is asked for a kernel that does not exist.
  const asked = backend === "cuda" || (onDevice && (backend === undefined || backend === "auto")) ? "cpu" : backend;
  const pl = place(op, asked, t0, t1, t2, t3);
  if (pl.backend === "cuda" || asked !== backend) {
    throw new TkError(op, "backend", "UNSUPPORTED", `${op} has no CUDA kernel yet; run it with host tensors or backend: "cpu"`);
  }
  return pl;
}

/**
 * Devices of every backend (spec/API.md §2.3).
 * @module
 */
import type { Device } from "../core/tensor.ts";
import { cudaDeviceInfo, cudaDevices, type DeviceInfo } from "./cuda.ts";

export type { DeviceInfo };

/**
 * Every usable device: CUDA devices when the driver loads, never a throw without one (an empty list). A shim
 * whose bytes do not match the manifest is still refused (`INTEGRITY`).
 *
 * @example
 * ```ts
 * import { devices } from "../mod.ts";
 * console.log(devices().length >= 0);
 * ```
 */
export function devices(): Device[] {
  return cudaDevices();
}

/** Name, arch, SM count, memory and whether shipped kernels serve this device. */
export function deviceInfo(device: Device | number = 0): DeviceInfo {
  return cudaDeviceInfo(device);
}

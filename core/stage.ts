/**
 * Staging between host and device for calls whose inputs live on one side and whose backend is the other
 * (spec/API.md §1.6: host inputs with a forced device backend, device inputs with `backend: "cpu"`).
 * @module
 */
import type { HostPlacement } from "./backend.ts";
import { elementBytes } from "./dtype.ts";
import { TkError } from "./errors.ts";
import {
  contiguousHost,
  type Device,
  DeviceTensor,
  deviceRuntime,
  HostTensor,
  type Tensor,
  toDevice,
  toHostSync,
} from "./tensor.ts";

/** Host copy of a tensor (the tensor itself when it is already on the host). */
export function onHost<T extends Tensor | null | undefined>(t: T): HostTensor | Exclude<T, Tensor> {
  if (t === null || t === undefined) return t as Exclude<T, Tensor>;
  return t instanceof HostTensor ? t : toHostSync(t as DeviceTensor);
}

/** Device copy of a host tensor on `device`, keeping its strides' meaning (a contiguous copy). */
export function onDevice<T extends Tensor | null | undefined>(t: T, device: Device): DeviceTensor | Exclude<T, Tensor> {
  if (t === null || t === undefined) return t as Exclude<T, Tensor>;
  return t instanceof DeviceTensor ? t : toDevice(t as HostTensor, device);
}

/** Writes the elements of `src` into `dst` (same shape; any strides on the host, contiguous on a device). */
export function copyInto(op: string, dst: Tensor, src: Tensor): void {
  const s = onHost(src) as HostTensor;
  if (dst instanceof HostTensor) {
    const n = dst.shape.length;
    const idx = new Array<number>(n).fill(0);
    const d = dst.data as Float32Array;
    const sd = s.data as Float32Array;
    for (let i = 0; i < dst.numel; i++) {
      let o = dst.offset;
      let so = s.offset;
      for (let k = 0; k < n; k++) {
        o += idx[k] * dst.strides[k];
        so += idx[k] * s.strides[k];
      }
      d[o] = sd[so];
      for (let k = n - 1; k >= 0; k--) {
        if (++idx[k] < dst.shape[k]) break;
        idx[k] = 0;
      }
    }
    return;
  }
  if (!dst.isContiguous()) throw new TkError(op, "out", "OUT_MISMATCH", "a staged call can only write contiguous device outputs");
  const c = s.isContiguous() ? s : contiguousHost(s);
  const eb = elementBytes(c.dtype);
  const bytes = new Uint8Array(c.data.buffer, c.data.byteOffset + c.offset * eb, c.numel * eb);
  if (bytes.length) deviceRuntime(op).copyHtoD(dst.device, dst.addr, bytes, dst.storage.stream);
}

/** Disposes device tensors made for staging (host tensors and nulls are ignored). */
export function disposeStaged(...ts: (Tensor | null | undefined)[]): void {
  for (const t of ts) if (t instanceof DeviceTensor) t.dispose();
}

/**
 * Host inputs on a forced device backend: copies `inputs` (nulls pass through) to `device`, runs `run` on the
 * copies, brings every result back to the host, writes it into the matching `outs` entry when one is given, and
 * frees what it made. Results come back in order.
 */
export function runOnDeviceStaged(
  op: string,
  device: Device,
  inputs: readonly (Tensor | null)[],
  outs: readonly (Tensor | null)[],
  run: (d: (DeviceTensor | null)[]) => Tensor[],
): Tensor[] {
  const staged = inputs.map((t) => (t ? (onDevice(t, device) as DeviceTensor) : null));
  try {
    return run(staged).map((r, i) => {
      const h = onHost(r) as HostTensor;
      disposeStaged(r);
      const o = outs[i];
      if (!o) return h;
      copyInto(op, o, h);
      return o;
    });
  } finally {
    staged.forEach((t, i) => {
      if (t !== inputs[i]) disposeStaged(t);
    });
  }
}

/** Device inputs run on the CPU: puts a host result where the inputs live (into `out` when given). */
export function resultToDevice(op: string, h: HostTensor, out: Tensor | null, device: Device): Tensor {
  if (!out) return onDevice(h, device) as DeviceTensor;
  copyInto(op, out, h);
  return out;
}

/**
 * Writes a host copy made by `onHost` (a copy of the storage span the view touches, same strides) back over that
 * span of the device view: the inverse of `toHostSync`, for in-place ops staged through the host. Elements of
 * the span outside the view go back with the bits they were read with.
 */
export function writeBackSpan(op: string, dst: DeviceTensor, src: HostTensor): void {
  if (dst.numel === 0) return;
  let lo = dst.offset;
  for (let i = 0; i < dst.shape.length; i++) if (dst.strides[i] < 0) lo += (dst.shape[i] - 1) * dst.strides[i];
  const eb = elementBytes(dst.dtype);
  const bytes = new Uint8Array(src.data.buffer, src.data.byteOffset, src.data.byteLength);
  deviceRuntime(op).copyHtoD(dst.device, dst.storage.base + lo * eb, bytes, dst.storage.stream);
}

/**
 * Delivers the host result of a CPU run according to its placement (spec/API.md §1.6): the result itself, or a
 * caller's `out` rewritten with it; for device inputs run with `backend: "cpu"`, a device copy (into `out` when
 * given).
 */
export function deliverHostResult(op: string, res: HostTensor, out: Tensor | null, pl: HostPlacement): Tensor {
  if (pl.staged) return resultToDevice(op, res, out, pl.device);
  if (!out) return res;
  copyInto(op, out, res);
  return out;
}

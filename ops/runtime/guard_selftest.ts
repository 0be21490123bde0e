/**
 * Internal: a gather whose indices live on the device, used by the tests to exercise DESIGN §6 end to end (the
 * kernel clamps every access and reports an illegal index through the device error word; the next sync point
 * throws `DEVICE_VALUE`). Not exported from mod.ts.
 * @module
 */
import { checkTensor } from "../../core/checks.ts";
import { TkError } from "../../core/errors.ts";
import { deviceEmptyStrided, deviceRuntime, DeviceTensor } from "../../core/tensor.ts";
import { errorWordPtr, kernelFunction, LaunchPacket } from "../../ffi/cuda.ts";
import { OP_ID } from "../../ffi/op_ids.ts";
import { GuardSelftestParams } from "./guard_selftest.params.ts";

const packet = new LaunchPacket(GuardSelftestParams);

/** `out[i] = src[indices[i]]` for in-range indices, 0 otherwise; out-of-range indices set the error word. */
export function guardSelftest(indices: DeviceTensor, src: DeviceTensor): DeviceTensor {
  const op = "guardSelftest";
  checkTensor(op, "indices", indices, ["int32"], 1);
  checkTensor(op, "src", src, ["fp32"], 1);
  if (!(indices instanceof DeviceTensor) || !(src instanceof DeviceTensor)) throw new TkError(op, "indices", "VALUE", "device tensors only");
  const n = indices.shape[0];
  const stream = deviceRuntime(op).defaultStream(indices.device);
  const out = deviceEmptyStrided(op, indices.device, [n], [1], "fp32", n, stream);
  if (n === 0) return out;
  const fn = kernelFunction(op, indices.device, "tk_guard_selftest__i32");
  const w = packet.w;
  packet.u64(w.indices, indices.addr);
  packet.u64(w.src, src.addr);
  packet.u64(w.out, out.addr);
  packet.u64(w.error_word, errorWordPtr(op, indices.device));
  packet.u32(w.n, n);
  packet.u32(w.src_len, src.shape[0]);
  packet.u32(w.op_id, OP_ID.guardSelftest);
  packet.setLaunch(fn, stream.handle, Math.ceil(n / 256), 256, 0, false, indices.device.index);
  packet.launch(op);
  return out;
}

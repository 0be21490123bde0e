// Bulk copies (TMA, cp.async.bulk, sm_90+) and the mbarrier they complete on: the bulk sibling of ldst.cuh (same
// rule: every access is `asm volatile`, so it stays under its guard). Kept apart from ldst.cuh so that only the
// kernels that use them depend on them.
#pragma once
#include <stdint.h>
#include "fp.cuh"

namespace tk {

// One thread moves a whole contiguous run of bytes between global and shared memory with one instruction: whole
// 128-byte lines, no registers, nothing per byte on the issuing warp. Sizes and both addresses: multiples of 16.
// A load completes on an mbarrier (the expected byte count is armed by the issuing thread); a store belongs to a
// bulk group, waited (read side) before its shared source is written again or the block exits.

// mbarrier at shared address `bar` for `count` arrivals, made visible to the async proxy (the bulk copies).
TK_DEV void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// This thread's arrival on `bar`, arming the phase to also wait for `bytes` bytes of bulk copies.
TK_DEV void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Wait until the phase of parity `parity` of `bar` has completed (its bytes have landed and are visible).
TK_DEV void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "WAIT:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT;\n\t}" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Orders this thread's generic-proxy accesses of shared memory before its (or, after a barrier, the block's) later
// bulk copies: a bulk store reads what the threads wrote; a bulk load overwrites what they read.
TK_DEV void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// `bytes` from global `src` to shared `dst`, completing on the mbarrier `bar` (armed by mbar_arrive_expect_tx).
TK_DEV void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// `bytes` from shared `src` to global `dst`, in a new bulk group.
TK_DEV void bulk_store(void* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Wait until this thread's bulk groups have read their shared sources (the global writes complete on their own).
TK_DEV void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }

}  // namespace tk

// Bulk copies (TMA, cp.async.bulk, sm_90+) and the mbarrier they complete on: the bulk sibling of ldst.cuh (same
// rule: every access is `asm volatile`, so it stays under its guard). Kept apart from ldst.cuh so that only the
// kernels that use them depend on them.
#pragma once
#include <stdint.h>
#include "fp.cuh"

namespace tk {

// One thread moves a whole contiguous run of bytes between global and shared memory with one instruction: whole
// 128-byte lines, no registers, nothing per byte on the issuing warp. Sizes and both addresses: multiples of 16.
// A load completes on an mbarrier (the expected byte count is armed by the issuing thread). (A bulk store of the
// output row measured slower in the norm forward and was removed with its helpers.)

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
// bulk copies: a bulk load overwrites what they read.
TK_DEV void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// `bytes` from global `src` to shared `dst`, completing on the mbarrier `bar` (armed by mbar_arrive_expect_tx).
TK_DEV void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

}  // namespace tk

// Loads of data the same kernel writes afterwards (in place): ldst.cuh's loads are the read-only (.nc) path, which
// must not read memory that the kernel also writes. A companion of ldst.cuh (same rule: every load `asm volatile`,
// so that it stays inside the branch that guards it), kept apart so that adding it rebuilt only its users.
#pragma once
#include <stdint.h>
#include "hw.cuh"

namespace tk {

// 16 bytes through L2 only (ld.global.cg: coherent, no L1 line; sm_90a issues LDG.E.128.STRONG.GPU).
TK_DEV void ld_global_cg(const void* p, uint32_t (&w)[4]) {
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(p));
}

}  // namespace tk

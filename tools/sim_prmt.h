// Host model of PTX prmt.b32 (default mode) for the encoder proofs (tools/e2m1_fast_check.cpp,
// tools/e2m1_r7_check.cpp): byte i of the result is byte (sel_i & 7) of the 8-byte {b, a}, or that byte's sign
// replicated when bit 3 of sel_i is set.
#pragma once
#include <cstdint>

inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  const uint64_t x = static_cast<uint64_t>(b) << 32 | a;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t s = (sel >> 4 * i) & 0xf;
    uint32_t byte = (x >> 8 * (s & 7)) & 0xff;
    if (s & 8) byte = (byte & 0x80) ? 0xff : 0;
    d |= byte << 8 * i;
  }
  return d;
}

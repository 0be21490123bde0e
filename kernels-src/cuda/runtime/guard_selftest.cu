// Guard self-test (DESIGN.md §6): a gather out[i] = src[indices[i]] whose indices live on the device. An index
// outside [0, src_len) is never dereferenced: the element becomes 0.0f and the fault goes to the error word
// (condition bit 1, "index out of range"), through the same report_fault_warp every index-taking kernel uses.
//
// Symbol: tk_guard_selftest__i32.
// Launch geometry: block.x 256, dynamic smem 0, grid.x = ceilDiv(n, 256) (any grid.x ≥ 1 is correct: grid-stride).
#include "../common/error_word.cuh"
#include "../common/ldst.cuh"
#include "../generated/runtime_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr uint32_t kCondIndexOutOfRange = 1;

}  // namespace
}  // namespace tk

extern "C" __global__ void __launch_bounds__(tk::kBlockThreads)
    tk_guard_selftest__i32(const __grid_constant__ GuardSelftestParams p) {
  const int32_t* indices = reinterpret_cast<const int32_t*>(p.indices);
  const float* src = reinterpret_cast<const float*>(p.src);
  float* out = reinterpret_cast<float*>(p.out);
  const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += threads) {
    const int32_t idx = static_cast<int32_t>(tk::ld_u32(indices + i));
    // compare as unsigned: a negative index wraps above any src_len
    const bool ok = static_cast<uint32_t>(idx) < p.src_len;
    out[i] = ok ? tk::u2f(tk::ld_u32(src + idx)) : 0.0f;
    tk::report_fault_warp(p.error_word, p.op_id, tk::kCondIndexOutOfRange, !ok);
  }
}

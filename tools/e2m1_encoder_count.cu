// Instruction count of the e2m1 chunk encoders (8 values) of common/e2m1_fast.cuh, without a disassembler: each
// kernel encodes 16 independent chunks per thread, so (its .text size − k_base's) / 16 bytes / 16 chunks is the
// SASS instructions per chunk (the .text padding, 8 instructions, is then below 1 per chunk). docs/perf-notes/
// perf7-fp4.md, §1:
//   nvcc -std=c++17 -O3 -fmad=false -cubin -Ikernels-src/cuda -arch=sm_90a -o /tmp/enc.cubin tools/e2m1_encoder_count.cu
//   python3 - <<< 'import struct;b=open("/tmp/enc.cubin","rb").read();o=struct.unpack_from("<Q",b,0x28)[0];es,n,si=struct.unpack_from("<HHH",b,0x3a);h=lambda i:struct.unpack_from("<IIQQQQIIQQ",b,o+i*es);so=h(si)[4];t={b[so+h(i)[0]:b.index(0,so+h(i)[0])].decode()[6:]:h(i)[5] for i in range(n) if b[so+h(i)[0]:].startswith(b".text.")};print({k:(v-t["k_base"])/256 for k,v in t.items()})'
#include "common/e2m1_fast.cuh"
using namespace tk;
#define K(name, body) extern "C" __global__ void name(const uint4* __restrict__ xs, const float* __restrict__ invs, uint32_t* __restrict__ o) { \
  uint32_t acc = 0; _Pragma("unroll") for (int i = 0; i < 16; ++i) { \
  const uint4 v = xs[threadIdx.x + 256 * i]; const uint32_t w[4] = {v.x, v.y, v.z, v.w}; const float inv = invs[threadIdx.x + 256 * i]; uint32_t r = 0; bool d; body; acc += d ? r : 1u; } o[threadIdx.x] = acc; }
K(k_base, d = true; r = w[0] ^ w[1] ^ w[2] ^ w[3] ^ __float_as_uint(inv))
K(k_pow2, d = encode_e2m1_bf16_pow2(w, inv, &r))
K(k_pow2nc, d = encode_e2m1_bf16_pow2_nc(w, inv, &r))
K(k_f32, d = encode_e2m1_bf16_f32(w, inv, &r))
K(k_f32sat, d = encode_e2m1_bf16_f32_sat(w, inv, &r))

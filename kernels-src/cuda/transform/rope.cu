// Rotary position embedding, in place (spec/norm-rope-rand.md §B.3, D.6): applyRotary, one launch per rotated
// tensor (query, then key with error_word 0 so that a bad position is reported once).
//   row = seqlen_offset + (positions ? positions[b, s] : s)
//   a' = fma(a, c, −(b ⊗ s)),  b' = fma(a, s, b ⊗ c)    (conjugate: s ← −s, which gives §B.3's conjugate form)
//   rounded once to the storage dtype (fp32 NaN → 0x7FC00000, bf16 NaN → 0x7FC0, fp16 NaN → 0x7E00 | sign).
//
// Symbols: tk_apply_rotary__<dtype>, dtype ∈ {fp32, bf16, fp16}. Pairing (NeoX / interleaved), conjugate and the
// position dtype are runtime flags (they change which registers pair up, not the loop).
//
// Launch geometry (any grid.x ≥ 1 is correct: tokens are walked grid-stride):
//
//   kernel               block.x  dynamic smem  grid.x
//   tk_apply_rotary__*   256      0             min(ceilDiv(B·S, teams), 3 · SMs)
//
//   V = 16 / element bytes (4 fp32, 8 bf16/fp16) pairs per chunk; C = D / (2V) chunks per head (2 … 32);
//   P = 2 (fp32) or 1 (bf16/fp16) heads per pass; L = min(nextPow2(ceilDiv(H, P)), 256 / C) head lanes; a team
//   of C·L threads rotates one token, and a block holds teams = 256 / (C·L) of them. Thread (l, c) of a team owns
//   chunk c of heads l, l + L, l + 2L, …: a pass is P of those heads of one token (P × 32 bytes, all loads before
//   any store). The thread's passes, token after token of the grid stride, form one sequence, and each pass's
//   loads (with the position of a new token) are issued before the previous pass is rotated and stored, so every
//   thread always has a pass in flight. Blocks are therefore persistent: the grid is what fits at once (3 per SM),
//   no block waits on its own latency between tokens, and none is launched per token. __launch_bounds__(256, 3):
//   ≤ 80 registers (two passes, the chunk's cos/sin), no spills on sm_90a and sm_100a.
//
// A chunk is two 16-byte vectors of one head: NeoX, elements [cV, cV+V) and [D/2+cV, D/2+cV+V) (pair j is lane j
// of each); interleaved, elements [2cV, 2cV+2V) (pair j is elements 2j, 2j+1 of the two). Either way pair j uses
// cache columns cV + j (cos) and D/2 + cV + j (sin). Vector accesses need the view's base and its batch, token and
// head strides to be multiples of 16 bytes (and the cache's base and row stride); otherwise the same chunks move
// element by element, with the same results. Elements outside the view are never touched.
//
// Positions are device values: a row outside [0, R) — computed in 64-bit unsigned arithmetic, so a wrapped sum
// can never land inside — leaves that token unchanged and sets condition bit 1 of the error word (one count per
// token, from the team's first thread).
#include "../common/codec.cuh"
#include "../common/error_word.cuh"
#include "../common/f16.cuh"
#include "../common/fp.cuh"
#include "../common/hw.cuh"
#include "../common/ldst.cuh"
#include "../generated/rope_randn_params.h"

namespace tk {
namespace {

constexpr int kBlockThreads = 256;
constexpr uint32_t kCondRowOutOfRange = 1;
constexpr uint32_t kFlagInterleaved = 1, kFlagConjugate = 2, kFlagPositionsInt64 = 4;

enum class Elem { kFp32, kBf16, kFp16 };

template <Elem kE>
struct Rope {
  static constexpr int kElemBytes = kE == Elem::kFp32 ? 4 : 2;
  static constexpr int kVec = kVecBytes / kElemBytes;  // pairs per chunk = elements per 16-byte vector
  // heads of a pass (2 × 16 bytes each): two passes (the one being rotated and the next, in flight) next to the
  // chunk's cos/sin (2V floats) is what the register budget holds without spilling
  static constexpr int kHeadsPerPass = kElemBytes == 4 ? 2 : 1;

  const RopeParams& p;
  uint32_t chunks;      // C
  uint32_t head_lanes;  // L
  uint32_t team_threads;
  bool x_vec, cs_vec;

  TK_DEV explicit Rope(const RopeParams& params) : p(params) {
    chunks = p.dim / (2 * kVec);
    const uint32_t need = (p.heads + kHeadsPerPass - 1) / kHeadsPerPass;
    head_lanes = 1;
    while (head_lanes < need && 2 * head_lanes * chunks <= kBlockThreads) head_lanes *= 2;
    team_threads = chunks * head_lanes;
    const uint64_t eb = kElemBytes;
    x_vec = ((p.x | (p.x_stride_b * eb) | (p.x_stride_s * eb) | (p.x_stride_h * eb)) % kVecBytes) == 0;
    cs_vec = ((p.cos_sin | (p.cos_sin_stride * 4)) % kVecBytes) == 0;
  }

  // The 4 words of one 16-byte vector of the view (in place: coherent loads).
  TK_DEV void load(const uint8_t* q, uint32_t (&w)[4]) const {
    if (x_vec) {
      ld_inplace(q, w);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (kElemBytes == 4) {
          w[i] = ld_inplace_u32(q + 4 * i);
        } else {
          w[i] = ld_inplace_u16(q + 4 * i) | (ld_inplace_u16(q + 4 * i + 2) << 16);
        }
      }
    }
  }

  TK_DEV void store(uint8_t* q, const uint32_t (&w)[4]) const {
    if (x_vec) {
      st_v4(q, w[0], w[1], w[2], w[3]);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (kElemBytes == 4) {
          st_u32(q + 4 * i, w[i]);
        } else {
          st_u16(q + 4 * i, w[i] & 0xffffu);
          st_u16(q + 4 * i + 2, w[i] >> 16);
        }
      }
    }
  }

  // kVec fp32 cache values from `src` (read-only: cached non-coherent loads).
  TK_DEV void load_cache(const float* src, float (&v)[kVec]) const {
    if (cs_vec) {
#pragma unroll
      for (int q = 0; q < kVec / 4; ++q) {
        uint32_t w[4];
        ld_cached(src + 4 * q, w);
#pragma unroll
        for (int i = 0; i < 4; ++i) v[4 * q + i] = u2f(w[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kVec; ++i) v[i] = u2f(ld_u32(src + i));
    }
  }

  static TK_DEV float elem(const uint32_t (&w)[4], int i) {
    if constexpr (kE == Elem::kFp32) {
      return u2f(w[i]);
    } else if constexpr (kE == Elem::kBf16) {
      return (i & 1) ? bf16_hi(w[i / 2]) : bf16_lo(w[i / 2]);
    } else {
      return (i & 1) ? fp16_hi(w[i / 2]) : fp16_lo(w[i / 2]);
    }
  }

  static TK_DEV uint32_t encode(float v) {
    if constexpr (kE == Elem::kFp32) {
      return f2u(canonical_nan(v));
    } else if constexpr (kE == Elem::kBf16) {
      return encode_bf16(v);
    } else {
      return encode_fp16(v);
    }
  }

  static TK_DEV void put(uint32_t (&w)[4], int i, float v) {
    if constexpr (kE == Elem::kFp32) {
      w[i] = encode(v);
    } else if (i & 1) {
      w[i / 2] |= encode(v) << 16;
    } else {
      w[i / 2] = encode(v);
    }
  }

  // §B.3 on one chunk: u holds the first vector, v the second; cs/sn the chunk's cos and (signed) sin.
  template <bool kInterleaved>
  static TK_DEV void rotate(uint32_t (&u)[4], uint32_t (&v)[4], const float (&cs)[kVec], const float (&sn)[kVec]) {
    float a[kVec], b[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      if constexpr (kInterleaved) {
        // pair j = elements 2j, 2j+1 of the 2V elements u ‖ v
        a[j] = 2 * j < kVec ? elem(u, 2 * j) : elem(v, 2 * j - kVec);
        b[j] = 2 * j < kVec ? elem(u, 2 * j + 1) : elem(v, 2 * j + 1 - kVec);
      } else {
        a[j] = elem(u, j);
        b[j] = elem(v, j);
      }
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const float a2 = __fmaf_rn(a[j], cs[j], -__fmul_rn(b[j], sn[j]));
      const float b2 = __fmaf_rn(a[j], sn[j], __fmul_rn(b[j], cs[j]));
      if constexpr (kInterleaved) {
        if (2 * j < kVec) {
          put(u, 2 * j, a2);
          put(u, 2 * j + 1, b2);
        } else {
          put(v, 2 * j - kVec, a2);
          put(v, 2 * j + 1 - kVec, b2);
        }
      } else {
        put(u, j, a2);
        put(v, j, b2);
      }
    }
  }

  // One pass of a token: the chunk of heads h0, h0 + L, …, h0 + (P−1)L that exist.
  struct Pass {
    uint32_t u[kHeadsPerPass][4], v[kHeadsPerPass][4];
  };

  template <bool kInterleaved>
  TK_DEV void run() const {
    const uint32_t teams = kBlockThreads / team_threads;
    const uint32_t team = threadIdx.x / team_threads;
    const uint32_t t = threadIdx.x % team_threads;
    const uint32_t c = t % chunks;
    const uint32_t lane = t / chunks;
    const uint32_t half = p.dim / 2;
    // element offsets of the chunk's two vectors inside a head
    const uint32_t o1 = kInterleaved ? 2 * c * kVec : c * kVec;
    const uint32_t o2 = kInterleaved ? o1 + kVec : half + c * kVec;
    const uint64_t tokens = static_cast<uint64_t>(p.batch) * p.seqlen;
    const uint64_t stride = static_cast<uint64_t>(gridDim.x) * teams;
    const bool int64_pos = (p.flags & kFlagPositionsInt64) != 0;
    const bool conjugate = (p.flags & kFlagConjugate) != 0;
    const uint32_t pass_heads = kHeadsPerPass * head_lanes;
    uint8_t* const x = reinterpret_cast<uint8_t*>(p.x);
    // every load of a pass before any store
    auto load_pass = [&](int64_t tok_off, uint32_t h0, Pass& d) {
#pragma unroll
      for (int k = 0; k < kHeadsPerPass; ++k) {
        const uint32_t h = h0 + k * head_lanes;
        if (h < p.heads) {
          const uint8_t* head = x + (tok_off + static_cast<int64_t>(h) * p.x_stride_h) * kElemBytes;
          load(head + o1 * kElemBytes, d.u[k]);
          load(head + o2 * kElemBytes, d.v[k]);
        }
      }
    };
    auto rotate_pass = [&](int64_t tok_off, uint32_t h0, const float (&cs)[kVec], const float (&sn)[kVec], Pass& d) {
#pragma unroll
      for (int k = 0; k < kHeadsPerPass; ++k) {
        const uint32_t h = h0 + k * head_lanes;
        if (h < p.heads) {
          uint8_t* head = x + (tok_off + static_cast<int64_t>(h) * p.x_stride_h) * kElemBytes;
          rotate<kInterleaved>(d.u[k], d.v[k], cs, sn);
          store(head + o1 * kElemBytes, d.u[k]);
          store(head + o2 * kElemBytes, d.v[k]);
        }
      }
    };
    // Token `tok`: its element offset, its position's load, and its first pass's loads (which do not depend on
    // the row, so they are in flight together with the position's; a token whose row turns out illegal is read,
    // never written).
    auto start = [&](uint64_t tok, int64_t& tok_off, uint64_t& pos, Pass& d) {
      // B·S < 2^32 (the host checks), so the split is 32-bit
      const uint32_t bi = static_cast<uint32_t>(tok) / p.seqlen;
      const uint32_t si = static_cast<uint32_t>(tok) % p.seqlen;
      pos = si;
      if (p.positions != 0) {
        const int64_t off = static_cast<int64_t>(bi) * p.pos_stride_b + static_cast<int64_t>(si) * p.pos_stride_s;
        pos = int64_pos ? ld_u64(reinterpret_cast<const int64_t*>(p.positions) + off)
                        : static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(
                              ld_u32(reinterpret_cast<const int32_t*>(p.positions) + off))));
      }
      tok_off = static_cast<int64_t>(bi) * p.x_stride_b + static_cast<int64_t>(si) * p.x_stride_s;
      load_pass(tok_off, lane, d);
    };

    // The thread's passes form one sequence, (token, h0) for h0 = lane, lane + PL, … < H, then the next token of
    // the grid stride. Each step issues the loads of the next pass (and, for a new token, its position's) before
    // it rotates and stores the current one, so a thread always has a pass in flight: no block waits on its own
    // load latency between tokens, and the grid needs no more blocks than fit on the GPU at once.
    uint64_t tok = static_cast<uint64_t>(blockIdx.x) * teams + team;
    if (tok >= tokens) return;
    int64_t tok_off, next_off = 0;
    uint64_t pos, next_pos = 0;
    uint32_t h0 = lane;
    bool ok = false;
    float cs[kVec], sn[kVec];
    auto step = [&](Pass& cur, Pass& nxt) {
      if (h0 == lane) {
        // a new token: its position has arrived (it was loaded with the previous pass); exact modulo 2^64, and
        // |seqlen_offset| < 2^53, R < 2^53, so a wrapped sum is never inside [0, R)
        const uint64_t row = static_cast<uint64_t>(p.seqlen_offset) + pos;
        ok = row < p.num_rows;
        report_fault_warp(p.error_word, p.op_id, kCondRowOutOfRange, !ok && t == 0);
        if (ok) {
          const float* cs_row =
              reinterpret_cast<const float*>(p.cos_sin) + static_cast<int64_t>(row) * p.cos_sin_stride;
          load_cache(cs_row + c * kVec, cs);
          load_cache(cs_row + half + c * kVec, sn);
          if (conjugate) {
#pragma unroll
            for (int j = 0; j < kVec; ++j) sn[j] = -sn[j];
          }
        }
      }
      const uint32_t next_h0 = h0 + pass_heads;
      const bool same = next_h0 < p.heads;
      const uint64_t next_tok = same ? tok : tok + stride;
      const bool more = same || next_tok < tokens;
      if (same) {
        load_pass(tok_off, next_h0, nxt);
      } else if (more) {
        start(next_tok, next_off, next_pos, nxt);
      }
      if (ok) rotate_pass(tok_off, h0, cs, sn, cur);
      if (same) {
        h0 = next_h0;
      } else {
        tok = next_tok;
        tok_off = next_off;
        pos = next_pos;
        h0 = lane;
      }
      return more;
    };

    // Two register sets alternate (the loop is unrolled by two so that both stay in registers).
    Pass a, b;
    start(tok, tok_off, pos, a);
    while (step(a, b) && step(b, a)) {
    }
  }
};

}  // namespace
}  // namespace tk

#define TK_APPLY_ROTARY(name, E)                                                                       \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 3)                                   \
      tk_apply_rotary__##name(const __grid_constant__ RopeParams p) {                                  \
    const tk::Rope<tk::Elem::E> r(p);                                                                  \
    if (p.flags & tk::kFlagInterleaved) {                                                              \
      r.run<true>();                                                                                   \
    } else {                                                                                           \
      r.run<false>();                                                                                  \
    }                                                                                                  \
  }

TK_APPLY_ROTARY(fp32, kFp32)
TK_APPLY_ROTARY(bf16, kBf16)
TK_APPLY_ROTARY(fp16, kFp16)

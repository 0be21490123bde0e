// Rotary position embedding, in place (spec/norm-rope-rand.md §B.3, D.6): applyRotary, one launch per rotated
// tensor (query, then key with error_word 0 so that a bad position is reported once).
//   row = seqlen_offset + (positions ? positions[b, s] : s)
//   a' = fma(a, c, −(b ⊗ s)),  b' = fma(a, s, b ⊗ c)    (conjugate: s ← −s, which gives §B.3's conjugate form)
//   rounded once to the storage dtype (fp32 NaN → 0x7FC00000, bf16 NaN → 0x7FC0, fp16 NaN → 0x7E00 | sign); bf16
//   pairs are rounded by the hardware conversion with the NaN halves fixed (encode_bf16x2_words, the same bits).
//
// Symbols: tk_apply_rotary__<dtype>, dtype ∈ {fp32, bf16, fp16} (2 passes in flight per thread; the template's
// deep forms, 3 / 4 passes, are not instantiated: see the end of the file). Pairing (NeoX / interleaved),
// conjugate and the position dtype are runtime flags (they change which registers pair up, not the loop), and so
// is kFlagL2Line (host tuning): the view's 16-byte cp.async carry the L2::128B prefetch-size hint.
//
// Launch geometry (any grid.x ≥ 1 is correct: tokens are walked grid-stride):
//
//   kernel                   block.x  dynamic smem  grid.x                                    when
//   tk_apply_rotary__<dt>    256      53248         min(ceilDiv(B·S, teams), 3 · SMs)        always allowed
//
//   V = 16 / element bytes (4 fp32, 8 bf16/fp16) pairs per chunk; C = D / (2V) chunks per head (2 … 32);
//   P = 2 (fp32) or 1 (bf16/fp16) heads per pass; L = min(nextPow2(ceilDiv(H, P)), 256 / C) head lanes; a team
//   of C·L threads rotates one token, and a block holds teams = 256 / (C·L) of them. Thread (l, c) of a team owns
//   chunk c of heads l, l + L, l + 2L, …: a pass is P of those heads of one token (P × 32 bytes). The thread's
//   passes, token after token of the grid stride, form one sequence, staged through K = 2, 3 or 4 private
//   shared-memory slots with cp.async: pass i is issued K passes before it is rotated, so K passes are in flight
//   while the thread waits (bf16: 48 / 72 / 96 KiB per SM), at no register cost. A token's cos/sin travel with its
//   first pass, and its position was staged two tokens earlier, so no load waits on another. The deep forms keep
//   cos/sin and positions in 2-entry rings, which needs every thread to have ≥ 2 passes per token (the host
//   launches them only then: H ≥ (P + 1) · L, i.e. L capped by 256 / C). Blocks are persistent (what fits at
//   once: 3 per SM by registers, __launch_bounds__(256, 3) ≤ 80, and by shared memory, 3 × 53 / 61 / 69 KiB with
//   the 1 KiB each block reserves).
//
// A chunk is two 16-byte vectors of one head, elements [cV, cV+V) and [D/2+cV, D/2+cV+V) in both pairings, so each
// warp access covers whole 32-byte sectors of its heads. NeoX: pair j is lane j of each vector (cache column cV+j).
// Interleaved: each vector holds V/2 whole pairs (elements 2k, 2k+1), cache columns cV/2 + k for the first and
// D/4 + cV/2 + k for the second. Vector accesses need the view's base and its batch, token and head strides to
// be multiples of 16 bytes (and the cache's base and row stride); otherwise the same chunks move element by
// element, with the same results. Elements outside the view are never touched.
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
constexpr uint32_t kFlagInterleaved = 1, kFlagConjugate = 2, kFlagPositionsInt64 = 4, kFlagL2Line = 8;

enum class Elem { kFp32, kBf16, kFp16 };

template <Elem kE, int kXSlots>
struct Rope {
  static constexpr int kElemBytes = kE == Elem::kFp32 ? 4 : 2;
  static constexpr int kVec = kVecBytes / kElemBytes;  // pairs per chunk = elements per 16-byte vector
  // heads of a pass (2 × 16 bytes each): a slot holds a pass and the chunk's cos/sin (2V floats), 6 × 16 bytes
  // for every dtype; the rotated pass and the cos/sin fit the 80 registers of 3 blocks per SM
  static constexpr int kHeadsPerPass = kElemBytes == 4 ? 2 : 1;

  const RopeParams& p;
  uint32_t chunks;      // C
  uint32_t head_lanes;  // L
  uint32_t team_threads;
  bool x_vec, cs_vec, l2_line;

  TK_DEV explicit Rope(const RopeParams& params) : p(params) {
    chunks = p.dim / (2 * kVec);
    const uint32_t need = (p.heads + kHeadsPerPass - 1) / kHeadsPerPass;
    head_lanes = 1;
    while (head_lanes < need && 2 * head_lanes * chunks <= kBlockThreads) head_lanes *= 2;
    team_threads = chunks * head_lanes;
    const uint64_t eb = kElemBytes;
    x_vec = ((p.x | (p.x_stride_b * eb) | (p.x_stride_s * eb) | (p.x_stride_h * eb)) % kVecBytes) == 0;
    cs_vec = ((p.cos_sin | (p.cos_sin_stride * 4)) % kVecBytes) == 0;
    l2_line = (p.flags & kFlagL2Line) != 0;
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
    if constexpr (kE == Elem::kBf16) {
      // bf16: the same a2, b2, rounded two at a time by the hardware conversion (RNE, NaN halves fixed to 0x7FC0:
      // encode_bf16 of each, exactly) instead of ~8 integer operations per value.
      float a2[kVec], b2[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        a2[j] = __fmaf_rn(a[j], cs[j], -__fmul_rn(b[j], sn[j]));
        b2[j] = __fmaf_rn(a[j], sn[j], __fmul_rn(b[j], cs[j]));
      }
      if constexpr (kInterleaved) {
        // element 2j of u ‖ v is a2[j], element 2j + 1 is b2[j]: word j of u ‖ v is the pair (a2[j], b2[j])
        float e[2 * kVec];
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          e[2 * j] = a2[j];
          e[2 * j + 1] = b2[j];
        }
        uint32_t w[kVec];
        encode_bf16x2_words<kVec>(e, w);
#pragma unroll
        for (int i = 0; i < kVec / 2; ++i) {
          u[i] = w[i];
          v[i] = w[kVec / 2 + i];
        }
      } else {
        encode_bf16x2_words<kVec / 2>(a2, u);
        encode_bf16x2_words<kVec / 2>(b2, v);
      }
    } else {
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
  }

  // Per-thread shared-memory staging (every slot is written by cp.async and read back by the same thread, so
  // cp.async.wait_group alone orders them; no barrier). Field-major: field f of a ring entry e of thread t is the
  // 16 bytes at ((e · fields + f) · 256 + t) · 16, so a warp's 16-byte accesses are contiguous (no bank conflict).
  //   x fields:  2P vectors of a pass (u, v of head k at fields 2k, 2k+1), kXSlots entries (pass i in i mod kXSlots)
  //   cs fields: the chunk's V cos then V sin floats (V/2 fields; only a token's first pass fills them)
  //   positions: 2 8-byte words per thread after the rest, the ring of this thread's next tokens' positions
  // kXSlots = 2: the cs fields live in the pass's slot (6 fields per slot). kXSlots > 2 (the deep forms): x slots
  // of 2P fields only, and a separate 2-entry cs ring indexed by the thread's token parity, like the positions.
  // Two entries are enough when every thread has at least 2 passes per token (H ≥ (P + 1) · L; the host checks):
  // the issue of token j + 2's first pass (which refills cs entry and position word j mod 2) follows the consume
  // of pass first(j + 2) − kXSlots ≥ first(j) + 4 − kXSlots ≥ first(j), so token j's cs have been read, and the
  // position it reads was staged with pass first(j) ≤ first(j + 2) − kXSlots, a completed group.
  static constexpr bool kSplitCs = kXSlots > 2;
  static_assert(kXSlots >= 2 && kXSlots <= 4, "2 to 4 passes in flight (2 · passes per token ≥ kXSlots)");
  static constexpr int kXFields = 2 * kHeadsPerPass;
  static constexpr int kCsFields = kVec / 2;
  static constexpr int kFields = kXFields + kCsFields;
  static constexpr int kSlotFields = kSplitCs ? kXFields : kFields;
  static constexpr int kHalfBytes = kVec * 2;  // V/2 floats: one cp.async of 16 (bf16/fp16) or 8 (fp32) bytes
  static constexpr uint32_t kCsBase = kXSlots * kSlotFields * kBlockThreads * kVecBytes;
  static constexpr uint32_t kPosBase = kCsBase + (kSplitCs ? 2 * kCsFields * kBlockThreads * kVecBytes : 0);
  static constexpr uint32_t kSmemBytes = kPosBase + 2 * kBlockThreads * 8;
  static_assert(kXSlots != 2 || kSmemBytes == 53248, "ops/transform/rope.ts SMEM_BYTES: 53248 bytes for 2 slots");
  static_assert(kXSlots != 3 || kElemBytes != 2 || kSmemBytes == 61440, "ops/transform/rope.ts: 61440 for 3");
  static_assert(kXSlots != 4 || kElemBytes != 2 || kSmemBytes == 69632, "ops/transform/rope.ts: 69632 for 4");

  // A point of a thread's pass sequence: token `tok` (element offset `off`), heads h0, h0 + L, … (P of them).
  struct Cursor {
    uint64_t tok;
    int64_t off;
    uint32_t h0;
  };

  // (b, s) of token `tok`: B·S < 2^32 (the host checks), so the split is 32-bit, and none for a 3-D view (B = 1)
  TK_DEV void split(uint64_t tok, uint32_t& bi, uint32_t& si) const {
    const uint32_t t32 = static_cast<uint32_t>(tok);
    bi = p.batch == 1 ? 0 : t32 / p.seqlen;
    si = p.batch == 1 ? t32 : t32 % p.seqlen;
  }

  TK_DEV int64_t token_offset(uint64_t tok) const {
    uint32_t bi, si;
    split(tok, bi, si);
    return static_cast<int64_t>(bi) * p.x_stride_b + static_cast<int64_t>(si) * p.x_stride_s;
  }

  // Copy position `tok` into the 8-byte word `dst` (int32: its 4 bytes, sign-extended when read back).
  TK_DEV void stage_position(uint32_t dst, uint64_t tok, bool int64_pos) const {
    uint32_t bi, si;
    split(tok, bi, si);
    const int64_t off = static_cast<int64_t>(bi) * p.pos_stride_b + static_cast<int64_t>(si) * p.pos_stride_s;
    if (int64_pos) {
      cp_async<8>(dst, reinterpret_cast<const int64_t*>(p.positions) + off, true);
    } else {
      cp_async<4>(dst, reinterpret_cast<const int32_t*>(p.positions) + off, true);
    }
  }

  // One 16-byte vector of the view into shared memory: asynchronously when aligned, else through registers with
  // coherent element loads (in place: never the non-coherent path).
  TK_DEV void stage_x(uint32_t dst, const uint8_t* q) const {
    if (x_vec) {
      if (l2_line) {
        cp_async_l2_128(dst, q, true);
      } else {
        cp_async<16>(dst, q, true);
      }
    } else {
      uint32_t w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (kElemBytes == 4) {
          w[i] = ld_inplace_u32(q + 4 * i);
        } else {
          w[i] = ld_inplace_u16(q + 4 * i) | (ld_inplace_u16(q + 4 * i + 2) << 16);
        }
      }
      st_shared(dst, w);
    }
  }

  // V/2 cache floats into shared memory, through L1 (the lanes of a block that share a chunk share these bytes).
  TK_DEV void stage_cache(uint32_t dst, const float* src) const {
    if (cs_vec) {
      // 16-byte runs (bf16/fp16: every column offset is a multiple of 4 floats, and cs_vec aligns base and rows)
      if constexpr (kHalfBytes == 16) {
        cp_async_ca16(dst, src);
      } else {
        cp_async<8>(dst, src, true);
      }
    } else {
      uint32_t w[kHalfBytes / 4];
#pragma unroll
      for (int i = 0; i < kHalfBytes / 4; ++i) w[i] = ld_u32(src + i);
      st_shared(dst, w);
    }
  }

  template <bool kInterleaved>
  TK_DEV void run() const {
    extern __shared__ __align__(16) uint8_t rope_smem[];
    const uint32_t smem = smem_addr(rope_smem);
    const uint32_t teams = kBlockThreads / team_threads;
    const uint32_t team = threadIdx.x / team_threads;
    const uint32_t t = threadIdx.x % team_threads;
    const uint32_t c = t % chunks;
    const uint32_t lane = t / chunks;
    const uint32_t half = p.dim / 2;
    // The chunk's two vectors are elements [cV, cV+V) and [D/2+cV, D/2+cV+V) of a head in both pairings, so a
    // warp's first (second) access covers the first (second) half of each of its heads: whole 32-byte sectors.
    // NeoX: pair j is lane j of each vector, cache column cV + j. Interleaved: each vector holds V/2 whole pairs
    // (elements 2k, 2k+1), the first those of cache columns cV/2 + k, the second D/4 + cV/2 + k; the chunk's cos
    // (sin) registers are those two runs of V/2 columns one after the other, so that pair j is elements 2j, 2j+1
    // of u ‖ v with cos[j], sin[j] (rotate<true>).
    const uint32_t o1 = c * kVec;
    const uint32_t o2 = half + c * kVec;
    const uint32_t col_a = kInterleaved ? c * kVec / 2 : c * kVec;
    const uint32_t col_b = kInterleaved ? p.dim / 4 + c * kVec / 2 : c * kVec + kVec / 2;
    const uint64_t tokens = static_cast<uint64_t>(p.batch) * p.seqlen;
    const uint64_t stride = static_cast<uint64_t>(gridDim.x) * teams;
    const bool int64_pos = (p.flags & kFlagPositionsInt64) != 0;
    const bool conjugate = (p.flags & kFlagConjugate) != 0;
    const uint32_t pass_heads = kHeadsPerPass * head_lanes;
    uint8_t* const x = reinterpret_cast<uint8_t*>(p.x);
    auto field = [&](uint32_t s, uint32_t f) {
      return smem + ((s * kSlotFields + f) * kBlockThreads + threadIdx.x) * kVecBytes;
    };
    // cs field f of x slot s (2 slots) or of cs ring entry e (deep forms)
    auto cs_field = [&](uint32_t s, uint32_t e, uint32_t f) {
      return kSplitCs ? smem + kCsBase + ((e * kCsFields + f) * kBlockThreads + threadIdx.x) * kVecBytes
                      : field(s, kXFields + f);
    };
    auto pos_word = [&](uint32_t k) { return smem + kPosBase + (k * kBlockThreads + threadIdx.x) * 8; };
    auto head_ptr = [&](const Cursor& q, uint32_t h) {
      return x + (q.off + static_cast<int64_t>(h) * p.x_stride_h) * kElemBytes;
    };
    // The next pass of the sequence: the next P·L heads of the token, else the first pass of the token one grid
    // stride on (which exists iff its tok < tokens).
    auto advance = [&](Cursor& q) {
      q.h0 += pass_heads;
      if (q.h0 >= p.heads) {
        q.h0 = lane;
        q.tok += stride;
        if (q.tok < tokens) q.off = token_offset(q.tok);
      }
    };

    uint64_t tok0 = static_cast<uint64_t>(blockIdx.x) * teams + team;
    if (tok0 >= tokens) return;
    // Positions are staged two tokens ahead of the pass that needs them (a token's first pass is issued kXSlots
    // passes before it is rotated, and reads its position from ring word k; the same issue refills word k with
    // the position of the token two grid strides on; kXSlots > 2 needs 2 passes per token, see kSplitCs). The
    // ring starts with the first two tokens, the only ones whose first pass the prologue below issues.
    const bool has_pos = p.positions != 0;
    if (has_pos) {
      stage_position(pos_word(0), tok0, int64_pos);
      if (tok0 + stride < tokens) stage_position(pos_word(1), tok0 + stride, int64_pos);
    }
    cp_async_commit();
    cp_async_wait<0>();

    uint32_t ring = 0;     // ring word (and, deep forms, cs entry) of the next token to issue
    uint32_t ok_bits = 0;  // bit s: the pass in slot s belongs to a token whose row is legal
    bool issue_ok = false;
    // Issue pass q into slot s: for a token's first pass, its row (checked, the fault counted once per token by
    // the team's first thread) and its cos/sin; then the x vectors of its heads. Nothing of an illegal token is
    // read or written.
    auto issue = [&](const Cursor& q, uint32_t s) {
      if (q.h0 == lane) {
        uint32_t bi, pos32;
        split(q.tok, bi, pos32);
        uint64_t pos = pos32;
        if (has_pos) {
          uint32_t w[2];
          ld_shared(pos_word(ring), w);
          pos = int64_pos ? (static_cast<uint64_t>(w[1]) << 32 | w[0])
                          : static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(w[0])));
        }
        // exact modulo 2^64; |seqlen_offset| < 2^53 and R < 2^53, so a wrapped sum is never inside [0, R)
        const uint64_t row = static_cast<uint64_t>(p.seqlen_offset) + pos;
        issue_ok = row < p.num_rows;
        report_fault_warp(p.error_word, p.op_id, kCondRowOutOfRange, !issue_ok && t == 0);
        if (issue_ok && lane < p.heads) {
          const float* cs_row =
              reinterpret_cast<const float*>(p.cos_sin) + static_cast<int64_t>(row) * p.cos_sin_stride;
          // cos halves at cs bytes [0, 2·half), sin halves after them
          const uint32_t cs0 = cs_field(s, ring, 0);
          const uint32_t hb = kHalfBytes;
          auto at = [&](uint32_t b) { return cs0 + (b / kVecBytes) * kBlockThreads * kVecBytes + b % kVecBytes; };
          stage_cache(at(0), cs_row + col_a);
          stage_cache(at(hb), cs_row + col_b);
          stage_cache(at(2 * hb), cs_row + half + col_a);
          stage_cache(at(3 * hb), cs_row + half + col_b);
        }
        // after the position has been read (the row depends on it): refill the word
        if (has_pos && q.tok + 2 * stride < tokens) stage_position(pos_word(ring), q.tok + 2 * stride, int64_pos);
        ring ^= 1;
      }
      ok_bits = issue_ok ? ok_bits | (1u << s) : ok_bits & ~(1u << s);
      if (issue_ok) {
#pragma unroll
        for (int k = 0; k < kHeadsPerPass; ++k) {
          const uint32_t h = q.h0 + k * head_lanes;
          if (h < p.heads) {
            const uint8_t* head = head_ptr(q, h);
            stage_x(field(s, 2 * k), head + o1 * kElemBytes);
            stage_x(field(s, 2 * k + 1), head + o2 * kElemBytes);
          }
        }
      }
    };

    // kXSlots slots: pass i is issued into slot i mod kXSlots kXSlots passes before it is rotated, so while a thread
    // waits for pass i, passes i+1 … i+kXSlots−1 are in flight too (2: 2 · 32 bytes per thread, bf16), and no load
    // waits on another: the position was staged two tokens earlier, and cos/sin travel in the same group as the
    // first pass's x.
    Cursor cur{tok0, token_offset(tok0), lane};
    Cursor nxt = cur;
#pragma unroll
    for (int k = 0; k < kXSlots; ++k) {
      if (nxt.tok < tokens) issue(nxt, k);
      cp_async_commit();
      if (nxt.tok < tokens) advance(nxt);
    }
    float cs[kVec], sn[kVec];
    uint32_t s = 0;
    uint32_t cs_read = 0;  // cs ring entry of the next token to rotate (deep forms)
    while (cur.tok < tokens) {
      cp_async_wait<kXSlots - 1>();  // pass `cur` (slot s) has landed; the passes after it may still be in flight
      const bool first = cur.h0 == lane;
      if ((ok_bits >> s) & 1) {
        if (first && lane < p.heads) {
#pragma unroll
          for (int f = 0; f < kCsFields; ++f) {
            uint32_t w[4];
            ld_shared(cs_field(s, cs_read, f), w);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const int j = 4 * f + i;  // cs float j: cos j for j < V, sin j − V after
              if (j < kVec) {
                cs[j] = u2f(w[i]);
              } else {
                sn[j - kVec] = conjugate ? -u2f(w[i]) : u2f(w[i]);
              }
            }
          }
        }
#pragma unroll
        for (int k = 0; k < kHeadsPerPass; ++k) {
          const uint32_t h = cur.h0 + k * head_lanes;
          if (h < p.heads) {
            uint32_t u[4], v[4];
            ld_shared(field(s, 2 * k), u);
            ld_shared(field(s, 2 * k + 1), v);
            rotate<kInterleaved>(u, v, cs, sn);
            uint8_t* head = head_ptr(cur, h);
            store(head + o1 * kElemBytes, u);
            store(head + o2 * kElemBytes, v);
          }
        }
      }
      if (first) cs_read ^= 1;
      // slot s is free once its words are in registers (they were used above): pass cur + kXSlots goes there
      if (nxt.tok < tokens) {
        issue(nxt, s);
        advance(nxt);
      }
      cp_async_commit();  // one group per step, empty or not, so that wait_group<kXSlots−1> always means "pass cur"
      advance(cur);
      s = s + 1 == kXSlots ? 0 : s + 1;
    }
  }
};

}  // namespace
}  // namespace tk

#define TK_APPLY_ROTARY(name, E, slots)                                                                \
  extern "C" __global__ void __launch_bounds__(tk::kBlockThreads, 3)                                   \
      tk_apply_rotary__##name(const __grid_constant__ RopeParams p) {                                  \
    const tk::Rope<tk::Elem::E, slots> r(p);                                                           \
    if (p.flags & tk::kFlagInterleaved) {                                                              \
      r.run<true>();                                                                                   \
    } else {                                                                                           \
      r.run<false>();                                                                                  \
    }                                                                                                  \
  }

TK_APPLY_ROTARY(fp32, kFp32, 2)
TK_APPLY_ROTARY(bf16, kBf16, 2)
TK_APPLY_ROTARY(fp16, kFp16, 2)
// (The template also compiles 3 and 4 passes in flight, the "deep forms"; measured slower on the H200, 2026-11-30,
// 73.9 / 82.9% of copy against 78.0 / 89.7% for two slots with the L2 hint, so they are not instantiated.)

#!/usr/bin/env python3
"""Peer baselines ("what users run today") for the ops of DeepSeek TileKernels in the roofline table.

peers_README
------------
Runs on the GPU machine (NVIDIA H200, PyTorch with CUDA; no network needed), in the same
shell command as our own benchmark, e.g.:

    python3 bench/peers.py --json $OUT/peers.json

It measures, in one process:

1. the device-to-device copy rate (`dst.copy_(src)` of a 2 GiB uint8 buffer; bytes counted =
   read + write = 2 x size), in GB/s: the 100 % reference of the roofline table.  For every case
   it also measures a copy that moves the same number of bytes as the case (`copy_same_gbps`).
2. `perTokenCast` bf16 -> e4m3 with groups of 128 channels, for tokens in --shapes (default
   4096,16384) and hidden 7168, two variants:
     fp32-sf       plain fp32 scales [T, H/128]
     packed-ue8m0  DeepGEMM layout: roundSf + usePackedUe8m0 + TMA-aligned column-major int32
                   [T, ceil(H/128/4)] with strides (1, align(T, 4)); padded rows are 0
   each as PyTorch eager and as torch.compile of the same function
   (mode "max-autotune-no-cudagraphs", dynamic=False; falls back to mode "default" when that
   fails or runs past the compile time limit; the mode used is recorded per row).
   Bytes counted: T*H*2 (bf16 read) + T*H (e4m3 write) + sf bytes (packed: W * align(T,4) * 4).
3. host overhead per call of a tiny op (tokens 1, hidden 7168, fp32-sf): 1000 back-to-back calls
   timed with time.perf_counter before the synchronize (`host_us`).
4. whether eager and compiled outputs are bit-equal (data bytes and sf), plus a sanity check of
   the eager results (dequantization error, UE8M0 exponent bytes vs ceil(log2(amax/448))).
5. the further ops, at --tokens (default 8192,16384; hidden 7168), eager for every case first, then
   torch.compile of every case in the same order (same modes and fallback as above) while the --budget
   allows: no compile is started with less than 25 s of the budget left; the cases skipped are listed
   in one note. Each case runs in its own try/except: a failure becomes a note. T = tokens,
   H = 7168; bytes counted = what must be read + written, once:
     perBlockCast "bf16→e4m3 128x128"       x bf16 -> e4m3 + fp32 sf [T/128, H/128]:
                                            2TH + TH + (T/128)(H/128)4
     castBack "e4m3→bf16 [1,128]"           e4m3 + fp32 sf [T, H/128] -> bf16: TH + T(H/128)4 + 2TH
     castBack "e4m3→bf16 [128,128]"         e4m3 + fp32 sf [T/128, H/128] -> bf16: TH + (T/128)(H/128)4 + 2TH
     cast "bf16→e4m3 RN"                    clamp to ±448, .to(float8_e4m3fn): 2TH + TH
     perTokenCastAndCastBack "bf16 [1,128] in place"
                                            x <- bf16(e4m3(x·inv)·sf), x.copy_ of the result: 2TH + 2TH
     perChannelCast "bf16→e4m3 [128,1]"     e4m3 + fp32 sf [T/128, H]: 2TH + TH + (T/128)H4
     swigluForwardAndPerTokenCast "bf16→e4m3 [1,128]"
                                            x bf16 [T, 2H] -> silu(gate)·up in fp32 -> e4m3 + fp32 sf
                                            [T, H/128]: 4TH + TH + T(H/128)4. The peer processes every row
                                            (ours: T rows spread over 64 experts in the psum layout)
     swigluBackward "bf16"                  x [T, 2H], dy [T, H] -> dx [T, 2H], all bf16: 4TH + 2TH + 4TH
     swigluBackward "bf16 +weights"         also fp32 row weights [T] in and the weight gradient fp32 [T]
                                            out: 4TH + 2TH + 4T + 4TH + 4T
     normForward "bf16 F.rms_norm"          x bf16, weight bf16 [H] -> bf16 (eps 1e-6): 2TH + 2H + 2TH.
                                            F.rms_norm writes no rstd (ours also writes fp32 [T]: +4T)
     normForwardAndPerTokenCast "bf16→e4m3 fp32-sf" / "bf16→e4m3 packed"
                                            F.rms_norm then the perTokenCast functions above (fp32 sf, or
                                            the packed UE8M0 layout of section 2): 2TH + 2H + TH + sf bytes
                                            (fp32: T(H/128)4; packed: ceil(H/512)·align(T,4)·4)
     normBackward "bf16 dx+dw(fp32)"        handwritten backward: x, dy bf16, rstd fp32 [T], weight bf16
                                            [H] -> dx bf16, dw fp32 [H]: 2TH·2 + 4T + 2H + 2TH + 4H
     applyRotary "64/192 in place"          q bf16 [T, 128, 192], the trailing 64 dims rotated in place
                                            (interleaved pairs as DeepSeek MLA; x.copy_ of the result);
                                            cos|sin cache fp32 [T, 64] gathered by int64 positions [T]
                                            (a permutation): T·128·64·2·2 + T·64·4 + T·8 (hidden reported:
                                            128·192)
     applyRotary "64/192 out of place"      the same rotation returned as a new [T, 128, 64] tensor:
                                            same bytes
     applyRotary "[T,128,64] in place"      a contiguous [T, 128, 64] query: same bytes (hidden: 128·64)
     applyRotary "… neg_ only (access pattern)"
                                            x.neg_() on the same 64-of-192 view (and the contiguous query):
                                            what the access pattern alone reaches, x's bytes only: T·128·64·2·2
     perChannelCastAndTranspose "bf16→e4m3 [128,1]"
                                            perChannelCast's codes transposed to [H, T] (moved as uint8,
                                            .t().contiguous()), fp32 sf [T/128, H]: 2TH + TH + (T/128)H4
     swigluForwardAndPerChannelCastAndTranspose "bf16 → e4m3 [H, T], 128 tokens per scale" (also "…, 32 tokens
                                            per scale" and "bf16 → e4m3 [T, H], 128 tokens per scale")
                                            x bf16 [T, 2H] -> a = bf16(silu(gate)·up), per column blocks of r
                                            rows -> e4m3 [H, T] (or [T, H]) + fp32 sf [T/r, H]: 4TH + TH + (T/r)H4
     swigluBackwardAndPerTokenCast "e4m3 x, bf16 dy → bf16 + e4m3 128 + weightGrad"
                                            x e4m3 [T, 2H] with fp32 sf [T, 2H/128] dequantized, dy bf16
                                            [T, H], fp32 row weights [T] -> dx bf16 [T, 2H], dx e4m3 + fp32 sf
                                            [T, 2H/128] (cast from fp32), weight gradient fp32 [T]:
                                            2TH + T(2H/128)4 + 2TH + 4T + 4TH + 2TH + T(2H/128)4 + 4T. Every
                                            row real (ours: the psum layout of 64 experts)
     batchedTransposeWeightSf "256×7168×2048 bs128"
                                            fp32 power-of-two scales [256, 56, 16] -> the two packed UE8M0
                                            int32 layouts of spec/quant.md §9.1 (exponent bytes packed 4 per
                                            word, repeat_interleave over the block rows, MN-major strides):
                                            4·256·(56·16 + 4·7168 + 14·2048) (one size: tokens reported 256)
     perBlockCastLossless "e2m1 [1,32] → e4m3 128x128 fp32-sf"
                                            FP4 codes uint8 [T, H/2] decoded by a 16-entry table, power-of-two
                                            fp32 sf [T, H/32] -> e4m3 [T, H] times 2^(Ein − Eout), fp32 sf
                                            [T/128, H/128] = 2^(Eout − 127): TH/2 + T(H/32)4 + TH + (T/128)(H/128)4
     perTokenCastBack "e4m3 128 fp32 sf → bf16" castBack's [1,128] function: TH + T(H/128)4 + 2TH
     castBack "e4m3→fp32 [128,128] fp32 sf" as [128,128] with an fp32 result: TH + (T/128)(H/128)4 + 4TH
     unpackFromE2m1fnX2 "e2m1x2 → bf16" / "e2m1x2 → fp32"
                                            uint8 [T, H/2] decoded by the table: TH/2 + 2TH (bf16) or 4TH (fp32)
     swigluForward "bf16→bf16 + weights"    x bf16 [T, 2H], fp32 row weights [T] -> bf16 silu(gate)·up·w:
                                            4TH + 4T + 2TH (every row real; ours: 64 experts in the psum layout)
     addRmsnormForwardAndPerTokenCast "bf16→e4m3 packed, residual in place"
                                            residual.add_(x), F.rms_norm(residual), the packed UE8M0 cast of
                                            section 2: 2TH·3 + 2H + TH + packed sf bytes (no rstd; ours +4T)
     randnLike "bf16 [T, H] randn_like"     torch.randn_like of a bf16 [T, H] tensor: write 2TH
     randn "fp32 2^28"                      buf.normal_() on a preallocated fp32 buffer of 2^28 values,
                                            once (tokens reported 2^28, hidden 1): write 4·2^28. Its
                                            write-only reference: buf.fill_(1.0) and buf.zero_() on the
                                            same buffer, rows of op "fill_" / "zero_"; the better rate
                                            goes into the randn rows as "write_gbps" (and "pct_write")
                                            and into the top-level "write_only".
   Compiled vs eager: every output compared byte for byte on fresh inputs (randn excepted); a
   difference is reported, not an error (inductor may fuse and reorder float arithmetic).

Timing: triton.testing.do_bench (median, L2 flushed before each call) when importable, else
CUDA events around N back-to-back iterations after warm-up, median of several repetitions
(--timer picks explicitly).

Output: a table on stdout and, with --json PATH:
  {"gpu", "driver", "torch", "torch_cuda", "timer", "copy_gbps", "copy_bytes", "write_only",
   "rows": [{"impl": "torch-eager"|"torch-compile", "op": "perTokenCast"|<op of section 5>, "tokens",
             "hidden", "variant": "fp32-sf"|"packed-ue8m0"|<variant of section 5>, "us", "gbps",
             "pct_copy", "host_us", "bytes", "copy_same_gbps", "pct_copy_same", "compile_mode",
             "compile_s" [, "write_gbps", "fill_gbps", "zero_gbps", "pct_write" (randn)]}],
   "checks": [...], "notes": [...]}
Options: --quick (fewer iterations), --shapes 4096,16384 (perTokenCast), --tokens 8192,16384 (the
further ops), --ops a,b (default all: perTokenCast, which covers sections 2-4, and the ops of
section 5), --no-compile, --compile-mode, --compile-timeout (s, default 300), --budget (s, soft
limit on the whole run; default 170). On the H200 one compile took 2-5 s and the perTokenCast
sections about 40 s, so every op with its compiled rows needs roughly 4 minutes: pass e.g.
--budget 400 (the eager rows are always measured; only compiles are skipped near the budget),
or split the ops over several commands with --ops. --timer auto|do_bench|events.
"""

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback

T0 = time.perf_counter()

HIDDEN = 7168
GROUP = 128  # numPerChannels
FP8_MAX = 448.0
AMAX_CLAMP = 1e-4
COPY_BYTES = 2 << 30  # 2 GiB
COMPILE_MODE_MAX = "max-autotune-no-cudagraphs"
COMPILE_MIN_S = 20.0  # shortest time limit given to one compile of a further op
COMPILE_RESERVE_S = 25.0  # further ops: no compile is started with less of the --budget left

NOTES = []
CHECKS = []


def note(msg):
    NOTES.append(msg)
    print(f"[note] {msg}", flush=True)


def elapsed():
    return time.perf_counter() - T0


try:
    import torch
except Exception as e:  # pragma: no cover - only on a machine without torch
    torch = None
    _TORCH_IMPORT_ERROR = f"{type(e).__name__}: {e}"
else:
    _TORCH_IMPORT_ERROR = None


# ---------------------------------------------------------------------------------------------
# The peer implementations (plain PyTorch; the same functions are handed to torch.compile).
# ---------------------------------------------------------------------------------------------


def per_token_cast_fp32_sf(x):
    """bf16 [T, H] -> (e4m3 [T, H], fp32 sf [T, H/128])."""
    t, h = x.shape
    xg = x.view(t, h // GROUP, GROUP)
    amax = xg.abs().amax(-1).float().clamp(min=AMAX_CLAMP)
    sf = amax / FP8_MAX
    data = (xg.float() * (FP8_MAX / amax)[..., None]).clamp(-FP8_MAX, FP8_MAX)
    data = data.to(torch.float8_e4m3fn).view(t, h)
    return data, sf


def per_token_cast_packed_ue8m0(x):
    """bf16 [T, H] -> (e4m3 [T, H], int32 sf [T, W] column-major, token dim padded to 4).

    sf = amax / 448 rounded up to a power of two 2^e; e = ceil(log2(sf)) by the bit trick
    ((bits(sf) - 1) >> 23) + 1 - 127; data = x * 2^-e; exponent bytes (127 + e) packed 4 per
    int32, first group in the low byte.
    """
    t, h = x.shape
    g = h // GROUP
    xg = x.view(t, g, GROUP)
    amax = xg.abs().amax(-1).float().clamp(min=AMAX_CLAMP)
    sf = amax / FP8_MAX
    ebiased = ((sf.view(torch.int32) - 1) >> 23) + 1  # 127 + e, in [0, 255]
    inv = ((254 - ebiased) << 23).view(torch.float32)  # 2^-e (biased exponent 127 - e)
    data = (xg.float() * inv[..., None]).clamp(-FP8_MAX, FP8_MAX)
    data = data.to(torch.float8_e4m3fn).view(t, h)
    w = (g + 3) // 4
    if w * 4 != g:
        ebiased = torch.nn.functional.pad(ebiased, (0, w * 4 - g))  # zero bytes
    b = ebiased.view(t, w, 4)
    b3 = b[..., 3]
    b3 = b3 - ((b3 >> 7) << 8)  # the top byte as a signed value: no int32 overflow below
    packed = b[..., 0] + b[..., 1] * 256 + b[..., 2] * 65536 + b3 * 16777216
    tp = (t + 3) // 4 * 4
    out = torch.empty((w, tp), dtype=torch.int32, device=x.device)
    out[:, :t] = packed.t()
    if tp != t:
        out[:, t:] = 0
    return data, out[:, :t].t()  # shape [T, W], strides (1, align(T, 4))


VARIANTS = {
    "fp32-sf": per_token_cast_fp32_sf,
    "packed-ue8m0": per_token_cast_packed_ue8m0,
}


def sf_bytes(variant, t, h):
    g = h // GROUP
    if variant == "fp32-sf":
        return t * g * 4
    w = (g + 3) // 4
    return w * ((t + 3) // 4 * 4) * 4


def case_bytes(variant, t, h):
    return t * h * 2 + t * h + sf_bytes(variant, t, h)


# ---------------------------------------------------------------------------------------------
# The further ops (section 5 of the docstring): peer functions, inputs, byte counts.
# Every function takes tensors only and returns a tuple of tensors, eager and compiled alike.
# ---------------------------------------------------------------------------------------------

EPS = 1e-6
ROPE_HEADS = 128
ROPE_QK = 192  # query head width of DeepSeek MLA: 128 "nope" + 64 "rope" dims
ROPE_D = 64  # the rotated trailing dims
RANDN_N = 1 << 28


def _cast_groups_f32(v):
    """fp32 [T, G, N] -> (e4m3 codes [T, G, N], fp32 sf [T, G]): the per-token cast of fp32 values."""
    amax = v.abs().amax(-1).clamp(min=AMAX_CLAMP)
    sf = amax / FP8_MAX
    data = (v * (FP8_MAX / amax)[..., None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return data, sf


def per_block_cast_128(x):
    """bf16 [T, H] -> (e4m3 [T, H], fp32 sf [T/128, H/128]); blocks of 128 x 128."""
    t, h = x.shape
    xb = x.view(t // 128, 128, h // 128, 128)
    amax = xb.abs().amax(dim=(1, 3)).float().clamp(min=AMAX_CLAMP)
    sf = amax / FP8_MAX
    data = (xb.float() * (FP8_MAX / amax)[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX)
    return data.to(torch.float8_e4m3fn).view(t, h), sf


def cast_back_per_token(data, sf):
    """e4m3 [T, H] with fp32 sf [T, H/128] -> bf16 [T, H]."""
    t, h = data.shape
    y = data.view(t, h // GROUP, GROUP).float() * sf[..., None]
    return (y.to(torch.bfloat16).view(t, h),)


def cast_back_per_block(data, sf):
    """e4m3 [T, H] with fp32 sf [T/128, H/128] -> bf16 [T, H]."""
    t, h = data.shape
    y = data.view(t // 128, 128, h // 128, 128).float() * sf[:, None, :, None]
    return (y.to(torch.bfloat16).view(t, h),)


def cast_e4m3(x):
    """bf16 -> e4m3, round to nearest, saturating (clamp first: .to() alone gives NaN from 464 up)."""
    return (x.clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn),)


def per_token_cast_and_cast_back(x):
    """bf16 [T, H], in place: x <- bf16(e4m3(x / sf) * sf), groups of 128 channels."""
    t, h = x.shape
    data, sf = _cast_groups_f32(x.view(t, h // GROUP, GROUP).float())
    x.copy_((data.float() * sf[..., None]).to(x.dtype).view(t, h))
    return (x,)


def per_channel_cast_128(x):
    """bf16 [T, H] -> (e4m3 [T, H], fp32 sf [T/128, H]); blocks of 128 rows x 1 column."""
    t, h = x.shape
    xb = x.view(t // 128, 128, h)
    amax = xb.abs().amax(1).float().clamp(min=AMAX_CLAMP)
    sf = amax / FP8_MAX
    data = (xb.float() * (FP8_MAX / amax)[:, None, :]).clamp(-FP8_MAX, FP8_MAX)
    return data.to(torch.float8_e4m3fn).view(t, h), sf


def swiglu_forward_and_per_token_cast(x):
    """bf16 [T, 2H] -> (e4m3 [T, H], fp32 sf [T, H/128]) of silu(gate) * up, cast from fp32."""
    t, h2 = x.shape
    h = h2 // 2
    g = x[:, :h].float()
    u = x[:, h:].float()
    val = g / (1.0 + torch.exp(-g)) * u
    data, sf = _cast_groups_f32(val.reshape(t, h // GROUP, GROUP))
    return data.reshape(t, h), sf


def swiglu_backward(x, dy):
    """bf16 x [T, 2H], dy [T, H] -> bf16 dx [T, 2H] (d gate | d up) of silu(gate) * up."""
    h = dy.shape[1]
    g = x[:, :h].float()
    u = x[:, h:].float()
    s = torch.sigmoid(g)
    ws = dy.float() * s
    gx = ws * u * (1.0 + g * (1.0 - s))
    gu = ws * g
    return (torch.cat([gx.to(x.dtype), gu.to(x.dtype)], dim=1),)


def swiglu_backward_weighted(x, dy, w):
    """As swiglu_backward with fp32 row weights w [T]: also the weight gradient fp32 [T] = sum_j dy * act."""
    h = dy.shape[1]
    gx, gu, wgrad = _swiglu_grads_weighted(x[:, :h].float(), x[:, h:].float(), dy.float(), w)
    return torch.cat([gx.to(x.dtype), gu.to(x.dtype)], dim=1), wgrad


def _swiglu_grads_weighted(g, u, d, w):
    """fp32 gate g, up u, gradient d, row weights w [T] -> (d gate, d up, weight gradient [T])."""
    s = torch.sigmoid(g)
    ws = d * w[:, None] * s
    gx = ws * u * (1.0 + g * (1.0 - s))
    gu = ws * g
    wgrad = (d * (g * s * u)).sum(-1)
    return gx, gu, wgrad


def _rms_norm(x, w):
    if hasattr(torch.nn.functional, "rms_norm"):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS)
    xf = x.float()  # torch < 2.4
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)


def norm_forward(x, w):
    """bf16 [T, H], weight bf16 [H] -> bf16 [T, H] (F.rms_norm, eps 1e-6)."""
    return (_rms_norm(x, w),)


def norm_forward_and_cast_fp32_sf(x, w):
    """F.rms_norm (bf16) then the per-token cast (e4m3, fp32 sf [T, H/128])."""
    return per_token_cast_fp32_sf(_rms_norm(x, w))


def norm_forward_and_cast_packed(x, w):
    """F.rms_norm (bf16) then the per-token cast in DeepGEMM's packed UE8M0 layout."""
    return per_token_cast_packed_ue8m0(_rms_norm(x, w))


def norm_backward(x, w, dy, rstd):
    """Handwritten RMSNorm backward: bf16 x, dy [T, H], w [H], fp32 rstd [T] -> (bf16 dx, fp32 dw [H])."""
    h = x.shape[1]
    r = rstd[:, None]
    xh = x.float() * r
    g = dy.float()
    gw = g * w.float()
    dot = (xh * gw).sum(-1, keepdim=True)
    dx = (gw - xh * (dot / h)) * r
    dw = (xh * g).sum(0)
    return dx.to(x.dtype), dw


def _rope_rotated(x, cache, pos):
    """Interleaved (GPT-J / DeepSeek MLA) rotation of x [T, heads, 64] -> fp32 [T, heads, 32, 2]."""
    cs = cache[pos]  # [T, 64] fp32: cos | sin
    half = cs.shape[1] // 2
    c = cs[:, None, :half]
    s = cs[:, None, half:]
    xf = x.float().unflatten(-1, (half, 2))
    a = xf[..., 0]
    b = xf[..., 1]
    return torch.stack([a * c - b * s, a * s + b * c], dim=-1)


def rope_in_place(x, cache, pos):
    """x [T, heads, 64] (any view with last stride 1) rotated in place."""
    x.copy_(_rope_rotated(x, cache, pos).flatten(-2).to(x.dtype))
    return (x,)


def strided_neg_in_place(x, cache, pos):
    """The access pattern alone: x's elements negated in place (x [T, heads, 64], any view; cache, pos unused)."""
    x.neg_()
    return (x,)


def rope_out_of_place(x, cache, pos):
    """x [T, heads, 64] view -> a new contiguous rotated [T, heads, 64] tensor of x's dtype."""
    return (_rope_rotated(x, cache, pos).flatten(-2).to(x.dtype),)


def per_channel_cast_and_transpose_128(x):
    """bf16 [T, H] -> (e4m3 [H, T] = the codes of per_channel_cast_128 transposed, fp32 sf [T/128, H]).

    The transpose moves the codes as uint8 (the same bytes; copies of float8 tensors are avoided).
    """
    data, sf = per_channel_cast_128(x)
    return data.view(torch.uint8).t().contiguous().view(torch.float8_e4m3fn), sf


def _swiglu_per_channel(x, r, transpose):
    """bf16 [T, 2H] -> silu(gate) * up rounded to bf16, cast per column in blocks of r rows:
    (e4m3 [H, T] if transpose else [T, H], fp32 sf [T/r, H])."""
    t, h2 = x.shape
    h = h2 // 2
    g = x[:, :h].float()
    u = x[:, h:].float()
    a = (g / (1.0 + torch.exp(-g)) * u).to(torch.bfloat16).float()  # staged in bf16, as the op
    ab = a.view(t // r, r, h)
    amax = ab.abs().amax(1).clamp(min=AMAX_CLAMP)
    sf = amax / FP8_MAX
    data = (ab * (FP8_MAX / amax)[:, None, :]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(t, h)
    if transpose:
        data = data.view(torch.uint8).t().contiguous().view(torch.float8_e4m3fn)
    return data, sf


def swiglu_per_channel_t128(x):
    return _swiglu_per_channel(x, 128, True)


def swiglu_per_channel_t32(x):
    return _swiglu_per_channel(x, 32, True)


def swiglu_per_channel_n128(x):
    return _swiglu_per_channel(x, 128, False)


def swiglu_backward_and_per_token_cast(x, xsf, dy, w):
    """e4m3 x [T, 2H] with fp32 sf [T, 2H/128], bf16 dy [T, H], fp32 row weights w [T] ->
    (bf16 dx [T, 2H], e4m3 dx codes [T, 2H], fp32 sf [T, 2H/128], fp32 weight gradient [T]).

    x is dequantized (codes times scale), the backward of silu(gate) * up * w as swiglu_backward_weighted, and
    the fp32 gradient both rounded to bf16 and cast per token in groups of 128 (as the op: from fp32).
    """
    t, h2 = x.shape
    h = h2 // 2
    xf = (x.float().view(t, h2 // GROUP, GROUP) * xsf[..., None]).view(t, h2)
    gx, gu, wgrad = _swiglu_grads_weighted(xf[:, :h], xf[:, h:], dy.float(), w)
    grad = torch.cat([gx, gu], dim=1)
    data, sf = _cast_groups_f32(grad.view(t, h2 // GROUP, GROUP))
    return grad.to(torch.bfloat16), data.view(t, h2), sf, wgrad


TW_GROUPS = 256  # batchedTransposeWeightSf: 256 experts of a 7168 x 2048 weight, blocks of 128
TW_N = 7168
TW_K = 2048
TW_BS = 128


def _pack4(e):
    """int32 bytes [..., 4P] -> int32 words [..., P], byte 4p + i in bits 8i (the top byte taken signed: no
    int32 overflow)."""
    b = e.reshape(*e.shape[:-1], -1, 4)
    b3 = b[..., 3]
    b3 = b3 - ((b3 >> 7) << 8)
    return b[..., 0] + b[..., 1] * 256 + b[..., 2] * 65536 + b3 * 16777216


def transpose_weight_sf(sf):
    """fp32 power-of-two weight scales [G, nS, kS] -> DeepGEMM's two packed UE8M0 layouts (spec/quant.md §9.1):
    sf0 int32 [G, n, ceil(kS/4)] strides (P0·n, 1, n), sf1 int32 [G, k, ceil(nS/4)] strides (P1·k, 1, k);
    words of 4 exponent bytes, zero past the last scale; every row of a block repeats its block's word."""
    g, ns, ks = sf.shape
    e = (sf.view(torch.int32) >> 23) & 0xFF
    p0 = (ks + 3) // 4
    p1 = (ns + 3) // 4
    w0 = _pack4(torch.nn.functional.pad(e, (0, 4 * p0 - ks))).repeat_interleave(TW_BS, dim=1)  # [G, n, P0]
    w1 = _pack4(torch.nn.functional.pad(e.transpose(1, 2), (0, 4 * p1 - ns))).repeat_interleave(TW_BS, dim=1)
    return w0.transpose(1, 2).contiguous().transpose(1, 2), w1.transpose(1, 2).contiguous().transpose(1, 2)


E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _decode_e2m1(q, lut):
    """uint8 [T, H/2] (two E2M1 codes per byte, element 2i in the low nibble) -> fp32 [T, H] by a 16-entry table."""
    t, hh = q.shape
    return torch.stack([lut[(q & 0xF).long()], lut[(q >> 4).long()]], dim=-1).view(t, 2 * hh)


def per_block_cast_lossless(q, sf, lut):
    """FP4 codes [T, H/2] with power-of-two fp32 scales [T, H/32] (blocks [1, 32]) -> e4m3 [T, H] with fp32 scales
    [T/128, H/128] (spec/quant.md §10): Eout = max(Emax - 6, 0) per 128 x 128 block, codes times 2^(Ein - Eout)."""
    t, hh = q.shape
    h = 2 * hh
    v = _decode_e2m1(q, lut)
    eb = ((sf.view(torch.int32) >> 23) & 0xFF).view(t // 128, 128, h // 128, 4)
    eout = (eb.amax(dim=(1, 3)) - 6).clamp(min=0)  # [T/128, H/128]
    d = (eb - eout[:, None, :, None]).float()
    y = v.view(t // 128, 128, h // 128, 4, 32) * torch.exp2(d)[..., None]
    return y.view(t, h).to(torch.float8_e4m3fn), (eout << 23).view(torch.float32)


def unpack_e2m1_bf16(q, lut):
    """uint8 [T, H/2] -> bf16 [T, H] (unpackFromE2m1fnX2)."""
    return (_decode_e2m1(q, lut).to(torch.bfloat16),)


def unpack_e2m1_fp32(q, lut):
    """uint8 [T, H/2] -> fp32 [T, H] (unpackFromE2m1fnX2)."""
    return (_decode_e2m1(q, lut),)


def cast_back_per_block_fp32(data, sf):
    """e4m3 [T, H] with fp32 sf [T/128, H/128] -> fp32 [T, H]."""
    t, h = data.shape
    y = data.view(t // 128, 128, h // 128, 128).float() * sf[:, None, :, None]
    return (y.view(t, h),)


def swiglu_forward_weighted(x, w):
    """bf16 x [T, 2H], fp32 row weights [T] -> bf16 silu(gate) * up * w [T, H] (swigluForward, fmt bf16)."""
    h = x.shape[1] // 2
    g = x[:, :h].float()
    u = x[:, h:].float()
    return ((g / (1.0 + torch.exp(-g)) * u * w[:, None]).to(torch.bfloat16),)


def add_rms_norm_and_cast_packed(x, residual, w):
    """residual += x (in place, bf16), then F.rms_norm of it and the packed UE8M0 per-token cast."""
    residual.add_(x)
    return per_token_cast_packed_ue8m0(_rms_norm(residual, w))


def randn_like_bf16(t):
    """torch.randn_like of a bf16 tensor: a new bf16 tensor of standard normal values."""
    return (torch.randn_like(t),)


def randn_fill(buf):
    """buf.normal_(): fp32 standard normal values into a preallocated buffer."""
    return (buf.normal_(),)


def _gen(seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g


def _randn(shape, seed, scale=1.0):
    """A bf16 tensor of normal values times scale."""
    x = torch.randn(shape, device="cuda", dtype=torch.float32, generator=_gen(seed))
    return (x * scale).to(torch.bfloat16)


def _in_per_token_cast_back(t, h):
    return per_token_cast_fp32_sf(make_input(t, h))


def _in_per_block_cast_back(t, h):
    return per_block_cast_128(make_input(t, h))


def _in_swiglu_fwd(t, h):
    return (_randn((t, 2 * h), 11 + t, scale=2.0),)


def _in_swiglu_bwd(t, h):
    return _randn((t, 2 * h), 12 + t, scale=2.0), _randn((t, h), 13 + t)


def _in_swiglu_bwd_w(t, h):
    w = torch.rand((t,), device="cuda", dtype=torch.float32, generator=_gen(14 + t))
    return _in_swiglu_bwd(t, h) + (w,)


def _norm_weight(h):
    return _randn((h,), 15, scale=0.1) + 1.0


def _in_norm(t, h):
    return _randn((t, h), 16 + t), _norm_weight(h)


def _in_norm_bwd(t, h):
    x, w = _in_norm(t, h)
    rstd = torch.rsqrt(x.float().pow(2).mean(-1) + EPS)
    return x, w, _randn((t, h), 17 + t), rstd


def _rope_cache_pos(t):
    """cos | sin cache [t, 64] fp32 of DeepSeek's frequencies, positions int64 [t] (a permutation)."""
    half = ROPE_D // 2
    inv = 10000.0 ** (-torch.arange(half, device="cuda", dtype=torch.float64) / half)
    ang = torch.arange(t, device="cuda", dtype=torch.float64)[:, None] * inv[None, :]
    cache = torch.cat([torch.cos(ang), torch.sin(ang)], dim=1).float().contiguous()
    pos = torch.randperm(t, device="cuda", generator=_gen(18 + t))
    return cache, pos


def _in_rope_view(t, h):
    q = _randn((t, ROPE_HEADS, ROPE_QK), 19 + t)
    return (q[..., ROPE_QK - ROPE_D:],) + _rope_cache_pos(t)  # the view keeps q alive


def _in_rope_contig(t, h):
    return (_randn((t, ROPE_HEADS, ROPE_D), 20 + t),) + _rope_cache_pos(t)


def _in_randn(t, h):
    return (torch.empty((RANDN_N,), device="cuda", dtype=torch.float32),)


def _in_swiglu_bwd_cast(t, h):
    x = _randn((t, 2 * h), 21 + t, scale=2.0)
    data, sf = _cast_groups_f32(x.float().view(t, 2 * h // GROUP, GROUP))
    w = torch.rand((t,), device="cuda", dtype=torch.float32, generator=_gen(23 + t))
    return data.view(t, 2 * h), sf, _randn((t, h), 22 + t), w


def _in_transpose_weight_sf(t, h):
    e = torch.randint(-30, 31, (TW_GROUPS, TW_N // TW_BS, TW_K // TW_BS), device="cuda", generator=_gen(24))
    return (torch.exp2(e.float()),)


def _e2m1_lut():
    return torch.tensor(E2M1_VALUES, device="cuda", dtype=torch.float32)


def _in_fp4(t, h):
    """Random FP4 code bytes [T, H/2], power-of-two fp32 scales [T, H/32] (2^-3 ... 2^3), the decode table."""
    q = torch.randint(0, 256, (t, h // 2), device="cuda", dtype=torch.uint8, generator=_gen(25 + t))
    e = torch.randint(-3, 4, (t, h // 32), device="cuda", generator=_gen(26 + t))
    return q, torch.exp2(e.float()), _e2m1_lut()


def _in_fp4_codes(t, h):
    q, _, lut = _in_fp4(t, h)
    return q, lut


def _in_swiglu_fwd_w(t, h):
    w = torch.rand((t,), device="cuda", dtype=torch.float32, generator=_gen(27 + t))
    return _in_swiglu_fwd(t, h) + (w,)


def _in_add_norm(t, h):
    return _randn((t, h), 28 + t), _randn((t, h), 29 + t), _norm_weight(h)


def _in_randn_like(t, h):
    return (torch.empty((t, h), device="cuda", dtype=torch.bfloat16),)


def _sf128(t, h):
    return t * (h // GROUP) * 4


def _blk128(t, h):
    return (t // 128) * (h // 128) * 4


def _rope_bytes(t, h):
    return t * ROPE_HEADS * ROPE_D * 2 * 2 + t * ROPE_D * 4 + t * 8


class OpCase:
    """One op variant: make(t, h) -> input tuple, fn(*inputs) -> output tuple, nbytes(t, h)."""

    def __init__(self, op, variant, fn, make, nbytes, compare=True, shape=None, once=False):
        self.op = op
        self.variant = variant
        self.fn = fn
        self.make = make
        self.nbytes = nbytes
        self.compare = compare
        self.shape = shape  # t -> the (tokens, hidden) the row reports; default (t, HIDDEN)
        self.once = once  # one size only (randn): measured with the first token count

    def key(self):
        return f"{self.op}/{self.variant}"

    def dims(self, t):
        return self.shape(t) if self.shape is not None else (t, HIDDEN)


def op_cases():
    """Every case of the further ops, in table order (byte counts: see the module docstring)."""
    bf16_in = lambda t, h: (make_input(t, h),)  # noqa: E731
    return [
        OpCase("perBlockCast", "bf16→e4m3 128x128", per_block_cast_128, bf16_in,
               lambda t, h: 2 * t * h + t * h + _blk128(t, h)),
        OpCase("castBack", "e4m3→bf16 [1,128]", cast_back_per_token, _in_per_token_cast_back,
               lambda t, h: t * h + _sf128(t, h) + 2 * t * h),
        OpCase("castBack", "e4m3→bf16 [128,128]", cast_back_per_block, _in_per_block_cast_back,
               lambda t, h: t * h + _blk128(t, h) + 2 * t * h),
        OpCase("cast", "bf16→e4m3 RN", cast_e4m3, bf16_in, lambda t, h: 2 * t * h + t * h),
        OpCase("perTokenCastAndCastBack", "bf16 [1,128] in place", per_token_cast_and_cast_back, bf16_in,
               lambda t, h: 2 * t * h + 2 * t * h),
        OpCase("perChannelCast", "bf16→e4m3 [128,1]", per_channel_cast_128, bf16_in,
               lambda t, h: 2 * t * h + t * h + (t // 128) * h * 4),
        OpCase("swigluForwardAndPerTokenCast", "bf16→e4m3 [1,128]", swiglu_forward_and_per_token_cast,
               _in_swiglu_fwd, lambda t, h: 2 * t * 2 * h + t * h + _sf128(t, h)),
        OpCase("swigluBackward", "bf16", swiglu_backward, _in_swiglu_bwd,
               lambda t, h: 2 * t * 2 * h + 2 * t * h + 2 * t * 2 * h),
        OpCase("swigluBackward", "bf16 +weights", swiglu_backward_weighted, _in_swiglu_bwd_w,
               lambda t, h: 2 * t * 2 * h + 2 * t * h + 4 * t + 2 * t * 2 * h + 4 * t),
        OpCase("normForward", "bf16 F.rms_norm", norm_forward, _in_norm,
               lambda t, h: 2 * t * h + 2 * h + 2 * t * h),
        OpCase("normForwardAndPerTokenCast", "bf16→e4m3 fp32-sf", norm_forward_and_cast_fp32_sf, _in_norm,
               lambda t, h: 2 * t * h + 2 * h + t * h + sf_bytes("fp32-sf", t, h)),
        OpCase("normForwardAndPerTokenCast", "bf16→e4m3 packed", norm_forward_and_cast_packed, _in_norm,
               lambda t, h: 2 * t * h + 2 * h + t * h + sf_bytes("packed-ue8m0", t, h)),
        OpCase("normBackward", "bf16 dx+dw(fp32)", norm_backward, _in_norm_bwd,
               lambda t, h: 2 * t * h * 2 + 4 * t + 2 * h + 2 * t * h + 4 * h),
        OpCase("applyRotary", "64/192 in place", rope_in_place, _in_rope_view, _rope_bytes,
               shape=lambda t: (t, ROPE_HEADS * ROPE_QK)),
        OpCase("applyRotary", "64/192 out of place", rope_out_of_place, _in_rope_view, _rope_bytes,
               shape=lambda t: (t, ROPE_HEADS * ROPE_QK)),
        OpCase("applyRotary", "[T,128,64] in place", rope_in_place, _in_rope_contig, _rope_bytes,
               shape=lambda t: (t, ROPE_HEADS * ROPE_D)),
        # the bound of the access pattern: an in-place elementwise pass over the same 64 of 192 dims (and over the
        # contiguous [T,128,64]), counting only x's read and write (T·128·64·2·2)
        OpCase("applyRotary", "64/192 in place: neg_ only (access pattern)", strided_neg_in_place, _in_rope_view,
               lambda t, h: t * ROPE_HEADS * ROPE_D * 2 * 2, shape=lambda t: (t, ROPE_HEADS * ROPE_QK)),
        OpCase("applyRotary", "[T,128,64] in place: neg_ only (access pattern)", strided_neg_in_place,
               _in_rope_contig, lambda t, h: t * ROPE_HEADS * ROPE_D * 2 * 2, shape=lambda t: (t, ROPE_HEADS * ROPE_D)),
        OpCase("perChannelCastAndTranspose", "bf16→e4m3 [128,1]", per_channel_cast_and_transpose_128, bf16_in,
               lambda t, h: 2 * t * h + t * h + (t // 128) * h * 4),
        OpCase("swigluForwardAndPerChannelCastAndTranspose", "bf16 → e4m3 [H, T], 128 tokens per scale",
               swiglu_per_channel_t128, _in_swiglu_fwd, lambda t, h: 2 * t * 2 * h + t * h + (t // 128) * h * 4),
        OpCase("swigluForwardAndPerChannelCastAndTranspose", "bf16 → e4m3 [H, T], 32 tokens per scale",
               swiglu_per_channel_t32, _in_swiglu_fwd, lambda t, h: 2 * t * 2 * h + t * h + (t // 32) * h * 4),
        OpCase("swigluForwardAndPerChannelCastAndTranspose", "bf16 → e4m3 [T, H], 128 tokens per scale",
               swiglu_per_channel_n128, _in_swiglu_fwd, lambda t, h: 2 * t * 2 * h + t * h + (t // 128) * h * 4),
        OpCase("swigluBackwardAndPerTokenCast", "e4m3 x, bf16 dy → bf16 + e4m3 128 + weightGrad",
               swiglu_backward_and_per_token_cast, _in_swiglu_bwd_cast,
               lambda t, h: (t * 2 * h + _sf128(t, 2 * h) + 2 * t * h + 4 * t)
               + (2 * t * 2 * h + t * 2 * h + _sf128(t, 2 * h) + 4 * t)),
        OpCase("batchedTransposeWeightSf", "256×7168×2048 bs128", transpose_weight_sf, _in_transpose_weight_sf,
               lambda t, h: 4 * TW_GROUPS * ((TW_N // TW_BS) * (TW_K // TW_BS)
                                             + ((TW_K // TW_BS + 3) // 4) * TW_N + ((TW_N // TW_BS + 3) // 4) * TW_K),
               shape=lambda t: (TW_GROUPS, HIDDEN), once=True),
        OpCase("perBlockCastLossless", "e2m1 [1,32] → e4m3 128x128 fp32-sf", per_block_cast_lossless, _in_fp4,
               lambda t, h: t * h // 2 + t * (h // 32) * 4 + t * h + _blk128(t, h)),
        OpCase("perTokenCastBack", "e4m3 128 fp32 sf → bf16", cast_back_per_token, _in_per_token_cast_back,
               lambda t, h: t * h + _sf128(t, h) + 2 * t * h),
        OpCase("castBack", "e4m3→fp32 [128,128] fp32 sf", cast_back_per_block_fp32, _in_per_block_cast_back,
               lambda t, h: t * h + _blk128(t, h) + 4 * t * h),
        OpCase("unpackFromE2m1fnX2", "e2m1x2 → bf16", unpack_e2m1_bf16, _in_fp4_codes,
               lambda t, h: t * h // 2 + 2 * t * h),
        OpCase("unpackFromE2m1fnX2", "e2m1x2 → fp32", unpack_e2m1_fp32, _in_fp4_codes,
               lambda t, h: t * h // 2 + 4 * t * h),
        OpCase("swigluForward", "bf16→bf16 + weights", swiglu_forward_weighted, _in_swiglu_fwd_w,
               lambda t, h: 2 * t * 2 * h + 4 * t + 2 * t * h),
        OpCase("addRmsnormForwardAndPerTokenCast", "bf16→e4m3 packed, residual in place", add_rms_norm_and_cast_packed,
               _in_add_norm, lambda t, h: 3 * 2 * t * h + 2 * h + t * h + sf_bytes("packed-ue8m0", t, h)),
        OpCase("randnLike", "bf16 [T, H] randn_like", randn_like_bf16, _in_randn_like, lambda t, h: 2 * t * h,
               compare=False),
        OpCase("randn", "fp32 2^28", randn_fill, _in_randn, lambda t, h: 4 * RANDN_N, compare=False,
               shape=lambda t: (RANDN_N, 1), once=True),
    ]


OP_NAMES = list(dict.fromkeys(["perTokenCast"] + [c.op for c in op_cases()]))


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------


class Timer:
    def __init__(self, kind, quick):
        self.quick = quick
        self.kind = kind
        self._do_bench = None
        if kind in ("auto", "do_bench"):
            try:
                from triton.testing import do_bench  # noqa: WPS433

                self._do_bench = do_bench
                self.kind = "do_bench"
            except Exception as e:
                if kind == "do_bench":
                    note(f"triton.testing.do_bench not importable ({type(e).__name__}); using CUDA events")
                self.kind = "events"
        if self.kind == "events":
            self._do_bench = None

    def describe(self):
        if self.kind == "do_bench":
            return "triton.testing.do_bench(return_mode='median', L2 flushed per call)"
        reps = 3 if self.quick else 7
        return f"torch.cuda.Event around N back-to-back calls (N<= {50 if self.quick else 200}), median of {reps} repetitions"

    def ms(self, fn):
        """Median GPU time of one call of fn, in ms."""
        if self._do_bench is not None:
            try:
                r = self._do_bench(
                    fn,
                    warmup=10 if self.quick else 25,
                    rep=40 if self.quick else 100,
                    return_mode="median",
                )
                if isinstance(r, (list, tuple)):
                    r = r[0]
                return float(r)
            except TypeError as e:
                note(f"do_bench signature mismatch ({e}); switching to CUDA events")
                self._do_bench = None
                self.kind = "events"
        return self._events_ms(fn)

    def _events_ms(self, fn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        est = max(s.elapsed_time(e), 1e-3)
        target = 10.0 if self.quick else 25.0  # ms per repetition
        cap = 50 if self.quick else 200
        n = int(min(max(target / est, 1), cap))
        reps = 3 if self.quick else 7
        times = []
        for _ in range(reps):
            s.record()
            for _ in range(n):
                fn()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) / n)
        return statistics.median(times)


def host_overhead_us(fn, n=1000):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6


# ---------------------------------------------------------------------------------------------
# Copy reference
# ---------------------------------------------------------------------------------------------

_COPY_CACHE = {}


def copy_gbps(timer, nbytes_total):
    """Rate of dst.copy_(src) where read + write = nbytes_total (buffer = nbytes_total / 2)."""
    size = max(int(nbytes_total // 2), 1)
    if size in _COPY_CACHE:
        return _COPY_CACHE[size]
    src = torch.empty(size, dtype=torch.uint8, device="cuda")
    src.random_(0, 256)
    dst = torch.empty_like(src)
    ms = timer.ms(lambda: dst.copy_(src))
    del src, dst
    gbps = 2 * size / (ms * 1e-3) / 1e9
    _COPY_CACHE[size] = gbps
    return gbps


# ---------------------------------------------------------------------------------------------
# torch.compile with fallback and a time limit
# ---------------------------------------------------------------------------------------------


class CompileTimeout(BaseException):
    """Raised from SIGALRM; BaseException so that `except Exception` inside dynamo lets it through."""


def _on_alarm(signum, frame):
    raise CompileTimeout()


def call_with_limit(fn, args, seconds):
    use_alarm = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    old = None
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(max(1, int(math.ceil(seconds))))
    try:
        t0 = time.perf_counter()
        out = fn(*args)
        torch.cuda.synchronize()
        return out, time.perf_counter() - t0
    finally:
        if use_alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


class Compiler:
    def __init__(self, args):
        self.enabled = not args.no_compile
        self.mode = args.compile_mode
        self.timeout = args.compile_timeout
        self.budget = args.budget
        self.fns = {}
        self.total_s = 0.0
        if not self.enabled:
            note("torch.compile disabled by --no-compile")
            return
        if not hasattr(torch, "compile"):
            note(f"torch.compile unavailable in torch {torch.__version__}; compiled rows skipped")
            self.enabled = False

    def _fallback(self, why):
        note(f"torch.compile mode={self.mode!r} {why}; falling back to mode='default' (torch._dynamo.reset())")
        try:
            torch._dynamo.reset()
        except Exception as e:
            note(f"torch._dynamo.reset() failed: {type(e).__name__}: {e}")
        self.mode = "default"
        self.fns = {}

    def get(self, key, fn=None, mode=None):
        mode = self.mode if mode is None else mode
        if (key, mode) not in self.fns:
            kw = {"dynamic": False}
            if mode != "default":
                kw["mode"] = mode
            self.fns[(key, mode)] = torch.compile(VARIANTS[key] if fn is None else fn, **kw)
        return self.fns[(key, mode)]

    def remaining(self):
        return self.budget - elapsed()

    def first_call(self, variant, x, label, fn=None, args=None, budget_aware=False):
        """Compile (first call) for x's shape; returns (fn, out, compile_s, mode) or None.

        variant keys the compiled function (VARIANTS[variant] unless fn is given); args replaces (x,).
        budget_aware (the further ops; the perTokenCast rows keep their original behaviour): every
        attempt, the default-mode retry included, is cut at the --budget, and a compile that fails
        (not one that runs out of time) is retried in mode "default" for this case only.
        """
        if not self.enabled:
            return None
        mode = self.mode
        while True:
            limit = self.timeout
            if budget_aware:
                limit = min(limit, max(COMPILE_MIN_S, self.remaining() - 5.0))
            elif self.mode != "default":
                # keep the whole run near the --budget: a slow max-autotune compile is cut short
                limit = min(limit, max(60.0, self.budget - elapsed()))
            timed_out = False
            try:
                cfn = self.get(variant, fn, mode)
                out, dt = call_with_limit(cfn, (x,) if args is None else tuple(args), limit)
                self.total_s += dt
                print(f"  compiled {label} mode={mode} in {dt:.1f} s", flush=True)
                return cfn, out, dt, mode
            except CompileTimeout:
                timed_out = True
                why = f"did not compile {label} within {limit:.0f} s"
            except Exception as e:
                msg = str(e).strip().splitlines()
                why = f"failed on {label}: {type(e).__name__}: {(msg[0] if msg else '')[:300]}"
                traceback.print_exc()
            if mode != "default" and budget_aware and not timed_out:
                note(f"torch.compile mode={mode!r} {why}; this case retried with mode='default'")
                mode = "default"
                continue
            if mode != "default":
                self._fallback(why)
                mode = self.mode
                continue
            note(f"torch.compile mode='default' {why}; compiled row skipped")
            try:
                torch._dynamo.reset()
            except Exception:
                pass
            self.fns = {}
            return None


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------


def compare_outputs(label, out_e, out_c):
    de, se = out_e
    dc, sc = out_c
    res = {"case": label}
    try:
        db_e, db_c = de.view(torch.uint8), dc.view(torch.uint8)
        res["data_equal"] = bool(torch.equal(db_e, db_c))
        res["data_mismatches"] = int((db_e != db_c).sum().item()) if not res["data_equal"] else 0
        same_shape = tuple(se.shape) == tuple(sc.shape) and se.dtype == sc.dtype
        res["sf_equal"] = bool(same_shape and torch.equal(se, sc))
        res["sf_mismatches"] = (
            int((se != sc).sum().item()) if same_shape and not res["sf_equal"] else (0 if same_shape else None)
        )
        if se.dtype == torch.float32 and same_shape and not res["sf_equal"]:
            rel = ((se - sc).abs() / se.abs().clamp(min=1e-30)).max().item()
            res["sf_max_rel_diff"] = rel
        res["sf_strides"] = {"eager": list(se.stride()), "compiled": list(sc.stride())}
        res["equal"] = res["data_equal"] and res["sf_equal"]
    except Exception as e:
        res["error"] = f"{type(e).__name__}: {e}"
        res["equal"] = False
    CHECKS.append(res)
    return res


def sanity_eager(variant, x, out):
    """Independent check of the eager output (small extra cost; done once per variant)."""
    t, h = x.shape
    g = h // GROUP
    data, sf = out
    res = {"case": f"sanity {variant} T={t}"}
    try:
        xg = x.view(t, g, GROUP).float()
        amax = xg.abs().amax(-1).clamp(min=AMAX_CLAMP)
        sf32 = amax / FP8_MAX
        dq = data.view(t, g, GROUP).float()
        if variant == "fp32-sf":
            deq = dq * sf[..., None]
            res["sf_ok"] = bool(torch.equal(sf, sf32))
        else:
            w = (g + 3) // 4
            p = sf.to(torch.int64) & 0xFFFFFFFF
            by = torch.stack([(p >> (8 * k)) & 0xFF for k in range(4)], dim=-1).reshape(t, w * 4)[:, :g]
            e_ref = torch.ceil(torch.log2(sf32.double())).to(torch.int64)
            res["sf_ok"] = bool(torch.equal(by, e_ref + 127))
            tp = (t + 3) // 4 * 4
            res["sf_layout_ok"] = tuple(sf.shape) == (t, w) and tuple(sf.stride()) == (1, tp)
            deq = dq * torch.exp2(e_ref.float())[..., None]
        err = ((deq - xg).abs().amax(-1) / amax).max().item()
        res["max_err_over_amax"] = err
        res["data_ok"] = bool(err <= 0.07) and bool(torch.isfinite(dq).all().item())
        res["ok"] = res["sf_ok"] and res["data_ok"] and res.get("sf_layout_ok", True)
    except Exception as e:
        res["error"] = f"{type(e).__name__}: {e}"
        res["ok"] = False
    CHECKS.append(res)
    return res


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def make_input(t, h):
    g = torch.Generator(device="cuda")
    g.manual_seed(1234 + t)
    x = torch.randn((t, h), device="cuda", dtype=torch.float32, generator=g)
    scale = torch.randint(-10, 10, (t, 1), device="cuda", generator=g).float()
    return (x * torch.exp2(scale)).to(torch.bfloat16)


def gpu_driver():
    try:
        r = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=15,
        )
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip().splitlines()[0].strip()
    except Exception:
        pass
    try:
        import pynvml  # noqa: WPS433

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        return None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(result):
    print()
    print(f"GPU: {result['gpu']}  driver: {result['driver']}  torch: {result['torch']} (CUDA {result['torch_cuda']})")
    print(f"timer: {result['timer']}")
    print(f"copy rate (2 GiB uint8 dst.copy_(src), read+write): {fmt(result['copy_gbps'], '.1f')} GB/s = 100 %")
    if result.get("write_only"):
        print(f"write-only rate (fill_/zero_ of {result['write_only']['bytes']} bytes): "
              f"{fmt(result['write_only']['write_gbps'], '.1f')} GB/s")
    hdr = (f"{'impl':<14} {'op':<28} {'variant':<22} {'tokens':>9} {'us':>10} {'GB/s':>8} {'%copy':>6} "
           f"{'%copySame':>9} {'host_us':>8} {'compile':>26}")
    print(hdr)
    print("-" * len(hdr))
    for r in result["rows"]:
        comp = "" if r.get("compile_mode") is None else f"{r['compile_mode']} {fmt(r.get('compile_s'), '.1f')}s"
        print(
            f"{r['impl']:<14} {r.get('op', 'perTokenCast'):<28} {r['variant']:<22} {r['tokens']:>9} "
            f"{fmt(r['us'], '.2f'):>10} {fmt(r['gbps'], '.1f'):>8} "
            f"{fmt(r['pct_copy'], '.1f'):>6} {fmt(r.get('pct_copy_same'), '.1f'):>9} {fmt(r['host_us'], '.2f'):>8} {comp:>26}"
            + (f"  ({fmt(r.get('pct_write'), '.1f')} % of write-only)" if r.get("write_gbps") else "")
        )
    if CHECKS:
        print()
        print("checks:")
        for c in CHECKS:
            if "outputs" in c:
                parts = [
                    f"#{o['index']} {o['dtype']}: " + ("equal" if o["equal"] else (
                        o.get("error") or f"{o.get('mismatches')} elements differ, max |diff| {fmt(o.get('max_abs_diff'), '.3g')}"))
                    for o in c["outputs"]
                ]
                err = f" (error {c['error']})" if "error" in c else ""
                print(f"  eager == compiled  {c['case']}: {'EQUAL' if c['equal'] else 'DIFFERENT'}{err}; " + ", ".join(parts))
            elif "equal" in c:
                extra = "" if c["equal"] else (
                    f" (data mismatches {c.get('data_mismatches')}, sf mismatches {c.get('sf_mismatches')}"
                    + (f", sf max rel diff {c['sf_max_rel_diff']:.3g}" if "sf_max_rel_diff" in c else "")
                    + (f", error {c['error']}" if "error" in c else "") + ")"
                )
                print(f"  eager == compiled  {c['case']}: {'EQUAL' if c['equal'] else 'DIFFERENT'}{extra}")
            else:
                print(f"  {c['case']}: {'ok' if c.get('ok') else 'FAILED'} "
                      f"(max |deq-x|/amax {fmt(c.get('max_err_over_amax'), '.4f')}, sf_ok {c.get('sf_ok')}"
                      + (f", layout_ok {c['sf_layout_ok']}" if "sf_layout_ok" in c else "")
                      + (f", error {c['error']}" if "error" in c else "") + ")")
    if NOTES:
        print()
        print("notes:")
        for n in NOTES:
            print(f"  - {n}")
    print(flush=True)


def write_json(path, result):
    if not path:
        return
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {path}", flush=True)


def make_row(impl, variant, t, h, ms, copy_ref, copy_same, host_us=None, compile_mode=None, compile_s=None):
    nbytes = case_bytes(variant, t, h)
    us = max(float(ms), 1e-9) * 1e3
    gbps = nbytes / (us * 1e-6) / 1e9
    return {
        "impl": impl,
        "op": "perTokenCast",
        "tokens": t,
        "hidden": h,
        "variant": variant,
        "us": us,
        "gbps": gbps,
        "pct_copy": (100.0 * gbps / copy_ref) if copy_ref else None,
        "host_us": host_us,
        "bytes": nbytes,
        "copy_same_gbps": copy_same,
        "pct_copy_same": (100.0 * gbps / copy_same) if copy_same else None,
        "compile_mode": compile_mode,
        "compile_s": compile_s,
    }


def run(args, result):
    timer = Timer(args.timer, args.quick)
    result["timer"] = timer.describe()
    torch.manual_seed(0)

    # 1. copy reference
    result["copy_bytes"] = 2 * COPY_BYTES
    copy_ref = copy_gbps(timer, 2 * COPY_BYTES)
    result["copy_gbps"] = copy_ref
    print(f"copy: {copy_ref:.1f} GB/s", flush=True)
    torch.cuda.empty_cache()

    compiler = Compiler(args)
    result["compile_mode_requested"] = args.compile_mode

    if "perTokenCast" in args.ops:
        run_per_token(args, result, timer, compiler, copy_ref)
    # 5. the further ops
    run_op_cases(args, result, timer, compiler, copy_ref)

    if compiler.enabled:
        result["compile_total_s"] = compiler.total_s
        result["compile_mode_final"] = compiler.mode
        note("torch.compile used dynamic=False (one specialization per shape); no CUDA graphs")
    if timer.kind == "events":
        note("timer: back-to-back CUDA events (no L2 flush): inputs that fit in L2 may be partly cached")


def run_per_token(args, result, timer, compiler, copy_ref):
    """Sections 2 to 4 of the docstring: perTokenCast at --shapes and the tiny-op host overhead."""
    # 2. the shapes
    h = HIDDEN
    for t in args.shapes:
        x = make_input(t, h)
        for variant, fn in VARIANTS.items():
            label = f"{variant} T={t} H={h}"
            print(f"case {label}", flush=True)
            try:
                copy_same = copy_gbps(timer, case_bytes(variant, t, h))
            except Exception as e:
                copy_same = None
                note(f"same-bytes copy for {label} failed: {type(e).__name__}: {e}")
            out_e = None
            try:
                out_e = fn(x)
                torch.cuda.synchronize()
                if t == args.shapes[0]:
                    sanity_eager(variant, x, out_e)
                ms = timer.ms(lambda: fn(x))
                result["rows"].append(make_row("torch-eager", variant, t, h, ms, copy_ref, copy_same))
                print(f"  eager    {ms * 1e3:10.2f} us", flush=True)
            except Exception as e:
                note(f"eager {label} failed: {type(e).__name__}: {e}")
                traceback.print_exc()
            got = compiler.first_call(variant, x, label)
            if got is not None:
                cfn, out_c, cs, mode = got
                try:
                    for _ in range(3):
                        cfn(x)
                    torch.cuda.synchronize()
                    ms = timer.ms(lambda: cfn(x))
                    result["rows"].append(
                        make_row("torch-compile", variant, t, h, ms, copy_ref, copy_same, compile_mode=mode, compile_s=cs)
                    )
                    print(f"  compiled {ms * 1e3:10.2f} us", flush=True)
                    if out_e is not None:
                        out_c = cfn(x)
                        torch.cuda.synchronize()
                        c = compare_outputs(label, out_e, out_c)
                        print(f"  eager == compiled: {c['equal']}", flush=True)
                except Exception as e:
                    note(f"compiled {label} failed at run time: {type(e).__name__}: {e}")
                    traceback.print_exc()
                del out_c
            del out_e
        del x
        torch.cuda.empty_cache()

    # 3. host overhead of a tiny op (tokens 1, variant fp32-sf)
    t, variant = 1, "fp32-sf"
    fn = VARIANTS[variant]
    label = f"{variant} T={t} H={h} (host overhead)"
    print(f"case {label}", flush=True)
    x = make_input(t, h)
    try:
        copy_same = copy_gbps(timer, case_bytes(variant, t, h))
    except Exception:
        copy_same = None
    try:
        out_e = fn(x)
        host, host_wall = host_overhead_us(lambda: fn(x))
        ms = timer.ms(lambda: fn(x))
        result["rows"].append(make_row("torch-eager", variant, t, h, ms, copy_ref, copy_same, host_us=host))
        note(f"tiny op eager: {host:.2f} us/call host, {host_wall:.2f} us/call incl. final sync (1000 calls)")
    except Exception as e:
        out_e = None
        note(f"eager {label} failed: {type(e).__name__}: {e}")
    got = compiler.first_call(variant, x, label)
    if got is not None:
        cfn, out_c, cs, mode = got
        try:
            host, host_wall = host_overhead_us(lambda: cfn(x))
            ms = timer.ms(lambda: cfn(x))
            result["rows"].append(
                make_row("torch-compile", variant, t, h, ms, copy_ref, copy_same, host_us=host, compile_mode=mode, compile_s=cs)
            )
            note(f"tiny op compiled: {host:.2f} us/call host, {host_wall:.2f} us/call incl. final sync (1000 calls)")
            if out_e is not None:
                compare_outputs(label, out_e, cfn(x))
        except Exception as e:
            note(f"compiled {label} failed at run time: {type(e).__name__}: {e}")


def compare_generic(label, out_e, out_c):
    """Byte equality of every output of a further op, eager vs compiled (same fresh inputs)."""
    res = {"case": label, "outputs": []}
    try:
        for i, (a, b) in enumerate(zip(out_e, out_c)):
            o = {"index": i, "dtype": str(a.dtype).replace("torch.", ""), "shape": list(a.shape)}
            if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
                o["equal"] = False
                o["error"] = f"compiled gives {b.dtype} {list(b.shape)}"
            else:
                ab = a.contiguous().reshape(-1).view(torch.uint8)
                bb = b.contiguous().reshape(-1).view(torch.uint8)
                o["equal"] = bool(torch.equal(ab, bb))
                if not o["equal"]:
                    size = a.element_size()
                    o["mismatches"] = int((ab.view(-1, size) != bb.view(-1, size)).any(-1).sum().item())
                    d = (a.float() - b.float()).abs()
                    o["max_abs_diff"] = float(d[torch.isfinite(d)].max().item()) if bool(torch.isfinite(d).any()) else None
            res["outputs"].append(o)
        res["equal"] = all(o["equal"] for o in res["outputs"])
    except Exception as e:
        res["error"] = f"{type(e).__name__}: {e}"
        res["equal"] = False
    CHECKS.append(res)
    return res


def make_op_row(impl, case, t, nbytes, ms, copy_ref, copy_same, compile_mode=None, compile_s=None, extra=None):
    tokens, hidden = case.dims(t)
    us = max(float(ms), 1e-9) * 1e3
    gbps = nbytes / (us * 1e-6) / 1e9
    row = {
        "impl": impl,
        "op": case.op,
        "tokens": tokens,
        "hidden": hidden,
        "variant": case.variant,
        "us": us,
        "gbps": gbps,
        "pct_copy": (100.0 * gbps / copy_ref) if copy_ref else None,
        "host_us": None,
        "bytes": nbytes,
        "copy_same_gbps": copy_same,
        "pct_copy_same": (100.0 * gbps / copy_same) if copy_same else None,
        "compile_mode": compile_mode,
        "compile_s": compile_s,
    }
    if extra:
        row.update(extra)
        if extra.get("write_gbps"):
            row["pct_write"] = 100.0 * gbps / extra["write_gbps"]
    return row


def write_only_rates(timer, buf, copy_ref, result):
    """Write-only references on randn's buffer: buf.fill_(1.0) and buf.zero_(), rows of op "fill_"/"zero_"."""
    nbytes = buf.numel() * buf.element_size()
    rates = {}
    for name, fn in (("fill_", lambda: buf.fill_(1.0)), ("zero_", lambda: buf.zero_())):
        try:
            ms = timer.ms(fn)
            gbps = nbytes / (ms * 1e-3) / 1e9
            rates[name] = gbps
            result["rows"].append({
                "impl": "torch-eager", "op": name, "tokens": buf.numel(), "hidden": 1,
                "variant": "fp32 write-only", "us": ms * 1e3, "gbps": gbps,
                "pct_copy": (100.0 * gbps / copy_ref) if copy_ref else None, "host_us": None, "bytes": nbytes,
                "copy_same_gbps": None, "pct_copy_same": None, "compile_mode": None, "compile_s": None,
            })
            print(f"  {name:<8} {ms * 1e3:10.2f} us  {gbps:8.1f} GB/s (write-only)", flush=True)
        except Exception as e:
            note(f"write-only {name} on {buf.numel()} fp32 failed: {type(e).__name__}: {e}")
    if not rates:
        return {}
    out = {"write_gbps": max(rates.values()), "fill_gbps": rates.get("fill_"), "zero_gbps": rates.get("zero_")}
    result["write_only"] = dict(out, bytes=nbytes)
    return out


def run_op_cases(args, result, timer, compiler, copy_ref):
    """Section 5 of the docstring: every selected further op, eager first (all cases), then compiled."""
    cases = [c for c in op_cases() if c.op in args.ops]
    if not cases:
        return
    h = HIDDEN
    plan = [(c, t) for c in cases for t in (args.tokens[:1] if c.once else args.tokens)]
    copy_same = {}
    extras = {}

    def label_of(c, t):
        tokens, hidden = c.dims(t)
        return f"{c.op} {c.variant} T={tokens} H={hidden}"

    for c, t in plan:
        label = label_of(c, t)
        print(f"case {label} (eager)", flush=True)
        inputs = out = None
        try:
            inputs = c.make(t, h)
            nbytes = c.nbytes(t, h)
            try:
                copy_same[(c.key(), t)] = copy_gbps(timer, nbytes)
            except Exception as e:
                note(f"same-bytes copy for {label} failed: {type(e).__name__}: {e}")
            out = c.fn(*inputs)
            torch.cuda.synchronize()
            ms = timer.ms(lambda: c.fn(*inputs))
            if c.op == "randn":
                extras[(c.key(), t)] = write_only_rates(timer, inputs[0], copy_ref, result)
            result["rows"].append(make_op_row("torch-eager", c, t, nbytes, ms, copy_ref,
                                              copy_same.get((c.key(), t)), extra=extras.get((c.key(), t))))
            print(f"  eager    {ms * 1e3:10.2f} us", flush=True)
        except Exception as e:
            note(f"eager {label} failed: {type(e).__name__}: {str(e)[:300]}")
            traceback.print_exc()
        del inputs, out
        torch.cuda.empty_cache()

    skipped = []
    for c, t in plan:
        if not compiler.enabled:
            break
        label = label_of(c, t)
        if compiler.remaining() < COMPILE_RESERVE_S:
            skipped.append(label)
            continue
        print(f"case {label} (torch.compile)", flush=True)
        inputs = got = None
        try:
            inputs = c.make(t, h)
            nbytes = c.nbytes(t, h)
            got = compiler.first_call(c.key(), None, label, fn=c.fn, args=inputs, budget_aware=True)
            if got is not None:
                cfn = got[0]
                for _ in range(3):
                    cfn(*inputs)
                torch.cuda.synchronize()
                ms = timer.ms(lambda: cfn(*inputs))
                result["rows"].append(make_op_row("torch-compile", c, t, nbytes, ms, copy_ref,
                                                  copy_same.get((c.key(), t)), compile_mode=got[3],
                                                  compile_s=got[2], extra=extras.get((c.key(), t))))
                print(f"  compiled {ms * 1e3:10.2f} us", flush=True)
        except Exception as e:
            note(f"compiled {label} failed: {type(e).__name__}: {str(e)[:300]}")
            traceback.print_exc()
        del inputs
        inputs = None
        if got is not None and c.compare:
            try:
                out_e = c.fn(*c.make(t, h))
                out_c = got[0](*c.make(t, h))
                torch.cuda.synchronize()
                r = compare_generic(label, out_e, out_c)
                print(f"  eager == compiled: {r['equal']}", flush=True)
                del out_e, out_c
            except Exception as e:
                note(f"eager == compiled check of {label} failed: {type(e).__name__}: {str(e)[:300]}")
                traceback.print_exc()
        del got
        torch.cuda.empty_cache()
    if skipped:
        note(f"--budget {args.budget:.0f} s nearly spent ({elapsed():.0f} s elapsed): torch.compile skipped for "
             f"{len(skipped)} case(s): " + "; ".join(skipped))


def parse_shapes(s):
    out = []
    for tok in s.split(","):
        tok = tok.strip()
        if tok:
            v = int(tok)
            if v <= 0:
                raise argparse.ArgumentTypeError(f"bad token count {v}")
            out.append(v)
    if not out:
        raise argparse.ArgumentTypeError("no shapes")
    return out


def parse_ops(s):
    out = [tok.strip() for tok in s.split(",") if tok.strip()]
    bad = [o for o in out if o not in OP_NAMES]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"unknown op(s) {', '.join(bad) or '(none)'}; known: {', '.join(OP_NAMES)}")
    return out


def main():
    ap = argparse.ArgumentParser(description="PyTorch eager / torch.compile baselines for the roofline table (bench/peers.py)")
    ap.add_argument("--json", default=None, help="write the results as JSON to this path")
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--shapes", type=parse_shapes, default=[4096, 16384], help="token counts, e.g. 4096,16384")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--compile-mode", default=COMPILE_MODE_MAX, help=f"first torch.compile mode (default {COMPILE_MODE_MAX})")
    ap.add_argument("--compile-timeout", type=float, default=300.0, help="seconds per compile before falling back")
    ap.add_argument("--budget", type=float, default=170.0, help="soft limit (s) on the run; cuts max-autotune compiles short")
    ap.add_argument("--timer", choices=["auto", "do_bench", "events"], default="auto")
    ap.add_argument("--ops", type=parse_ops, default=list(OP_NAMES),
                    help="comma-separated ops to measure (default all): " + ",".join(OP_NAMES))
    ap.add_argument("--tokens", type=parse_shapes, default=[8192, 16384],
                    help="token counts of the ops other than perTokenCast, e.g. 8192,16384")
    args = ap.parse_args()

    result = {
        "gpu": None,
        "driver": None,
        "torch": None,
        "torch_cuda": None,
        "python": sys.version.split()[0],
        "timer": None,
        "copy_gbps": None,
        "rows": [],
        "checks": CHECKS,
        "notes": NOTES,
    }
    rc = 0
    try:
        if torch is None:
            note(f"torch not importable: {_TORCH_IMPORT_ERROR}")
            rc = 2
        elif not torch.cuda.is_available():
            result["torch"] = torch.__version__
            note("CUDA not available; nothing measured")
            rc = 2
        else:
            result["torch"] = torch.__version__
            result["torch_cuda"] = torch.version.cuda
            result["gpu"] = torch.cuda.get_device_name(0)
            result["driver"] = gpu_driver()
            if not hasattr(torch, "float8_e4m3fn"):
                note(f"torch {torch.__version__} has no float8_e4m3fn; nothing measured")
                rc = 2
            else:
                run(args, result)
    except KeyboardInterrupt:
        note("interrupted")
        rc = 130
    except Exception as e:
        note(f"aborted: {type(e).__name__}: {e}")
        traceback.print_exc()
        rc = 1
    finally:
        result["wall_s"] = elapsed()
        try:
            print_table(result)
        except Exception as e:
            print(f"table failed: {e}", flush=True)
        write_json(args.json, result)
    return rc


if __name__ == "__main__":
    sys.exit(main())

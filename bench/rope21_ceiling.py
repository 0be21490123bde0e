#!/usr/bin/env python3
"""What an independent streaming kernel gets on applyRotary's access pattern (round 21, docs/perf-notes/perf21-rope.md).

Runs on the GPU machine (PyTorch with CUDA and Triton, as bench/peers.py), no build needed:

    python3 bench/rope21_ceiling.py [--json $OUT/rope21_ceiling.json]

The question it answers: is the MLA view's gap to the dense query (applyRotary 78.9% against 89.4% of copy at 16384
tokens, one and the same kernel) set by the access pattern (128 bytes read and written in place out of every 384),
or by something our kernel does? It times one in-place Triton kernel, the simplest kernel that touches exactly
applyRotary's view bytes: every 16-bit element of the rotated part of each head has its sign bit flipped
(`x ^= 0x8000`, read and written once, 16-byte vectors), rows of 64 elements, BLOCK_R rows a program, rows in
token-major order. No cos/sin, no positions: the bytes of the view only. Cases:

    mla    the trailing 64 of [T, 128, 192] (row stride 192 elements): applyRotary's MLA case
    dense  [T, 128, 64] (row stride 64): applyRotary's NeoX case

for T in 8192 and 16384, each at every (BLOCK_R, num_warps) of a small grid; it prints the best, in µs and in % of
the device-to-device copy rate (`dst.copy_(src)` of 1 GiB, read + write counted, as bench/roofline.ts's 100%).
"% roofline" adds applyRotary's cos/sin row and position per token (T · 260 bytes) to the bytes, as
bench/cases_rope_randn.ts counts them, so that it reads against applyRotary's rows directly.

How to read it (main, bench/runs/2026-12-02-h200-round17-ab.log: MLA 77.0 / 78.9%, NeoX 86.3 / 89.4%):
  - probe mla ≤ ~81% with probe dense ≥ ~88% (the same mla / dense ratio as applyRotary's, ~0.88): the pattern sets
    the ceiling; applyRotary's MLA row is at it, and no kernel-side form (registers, cp.async depth, bulk copies,
    cos/sin reuse) moves it. Retarget the MLA row, or look outside the kernel (e.g. a layout whose rope part is
    contiguous, which is the caller's).
  - probe mla ≥ ~85%: the pattern allows it; then compare the probe's shape (many independent programs of BLOCK_R
    rows, register loads, no persistence) with ours, starting from the best (BLOCK_R, num_warps) printed.
Exit status 1 if the probe's bytes are wrong (checked once on a small storage before timing).
"""
import argparse
import json
import statistics
import sys

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - the GPU machine has Triton (torch.compile uses it)
    print("rope21_ceiling: Triton is not installed; nothing to measure")
    sys.exit(2)

HEADS = 128
ROPE_DIM = 64
COPY_BYTES = 1 << 30


@triton.jit
def flip_rows(x_ptr, rows, row_stride, BLOCK_R: tl.constexpr, D: tl.constexpr):
    # row r of the view = 64 contiguous int16 at x_ptr + r * row_stride (Triton specializes a stride and a base that
    # are multiples of 16 as such, so each thread's 8 contiguous elements become one 16-byte access)
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.arange(0, D)
    ptr = x_ptr + r[:, None] * row_stride + c[None, :]
    m = r[:, None] < rows
    v = tl.load(ptr, mask=m)
    tl.store(ptr, v ^ -32768, mask=m)


def view_of(storage, width):
    """The rotated part of each head: [T·128 rows, 64] with row stride `width` (a strided view of `storage`)."""
    return storage.view(-1, width)[:, width - ROPE_DIM:]


def launch(view, block_r, warps):
    rows = view.shape[0]
    grid = (triton.cdiv(rows, block_r),)
    flip_rows[grid](view, rows, view.stride(0), BLOCK_R=block_r, D=ROPE_DIM, num_warps=warps)


def ms(fn):
    """Median GPU time of one call (CUDA events around back-to-back calls, as bench/peers.py's fallback timer)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    n = int(min(max(20.0 / max(s.elapsed_time(e), 1e-3), 1), 200))
    times = []
    for _ in range(7):
        s.record()
        for _ in range(n):
            fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / n)
    return statistics.median(times)


def check_bytes():
    """The probe flips exactly the view's bits: the other 128 of each 192 and everything else keep theirs."""
    g = torch.Generator(device="cuda").manual_seed(21)
    storage = torch.randint(-32768, 32767, (3 * 128 * 192,), dtype=torch.int16, device="cuda", generator=g)
    want = storage.clone().view(-1, 192)
    want[: 2 * 128, 128:] ^= -32768  # the launch below covers the first two tokens; the third must keep its bits
    launch(view_of(storage[: 2 * 128 * 192], 192), 16, 2)
    return torch.equal(storage, want.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--tokens", default="8192,16384")
    args = ap.parse_args()
    torch.cuda.init()
    if not check_bytes():
        print("FAIL: the probe kernel changed bytes outside the view (or not all of it)")
        return 1

    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    src.random_(0, 256)
    dst = torch.empty_like(src)
    copy_gbps = 2 * COPY_BYTES / (ms(lambda: dst.copy_(src)) * 1e-3) / 1e9
    del src, dst
    print(f"copy (1 GiB dst.copy_(src), read + write): {copy_gbps:.1f} GB/s = 100%")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")

    configs = [(r, w) for r in (8, 16, 32, 64, 128) for w in (1, 2, 4, 8) if r * ROPE_DIM >= 8 * 32 * w]
    rows_out = []
    for t in (int(x) for x in args.tokens.split(",")):
        best = {}
        for name, width in (("mla", 192), ("dense", ROPE_DIM)):
            storage = torch.zeros(t * HEADS * width, dtype=torch.int16, device="cuda")
            view = view_of(storage, width)
            view_bytes = t * HEADS * ROPE_DIM * 2 * 2
            roof_bytes = view_bytes + t * ROPE_DIM * 4 + t * 4
            results = []
            for block_r, warps in configs:
                m = ms(lambda: launch(view, block_r, warps))
                results.append((m, block_r, warps))
            results.sort()
            m, block_r, warps = results[0]
            pct = view_bytes / (m * 1e-3) / 1e9 / copy_gbps * 100
            roof = roof_bytes / (m * 1e-3) / 1e9 / copy_gbps * 100
            best[name] = roof
            print(f"T={t:6d} {name:5s} best BLOCK_R={block_r:3d} warps={warps}: {m * 1e3:8.2f} µs  {pct:5.1f}% of copy"
                  f"  {roof:5.1f}% roofline   (next: " + ", ".join(f"{r}/{w} {x * 1e3:.1f}" for x, r, w in results[1:4])
                  + ")")
            rows_out.append({"tokens": t, "case": name, "us": m * 1e3, "pct_copy": pct, "pct_roofline": roof,
                             "block_r": block_r, "num_warps": warps,
                             "all": [{"block_r": r, "num_warps": w, "us": x * 1e3} for x, r, w in results]})
            del view, storage
            torch.cuda.empty_cache()
        print(f"T={t:6d} mla / dense = {best['mla'] / best['dense']:.3f}   (applyRotary on main: 78.9 / 89.4 = 0.883 at 16384,"
              " 77.0 / 86.3 = 0.892 at 8192)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "copy_gbps": copy_gbps, "rows": rows_out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

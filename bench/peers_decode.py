#!/usr/bin/env python3
"""PyTorch's RMSNorm in the decode case, beside bench/decode.ts (same device command).

For tokens 1, 2, 4, 8, 16, 32, 64 × hidden 7168 bf16 with a bf16 weight (eps 1e-6): F.rms_norm eager and
torch.compile (mode "default", dynamic=False: one specialisation per shape, no CUDA graphs), plus an empty
elementwise op for scale. Per row: device time per call (100 calls queued behind a 4 GiB copy, so the GPU runs
them back to back without waiting for the host; CUDA events around them, median of 9; as bench/decode.ts), the
rate of calls issued back to back by the host (events around 100 calls, no lead) and host time per call (1000
back-to-back calls timed before the synchronize, median of 9 bursts).

    python3 bench/peers_decode.py --json decode-peers.json
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

H = 7168
EPS = 1e-6
TOKENS = [1, 2, 4, 8, 16, 32, 64]


def device_us(fn, n=100, reps=9):
    return queued_device_us(fn, n, reps, 0)[0]


def queued_device_us(fn, n=100, reps=9, lead_bytes=2 ** 32):
    """Median µs per call of n calls between two events, after a lead copy of lead_bytes when it is not 0 (so the
    GPU runs the calls back to back); host_bound: the host issued them more slowly than the copy ran."""
    src = torch.empty(lead_bytes, dtype=torch.uint8, device="cuda") if lead_bytes else None
    dst = torch.empty_like(src) if lead_bytes else None
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times, host_bound = [], False
    for _ in range(reps):
        c, s, e = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        if lead_bytes:
            c.record()
            dst.copy_(src)
        s.record()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        issue_us = (time.perf_counter() - t0) * 1e6
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1000 / n)
        if lead_bytes:
            host_bound |= issue_us >= c.elapsed_time(s) * 1000
    return statistics.median(times), host_bound


def host_us(fn, n=1000, reps=9):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) * 1e6 / n)
        torch.cuda.synchronize()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []

    def add(impl, op, t, fn):
        q, bound = queued_device_us(fn)
        r = {"impl": impl, "op": op, "tokens": t, "device_us": q, "host_bound": bound, "issued_us": device_us(fn),
             "host_us": host_us(fn)}
        rows.append(r)
        dev = f"{q:.2f}" + (" ≤" if bound else "")
        print(f"{impl:<16}{op:<24}{t:<8}{dev:<12}{r['issued_us']:<12.2f}{r['host_us']:.2f}", flush=True)

    print(f"{'impl':<16}{'op':<24}{'tokens':<8}{'device µs':<12}{'issued µs':<12}host µs", flush=True)
    z = torch.zeros(1, device="cuda")
    add("torch-eager", "empty op (zero_)", 1, lambda: z.zero_())
    w = torch.randn(H, device="cuda").to(torch.bfloat16)
    for t in TOKENS:
        x = torch.randn(t, H, device="cuda").to(torch.bfloat16)
        add("torch-eager", "F.rms_norm", t, lambda: F.rms_norm(x, (H,), w, EPS))
        compiled = torch.compile(lambda a, b: F.rms_norm(a, (H,), b, EPS), dynamic=False)
        compiled(x, w)
        add("torch-compile", "F.rms_norm", t, lambda: compiled(x, w))
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

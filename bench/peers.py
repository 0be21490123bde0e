#!/usr/bin/env python3
"""Peer baselines ("what users run today") for the per-token FP8 cast of DeepSeek TileKernels.

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

Timing: triton.testing.do_bench (median, L2 flushed before each call) when importable, else
CUDA events around N back-to-back iterations after warm-up, median of several repetitions
(--timer picks explicitly).

Output: a table on stdout and, with --json PATH:
  {"gpu", "driver", "torch", "torch_cuda", "timer", "copy_gbps", "copy_bytes",
   "rows": [{"impl": "torch-eager"|"torch-compile", "op": "perTokenCast", "tokens", "hidden",
             "variant": "fp32-sf"|"packed-ue8m0", "us", "gbps", "pct_copy", "host_us",
             "bytes", "copy_same_gbps", "pct_copy_same", "compile_mode", "compile_s"}],
   "checks": [...], "notes": [...]}
Options: --quick (fewer iterations), --shapes 4096,16384, --no-compile, --compile-mode,
--compile-timeout (s, default 300), --budget (s, soft limit on the whole run; default 170),
--timer auto|do_bench|events.
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

    def get(self, variant):
        if variant not in self.fns:
            kw = {"dynamic": False}
            if self.mode != "default":
                kw["mode"] = self.mode
            self.fns[variant] = torch.compile(VARIANTS[variant], **kw)
        return self.fns[variant]

    def first_call(self, variant, x, label):
        """Compile (first call) for x's shape; returns (fn, out, compile_s, mode) or None."""
        if not self.enabled:
            return None
        while True:
            limit = self.timeout
            if self.mode != "default":
                # keep the whole run near the --budget: a slow max-autotune compile is cut short
                limit = min(limit, max(60.0, self.budget - elapsed()))
            try:
                fn = self.get(variant)
                out, dt = call_with_limit(fn, (x,), limit)
                self.total_s += dt
                print(f"  compiled {label} mode={self.mode} in {dt:.1f} s", flush=True)
                return fn, out, dt, self.mode
            except CompileTimeout:
                why = f"did not compile {label} within {limit:.0f} s"
            except Exception as e:
                msg = str(e).strip().splitlines()
                why = f"failed on {label}: {type(e).__name__}: {(msg[0] if msg else '')[:300]}"
                traceback.print_exc()
            if self.mode != "default":
                self._fallback(why)
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
    hdr = f"{'impl':<14} {'variant':<13} {'tokens':>6} {'us':>10} {'GB/s':>8} {'%copy':>6} {'%copySame':>9} {'host_us':>8} {'compile':>26}"
    print(hdr)
    print("-" * len(hdr))
    for r in result["rows"]:
        comp = "" if r.get("compile_mode") is None else f"{r['compile_mode']} {fmt(r.get('compile_s'), '.1f')}s"
        print(
            f"{r['impl']:<14} {r['variant']:<13} {r['tokens']:>6} {fmt(r['us'], '.2f'):>10} {fmt(r['gbps'], '.1f'):>8} "
            f"{fmt(r['pct_copy'], '.1f'):>6} {fmt(r.get('pct_copy_same'), '.1f'):>9} {fmt(r['host_us'], '.2f'):>8} {comp:>26}"
        )
    if CHECKS:
        print()
        print("checks:")
        for c in CHECKS:
            if "equal" in c:
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
    if compiler.enabled:
        result["compile_total_s"] = compiler.total_s
        result["compile_mode_final"] = compiler.mode
        note("torch.compile used dynamic=False (one specialization per shape); no CUDA graphs")
    if timer.kind == "events":
        note("timer: back-to-back CUDA events (no L2 flush): inputs that fit in L2 may be partly cached")


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


def main():
    ap = argparse.ArgumentParser(description="PyTorch eager / torch.compile baselines for perTokenCast (bench/peers.py)")
    ap.add_argument("--json", default=None, help="write the results as JSON to this path")
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--shapes", type=parse_shapes, default=[4096, 16384], help="token counts, e.g. 4096,16384")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--compile-mode", default=COMPILE_MODE_MAX, help=f"first torch.compile mode (default {COMPILE_MODE_MAX})")
    ap.add_argument("--compile-timeout", type=float, default=300.0, help="seconds per compile before falling back")
    ap.add_argument("--budget", type=float, default=170.0, help="soft limit (s) on the run; cuts max-autotune compiles short")
    ap.add_argument("--timer", choices=["auto", "do_bench", "events"], default="auto")
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

#!/usr/bin/env python3
"""What does torch.compile's RMSNorm do differently? Dumps and times Inductor's kernels of the norm cases.

    python3 bench/torch_probe.py --out DIR [--cases normForward,normBackward] [--tokens 16384]
                                 [--ours prebuilt/cuda/sm90a/norm_norm_forward.cubin,...]
    ncu ... -k regex:triton_ python3 bench/torch_probe.py --ncu --out DIR --cases normForward

Cases (bench/peers.py's functions and inputs, imported, hidden 7168):
    normForward                 norm_forward: F.rms_norm, bf16 x [T, H], bf16 weight, eps 1e-6
    normForwardAndPerTokenCast  norm_forward_and_cast_fp32_sf: F.rms_norm + the per-token e4m3 cast, fp32 sf
    normBackward                norm_backward: dx bf16 + dw fp32 from x, dy, weight, fp32 rstd
    normForwardAndPerTokenCastPacked  (only when named) the cast in DeepGEMM's packed UE8M0 layout, as our bench case

Per case it compiles the function with torch.compile (peers.py's mode, "max-autotune-no-cudagraphs",
dynamic=False; mode "default" if that fails), then writes under DIR/<case>/:
    output_code_<i>.py      Inductor's output code (the wrapper holding every Triton kernel's source and
                            the launch calls), caught by torch._inductor.utils.run_and_get_code
    <kernel>.py             the Triton source of each kernel launched (from the autotuner object)
    <kernel>.ptx/.cubin/.json/.ttgir  copied from the Triton cache entry of the config Inductor chose
    <kernel>.sass           cuobjdump -sass of that cubin (when a cuobjdump is found)
    trace.json              torch.profiler's Chrome trace of the timed runs (grid, block, registers,
                            shared memory, occupancy per launch)
and prints per kernel: name, chosen config (XBLOCK / R0_BLOCK, num_warps, num_stages), persistent or
looped reduction, registers / spills / shared memory, grid and block as launched, time (median of the
profiler's per-launch durations), and a histogram of the SASS memory instructions (width and cache hints).
--ours CUBINS: the same SASS histogram for our kernels (regex --ours-kernels) for a side-by-side look.
All caches are under DIR/cache (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR), set before torch is imported:
DIR/cache/triton is the Triton cache (one folder per compiled config, autotuning candidates included).

--ncu: no dumps, no profiler; compiles (a warm cache in the same DIR makes that a cache hit), warms up, then
runs each case --ncu-runs times between cuProfilerStart / cuProfilerStop, so that
`ncu --profile-from-start off -k regex:triton_` profiles only those launches (tools/gpu_run.sh, step
torchprobe; docs/perf-notes/perf7-probe.md).

Every step runs in its own try/except: a failure is printed ("[fail] ...") and the script goes on.
"""

import argparse
import ctypes
import gc
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import traceback

CASES = {  # name -> (peers.py op, variant)
    "normForward": ("normForward", "bf16 F.rms_norm"),
    "normForwardAndPerTokenCast": ("normForwardAndPerTokenCast", "bf16→e4m3 fp32-sf"),
    "normBackward": ("normBackward", "bf16 dx+dw(fp32)"),
    "normForwardAndPerTokenCastPacked": ("normForwardAndPerTokenCast", "bf16→e4m3 packed"),  # not by default
}
DEFAULT_CASES = "normForward,normForwardAndPerTokenCast,normBackward"
OURS_KERNELS = (r"^tk_norm_forward__bf16_(rr4_l2|tp16f)$|^tk_norm_forward__bf16_e4m3_g128_br4$|"
                r"^tk_norm_backward__bf16_(b4_unit|b4swx_unit)$|^tk_norm_backward_weight_grad")
SASS_MEM = re.compile(r"^(LDG|STG|LDS|STS|LDSM|LD|ST|LDGSTS|LDGDEPBAR|UBLKCP|UTMALDG|UTMASTG|RED|ATOM|ATOMG|REDG|CCTL|"
                      r"SHFL|BAR|MUFU|PRMT|F2F|F2FP|LDC|ULDC|MEMBAR|FENCE|SYNCS|DEPBAR)$")


def fail(what, e):
    print(f"[fail] {what}: {type(e).__name__}: {str(e).strip()[:400]}", flush=True)


def step(what, fn, *a, **k):
    """Runs fn; on an exception prints what failed (and a short traceback) and returns None."""
    try:
        return fn(*a, **k)
    except Exception as e:
        fail(what, e)
        traceback.print_exc(limit=3)
        return None


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (created); caches go to OUT/cache")
    ap.add_argument("--cases", default=DEFAULT_CASES, help="comma-separated, of: " + ",".join(CASES))
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--iters", type=int, default=50, help="timed calls per case (median)")
    ap.add_argument("--mode", default=None, help="torch.compile mode (default: bench/peers.py's)")
    ap.add_argument("--ncu", action="store_true", help="only the launches to profile, between cuProfilerStart/Stop")
    ap.add_argument("--ncu-runs", type=int, default=2)
    ap.add_argument("--ours", default="", help="comma-separated cubins of ours for the SASS histogram")
    ap.add_argument("--ours-kernels", default=OURS_KERNELS, help="regex of our kernel names to histogram")
    ap.add_argument("--trace", action="store_true", help="also torch._inductor.config.trace (debug dir under OUT)")
    args = ap.parse_args()
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in args.cases if c not in CASES]
    if bad:
        ap.error(f"unknown case(s) {bad}; known: {list(CASES)}")
    return args


ARGS = parse_args()
OUT = os.path.abspath(ARGS.out)
os.makedirs(OUT, exist_ok=True)
CACHE = os.path.join(OUT, "cache")
# before torch (and bench/peers.py, which imports it) is imported: Inductor and Triton read these at use
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(CACHE, "inductor"))
os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(CACHE, "triton"))
if ARGS.ncu:
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile workers under the profiler
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (bench/peers.py: the case functions, inputs and byte counts)

torch = peers.torch


# ---------------------------------------------------------------------------------------------
# Inductor's kernels: the autotuner objects, their chosen launcher, the Triton cache entries
# ---------------------------------------------------------------------------------------------

_SEEN = []  # every autotuner already attributed to a case (kept alive so that ids stay unique)


def _autotuner_classes():
    out = []
    for mod in ("torch._inductor.runtime.triton_heuristics", "torch._inductor.triton_heuristics"):
        try:
            m = __import__(mod, fromlist=["CachingAutotuner"])
            out.append(m.CachingAutotuner)
        except Exception:
            pass
    return tuple(out)


def new_autotuners():
    """Inductor's CachingAutotuner objects created since the last call (one per Triton kernel of a graph)."""
    classes = _autotuner_classes()
    seen = {id(o) for o in _SEEN}
    found = []
    for o in gc.get_objects():
        try:
            ok = isinstance(o, classes) if classes else (hasattr(o, "launchers") and hasattr(o, "configs"))
        except Exception:
            ok = False
        if ok and id(o) not in seen:
            found.append(o)
    _SEEN.extend(found)
    return found


def kernel_name(at):
    meta = getattr(at, "inductor_meta", None) or {}
    name = meta.get("kernel_name") if isinstance(meta, dict) else None
    fn = getattr(at, "fn", None)
    return name or getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", None) or "?"


def kernel_source(at):
    fn = getattr(at, "fn", None)
    for attr in ("src", "_src"):
        s = getattr(fn, attr, None)
        if isinstance(s, str) and s:
            return s
    try:
        import inspect
        return inspect.getsource(getattr(fn, "fn", fn))
    except Exception:
        return None


def launcher_info(at):
    """The launcher Inductor kept (after autotuning: one) -> dict of what it exposes."""
    ls = list(getattr(at, "launchers", None) or [])
    info = {"launchers_left": len(ls), "candidate_configs": len(getattr(at, "configs", None) or [])}
    if not ls:
        return info
    ln = ls[0]
    cfg = getattr(ln, "config", None)
    if cfg is not None:
        info["kwargs"] = dict(getattr(cfg, "kwargs", {}) or {})
        info["num_warps"] = getattr(cfg, "num_warps", None)
        info["num_stages"] = getattr(cfg, "num_stages", None)
    for k in ("n_regs", "n_spills", "shared", "cache_hash"):
        v = getattr(ln, k, None)
        if v is not None:
            info[k] = v if isinstance(v, (int, float, str)) else str(v)
    b = getattr(ln, "bin", None)
    if b is not None:
        info["bin_hash"] = getattr(b, "hash", None) or getattr(getattr(b, "metadata", None), "hash", None)
    info["_launcher"] = ln
    return info


def reduction_kind(name, at):
    h = getattr(at, "heuristic_type", None)
    if h is not None:
        return str(h).split(".")[-1].lower()
    for p, k in (("triton_per_", "persistent_reduction"), ("triton_red_", "reduction (looped)"),
                 ("triton_poi_", "pointwise"), ("triton_tem_", "template")):
        if name.startswith(p):
            return k
    return "?"


def triton_cache_entries():
    """Every compiled kernel in the Triton cache: list of dicts (dir, name, metadata)."""
    root = os.environ.get("TRITON_CACHE_DIR", "")
    out = []
    for js in glob.glob(os.path.join(root, "*", "*.json")):
        if os.path.basename(js).startswith("__grp__"):
            continue
        try:
            with open(js) as f:
                meta = json.load(f)
        except Exception:
            continue
        if not isinstance(meta, dict):
            continue
        name = meta.get("name") or os.path.basename(js)[:-len(".json")]  # the files are <kernel name>.<ext>
        out.append({"dir": os.path.dirname(js), "name": name, "meta": meta})
    return out


def _path_key(h):
    """Triton's cache folder name of a kernel hash (Inductor's launcher.cache_hash is this), or None."""
    for mod in ("torch._inductor.runtime.runtime_utils", "torch._inductor.runtime.triton_heuristics"):
        try:
            return __import__(mod, fromlist=["triton_hash_to_path_key"]).triton_hash_to_path_key(h)
        except Exception:
            pass
    return None


def match_cache_entry(name, info, entries):
    """The Triton cache entry of the chosen config: by hash, else by name + warps + stages + shared if unique."""
    mine = [e for e in entries if e["name"] == name]
    for key in ("cache_hash", "bin_hash"):
        h = info.get(key)
        if not h:
            continue
        for e in mine:
            if os.path.basename(e["dir"]) == h or e["meta"].get("hash") == h or _path_key(e["meta"].get("hash", "")) == h:
                return e, f"by {key}"
    same = [e for e in mine
            if (info.get("num_warps") in (None, e["meta"].get("num_warps")))
            and (info.get("num_stages") in (None, e["meta"].get("num_stages")))
            and (info.get("shared") in (None, e["meta"].get("shared")))]
    if len(same) == 1:
        return same[0], "by name + num_warps + num_stages + shared (unique)"
    return None, f"{len(mine)} cache entries named {name}, {len(same)} with the chosen warps/stages/shared: not unique"


# ---------------------------------------------------------------------------------------------
# SASS
# ---------------------------------------------------------------------------------------------


def find_tool(name):
    cands = [shutil.which(name), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", name)]
    try:
        import triton
        cands.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name))
    except Exception:
        pass
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def sass_of(cubin):
    tool = find_tool("cuobjdump")
    if tool is None:
        raise RuntimeError("no cuobjdump (PATH, $CUDA_HOME/bin, triton/backends/nvidia/bin)")
    r = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"{tool} -sass {cubin}: rc {r.returncode}: {r.stderr.strip()[:300]}")
    return r.stdout


INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)")


def sass_functions(text):
    """cuobjdump -sass text -> {function name: [full mnemonics in order]}."""
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Function\s*:\s*(\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        if cur is None:
            continue
        m = INSN.search(line)
        if m:
            funcs[cur].append(m.group(2))
    return funcs


def sass_histogram(mnems):
    """A one-line summary: instruction count, memory / sync / conversion ops with their modifiers."""
    full, base = {}, {}
    for x in mnems:
        b = x.split(".")[0]
        base[b] = base.get(b, 0) + 1
        if SASS_MEM.match(b):
            full[x] = full.get(x, 0) + 1
    mem = ", ".join(f"{k} x{v}" for k, v in sorted(full.items(), key=lambda kv: (-kv[1], kv[0])))
    top = ", ".join(f"{k} {v}" for k, v in sorted(base.items(), key=lambda kv: -kv[1])[:10])
    return f"{len(mnems)} instructions; memory/sync/cvt: {mem or '-'}\n        most frequent: {top}"


# ---------------------------------------------------------------------------------------------
# Timing, trace
# ---------------------------------------------------------------------------------------------


def events_median_us(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def profile_trace(fn, iters, path):
    """torch.profiler (CUPTI) over iters calls; Chrome trace to path; -> {kernel name: [launch dicts]}."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    with open(path) as f:
        tr = json.load(f)
    ks = {}
    for ev in tr.get("traceEvents", []) if isinstance(tr, dict) else tr:
        if str(ev.get("cat", "")).lower() == "kernel":  # "Kernel" in older kineto
            ks.setdefault(ev.get("name", "?"), []).append(ev)
    return ks


def copy_gbps():
    """dst.copy_(src) of 1 GiB, read + write bytes counted (the roofline's 100 %, smaller buffer)."""
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = events_median_us(lambda: dst.copy_(src), 20)
    del src, dst
    return 2 * n / (us * 1e-6) / 1e9


# ---------------------------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------------------------


def find_case(name):
    op, variant = CASES[name]
    for c in peers.op_cases():
        if c.op == op and c.variant == variant:
            return c
    raise KeyError(f"bench/peers.py has no case {op} / {variant}")


def compile_case(case, inputs, mode, want_code):
    """torch.compile(case.fn) and its first call; -> (compiled fn, mode used, [output code strings])."""
    codes = []
    for m in ([mode, "default"] if mode != "default" else ["default"]):
        try:
            torch._dynamo.reset()
            kw = {"dynamic": False}
            if m != "default":
                kw["mode"] = m
            cfn = torch.compile(case.fn, **kw)
            t0 = time.perf_counter()
            if want_code:
                try:
                    from torch._inductor.utils import run_and_get_code
                    _, codes = run_and_get_code(cfn, *inputs)
                except Exception as e:
                    fail("run_and_get_code (output code not caught; it is still in the Inductor cache's *.py files)", e)
                    cfn(*inputs)
            else:
                cfn(*inputs)
            torch.cuda.synchronize()
            print(f"  compiled with mode={m!r} in {time.perf_counter() - t0:.1f} s", flush=True)
            return cfn, m, codes
        except Exception as e:
            fail(f"torch.compile mode={m!r}", e)
    return None, None, codes


def profiler_call(what):
    """cuProfilerStart / cuProfilerStop: torch.cuda.profiler, else the driver API (as bench/profile.ts)."""
    try:
        getattr(torch.cuda.profiler, what)()
        return
    except Exception as e:
        fail(f"torch.cuda.profiler.{what}()", e)
    lib = ctypes.CDLL("libcuda.so.1")
    rc = getattr(lib, "cuProfilerStart" if what == "start" else "cuProfilerStop")()
    print(f"  cu{'ProfilerStart' if what == 'start' else 'ProfilerStop'} rc={rc}", flush=True)


def run_case(name, summary, copy_rate):
    case = find_case(name)
    t, h = ARGS.tokens, peers.HIDDEN
    print(f"\n== {name} ({case.op} / {case.variant}), T={t} H={h}", flush=True)
    inputs = case.make(t, h)
    torch.cuda.synchronize()
    mode = ARGS.mode or peers.COMPILE_MODE_MAX
    def mode_options():
        import torch._inductor
        print(f"  mode {mode!r} options: {torch._inductor.list_mode_options(mode)}", flush=True)
    step("mode options", mode_options)
    new_autotuners()  # forget earlier cases' kernels
    cfn, used, codes = compile_case(case, inputs, mode, want_code=not ARGS.ncu)
    if cfn is None:
        return
    call = lambda: cfn(*inputs)  # noqa: E731
    if ARGS.ncu:
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        profiler_call("start")
        for _ in range(ARGS.ncu_runs):
            call()
        torch.cuda.synchronize()
        profiler_call("stop")
        print(f"  {ARGS.ncu_runs} profiled call(s) done", flush=True)
        return

    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    for i, code in enumerate(codes):
        with open(os.path.join(d, f"output_code_{i}.py"), "w") as f:
            f.write(code)
    print(f"  output code: {len(codes)} module(s) caught by run_and_get_code -> {d}/output_code_*.py"
          + ("" if codes else f" (none: look at the *.py files under {os.environ['TORCHINDUCTOR_CACHE_DIR']})"), flush=True)

    nbytes = case.nbytes(t, h)
    us = step("CUDA-event timing", events_median_us, call, ARGS.iters)
    if us:
        gbps = nbytes / (us * 1e-6) / 1e9
        pct = f", {100 * gbps / copy_rate:.1f}% of copy" if copy_rate else ""
        print(f"  whole call: {us:.2f} us median of {ARGS.iters} (CUDA events), {gbps:.0f} GB/s{pct}", flush=True)
    launches = step("torch.profiler trace", profile_trace, call, ARGS.iters, os.path.join(d, "trace.json")) or {}

    ats = new_autotuners()
    entries = triton_cache_entries()
    print(f"  {len(ats)} Inductor kernel object(s) found (gc scan); Triton cache {os.environ['TRITON_CACHE_DIR']}: "
          f"{len(entries)} compiled config(s) in all", flush=True)
    names = set()
    rows = []
    for at in ats:
        kn = kernel_name(at)
        names.add(kn)
        info = launcher_info(at)
        row = {"case": name, "kernel": kn, "kind": reduction_kind(kn, at),
               "size_hints": str(getattr(at, "size_hints", None)),
               "autotune": str(getattr(at, "autotune_cache_info", None))}
        meta = getattr(at, "inductor_meta", None)
        if isinstance(meta, dict):
            row["inductor_meta"] = {k: meta[k] for k in ("num_load", "num_store", "num_reduction", "kernel_num_gb",
                                                          "persistent_reduction", "tiling_scores") if k in meta}
        row.update({k: v for k, v in info.items() if not k.startswith("_")})
        src = kernel_source(at)
        if src:
            with open(os.path.join(d, f"{kn}.py"), "w") as f:
                f.write(src)
        ent, how = match_cache_entry(kn, info, entries)
        row["cache_match"] = how
        if ent is not None:
            for f in os.listdir(ent["dir"]):
                if f.endswith((".ptx", ".cubin", ".json", ".ttgir", ".ttir")) and not f.startswith("__grp__"):
                    shutil.copy(os.path.join(ent["dir"], f), os.path.join(d, f))
            m = ent["meta"]
            row["meta"] = {k: m.get(k) for k in ("num_warps", "num_stages", "shared", "num_ctas", "maxnreg", "target")}
            cub = os.path.join(d, f"{kn}.cubin")
            if os.path.exists(cub):
                sass = step(f"cuobjdump -sass {kn}", sass_of, cub)
                if sass:
                    with open(os.path.join(d, f"{kn}.sass"), "w") as f:
                        f.write(sass)
                    fs = sass_functions(sass)
                    row["sass"] = sass_histogram(fs.get(kn) or next(iter(fs.values()), []))
        ls = launches.get(kn, [])
        if ls:
            a = ls[-1].get("args", {})
            row["launch"] = {k: a.get(k) for k in ("grid", "block", "registers per thread", "shared memory",
                                                   "blocks per SM", "warps per SM", "est. achieved occupancy %")}
            row["us_median"] = statistics.median(float(e.get("dur", 0)) for e in ls)
            row["launches_per_call"] = len(ls) / ARGS.iters
        rows.append(row)
    for kn, ls in launches.items():  # kernels the trace saw that no autotuner claimed (e.g. an aten copy)
        if kn not in names:
            rows.append({"case": name, "kernel": kn, "kind": "not Inductor's Triton (no autotuner found)",
                         "us_median": statistics.median(float(e.get("dur", 0)) for e in ls),
                         "launches_per_call": len(ls) / ARGS.iters,
                         "launch": {k: ls[-1].get("args", {}).get(k) for k in ("grid", "block", "registers per thread")}})
    for r in rows:
        print_row(r)
    summary.extend(rows)


def print_row(r):
    print(f"  -- {r['kernel']}  [{r['kind']}]", flush=True)
    if "us_median" in r:
        print(f"     time {r['us_median']:.2f} us median per launch, {r['launches_per_call']:.1f} launch(es) per call")
    else:
        print("     not launched by the timed calls (a compile-time candidate, or the trace failed)")
    if r.get("inductor_meta"):
        print(f"     inductor_meta: {r['inductor_meta']}")
    if "kwargs" in r or "num_warps" in r:
        print(f"     chosen config {r.get('kwargs')} num_warps {r.get('num_warps')} num_stages {r.get('num_stages')}"
              f" (of {r.get('candidate_configs')} candidate configs; size_hints {r.get('size_hints')})")
        print(f"     autotune: {r.get('autotune')}")
    if any(k in r for k in ("n_regs", "n_spills", "shared")):
        print(f"     launcher: regs {r.get('n_regs')} spills {r.get('n_spills')} shared {r.get('shared')} B")
    if "launch" in r:
        print(f"     as launched: {r['launch']}")
    if "meta" in r:
        print(f"     Triton metadata ({r['cache_match']}): {r['meta']}")
    elif "cache_match" in r:
        print(f"     Triton cache: {r['cache_match']} (PTX / cubin not copied; see {os.environ['TRITON_CACHE_DIR']})")
    if "sass" in r:
        print(f"     SASS: {r['sass']}")


def ours_sass(summary):
    cubins = [c for c in ARGS.ours.split(",") if c.strip()]
    if not cubins:
        return
    print(f"\n== our kernels ({ARGS.ours_kernels}) from {', '.join(cubins)}", flush=True)
    pat = re.compile(ARGS.ours_kernels)
    d = os.path.join(OUT, "ours")
    os.makedirs(d, exist_ok=True)
    for cub in cubins:
        sass = step(f"cuobjdump -sass {cub}", sass_of, cub)
        if not sass:
            continue
        with open(os.path.join(d, os.path.basename(cub) + ".sass"), "w") as f:
            f.write(sass)
        for fn, mn in sass_functions(sass).items():
            if pat.search(fn):
                print(f"  -- {fn}\n     SASS: {sass_histogram(mn)}", flush=True)
                summary.append({"case": "ours", "kernel": fn, "sass": sass_histogram(mn)})


def main():
    print(f"bench/torch_probe.py: out {OUT}; TORCHINDUCTOR_CACHE_DIR {os.environ['TORCHINDUCTOR_CACHE_DIR']}; "
          f"TRITON_CACHE_DIR {os.environ['TRITON_CACHE_DIR']}; ncu mode {ARGS.ncu}", flush=True)
    if torch is None or not torch.cuda.is_available():
        print("[fail] torch with CUDA is needed", flush=True)
        return 2
    try:
        import triton
        tv = triton.__version__
    except Exception:
        tv = None
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), triton {tv}, GPU {torch.cuda.get_device_name(0)}, "
          f"cuobjdump {find_tool('cuobjdump')}", flush=True)
    if ARGS.trace:
        def trace_on():
            import torch._inductor.config as icfg
            icfg.trace.enabled = True
            icfg.trace.debug_dir = os.path.join(OUT, "inductor_debug")
        step("torch._inductor.config.trace", trace_on)
    summary = []
    copy_rate = None if ARGS.ncu else step("copy rate", copy_gbps)
    if copy_rate:
        print(f"copy rate (1 GiB dst.copy_(src), read + write): {copy_rate:.0f} GB/s", flush=True)
    for name in ARGS.cases:
        step(f"case {name}", run_case, name, summary, copy_rate)
        torch.cuda.empty_cache()
    if not ARGS.ncu:
        step("our SASS", ours_sass, summary)
        with open(os.path.join(OUT, "summary.json"), "w") as f:
            json.dump({"torch": torch.__version__, "copy_gbps": copy_rate, "tokens": ARGS.tokens, "kernels": summary},
                      f, indent=1, default=str)
        print(f"\nwrote {OUT}/summary.json; per case: output_code_*.py, <kernel>.py/.ptx/.cubin/.sass/.json, trace.json",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

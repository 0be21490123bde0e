#!/usr/bin/env python3
"""Dynamic instruction count of a kernel's hot loop from cuobjdump -sass text (docs/perf-notes/perf9-swiglu.md):

    python3 tools/sass_walk.py /work/wt/measured8/sass/swiglu_swiglu.sass

Walks the step loop of each kernel in WALKS from its head to its back edge, taking every conditional branch as
decided in the table (the roofline case: aligned views, real rows, live slots, weights, no clamp, no recompute,
gates inside the silu window, fp32 sf, FCHK fast paths), and counts the warp instructions issued on that path.
Predicated instructions count whatever their guard (a guard that is off still takes an issue slot); `ranges` are
the prefetch blocks whose predicated instructions are the element-wide fallback. The addresses are those of the
sm_90a cubins of main at e2ae290 (the SASS of round 8); another build needs new tables.
"""
import re
import sys
from collections import Counter

LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)(.*?);")

# kernel: (loop head, back edge + 0x10, {branch address: taken}, [(lo, hi) fallback blocks])
WALKS = {
    "tk_swiglu_forward__bf16_bf16": (0x2660, 0x61F0, {0x2810:False,0x2b00:False,0x2e20:False,0x3010:True,0x3bb0:True,0x4020:True,0x41a0:False,0x42e0:False,0x44e0:True,0x5070:True,0x54e0:True,0x5660:False,0x5740:False,0x59b0:True,0x5c90:False,0x5f00:True,0x61e0:False}, [(0x2820, 0x2A50), (0x2B10, 0x2D40)]),
    "tk_swiglu_forward__bf16_e4m3_g128": (0x26D0, 0x6FB0, {0x2880:False,0x2bc0:False,0x2e70:False,0x3090:True,0x3c00:True,0x4070:True,0x4220:False,0x4380:False,0x45a0:True,0x5110:True,0x5580:True,0x5710:False,0x5a70:False,0x5b80:True,0x5be0:True,0x5ca0:True,0x5fb0:True,0x6030:False,0x6070:True,0x65f0:True,0x6790:False,0x6880:True,0x68f0:False,0x6920:False,0x6940:True,0x6c60:True,0x6e00:True,0x6fa0:False}, [(0x2890, 0x2AC0), (0x2BD0, 0x2E00)]),
    "tk_swiglu_backward__bf16_bf16": (0x2660, 0x9F70, {0x28e0:False,0x2d30:False,0x31e0:True,0x3820:True,0x4060:True,0x4740:True,0x4ac0:False,0x5640:False,0x57b0:True,0x5e30:False,0x6090:True,0x6580:True,0x6950:True,0x6da0:True,0x77b0:True,0x7ea0:True,0x8230:False,0x8d80:False,0x8ec0:True,0x94f0:False,0x9750:True,0x9c50:True,0x9f60:False}, [(0x28F0, 0x2C60), (0x2D40, 0x30B0)]),
}


def funcs(path):
    fs, name = {}, None
    for line in open(path):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            fs[name] = []
            continue
        if name is None:
            continue
        m = LINE.search(line)
        if m:
            fs[name].append((int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3), m.group(4).strip()))
    return fs


def walk(f, start, stop, dec):
    idx = {a: i for i, (a, _, _, _) in enumerate(f)}
    i, seq = idx[start], []
    while f[i][0] != stop:
        a, p, op, rest = f[i]
        seq.append(f[i])
        if len(seq) > 20000:
            raise RuntimeError("no exit")
        if op.startswith("BRA"):
            t = int(re.search(r"0x([0-9a-f]+)", rest).group(1), 16)
            if op.startswith("BRA.DIV"):
                taken = dec.get(a, False)
            elif p:
                if a not in dec:
                    raise RuntimeError("undecided branch %x" % a)
                taken = dec[a]
            else:
                taken = True
            if taken:
                i = idx[t]
                continue
        i += 1
    return seq


def main():
    fs = funcs(sys.argv[1])
    for name, (start, stop, dec, ranges) in WALKS.items():
        seq = walk(fs[name], start, stop, dec)
        fb = [x for x in seq if x[1] and any(lo <= x[0] <= hi for lo, hi in ranges) and "128" not in x[2]]
        c = Counter(x[2].split(".")[0] for x in fb)
        print(f"{name}: {len(seq)} issued a step; predicated-off fallback {len(fb)} ({100 * len(fb) / len(seq):.1f}%): {dict(c)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per-kernel SASS census of cubins (run where cuobjdump exists, e.g. the GPU machine):

    python3 tools/sass_summary.py prebuilt/cuda/sm90a/*.cubin > sass-summary.txt

For each kernel: instruction count, global loads / stores by width, how many of them are predicated (`@P` / `@!P`
guards: if-converted paths whose instructions issue even when the guard is off), shared-memory and barrier counts.
Found in round 7: ptxas if-converts the unaligned fallback of a 16-byte load into predicated 2-byte loads that
issue on every call (normBackward `_b4_unit`: 896 of 988 load instructions per row; normForward `_rr4_l2`: 224 of
280). Kernels with many predicated narrow loads are the candidates for an aligned-only form.
"""
import re
import subprocess
import sys
from collections import Counter

LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)")


def census(path):
    out = subprocess.run(["cuobjdump", "-sass", path], capture_output=True, text=True, check=True).stdout
    kernels, name, c = [], None, None
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name, c = m.group(1), Counter()
            kernels.append((name, c))
            continue
        if c is None:
            continue
        m = LINE.search(line)
        if not m:
            continue
        pred, op = m.group(1), m.group(2)
        c["insts"] += 1
        base = op.split(".")[0]
        if base in ("LDG", "STG", "LDS", "STS", "LDGSTS", "BAR", "UBLKCP", "MUFU"):
            key = base
            if base in ("LDG", "STG", "LDS", "STS", "LDGSTS"):
                width = next((p for p in op.split(".")[1:] if p in ("U8", "S8", "U16", "S16", "64", "128")), "32")
                key = f"{base}.{width}"
            c[key] += 1
            if pred:
                c[key + "@P"] += 1
    return kernels


def main():
    for path in sys.argv[1:]:
        print(f"## {path}")
        for name, c in census(path):
            keys = sorted(k for k in c if k != "insts")
            print(f"{name}\t{c['insts']}\t" + " ".join(f"{k}={c[k]}" for k in keys))


if __name__ == "__main__":
    main()

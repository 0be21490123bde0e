#!/usr/bin/env python3
"""Issued instructions of a kernel's main loop, read from `cuobjdump -sass` text (no GPU needed once the .sass exists):

    python3 tools/sass_loop_count.py quant_cast.sass tk_cast__bf16_e4m3 tk_cast__fp32_e4m3

The main loop is the backward branch with the largest span. Its "aligned path" excludes the regions that a forward
conditional branch jumps over when they hold byte stores (STG.E.U8) and no wide store, i.e. the unaligned-output
fallback; predicated instructions (`@P` / `@!P`, if-converted code) stay in: they issue whether or not their guard
holds. Printed: static loop size, the fallback-store region, the aligned path, its wide loads, its predicated narrow
loads and all its predicated instructions (docs/perf-notes/perf9-cast.md). Straight-line count: branches inside the
aligned path (e.g. rare special-value code) are counted as if taken, so it is an upper bound where those exist.
"""
import re
import sys

LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")


def function_text(src, name):
    i = src.index("Function : " + name + "\n")
    j = src.find("Function : ", i + 10)
    return src[i : j if j > 0 else None]


def main():
    src = open(sys.argv[1]).read()
    for name in sys.argv[2:]:
        ins = [(int(m.group(1), 16), m.group(2) or "", m.group(3), m.group(4)) for m in LINE.finditer(function_text(src, name))]
        best = None
        for a, _, op, args in ins:
            t = re.search(r"0x([0-9a-f]+)", args) if op == "BRA" else None
            if t and int(t.group(1), 16) < a and (best is None or a - int(t.group(1), 16) > best[1] - best[0]):
                best = (int(t.group(1), 16), a)
        lo, hi = best
        loop = [x for x in ins if lo <= x[0] <= hi]
        excl = set()
        for a, p, op, args in loop:
            if op == "BRA" and p:
                t = int(re.search(r"0x([0-9a-f]+)", args).group(1), 16)
                reg = [x for x in loop if a < x[0] < t] if t > a else []
                if reg and reg[-1][2] == "BRA" and any(x[2].startswith("STG.E.U8") for x in reg) and not any(
                    x[2] in ("STG.E.64", "STG.E.128") for x in reg
                ):
                    excl |= {x[0] for x in reg}
        path = [x for x in loop if x[0] not in excl]
        narrow = [x for x in path if x[1] and x[2].startswith("LDG") and ("U16" in x[2] or "U8" in x[2] or x[2] == "LDG.E.CONSTANT")]
        wide = [x for x in path if x[2].startswith("LDG") and ("128" in x[2] or "64" in x[2])]
        print(
            f"{name}: loop 0x{lo:x}-0x{hi:x} static {len(loop)}, fallback-store region {len(excl)}, aligned path {len(path)}, "
            f"wide loads {len(wide)}, predicated narrow loads {len(narrow)}, predicated total {len([x for x in path if x[1]])}"
        )


if __name__ == "__main__":
    main()

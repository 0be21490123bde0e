#!/usr/bin/env python3
"""Compares the .text.<kernel> sections of two cubin directories (or two cubins): prints each kernel present in
both whose code differs, and the kernels only one side has. Used after a rebuild or a merge to show that kept
kernels are byte-identical to the ones timed on the GPU.

  python3 tools/textcmp.py /tmp/old/sm90a prebuilt/cuda/sm90a
"""
import os
import struct
import sys


def sections(path):
    b = open(path, "rb").read()
    if b[:4] != b"\x7fELF" or b[4] != 2:
        return {}
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    stro = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name_off, _type, _fl, _addr, off, size = h[:6]
        end = b.index(b"\0", stro + name_off)
        name = b[stro + name_off:end].decode()
        if name.startswith(".text."):
            out[name[6:]] = b[off:off + size]
    return out


def collect(p):
    if os.path.isfile(p):
        return {k: (os.path.basename(p), v) for k, v in sections(p).items()}
    res = {}
    for f in sorted(os.listdir(p)):
        if f.endswith(".cubin"):
            for k, v in sections(os.path.join(p, f)).items():
                res[k] = (f, v)
    return res


a, b = collect(sys.argv[1]), collect(sys.argv[2])
same = diff = 0
for k in sorted(set(a) & set(b)):
    if a[k][1] == b[k][1]:
        same += 1
    else:
        diff += 1
        print(f"DIFF {k} ({a[k][0]} {len(a[k][1])} B → {b[k][0]} {len(b[k][1])} B)")
for k in sorted(set(a) - set(b)):
    print(f"ONLY-OLD {k}")
for k in sorted(set(b) - set(a)):
    print(f"ONLY-NEW {k}")
print(f"{same} identical, {diff} differ, {len(set(a) - set(b))} only old, {len(set(b) - set(a))} only new")

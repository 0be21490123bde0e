#!/usr/bin/env python3
"""Instruction census and hot-path walk of one kernel's .text, read straight from a sm_90a cubin (no cuobjdump or
nvdisasm here; docs/perf-notes/perf28-sbc.md, the census method of docs/perf-notes/perf18-ncast.md):

    python3 tools/text_walk.py CUBIN KERNEL                      # opcode census + basic blocks with successors
    python3 tools/text_walk.py CUBIN KERNEL HEAD BACK [TAKEN]    # the path HEAD → BACK, TAKEN: the conditional
                                                                 # branches (hex addresses, comma-separated) to take

An instruction is 16 bytes, the opcode in the low 12 bits of its first word (bits 9–11 the operand form: 0x223 /
0x423 / 0x823 are FFMA with a register, immediate or constant operand). Names were matched to opcodes with probe
kernels (inferred, not a disassembler's): 0x2b DFMA, 0x29 DADD, 0x28 DMUL, 0x310 F2F (f32 ↔ f64), 0x308 MUFU, 0x23
FFMA, 0x20 FMUL, 0x21 FADD, 0x09 FMNMX, 0x3e F2FP, 0x30 HADD2.F32, 0x12 LOP3, 0x24 IMAD, 0x10 IADD3, 0x11 LEA, 0x19
SHF, 0x16 PRMT, 0x07 SEL, 0x0c ISETP, 0x0b FSETP, 0x984 LDS, 0x988 STS, 0x986 STG, 0x981 LDG, 0xfae LDGSTS, 0x389 /
0xf89 SHFL, 0x945 BSSY, 0x941 BSYNC, 0x947 BRA. A branch's target: next address + 4 × (bits 16–23 of the first
word) + 256 × (bits 32–81, signed); a BRA whose bits 24–31 are set is the divergence test of a warp-wide operation
(BRA.DIV), taken only by a divergent warp, so the walk never takes it. The walk follows unconditional branches,
falls through conditional ones unless listed in TAKEN, and counts every instruction on the way (predicated ones
too: they take an issue slot whatever their guard).
"""
import collections
import struct
import sys

NAMES = {0x2B: "DFMA", 0x29: "DADD", 0x28: "DMUL", 0x23: "FFMA", 0x20: "FMUL", 0x21: "FADD", 0x09: "FMNMX", 0x3E: "F2FP",
         0x30: "HADD2.F32", 0x12: "LOP3", 0x24: "IMAD", 0x10: "IADD3", 0x11: "LEA", 0x19: "SHF", 0x16: "PRMT", 0x07: "SEL",
         0x0C: "ISETP", 0x0B: "FSETP", 0x47: "BRA", 0x45: "BSSY", 0x41: "BSYNC", 0x84: "LDS", 0x88: "STS", 0x86: "STG",
         0x81: "LDG", 0xAE: "LDGSTS", 0x89: "SHFL"}


def text(path, kernel):
    b = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    stro = hdrs[shstrndx][4]
    for h in hdrs:
        name = b[stro + h[0]:b.index(b"\0", stro + h[0])].decode()
        if name == ".text." + kernel:
            return [struct.unpack_from("<QQ", b, h[4] + i) for i in range(0, h[5], 16)]
    raise SystemExit(f"no .text.{kernel} in {path}")


def name(w0):
    op = w0 & 0xFFF
    if op in (0x310, 0x311, 0x312):
        return "F2F"
    if op == 0x308:
        return "MUFU"
    return NAMES.get(op & 0xFF, f"0x{op:03x}")


def target(i, w0, w1):
    hi = (w0 >> 32) | ((w1 & 0x3FFFF) << 32)
    if hi & (1 << 49):
        hi -= 1 << 50
    return i * 16 + 16 + hi * 256 + ((w0 >> 16) & 0xFF) * 4


def is_bra(w0):
    return w0 & 0xFFF == 0x947


def unconditional(w0):
    return (w0 >> 12) & 0xF == 7 and (w0 >> 24) & 0xFF == 0


def blocks(L):
    leaders = {0}
    for i, (w0, w1) in enumerate(L):
        if is_bra(w0):
            leaders |= {target(i, w0, w1), i * 16 + 16}
    starts = sorted(a for a in leaders if a < len(L) * 16)
    for a, b in zip(starts, starts[1:] + [len(L) * 16]):
        w0, w1 = L[b // 16 - 1]
        succ = []
        if is_bra(w0):
            succ.append(target(b // 16 - 1, w0, w1))
            if not unconditional(w0):
                succ.append(b)
        elif w0 & 0xFFF != 0x94D:  # EXIT
            succ.append(b)
        yield a, b, collections.Counter(name(x) for x, _ in L[a // 16:b // 16]), succ


def walk(L, head, back, taken):
    pc, seen = head, collections.Counter()
    while True:
        w0, w1 = L[pc // 16]
        seen[name(w0)] += 1
        if pc == back:
            return seen
        if is_bra(w0):
            t = target(pc // 16, w0, w1)
            div = (w0 >> 24) & 0xFF != 0
            go = unconditional(w0) or (not div and pc in taken)
            print(f"  {pc:05x} {'BRA' if unconditional(w0) else 'BRA.DIV' if div else 'cond'} -> {t:05x} {'taken' if go else 'fall through'}")
            pc = t if go else pc + 16
        else:
            pc += 16


def main():
    L = text(sys.argv[1], sys.argv[2])
    if len(sys.argv) == 3:
        c = collections.Counter(name(w0) for w0, _ in L)
        print(f"{sys.argv[2]}: {len(L)} instructions\n" + " ".join(f"{k}:{v}" for k, v in c.most_common()))
        for a, b, c, succ in blocks(L):
            print(f"{a:05x}-{b:05x} {b // 16 - a // 16:4d} -> {','.join(f'{s:05x}' for s in succ):12s} "
                  + " ".join(f"{k}:{v}" for k, v in c.most_common(8)))
        return
    taken = {int(a, 16) for a in sys.argv[5].split(",") if a} if len(sys.argv) > 5 else set()
    c = walk(L, int(sys.argv[3], 16), int(sys.argv[4], 16), taken)
    print(f"path {sys.argv[3]} → {sys.argv[4]}: {sum(c.values())} instructions\n" + " ".join(f"{k}:{v}" for k, v in c.most_common()))


main()

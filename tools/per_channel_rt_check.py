#!/usr/bin/env python3
"""Host check of the `_rt` form of perChannelCastAndTranspose (kernels-src/cuda/quant/per_channel_cast.cu, R = 128):
simulates the 256 threads' byte permutes, shared-memory stores and write-out reads of one 128 x 128 tile with each
code labelled by its (token, column), and checks that every output byte (column j, token t) is the code of
x[t][j], that no shared byte is written twice, and that a warp's 8-byte stores take 2 wavefronts and its 16-byte
reads 4 (the minimum for 256 / 512 bytes). Run: python3 tools/per_channel_rt_check.py
"""

R = 128  # tokens of a tile (scale block)
C = 128  # columns of a tile: 16 column groups x 8 columns
THREADS = 256


def byte_perm(x, y, sel):
    """__byte_perm / prmt: result byte n is byte (sel >> 4n) & 7 of {y:x} (x bytes 0-3, y bytes 4-7)."""
    b = x + y
    return [b[(sel >> (4 * n)) & 7] for n in range(4)]


def rt_byte(j, piece):
    """PerChannel::rt_byte: tile column j's 16-byte piece `piece`, swizzled by (j / 8) % 8."""
    return j * R + ((piece ^ ((j // 8) % 8)) * 16)


def wavefronts(addrs, width):
    """Shared-memory wavefronts of one warp access: the most distinct 4-byte words any bank serves."""
    banks = {}
    for a in addrs:
        for w in range(width // 4):
            word = a // 4 + w
            banks.setdefault(word % 32, set()).add(word)
    return max(len(v) for v in banks.values())


def main():
    smem = {}
    stores = {}
    for tid in range(THREADS):
        rg, cg = tid // 16, tid % 16  # row group (8 tokens), column group (8 columns)
        wt = [[None, None] for _ in range(8)]
        for q in range(2):  # encode_columns(q): rows 4q .. 4q + 3 of the thread
            z = [[None] * 4 for _ in range(2)]
            for a in range(2):
                i0 = 8 * rg + 4 * q + 2 * a
                i1 = i0 + 1
                for p in range(4):  # encode_e4m3x4(v0[2p], v0[2p + 1], v1[2p], v1[2p + 1]): low byte first
                    z[a][p] = [(i0, 8 * cg + 2 * p), (i0, 8 * cg + 2 * p + 1), (i1, 8 * cg + 2 * p), (i1, 8 * cg + 2 * p + 1)]
            for p in range(4):
                wt[2 * p][q] = byte_perm(z[0][p], z[1][p], 0x6420)
                wt[2 * p + 1][q] = byte_perm(z[0][p], z[1][p], 0x7531)
        a0 = rt_byte(cg * 8, rg // 2) + 8 * (rg % 2)
        for c in range(8):
            addr = a0 + c * R
            assert addr % 8 == 0
            for b, v in enumerate(wt[c][0] + wt[c][1]):
                assert addr + b not in smem, "shared byte written twice"
                smem[addr + b] = v
            stores.setdefault((tid // 32, c), []).append(addr)
    assert len(smem) == R * C
    loads = {}
    for t in range(THREADS):  # transpose_out_rt: pass it moves piece u = 256 it + t
        for it in range(C * R // 16 // THREADS):
            u = it * THREADS + t
            j, k = u // 8, u % 8
            a = rt_byte(j, k)
            for b in range(16):
                assert smem[a + b] == (16 * k + b, j), (j, k, b)
            loads.setdefault((it, t // 32), []).append(a)
    st = sorted({wavefronts(v, 8) for v in stores.values()})
    ld = sorted({wavefronts(v, 16) for v in loads.values()})
    assert st == [2] and ld == [4], (st, ld)
    print(f"ok: all {R * C} bytes land transposed; store wavefronts {st}, load wavefronts {ld}")


main()

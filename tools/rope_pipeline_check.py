#!/usr/bin/env python3
# Host check of rope.cu's staging order (no GPU): one thread's passes with kXSlots = K (2, 3, 4), the cp.async groups,
# the x slots, the cos/sin entries (in the slot for K = 2, a 2-entry ring for K > 2) and the position ring. Asserts that
# every read finds the right content from a completed group and that no write overwrites content still needed, over
# random (K, P, L, H, lane, T, stride, first token) with the host's condition for K > 2 (H − (L − 1) > P·L), and shows
# that a deep form without it breaks. Usage: python3 tools/rope_pipeline_check.py
import random
def sim(K, H, L, P, lane, T, stride, tok0):
    passes = []
    t = tok0
    while t < T:
        h = lane
        first = True
        while True:
            passes.append((t, h, first)); first = False
            h += P * L
            if h >= H: break
        t += stride
    committed = 0           # groups committed (group ids 1..)
    completed = 0           # groups <= completed are complete
    pos = {}                # word -> (token, group)
    cs = {}                 # entry -> (token, group, consumed)
    xs = {}                 # slot -> (pass index, group, consumed)
    # prologue: positions of first two tokens, group 1, waited
    committed += 1
    pos[0] = (tok0, committed)
    if tok0 + stride < T: pos[1] = (tok0 + stride, committed)
    completed = committed
    ring = 0
    def issue(i, s):
        nonlocal ring
        t, h, first = passes[i]
        g = committed + 1
        if first:
            w = pos.get(ring)
            assert w is not None and w[0] == t and w[1] <= completed, ("pos", i, w, t)
            e = ring if K > 2 else s
            old = cs.get(e)
            assert old is None or old[2], ("cs overwrite", i, old)
            cs[e] = [t, g, False]
            if t + 2 * stride < T: pos[ring] = (t + 2 * stride, g)
            ring ^= 1
        old = xs.get(s)
        assert old is None or old[2], ("x overwrite", i)
        xs[s] = [i, g, False]
    nxt = 0
    for k in range(K):
        if nxt < len(passes): issue(nxt, k)
        committed += 1
        if nxt < len(passes): nxt += 1
    s = 0; cs_read = 0
    for i in range(len(passes)):
        completed = max(completed, committed - (K - 1))
        t, h, first = passes[i]
        x = xs[s]
        assert x[0] == i and x[1] <= completed, ("x read", i)
        if first:
            e = cs_read if K > 2 else s
            c = cs[e]
            assert c[0] == t and c[1] <= completed, ("cs read", i, c)
            c[2] = True
            cs_read ^= 1
        x[2] = True
        if nxt < len(passes):
            issue(nxt, s); nxt += 1
        committed += 1
        s = (s + 1) % K
    return len(passes)
random.seed(1)
n = 0
for it in range(30000):
    K = random.choice([2, 3, 4])
    P = random.choice([1, 2])
    L = random.choice([1, 2, 4, 8, 16, 32, 64])
    H = random.randint(1, 300)
    lane = random.randrange(L)
    if K > 2 and not (H - (L - 1) > P * L): continue
    T = random.randint(1, 60)
    stride = random.randint(1, 12)
    tok0 = random.randrange(min(stride, T))
    sim(K, H, L, P, lane, T, stride, tok0); n += 1
print("ok", n)
# and a deep form WITHOUT the condition must fail somewhere (the check is needed)
try:
    sim(4, 40, 32, 1, 31, 50, 3, 0)  # lane 31 of H = 40, L = 32: one pass per token
    raise SystemExit("a deep form without the condition passed: the check is broken")
except AssertionError as e:
    print("without the condition (H 40, L 32, lane 31, K 4):", e.args[0][0])

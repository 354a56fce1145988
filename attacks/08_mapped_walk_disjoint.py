"""Promise (safe.md / DESIGN): block b of p.map(n) walks sub-tensors b, b+n, ...; every
sub-tensor is owned by exactly one block (disjoint bounded sets). Checks each sub-tensor
is written once and by the right block, for counts not divisible by n. Active backend."""
# BACKENDS: cpu triton
from _common import *


SRC = '''
@ct.entry
def mcount(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32) * (ct.bid(0) + 1), idx)
'''
k = kernel_from_source(SRC, tag="mwalk")["mcount"]
for n_tiles, n in [(8, 3), (7, 7), (9, 2), (5, 1), (16, 5)]:
    buf = make_buf(n_tiles * 32 - 5)  # partial edge sub-tensor too
    m = ct.from_dlpack(buf).partition(32).map(n)
    m, _ = k(m, 1.0).sync()
    a = as_np(buf)
    for s in range(n_tiles):
        seg = a[s * 32:(s + 1) * 32]
        want = (s % n) + 1
        if not np.all(seg == want):
            broken(f"[{BACKEND}] {n_tiles} tiles over {n} blocks: sub-tensor {s} holds {np.unique(seg)}, want block {want - 1}")
held(f"[{BACKEND}] mapped walks are disjoint and complete")

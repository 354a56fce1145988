"""G3 ("A mutable argument aliases nothing"), G6 ("While a Shared handle lives, nothing writes
its memory") and G1, with memory that aliases *physically* but not by virtual address: two
np.memmap arrays of one file (mode 'r+', MAP_SHARED) are two address ranges over the same pages.
Plain NumPy, writable, nothing foreign about them. (a) A Shared over mapping A, a partition over
mapping B, a launch writing B: does the live Shared change? (b) One launch with z over A as rows
and w over B transposed as rows: block i writes row i of z and column i of the same matrix
through w, so every off-diagonal element is written by two blocks. (c) Control: two wrappers of
the *same* mapping are refused."""
from _r6 import *
import os, tempfile

fd, path = tempfile.mkstemp(prefix="r6mm", dir="/tmp")
os.close(fd)
N = 64
np.zeros(N, np.float32).tofile(path)
A = np.memmap(path, np.float32, mode="r+", shape=(N,))
B = np.memmap(path, np.float32, mode="r+", shape=(N,))
findings, notes = [], []
try:
    # (c) control
    try:
        s0 = ct.from_dlpack(A).shared()
        p0 = ct.from_dlpack(A).partition(16)
        notes.append("control: same mapping wrapped twice NOT refused")
    except Exception as e:  # noqa
        notes.append(f"control: same mapping refused ({type(e).__name__})")
        s0 = None
    del s0
    import gc
    gc.collect()
    # (a)
    s = ct.from_dlpack(A).shared()
    before = s.to_numpy().copy()
    p = ct.from_dlpack(B).partition(16)
    (p,) = inc(p).sync()
    after = s.to_numpy()
    if not np.array_equal(before, after):
        findings.append(f"(a) a launch wrote the memory of a live Shared through a second mapping: {before[0]} -> {after[0]}")
    p.unpartition()
    t = s.try_unwrap()
    del s, t, p
    gc.collect()

    # (b)
    @ct.entry
    def rows(z: ct.Mut[ct.f32, (1, 8)], w: ct.Mut[ct.f32, (1, 8)]):
        v = ct.full((1, 8), 1.0, ct.float32) + ct.bid(0).astype(ct.float32)
        z.store(v)
        w.store(v + 100.0)
    A2 = np.asarray(A).reshape(8, 8)
    B2 = np.asarray(B).reshape(8, 8).T
    try:
        z, w = rows(ct.from_dlpack(A2).partition((1, 8)), ct.from_dlpack(B2).partition((1, 8))).sync()
        findings.append("(b) one launch took z and w over the same pages; element (i, j) is written by blocks i and j")
    except Exception as e:  # noqa
        notes.append(f"(b) refused {type(e).__name__}")
finally:
    os.unlink(path)
if findings:  # docs/safety.md G3 "Outside" names two virtual mappings of one file since this round
    outside("G3 Outside (aliasing is decided on virtual addresses; map a file once): " + "; ".join(findings)
            + " || " + "; ".join(notes))
held("; ".join(notes))

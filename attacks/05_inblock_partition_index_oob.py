"""Promise (safe.md): 'an index past the sub-tensor writes nothing anywhere' for
z.partition(shape).store(tile, index), including negative indices and run-time indices.
Runs on the active backend."""
# BACKENDS: cpu triton
from _common import *


@ct.entry
def oob_inner(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], i: int):
    z.partition((16,)).store(ct.full((16,), 1.0, ct.float32) * (ct.bid(0) + 1), (i,))


for i in [-1, -4, 4, 5, 8, 100, 2**31 - 1, 2**28 + 1, -(2**31)]:
    buf = make_buf(256)
    x = ct.from_dlpack(make_buf(256))
    z, x, _ = oob_inner(ct.from_dlpack(buf).partition(64), x, i).sync()
    a = as_np(buf)
    if np.any(a != 0):
        nz = np.nonzero(a)[0]
        owner = nz // 64
        cross = np.nonzero(a[nz] != owner + 1)[0]
        print(f"index {i}: wrote {len(nz)} elements; wrong-block writes: {len(cross)}")
        broken(f"[{BACKEND}] index {i} (past the 4 inner tiles of a 64-element sub-tensor) wrote elements {nz[:8]}... values {a[nz[:4]]}")
held(f"[{BACKEND}] out-of-sub-tensor inner indices write nothing")

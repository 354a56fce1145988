"""Promise (safe.md): in-block partition stores are masked to the sub-tensor, and edge
sub-tensors never write outside the tensor. The tensor is base[0:100] (a view); block 1's
sub-tensor [64:128] is partial; its inner tile 1 covers [96:128] of which 100..127 is
outside the tensor (but inside the base buffer). Active backend."""
# BACKENDS: cpu triton
from _common import *


@ct.entry
def inner(z: ct.Mut[ct.f32, "B"], i: int):
    z.partition((32,)).store(ct.full((32,), 1.0, ct.float32) * (ct.bid(0) + 1), (i,))


fails = []
for i in [0, 1]:
    buf = make_buf(256)
    z, _ = inner(ct.from_dlpack(buf)[0:100].partition(64), i).sync()
    a = as_np(buf)
    if np.any(a[100:] != 0):
        nz = np.nonzero(a[100:])[0] + 100
        fails.append(f"inner index {i}: wrote base[{nz[0]}..{nz[-1]}] outside the 100-element tensor")
if fails:
    broken(f"[{BACKEND}] " + "; ".join(fails))
held(f"[{BACKEND}] in-block stores clipped at the tensor edge")

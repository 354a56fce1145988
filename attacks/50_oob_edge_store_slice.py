"""Promise (safe.md): 'Parts past the tensor's edge are dropped, so edge blocks never write
outside the tensor.' The tensor is a slice view base[0:100] of a 256-element buffer: the
edge sub-tensor [64:128] must not touch base[100:128] (which is valid memory). Active
backend (cpu / triton)."""
# BACKENDS: cpu triton
from _common import *

buf = make_buf(256)
base = ct.from_dlpack(buf)
v = base[0:100]
x = ct.from_dlpack(make_buf(100, fill_value=1.0))
z, x = fill(v.partition(64), x).sync()
a = as_np(buf)
if np.any(a[100:] != 0):
    nz = np.nonzero(a[100:])[0] + 100
    broken(f"[{BACKEND}] edge block of a 100-element view wrote past its edge: base[{nz[0]}:{nz[-1]+1}]")
if not np.all(a[:100] == 2.0):
    broken(f"[{BACKEND}] view not fully written")
held(f"[{BACKEND}] edge stores dropped at the view's edge")

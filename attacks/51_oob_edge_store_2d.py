"""Promise: edge blocks never write outside the tensor. 2-D view base[0:100, 0:50] of a
128x128 buffer partitioned (64,64): columns 50..63 and rows 100..127 of the base are
valid memory outside the tensor and must stay untouched. Active backend."""
# BACKENDS: cpu triton
from _common import *

buf = make_buf((128, 128))
base = ct.from_dlpack(buf)
v = base[0:100, 0:50]
z, _ = const2d(v.partition((64, 64)), 3.0).sync()
a = as_np(buf)
exp = np.zeros((128, 128), np.float32)
exp[0:100, 0:50] = 3.0
if not np.array_equal(a, exp):
    bad = np.argwhere(a != exp)
    broken(f"[{BACKEND}] 2-D edge blocks wrote outside the view: {len(bad)} elements, e.g. {bad[:4].tolist()}")
held(f"[{BACKEND}] 2-D edges exact")

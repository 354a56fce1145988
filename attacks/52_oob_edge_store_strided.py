"""Promise: edge blocks never write outside the tensor — strided views: v = base[1::3] has
elements interleaved with foreign ones; with partition 64 and 85 elements the edge block
covers indices 85..127 whose addresses (1+3i) run past the view into the buffer."""
# BACKENDS: cpu triton
from _common import *

buf = make_buf(600)
base = ct.from_dlpack(buf)
v = base[1:256:3]               # 85 elements: 1, 4, ..., 253
n = v.shape[0]
z, _ = fill(v.partition(64), ct.from_dlpack(make_buf(n, fill_value=1.0))).sync()
a = as_np(buf)
exp = np.zeros(600, np.float32)
exp[1:256:3] = 2.0
if not np.array_equal(a, exp):
    bad = np.nonzero(a != exp)[0]
    broken(f"[{BACKEND}] strided view: wrote {len(bad)} elements outside it, e.g. {bad[:6]}")
held(f"[{BACKEND}] strided edge exact")

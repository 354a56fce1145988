"""Where a raw torch tensor passed as a safe launch's ``Ref`` costs host time (issue 9, dev box).

Chains of 1000 safe launches ``safe_add(z, x, y)`` (the launcher stubbed as in launch_overhead.py),
with x and y ``Shared`` handles, one raw torch tensor, or both raw, against ``ct.launch`` of the
unchecked add4 with three distinct tensors (the same reads a GPU launch of it makes). Min of CPU time
per launch over interleaved repetitions.

    PYTHONPATH=src python bench/raw_ref_cost.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launch_overhead as lo  # noqa: E402  (sets SAFETILE_BACKEND=triton and stubs the launcher)
import torch  # noqa: E402

import safetile as ct  # noqa: E402
from safetile.backends.triton import launcher
from safetile.safe.launch import prepare
from safetile.safe.native import FAST
from safetile.backends.triton import lean
from safetile.runtime import torch_facts
lean._loader.get(build=True)
print("C++ fact reader loaded:", torch_facts.module(build=True) is not None)  # before FAST: it takes the capsule
print("safe launch C path loaded:", FAST.load(build=True))
launcher._cuda_get_device = launcher._current_device = lambda: -1
launcher._get_stream = lambda device: 0
x = torch.randn(1024)
z = torch.empty(1024)
st = {"z": ct.from_dlpack(torch.empty(1024)).partition(128)}
sx, sy = ct.from_dlpack(torch.randn(1024)).shared(), ct.from_dlpack(torch.randn(1024)).shared()
tx, ty = torch.randn(1024), torch.randn(1024)
for a, b in ((sx, sy), (tx, sy), (tx, ty)):
    p = prepare(lo.safe_add, (st["z"], a, b))
    p.bound = launcher.Bound(lo._StubVariant(), (1, 1, 1), tuple(range(9)), -1)
launcher.learn_fast(lo.add4, lo._StubVariant(), (1, 1, 1), (x, x, z, 1024))
k = 1000
def chain(a, b):
    def f():
        op = lo.safe_add(st["z"], a, b)
        for _ in range(k - 1):
            op = op.then(lambda v: lo.safe_add(v[0], a, b))
        st["z"] = op.sync()[0]
    return f
def unchecked():
    for _ in range(k):
        ct.launch(None, (1,), lo.add4, (x, ty, z, 1024))
fs = {"shared": chain(sx, sy), "raw1": chain(tx, sy), "raw2": chain(tx, ty), "unchecked3": unchecked}  # noqa: E501
res = {n: [] for n in fs}
for f in fs.values():
    f()
for _ in range(9):
    for n, f in fs.items():
        t0 = time.process_time()
        f()
        res[n].append((time.process_time() - t0) / k * 1e6)
for n, v in res.items():
    print(f"{n:10s} {min(v):6.2f} us per launch")

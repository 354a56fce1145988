"""Promise: p.map(n) moves p (safe.md: 'm.unmap() gives the partition back'). The public
constructor ct.MappedPartition(p, n) must not leave p usable as a second mutable handle."""
from _common import *


SRC = '''
@ct.entry
def mw(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32) * v, idx)
'''
mw = kernel_from_source(SRC, tag="mctor")["mw"]
x = ct.rand(256, seed=1).sync()
p = ct.zeros(256).sync().partition(64)
try:
    m = ct.MappedPartition(p, 2)
except Exception as e:  # noqa: BLE001
    held(f"constructor refused: {type(e).__name__}")
if p.is_moved:
    held("constructor moved p")
try:
    t = p.unpartition()
    s = t.shared()
except Exception as e:  # noqa: BLE001
    held(f"p unusable: {type(e).__name__}")
before = snap(s)
try:
    mw(m, 5.0).sync()
except Exception as e:  # noqa: BLE001
    held(f"launch refused: {type(e).__name__}: {str(e)[:100]}")
if snap(s) != before:
    broken(f"ct.MappedPartition(p, 2) left p usable; p -> tensor -> Shared, then the mapped launch wrote the Shared: {s.to_numpy()[:3]}")
broken("mapped launch ran over Shared memory")

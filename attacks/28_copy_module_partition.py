"""Promise (safe.md): p.unpartition() 'gives the tensor back (the partition is consumed)';
DESIGN: 'A Shared value has no mutable alias anywhere'. copy.copy of a Partition (or a
MappedPartition) must not give a second mutable handle that survives the original's
unpartition: shared afterwards, the Shared must not be writable through the copy."""
import copy

from _common import *

SRC = '''
@ct.entry
def mw(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32) * v, idx)
'''
mw = kernel_from_source(SRC, tag="cpym")["mw"]
x = ct.rand(256, seed=1).sync()
fails = []
for name, make, run in [
    ("Partition", lambda: ct.zeros(256).sync().partition(64), lambda c: fill(c, x).sync()),
    ("MappedPartition", lambda: ct.zeros(256).sync().partition(64).map(2), lambda c: mw(c, 5.0).sync()),
]:
    p = make()
    try:
        c = copy.copy(p)
    except Exception:  # noqa: BLE001
        continue
    t = p.unpartition()
    try:
        s = t.shared()
    except Exception:  # noqa: BLE001
        continue
    before = snap(s)
    try:
        run(c)
    except Exception:  # noqa: BLE001
        continue
    if snap(s) != before:
        fails.append(f"copy.copy({name}) survived unpartition; after t.shared() a launch on the copy wrote the Shared ({s.to_numpy()[:2]})")
if fails:
    broken("; ".join(fails))
held("copies of partitions die with the original")

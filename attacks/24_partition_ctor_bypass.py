"""Promise: t.partition(shape) *moves* t; a Shared value has no mutable alias. The public
constructor ct.Partition(t, shape, prefix, borrowed) (help(ct.Partition)) must not yield a
mutable partition while t stays usable (e.g. shared)."""
from _common import *

x = ct.rand(256, seed=1).sync()
t = ct.zeros(256).sync()
try:
    p = ct.Partition(t, (64,), False, False)
except Exception as e:  # noqa: BLE001
    held(f"constructor refused: {type(e).__name__}")
if not t.is_moved:
    try:
        s = t.shared()
    except Exception as e:  # noqa: BLE001
        held(f"sharing t after ct.Partition(t) refused: {type(e).__name__}")
    before = snap(s)
    try:
        fill(p, x).sync()
    except Exception as e:  # noqa: BLE001
        held(f"launch refused: {type(e).__name__}")
    if snap(s) != before:
        broken(f"ct.Partition(t, ...) did not move t; t.shared() then a launch on the partition wrote the Shared: {s.to_numpy()[:3]}")
    broken("ct.Partition(t) left t usable")
held("t moved by the constructor")

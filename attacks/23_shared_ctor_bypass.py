"""Promise (DESIGN): 'A Shared value has no mutable alias anywhere'; safe.md: t.shared() /
ct.shared(t) *moves* t into the read-only handle. The public class ct.Shared(t) (listed in
dir(ct), constructor in help(ct.Shared)) must not leave t writable."""
from _common import *

x = ct.rand(256, seed=1).sync()
# variant: ct.Shared(partition) leaves the partition usable as ct.Mut
p = ct.zeros(256).sync().partition(64)
try:
    sp = ct.Shared(p)
    b0 = snap(sp)
    fill(p, x).sync()
    if snap(sp) != b0:
        print("also: ct.Shared(p) of a Partition left p writable; a launch changed the Shared")
except Exception as e:  # noqa: BLE001
    pass
t = ct.zeros(256).sync()
s = ct.Shared(t)
before = snap(s)
try:
    fill(t.partition(64), x).sync()
except Exception as e:  # noqa: BLE001
    held(f"writing t after ct.Shared(t) refused: {type(e).__name__}")
after = snap(s)
if after != before:
    broken(f"ct.Shared(t) left t mutable; a launch wrote the Shared's memory: {s.to_numpy()[:3]} (was zeros)")
broken("ct.Shared(t) left t mutable (launch accepted)")

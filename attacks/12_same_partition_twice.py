"""Promise: 'one value is not passed twice where unsafe' — the same partition for two
ct.Mut parameters (or a Mut and a MappedMut from the same tensor) is refused, args kept."""
from _common import *


@ct.entry
def two(a: ct.Mut[ct.f32, "B"], b: ct.Mut[ct.f32, "B"]):
    a.store(ct.full((B,), 1.0, ct.float32))
    b.store(ct.full((B,), 2.0, ct.float32))


p = ct.zeros(256).sync().partition(64)
before = snap(p)
expect_refusal(lambda: two(p, p).sync(), None, [], "same partition twice")
if p.is_moved or snap(p) != before:
    broken("refused launch moved or changed the partition")
t = ct.zeros(256).sync()
v1 = t[0:256]
v2 = t.reshape(16, 16).reshape(256)
p1, p2 = v1.partition(64), v2.partition(64)
b1, b2 = snap(p1), snap(p2)
expect_refusal(lambda: two(p1, p2).sync(), ct.AliasError, ["'a'", "'b'"], "two views of one tensor as two Muts")
if p1.is_moved or p2.is_moved:
    broken("refused launch moved an argument")
held("same memory twice as Mut refused naming both")

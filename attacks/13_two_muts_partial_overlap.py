"""Promise: a mutable argument may not overlap any other argument. Two Mut partitions of
slices t[0:128] and t[64:192] (overlap 64 elements) must be refused naming both."""
from _common import *


@ct.entry
def two(a: ct.Mut[ct.f32, "B"], b: ct.Mut[ct.f32, "B"]):
    a.store(ct.full((B,), 1.0, ct.float32))
    b.store(ct.full((B,), 2.0, ct.float32))


t = ct.zeros(256).sync()
pa = t[0:128].partition(64)
pb = t[64:192].partition(64)
before = snap(t)
expect_refusal(lambda: two(pa, pb).sync(), ct.AliasError, ["'a'", "'b'"], "overlapping slices as two Muts")
if snap(t) != before:
    broken("refused launch wrote")
pa2 = t[0:64].partition(64)
pb2 = t[64:128].partition(64)
try:
    two(pa2, pb2).sync()
except Exception as e:  # noqa: BLE001
    broken(f"disjoint adjacent slices refused: {e}")
held("partial overlap refused, adjacent slices pass")

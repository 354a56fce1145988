"""Promise (safe.md 5): 'partitions that disagree ... are refused naming the axis
(GridError: ... on axis 0 (x))'. Two Mut partitions with grids (4,) and (8,), and 2-D
partitions disagreeing on axis 1; arguments untouched and usable."""
from _common import *


@ct.entry
def two(a: ct.Mut[ct.f32, "B"], b: ct.Mut[ct.f32, "C"]):
    a.store(ct.full((B,), 1.0, ct.float32))
    b.store(ct.full((C,), 2.0, ct.float32))


@ct.entry
def two2(a: ct.Mut[ct.f32, ("BM", "BN")], b: ct.Mut[ct.f32, ("CM", "CN")]):
    a.store(ct.full((BM, BN), 1.0, ct.float32))
    b.store(ct.full((CM, CN), 2.0, ct.float32))


pa = ct.zeros(256).sync().partition(64)
pb = ct.zeros(256).sync().partition(32)
before = snap(pa, pb)
expect_refusal(lambda: two(pa, pb).sync(), ct.GridError, ["axis 0"], "grids (4,) vs (8,)")
if snap(pa, pb) != before or pa.is_moved or pb.is_moved:
    broken("refused launch touched/moved the partitions")
qa = ct.zeros((64, 64)).sync().partition((32, 32))
qb = ct.zeros((64, 64)).sync().partition((32, 16))
expect_refusal(lambda: two2(qa, qb).sync(), ct.GridError, ["axis 1"], "grids (2,2) vs (2,4)")
held("disagreeing partitions refused naming the axis")

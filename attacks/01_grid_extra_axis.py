"""Promise: an explicit grid that disagrees with the partitions is refused naming the axis
(safe.md "The launch boundary" 5). A rank-1 partition under grid (4,2,1) would let blocks
(i,0) and (i,1) both store sub-tensor i (two blocks, one element)."""
from _common import *

x = ct.rand(256, seed=1).sync()
z = ct.zeros(256).sync().partition(64)
before = snap(z, x)
e = expect_refusal(lambda: fill(z, x).grid((4, 2, 1)).sync(), ct.GridError, ["axis 1"], "grid (4,2,1) for a rank-1 partition")
if snap(z, x) != before:
    broken("arguments changed by the refused launch")
e = expect_refusal(lambda: fill(z, x).grid((4, 1, 2)).sync(), ct.GridError, ["axis 2"], "grid (4,1,2)")
held("extra grid axes refused naming the axis")

"""Promise: a mapped partition's grid is (num_tile_blocks,1,1); any other explicit grid
is refused (two blocks walking the same sub-tensors would write the same element)."""
from _common import *


@ct.entry
def mwrite(c: ct.MappedMut[ct.f32, ("BM",)], v: ct.f32):
    for idx in c.iter_indices():
        c.store(ct.full((BM,), 1.0, ct.float32) * (ct.bid(0) + 1 + 10 * ct.bid(1)), idx)


for grid in [(2, 2, 1), (3, 1, 1), (1, 1, 1), (2, 1, 2)]:
    m = ct.zeros(256).sync().partition(32).map(2)
    before = snap(m)
    expect_refusal(lambda: mwrite(m, 1.0).grid(grid).sync(), ct.GridError, ["axis"], f"mapped grid {grid}")
    if snap(m) != before:
        broken(f"refused launch with grid {grid} changed the output")
    if m.is_moved:
        broken("refused launch moved the mapped partition")
held("mismatched grids refused for mapped partitions")

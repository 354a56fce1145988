"""Promise (safe.md): 'num_tile_blocks must be between 1 and the number of sub-tensors'.
Out-of-range counts must be a safetile error, and the partition stays usable."""
from _common import *

p = ct.zeros(256).sync().partition(32)  # 8 sub-tensors
for n in [0, -1, 9, 100, 2.5, True, "3", None]:
    e = expect_refusal(lambda: p.map(n), None, [], f"p.map({n!r})")
    if p.is_moved:
        broken(f"p.map({n!r}) was refused but moved the partition")
m = p.map(8)
if m.num_tile_blocks != 8:
    broken("map(8) gave the wrong block count")
held("bad num_tile_blocks refused with safetile errors; partition kept")

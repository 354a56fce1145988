"""Promise (safe.md 5): an explicit grid that disagrees with the partitions is refused,
naming the axis — smaller grids too (every block owns exactly one sub-tensor)."""
from _common import *

x = ct.rand(256, seed=1).sync()
for g in [(2, 1, 1), (3,), (1, 1, 1), (4, 0, 1), (0, 1, 1), (-4, 1, 1), (4,)]:
    z = ct.zeros(256).sync().partition(64)
    try:
        r = fill(z, x).grid(g).sync()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"grid {g}: non-safetile {type(e).__name__}: {e}")
        if z.is_moved:
            broken(f"grid {g}: refused but z moved")
        continue
    if tuple(g) not in [(4,), (4, 1, 1)]:
        broken(f"grid {g} accepted for a 4-block partition")
held("explicit grids checked")

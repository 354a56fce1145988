"""Promise (safe.md 5): 'a prefix partition may have fewer blocks than the grid, never
more ("prefix overrun")'. And with fewer blocks, the blocks past it write nothing (the
prefix partition's tensor is a view inside a larger buffer)."""
from _common import *


@ct.entry
def two(z: ct.Mut[ct.f32, "B"], k: ct.Mut[ct.f32, (1, 16)]):
    z.store(ct.full((B,), 1.0, ct.float32))
    k.store(ct.full((1, 16), 1.0, ct.float32) * (ct.bid(0) + 1))


z = ct.zeros(256).sync().partition(64)           # 4 blocks
buf = np.zeros((8, 16), np.float32)
k = ct.from_dlpack(buf)[0:2].partition_prefix((1,))   # 2 blocks, fewer than the grid


@ct.entry
def one(k: ct.Mut[ct.f32, (1, 16)]):
    k.store(ct.full((1, 16), 1.0, ct.float32) * (ct.bid(0) + 1))


ran = False
try:
    two(z, k).sync()
    ran = True
except Exception as e:  # noqa: BLE001
    print("note: mixed plain + shorter prefix partition refused:", type(e).__name__)
    k = ct.from_dlpack(buf)[0:2].partition_prefix((1,))
    try:
        one(k).grid((4, 1, 1)).sync()
        ran = True
    except Exception as e2:  # noqa: BLE001
        print("note: explicit larger grid over a prefix partition refused too:", type(e2).__name__)
if ran and np.any(buf[2:] != 0):
    broken(f"blocks past the prefix partition wrote rows {np.nonzero(buf.any(1))[0]}")
z = ct.zeros(128).sync().partition(64)           # 2 blocks
k = ct.zeros((4, 16)).sync().partition_prefix((1,))   # 4 blocks: overrun
expect_refusal(lambda: two(z, k).sync(), ct.GridError, [], "prefix overrun")
held("prefix partitions: fewer ok and masked, more refused")

"""Class 2. Two raw Refs x (all 1.0) and y (all 10.0) of one shape, used by add2(z, x, y) and add2(z, x, x)
in a chain (C twin caching both aliases per terminal); mid-chain their storages are swapped (x.set_(y's),
y.set_(x's)), then x is set_ onto y's storage with an offset. Each later launch must read what x and y show then.
# BACKENDS: cpu triton"""
from _r8 import *

ensure_native()
N = N_MUT
x = torch.full((N,), 1.0)
y = torch.full((N,), 10.0)
sx, sy = x.untyped_storage(), y.untyped_storage()
obs = []


def rec(v):
    obs.append(v[0].unpartition().to_numpy().copy() if False else None)
    return v


def swap(v):
    x.set_(sy, 0, (N,), (1,))
    y.set_(sx, 0, (N,), (1,))
    return add2(v[0], x, y)


z = poisoned(N).partition(16)
try:
    (z, _, _) = add2(z, x, y).then(lambda v: add2(v[0], x, y)).then(swap).then(lambda v: add2(v[0], x, x)).sync()
    out = z.unpartition().to_numpy()
    want = (x + x).numpy()
    print("after swap then add2(z, x, x):", out[:3], "want", want[:3])
    if not np.array_equal(out, want):
        broke(f"read {out[:3].tolist()} want {want[:3].tolist()}")
except Exception as e:  # noqa
    if not is_st(e):
        broke("raw " + err(e))
    print("refused", err(e))
# second scenario: swap then add2(z, x, y) as the last launch
x = torch.full((N,), 1.0)
y = torch.full((N,), 10.0)
sx, sy = x.untyped_storage(), y.untyped_storage()
big = torch.arange(2 * N, dtype=torch.float32)


def swap2(v):
    x.set_(big.untyped_storage(), 3, (N,), (1,))
    return add2(v[0], x, y)


z = poisoned(N).partition(16)
(z, _, _) = add2(z, x, y).then(lambda v: add2(v[0], x, y)).then(swap2).sync()
out = z.unpartition().to_numpy()
want = (x + y).numpy()
print("after offset set_:", out[:3], "want", want[:3])
if not np.array_equal(out, want):
    broke(f"offset case read {out[:3].tolist()} want {want[:3].tolist()}")
held("swapped and offset storages read as the tensors showed at each launch")

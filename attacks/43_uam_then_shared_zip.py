"""Promise (safe.md DeviceOps): op.shared() 'runs at most once however many consumers;
tensors come out Shared' — so no two consumers can get one mutable value. Also zip/unzip
run once; a consumer of a shared op that unwraps must invalidate the other's Shared."""
from _common import *

calls = []
x = ct.rand(256, seed=1).sync()
base = ct.zeros(256).inspect(lambda v: calls.append(1)).shared()
zp = ct.zeros(256).sync().partition(64)
a = base.then(lambda s: fill(zp, s))
b = base.map(lambda s: s)
r1 = a.sync()
r2 = b.sync()
if len(calls) != 1:
    broken(f"shared op ran {len(calls)} times")
if not isinstance(r2, ct.Shared):
    broken(f"second consumer of a shared tensor op got {type(r2).__name__}, not Shared")
# consumer 1 unwraps and writes; consumer 2's Shared must be dead, not silently mutable
calls.clear()
base = ct.zeros(256).shared()
c1 = base.then(lambda s: fill(s.try_partition(64), x))
c2 = base.map(lambda s: s)
c1.sync()
s2 = c2.sync()
try:
    v = s2.to_numpy()
    broken(f"second consumer reads a Shared whose memory the first consumer unwrapped and wrote: {v[:3]}")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        broken(f"non-safetile error {type(e).__name__}")
# shared op producing a Partition: consumers must not both get it mutable
sp = ct.zeros(256).partition(64).shared()
got = []
for _ in range(2):
    try:
        got.append(sp.then(lambda p: fill(p, x)).sync())
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"non-safetile {type(e).__name__}: {e}")
if len(got) == 2:
    broken("two consumers of one shared partition op both launched it as ct.Mut")
held("shared ops never hand out one mutable value twice")

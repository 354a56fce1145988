"""Promise (safe.md): z.partition(shape).store(tile, index) is masked to this block's
sub-tensor on every partitioned axis. An inner partition larger than the sub-tensor must
not reach the neighbour's elements. Runs on the active backend (cpu / triton)."""
# BACKENDS: cpu triton
from _common import *


@ct.entry
def big_inner(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.partition((4 * B,)).store(ct.full((4 * B,), 1.0, ct.float32) * (ct.bid(0) + 1), (0,))


buf = make_buf(256)
x = ct.from_dlpack(make_buf(256))
z, x = big_inner(ct.from_dlpack(buf).partition(64), x).sync()
a = z.unpartition().to_numpy()
exp = np.repeat(np.arange(1, 5, dtype=np.float32), 64)
if not np.array_equal(a, exp):
    bad = np.nonzero(a != exp)[0]
    broken(f"[{BACKEND}] elements written by the wrong block: first {bad[:8]}, values {a[bad[:8]]} (want {exp[bad[:8]]})")
held(f"[{BACKEND}] inner partition masked to own sub-tensor")

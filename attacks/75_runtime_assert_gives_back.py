"""Promise (safe.md): 'A launch that passes these checks and then fails while running (a
false ct.assert_) is not a rejected launch: the other blocks' stores have landed ...; the
arguments are given back as usual.' semantics.md: the failure is a TileRuntimeError naming
the first failing blocks. Check the error, that p and x stay usable, and the other blocks'
stores."""
from _common import *


@ct.entry
def checked(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.full((B,), 1.0, ct.float32) * (ct.bid(0) + 1))
    ct.assert_(ct.bid(0) != 2, "block 2 fails")


x = ct.rand(256, seed=1).sync()
p = ct.zeros(256).sync().partition(64)
fails = []
try:
    checked(p, x).sync()
    fails.append("false assert did not fail the launch")
except Exception as e:  # noqa: BLE001
    if not isinstance(e, ct.TileRuntimeError):
        fails.append(f"{type(e).__module__}.{type(e).__name__} instead of TileRuntimeError")
    elif "2" not in str(e):
        fails.append(f"error does not name block 2: {e}")
for nm, v in [("p", p), ("x", x)]:
    try:
        v.to_numpy()
    except Exception as e:  # noqa: BLE001
        fails.append(f"{nm} not given back after the runtime failure: {type(e).__name__}: {str(e)[:100]}")
try:
    a = p.to_numpy()
    if not (np.all(a[:64] == 1) and np.all(a[64:128] == 2) and np.all(a[192:] == 4)):
        fails.append(f"other blocks' stores did not land: {a[::64]}")
except Exception:  # noqa: BLE001
    pass
if fails:
    broken("; ".join(fails))
held("runtime failure gives the arguments back")

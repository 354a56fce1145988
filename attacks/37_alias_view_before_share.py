"""Promise (DESIGN): 'A Shared value has no mutable alias anywhere'. Views taken before
.shared() (slices, reshape, DLPack wrappers of the same memory) must not be writable
afterwards: partition, borrow_mut, memcpy into them, Mut launches."""
from _common import *

x = ct.rand(256, seed=1).sync()
fails = []
for name, mkview in [
    ("slice", lambda t: t[0:128]),
    ("reshape", lambda t: t.reshape(16, 16)),
    ("slice(axis)", lambda t: t.slice(0, 200, 256)),
]:
    t = ct.zeros(256).sync()
    v = mkview(t)
    s = t.shared()
    before = snap(s)
    for how, f in [
        ("partition", lambda: v.partition(v.shape if len(v.shape) > 1 else 64)),
        ("borrow_mut", lambda: ct.borrow_mut(v).partition(v.shape if len(v.shape) > 1 else 64)),
        ("memcpy", lambda: ct.memcpy(v, ct.full(v.shape, 5.0).sync()).sync()),
    ]:
        try:
            f()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{name}/{how}: non-safetile {type(e).__name__}")
            continue
        fails.append(f"{name}/{how}: accepted on a view of a Shared")
    if snap(s) != before:
        fails.append(f"{name}: Shared changed")
a = np.zeros(256, np.float32)
s = ct.from_dlpack(a).shared()
try:
    p = ct.from_dlpack(a).partition(64)
    fill(p, x).sync()
    fails.append("second from_dlpack wrapper of a Shared's memory partitioned and written")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"dlpack: non-safetile {type(e).__name__}")
if fails:
    broken("; ".join(fails))
held("views of a Shared never writable")

"""Promise (safe.md): borrow_mut partitions in place; t is unusable until the borrow ends
(release / with-block end / unpartition). After the borrow ends there must be exactly one
usable handle on the memory: the borrowed partition (and anything derived from it, e.g. a
map) must be dead, and a second release/unpartition must fail."""
from _common import *

x = ct.rand(256, seed=1).sync()
fails = []
t = ct.zeros(256).sync()
b = ct.borrow_mut(t)
p = b.partition(64)
m = p.map(2)
try:
    back = m.unpartition()
except Exception as e:  # noqa: BLE001
    back = None
if back is not None:
    if back is not t:
        # two usable tensor objects over one memory after a borrow ended
        try:
            s = t.shared()
            fill(back.partition(64), x).sync()
            fails.append("after a mapped borrowed partition was unpartitioned, both t and the returned tensor are usable (t shared, the other written)")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"non-safetile {type(e).__name__}")
t2 = ct.zeros(256).sync()
b2 = ct.borrow_mut(t2)
p2 = b2.partition(64)
r1 = p2.release()
for name, f in [("release twice", lambda: p2.release()), ("unpartition after release", lambda: p2.unpartition()),
                ("launch after release", lambda: fill(p2, x).sync()), ("b2.partition after release", lambda: b2.partition(64) and None)]:
    try:
        f()
        if name.startswith("b2.partition"):
            # a fresh borrow from the same MutBorrow: t2 must be unusable again
            try:
                t2.to_numpy()
                fails.append("MutBorrow reused after release but t2 still usable")
            except Exception:  # noqa: BLE001
                pass
            continue
        fails.append(f"{name}: allowed")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{name}: non-safetile {type(e).__name__}")
if fails:
    broken("; ".join(fails))
held("a borrow ends once, leaving one handle")

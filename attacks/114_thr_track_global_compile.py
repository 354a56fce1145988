"""Promise (semantics.md + DESIGN threads): a changed global recompiles; compiles are
atomic. 4 threads launch the same @ct.kernel while the main thread flips the global it
folds; every launch's result must equal the value the global had at some moment during
that launch (never a value from a compile for a different specialisation or a torn mix)."""
import threading

from _common import *

SCALE = 1.0


@ct.kernel
def k(z, x):
    ct.store(z, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(64,)) * SCALE)


bad = []
stop = threading.Event()


def worker():
    x = np.ones(64 * 8, np.float32)
    while not stop.is_set():
        z = np.zeros(64 * 8, np.float32)
        try:
            ct.launch(None, (8, 1, 1), k, (z, x))
        except Exception as e:  # noqa: BLE001
            bad.append(f"{type(e).__module__}.{type(e).__name__}: {str(e)[:100]}")
            return
        u = np.unique(z)
        if len(u) != 1 or u[0] not in (1.0, 2.0, 3.0, 4.0):
            bad.append(f"launch produced {u[:5]}")
            return


ths = [threading.Thread(target=worker) for _ in range(4)]
[t.start() for t in ths]
import time  # noqa: E402
for i in range(30):
    SCALE = float(i % 4 + 1)
    time.sleep(0.01)
stop.set()
[t.join(60) for t in ths]
if any(t.is_alive() for t in ths):
    broken("hang")
z = np.zeros(64 * 8, np.float32)
SCALE = 7.0
ct.launch(None, (8, 1, 1), k, (z, np.ones(64 * 8, np.float32)))
if not np.all(z == 7.0):
    bad.append(f"after the flips, SCALE=7.0 gave {np.unique(z)}")
if bad:
    broken("; ".join(bad[:3]))
held("concurrent launches with a changing global stay consistent")

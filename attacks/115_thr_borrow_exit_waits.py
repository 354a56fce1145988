"""Promise (help(MutBorrow)): 'leaving the block (normally or by an exception) waits for
launches still running on the partitions made from it'. A thread runs a slow launch on the
borrowed partition; the main thread leaves the with-block (and, in a second round, leaves it
by an exception): t must not be readable before the launch finished, and must then hold the
complete result."""
import threading
import time

from _common import *

N = 1 << 20


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    acc = ct.full((B,), 0.0, ct.float32)
    for i in range(150):
        acc = acc * 0.0 + v
    z.store(acc)


t = ct.zeros(N).sync()
fails = []
for rnd, raise_exc in enumerate([False, True]):
    started = threading.Event()
    res = {}

    def worker(p):
        op = slow(p, float(rnd + 5))
        started.set()
        try:
            res["r"] = op.sync()
        except Exception as e:  # noqa: BLE001
            res["e"] = e
    try:
        with ct.borrow_mut(t) as b:
            p = b.partition(4096)
            th = threading.Thread(target=worker, args=(p,))
            th.start()
            started.wait()
            time.sleep(0.02)
            if raise_exc:
                raise RuntimeError("leave by exception")
    except RuntimeError:
        pass
    ended = time.time()
    alive = th.is_alive()
    a = t.to_numpy()
    u = np.unique(a)
    th.join(60)
    if th.is_alive():
        broken("hang")
    if "e" in res:
        # the launch had not started when the block ended: it must have been cancelled, t untouched
        if not np.all(t.to_numpy() == a) or (len(u) != 1):
            fails.append(f"round {rnd}: cancelled launch still wrote")
        print(f"note: round {rnd}: launch cancelled by the block exit ({type(res['e']).__name__})")
    elif len(u) != 1 or u[0] != rnd + 5:
        fails.append(f"round {rnd}: t read right after the block holds {u[:4]} but the launch then completed (alive at exit: {alive})")
if fails:
    broken("; ".join(fails))
held("leaving a borrow waits for running launches")

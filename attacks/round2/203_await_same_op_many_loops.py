"""Promise (safety.md G4): 'two threads can never both take one value ... a launch runs
once'; (safe.md) 'await op: asyncio ... the event loop never blocks'.

One LaunchOp (and one op.shared()) is awaited at the same time from event loops in three
threads while a fourth thread calls sync() on it. The launch must run exactly once, and
exactly one terminal may receive the (mutable) partition; the others get a safetile error.
For op.shared() every consumer may receive the value, but the launch still runs once."""
import asyncio
import threading

from _r2 import *


@ct.entry
def bump(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    acc = z.load()
    for i in range(300):
        acc = acc * 1.0
    z.store(acc + 1.0)


def race(make_op, shared):
    p = ct.zeros(1 << 16).sync().partition(1024)
    x = ct.zeros(8).sync()
    runs = []
    op = make_op(p, x, runs)
    got, errs, other = [], [], []
    barrier = threading.Barrier(4)

    def use(kind):
        barrier.wait()
        try:
            if kind == "sync":
                r = op.sync()
            else:
                async def go():
                    return await op
                r = asyncio.run(go())
            got.append(r)
        except Exception as e:  # noqa: BLE001
            (errs if is_safetile_error(e) else other).append(f"{type(e).__module__}.{type(e).__name__}: {e}")

    ths = [threading.Thread(target=use, args=(k,)) for k in ("await", "await", "await", "sync")]
    [t.start() for t in ths]
    [t.join(30) for t in ths]
    if any(t.is_alive() for t in ths):
        broken("hang: awaits/syncs of one op from four threads never finished")
    if other:
        broken(f"non-safetile error: {other[0][:200]}")
    if len(runs) != 1:
        broken(f"the launch ran {len(runs)} times")
    if not shared and len(got) != 1:
        broken(f"{len(got)} terminals received the mutable partition of one launch")
    if shared and len(got) + len(errs) != 4:
        broken("lost terminals")
    z = got[0][0]
    if isinstance(z, ct.Shared):
        a = z.to_numpy()
    else:
        a = z.unpartition().to_numpy()
    if not np.all(a == 1.0):
        broken(f"result {np.unique(a)[:4]} (want all 1.0: one run)")


def body():
    for i in range(5):
        race(lambda p, x, runs: bump(p, x).inspect(lambda r: runs.append(1)), False)
        race(lambda p, x, runs: bump(p, x).inspect(lambda r: runs.append(1)).shared(), True)
    held("one op awaited from several loops runs once and is handed out once")


run_guarded(body, "await same op many loops")

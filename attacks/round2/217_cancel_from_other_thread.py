"""Promise (safety.md G4): 'A launch's state (built -> running -> done/failed, or cancelled)
is changed under the same lock, so a launch runs once'; (safe.md) 'op.cancel() gives them
back without running (the op can never run afterwards)'.

Thread A drives an op (sync_on a busy stream, or await on it) while thread B cancels it
and immediately launches a writer on the given-back partition. The cancelled op must never
run (the writer's result survives), A must get a safetile error, and cancel_unrun() on a
running op must answer False without giving anything back."""
import asyncio
import threading
import time

from _r2 import *


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    acc = ct.load_tile_like(x, z)
    for i in range(1500):
        acc = acc * 1.0
    z.store(acc + 100.0)


def body():
    problems = []
    want = np.repeat(np.arange(1, 5, dtype=np.float32), 256)
    for mode in ("sync_on", "await"):
        t = ct.zeros(1024).sync()
        x = ct.ones(1024).sync()
        p = t.partition(256)
        s = ct.Stream("cpu")
        s.submit(lambda: time.sleep(0.3))
        op = fill(p, x)
        res = []

        def go():
            try:
                if mode == "sync_on":
                    res.append(op.sync_on(s))
                else:
                    async def a():
                        return await op
                    res.append(asyncio.run(a()))
            except Exception as e:  # noqa: BLE001
                res.append(e)

        th = threading.Thread(target=go, daemon=True)
        th.start()
        time.sleep(0.05)
        try:
            op.cancel()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                problems.append(f"{mode}: cancel raised {type(e).__name__}")
        try:
            p, _ = fill_bid(p, ct.zeros(4).sync()).sync()
        except ct.UseAfterMoveError:
            pass
        th.join(5)
        s.synchronize()
        if th.is_alive():
            problems.append(f"{mode}: the driving thread hung after the cancel")
            continue
        try:
            a = p.to_numpy()
            if not np.array_equal(a, want) and not np.all(a == 2.0):
                problems.append(f"{mode}: partition holds {np.unique(a)[:4]}")
            if np.all(a == 2.0) and not isinstance(res[0], tuple):
                problems.append(f"{mode}: the cancelled launch ran")
        except Exception as e:  # noqa: BLE001
            problems.append(f"{mode}: partition unusable after cancel: {type(e).__name__}: {str(e)[:90]}")
    # cancel_unrun on a running op
    p = ct.zeros(1 << 16).sync().partition(1024)
    x = ct.ones(1 << 16).sync()
    op = slow(p, x)
    th = threading.Thread(target=lambda: op.sync(), daemon=True)
    th.start()
    time.sleep(0.1)
    r = op.cancel_unrun()
    th.join(10)
    if r is not False:
        problems.append(f"cancel_unrun() of a running op returned {r!r}")
    if problems:
        broken("; ".join(problems))
    held("cross-thread cancels: the op never runs after, values given back once")


run_guarded(body, "cancel from other thread")

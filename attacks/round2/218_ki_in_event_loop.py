"""Promise (safe.md): 'a *view* taken before the move ... waits for the unfinished launch
that writes that memory'; (safety.md G5) no other launch touches the memory a running
launch writes; (G4) the values come back.

A SIGINT reaches the main thread while `asyncio.run` awaits a launch running on a stream
worker (asyncio turns it into KeyboardInterrupt after cancelling the task). Then a launch
on a view of the same memory must wait for the running one (last write wins), and the
partition must come back once the work ends."""
import asyncio
import signal
import threading
import time

from _r2 import *


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], v: ct.f32):
    acc = ct.load_tile_like(x, z)
    for i in range(4000):
        acc = acc * 0.5 + v
    z.store(acc)


def body():
    N = 1 << 18
    x = ct.zeros(N).sync()
    t = ct.zeros(N).sync()
    view = t[:]
    p = t.partition(4096)
    p, x, _ = slow(p, x, 1.0).sync()
    done = []
    op = slow(p, x, 7.0).inspect(lambda r: done.append(time.perf_counter()))
    main = threading.main_thread().ident
    threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT)).start()

    async def go():
        return await op

    try:
        asyncio.run(go())
        inconclusive("interrupt missed")
    except KeyboardInterrupt:
        pass
    problems = []
    q, _ = fill_bid(view.partition(4096), ct.zeros(8).sync()).sync()
    t_second = time.perf_counter()
    time.sleep(1.5)
    final = q.unpartition().to_numpy()
    if done and t_second < done[0]:
        problems.append(f"a launch on a view ran {done[0] - t_second:.3f}s before the interrupted one finished "
                        f"(final {np.unique(final)[:3]})")
    try:
        p.to_numpy()
    except Exception as e:  # noqa: BLE001
        problems.append(f"partition never came back: {type(e).__name__}: {str(e)[:100]}")
    if problems:
        broken("; ".join(problems))
    held("KeyboardInterrupt in an event loop keeps the launch registered and gives the values back")


run_guarded(body, "ki in event loop")

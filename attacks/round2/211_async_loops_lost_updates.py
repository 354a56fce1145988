"""Promise (safety.md G5): 'While a launch (or a graph replay) runs, no other launch,
replay or host read touches the memory it writes'; (G9) 'Any host thread may launch, sync
or read at any time'.

Four threads, each with its own asyncio event loop, own a distinct view object of one
buffer (views taken before any move) and `await` chains of z += 1 launches on it, with
then() continuations and asyncio.gather of two coroutines per loop (each on its own
the same view, so they contend; COROS=1 by default). Concurrently a fifth
thread replays a graph doing the same increment on yet another view. No increment may be
lost: the final value equals the number of successful increments."""
import asyncio
import threading

from _r2 import *


@ct.entry
def step(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    acc = z.load()
    for i in range(30):
        acc = acc * 1.0
    z.store(acc + v)


def trial():
    N = 1 << 14
    t = ct.zeros(N).sync()
    views = [t[:] for _ in range(6)]
    g = step(views[5].partition(1024), 1.0).graph()
    lock = threading.Lock()
    count = [0]
    other = []
    REPS = 12

    def bump():
        with lock:
            count[0] += 1

    def loop_thread(view):
        p = view.partition(1024)

        async def chain(k):
            nonlocal p
            for _ in range(REPS):
                try:
                    r = await step(p, 1.0).inspect(lambda r: bump()).then(lambda r: step(r[0], 1.0)).inspect(
                        lambda r: bump())
                    p = r[0]
                except Exception as e:  # noqa: BLE001
                    if not is_safetile_error(e):
                        other.append(f"{type(e).__name__}: {e}")
                    await asyncio.sleep(0.001)

        async def main():
            import os
            await asyncio.gather(*[chain(i) for i in range(int(os.environ.get("COROS", "1")))])

        asyncio.run(main())

    def replays():
        for _ in range(REPS * 2):
            try:
                g.launch()
                bump()
            except Exception as e:  # noqa: BLE001
                if not is_safetile_error(e):
                    other.append(f"{type(e).__name__}: {e}")

    import os
    NL = int(os.environ.get("LOOPS", "4"))
    ths = [threading.Thread(target=loop_thread, args=(views[i],)) for i in range(NL)]
    if os.environ.get("REPLAY", "1") == "1":
        ths.append(threading.Thread(target=replays))
    for x in ths:
        x.daemon = True
    [x.start() for x in ths]
    import time
    deadline = time.time() + 15
    for x in ths:
        x.join(max(0.0, deadline - time.time()))
    if any(x.is_alive() for x in ths):
        broken(f"deadlock: {len(NL * [0])} threads awaiting then-chains (one event loop each) and one thread "
               f"replaying a graph over views of one buffer stopped for good after {count[0]} increments "
               "(stream workers wait in the registry's claim for a replay queued behind them)")
    if other:
        broken("non-safetile error: " + other[0][:200])
    g.close()
    a = views[4].to_numpy()
    if not np.all(a == count[0]):
        broken(f"lost updates: memory holds {np.unique(a)[:4]} after {count[0]} successful increments")
    return count[0]


def body():
    done = [trial() for _ in range(4)]    # the deadlock depends on timing: several rounds
    held(f"{done} increments from 4 event loops and a replaying thread, none lost")


run_guarded(body, "async loops lost updates")

"""306 with a real Ctrl-C: 301b's fuzz over graph capture, replay and close, and `asyncio.run` of an
awaited chain. Promise (safety.md G4, "Ctrl-C"): wherever a Ctrl-C lands, the interrupted call fails
with KeyboardInterrupt (nothing else), nothing hangs, and once everything but a view `v` is dropped
the memory is free again (readable, partitionable, launchable, shareable). With safetile's handler
installed, asyncio.run keeps Python's handler as it finds it (safetile's), so a Ctrl-C inside it
raises KeyboardInterrupt where the event loop is; asyncio.run then cancels the awaiting task.

Fuzz: SIGINT to the main thread (signal.pthread_kill) from a timer thread at a random moment."""
import asyncio
import gc
import random
import time

from _ctrl_c import *
from _ctrl_c import assert_handler_is_safetiles, interrupted, late_is_broken


async def chain(p, xs):
    return await fill(p, xs).then(lambda r: fill(r[0], r[1]))


def life(t, xs):
    p = t.partition(256)
    g = fill(p, xs).graph()
    p, x = g.launch()
    g.launch()
    g.close()
    p, x = asyncio.run(chain(p, xs))
    t = p.unpartition()
    t.to_numpy()
    return t


def body():
    assert_handler_is_safetiles()
    rng = random.Random(int(os.environ.get("SEED", time.time_ns() % 100000)))
    xs = ct.ones(1024).sync().shared()
    life(ct.zeros(1024).sync(), xs)
    durs = []
    for _ in range(3):
        t0 = time.perf_counter()
        life(ct.zeros(1024).sync(), xs)
        durs.append(time.perf_counter() - t0)
    dur = min(durs)
    hits, i, places = 0, 0, {}
    keep = []
    end = time.time() + 7
    while time.time() < end:
        i += 1
        t = ct.zeros(1024).sync()
        v = t[:]
        keep.append(v)
        try:
            _, err, (where, _) = interrupted(lambda: life(t, xs), rng.uniform(0, dur * 1.1))
        except Exception as e:  # noqa: BLE001
            broken(f"an interrupted life cycle failed with {type(e).__name__} (not KeyboardInterrupt): {str(e)[:200]}")
        if err is not None:
            hits += 1
            LAST[0] = where
            k = where.split(" at ")[-1]
            places[k] = places.get(k, 0) + 1
        del t, err
        gc.collect()
        time.sleep(0.02)  # an abandoned await's job ends on its stream worker
        gc.collect()
        r = check_free(v, xs, where or "(none landed)")
        if r:
            broken(f"{r} [{hits} interrupts in {i} life cycles]")
    if os.environ.get("SHOW"):
        print(sorted(places.items(), key=lambda kv: -kv[1]))
    held(f"{hits} Ctrl-C at random points in {i} graph/async life cycles ({len(places)} distinct landing lines), "
         "memory always free afterwards, no hang, no other error")


watch_main_thread(18)
run_guarded(late_is_broken(body), "Ctrl-C anywhere (graphs, asyncio)")

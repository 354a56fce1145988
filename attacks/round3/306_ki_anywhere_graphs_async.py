"""Same fuzz as 301, over graphs and asyncio (capture, replay, close, await of a chain).
Promise (safety.md G4): 'an unrun operation does not keep its arguments forever'; 'Claims
end when their holder gives the memory back or is collected' (G6); the in-flight registry
holds 'one entry per running terminal, replay and host access' (G5) — and round 2's fix
'Interrupted waiters': a KeyboardInterrupt in sync()/sync_on()/g.launch() leaves nothing lent.

A KeyboardInterrupt can arrive at any bytecode, not only while a terminal waits. Fuzz: a
SIGALRM handler raises KeyboardInterrupt at a random moment during the ordinary life cycle
(partition -> launch.sync -> unpartition -> shared -> to_numpy -> try_unwrap -> borrow_mut),
then (when the interrupt landed in safetile's own code) drop everything but a view `v` taken at the start, collect, and check that the memory
is free again: v.to_numpy() returns (no leaked registry entry), v can be partitioned,
launched and shared (no leaked claim or lend), and no non-KeyboardInterrupt error escaped."""
import gc
import random
import signal
import time

from _r3 import *


async def chain(p, xs):
    return await fill(p, xs).then(lambda r: fill(r[0], r[1]))


def life(t, xs):
    import asyncio
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
    rng = random.Random(1)
    xs = ct.ones(1024).sync().shared()
    signal.signal(signal.SIGALRM, handler)
    # calibrate
    life(ct.zeros(1024).sync(), xs)
    t0 = time.perf_counter()
    life(ct.zeros(1024).sync(), xs)
    dur = time.perf_counter() - t0
    hits = 0
    keep = []
    fails = {}
    end = time.time() + 7
    i = 0
    while time.time() < end:
        i += 1
        t = ct.zeros(1024).sync()
        v = t[:]
        keep.append(v)   # memory never reused: a leak cannot spill into a later iteration
        where = "?"
        in_lib = True
        try:
            signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.00002, dur))
            try:
                life(t, xs)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except Boom as e:
            where, in_lib = landing(e)
            hits += 1
            LAST[0] = where
        except Exception as e:  # noqa: BLE001
            fails.setdefault(type(e).__name__ + "fresh", f"a FRESH tensor's life cycle (no interrupt in it) failed: "
                             f"{type(e).__name__}: {str(e)[:170]} (a claim leaked by an earlier interrupt outlived its "
                             f"memory and now covers a new allocation)")
            continue
        del t
        try:
            del e
        except NameError:
            pass
        gc.collect()
        time.sleep(0.05)
        gc.collect()
        if not in_lib:
            continue   # landed in asyncio's or Python's own bookkeeping: not safetile's to clean up
        r = check_free(v, xs, where)
        if r:
            fails.setdefault(r.split(" after")[0][:40] + where, r)
            if len(fails) >= 1:
                break
    if fails:
        broken(f"{len(fails)} distinct leaks in {hits} interrupts: " + " || ".join(fails.values()))
    held(f"{hits} interrupts at random points in {i} life cycles, memory always free afterwards")


watch_main_thread()
run_guarded(body, "KeyboardInterrupt anywhere")

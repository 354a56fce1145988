"""301 with a real Ctrl-C. Promise (safety.md G4, "Ctrl-C"): a Ctrl-C is held back while safetile
changes shared state and raised right after, at once in waits and kernel bodies; so wherever it
lands in an ordinary life cycle (partition -> launch.sync -> unpartition -> shared -> to_numpy ->
try_unwrap -> borrow_mut), the interrupted call fails with KeyboardInterrupt (nothing else), the
interrupt arrives within milliseconds, nothing hangs, and once everything but a view `v` taken at
the start is dropped, the memory is free: v.to_numpy() returns, v can be partitioned, launched,
shared and unwrapped, and later life cycles on fresh memory run.

Fuzz: SIGINT to the main thread (signal.pthread_kill, as a terminal's Ctrl-C) from a timer thread
at a random moment of the life cycle; Python's handler after `import safetile` (safetile's)."""
import gc
import random
import time

from _ctrl_c import *
from _ctrl_c import assert_handler_is_safetiles, interrupted, late_is_broken


def life(t, xs):
    p = t.partition(256)
    z, x = fill(p, xs).sync()
    t = z.unpartition()
    s = t.shared()
    s.to_numpy()
    t = s.try_unwrap()
    with ct.borrow_mut(t) as b:
        q = b.partition(256)
        q, x = fill(q, xs).sync()
    t.to_numpy()
    return t


def body():
    assert_handler_is_safetiles()
    rng = random.Random(int(os.environ.get("SEED", time.time_ns() % 100000)))
    xs = ct.ones(1024).sync().shared()
    life(ct.zeros(1024).sync(), xs)
    durs = []
    for _ in range(5):
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
        keep.append(v)  # memory never reused: a leak cannot spill into a later iteration
        try:
            _, err, (where, _) = interrupted(lambda: life(t, xs), rng.uniform(0, dur * 1.1))
        except Exception as e:  # noqa: BLE001
            broken(f"an interrupted life cycle failed with {type(e).__name__} (not KeyboardInterrupt): {str(e)[:200]}")
        if err is not None:
            hits += 1
            LAST[0] = where
            places[where.split(" at ")[-1]] = places.get(where.split(" at ")[-1], 0) + 1
        del t, err
        gc.collect()
        r = check_free(v, xs, where or "(none landed)")
        if r:
            broken(f"{r} [{hits} interrupts in {i} life cycles]")
    if os.environ.get("SHOW"):
        print(sorted(places.items(), key=lambda kv: -kv[1]))
    held(f"{hits} Ctrl-C at random points in {i} life cycles ({len(places)} distinct landing lines), "
         "memory always free afterwards, no hang, no other error")


watch_main_thread(18)
run_guarded(late_is_broken(body), "Ctrl-C anywhere")

"""Real Ctrl-C for the 30Xb fuzzers: SIGINT sent to the main thread at a random moment, handled by
whatever handler Python has after `import safetile` (safetile's: nothing here installs one).

`interrupted(fn, delay)` runs fn() with a SIGINT due `delay` seconds in, and returns
(result or None, the KeyboardInterrupt or None, where it landed). A deferred interrupt must
arrive within a few milliseconds after fn's critical section: `fn` is followed by a short
sleep inside the same try, and an interrupt arriving later than that is a finding (LATE)."""
import gc
import os
import random
import signal
import threading
import time

from _r3 import *  # noqa: F401,F403
from _r3 import landing

MAIN = threading.main_thread().ident
SETTLE = 0.02  # s after fn() for a held-back interrupt to arrive


SENT = [0.0]  # perf_counter() when the last SIGINT was sent
CAUGHT = [0.0]  # ... and when its KeyboardInterrupt was caught


def send_after(delay, stop):
    def fire():
        if not stop.wait(delay):
            SENT[0] = time.perf_counter()
            signal.pthread_kill(MAIN, signal.SIGINT)
    th = threading.Thread(target=fire, daemon=True)
    th.start()
    return th


def interrupted(fn, delay):
    """(value, KeyboardInterrupt or None, (where, in safetile)) of fn() with a Ctrl-C `delay` s in."""
    stop = threading.Event()
    value = err = None
    where = ("", False)
    try:
        th = send_after(delay, stop)
        try:
            value = fn()
        except KeyboardInterrupt:
            CAUGHT[0] = time.perf_counter()
            raise
        finally:
            stop.set()
            th.join()
            time.sleep(SETTLE)  # a held-back interrupt arrives here at the latest
    except KeyboardInterrupt as e:
        if CAUGHT[0] < SENT[0]:  # raised after fn() returned (held back to its end)
            CAUGHT[0] = time.perf_counter()
        err = e
        where = landing(e)
    return value, err, where


def assert_handler_is_safetiles():
    h = signal.getsignal(signal.SIGINT)
    if getattr(h, "__self__", None).__class__.__name__ != "InterruptGate":
        inconclusive(f"SIGINT's handler is {h!r}, not safetile's")


def calm(seconds=0.05):
    """Time for a late interrupt to show up outside any fuzzed call (caught by the caller's check)."""
    time.sleep(seconds)


def late_is_broken(fn):
    """fn, with a KeyboardInterrupt escaping it (one arriving after its call's settle time) a finding."""
    def run():
        try:
            fn()
        except KeyboardInterrupt as e:
            now = time.perf_counter()
            what = ("a second one for a Ctrl-C already delivered" if CAUGHT[0] >= SENT[0] else
                    f"{(now - SENT[0]) * 1e3:.0f} ms after its SIGINT was sent")
            broken(f"a KeyboardInterrupt arrived late, outside the interrupted call ({what}; {landing(e)[0]})")
    return run


def fuzz_lives(life, what: str, warm: int = 3, after_gc: float = 0.0, seconds: float = 7.0) -> None:
    """The 30Xb fuzz: ``life(t, xs)`` on fresh memory again and again for ``seconds``, each with a
    Ctrl-C due at a random moment of it; after each, everything but a view is dropped and the memory
    must be free (check_free). ``after_gc``: a pause between two collections (work abandoned on a
    stream worker ends there). Reports BROKEN or HELD."""
    assert_handler_is_safetiles()
    rng = random.Random(int(os.environ.get("SEED", time.time_ns() % 100000)))
    xs = ct.ones(1024).sync().shared()
    life(ct.zeros(1024).sync(), xs)
    durs = []
    for _ in range(warm):
        t0 = time.perf_counter()
        life(ct.zeros(1024).sync(), xs)
        durs.append(time.perf_counter() - t0)
    dur = min(durs)
    hits, i, places = 0, 0, {}
    keep = []
    end = time.time() + seconds
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
            k = where.split(" at ")[-1]
            places[k] = places.get(k, 0) + 1
        del t, err
        gc.collect()
        if after_gc:
            time.sleep(after_gc)
            gc.collect()
        r = check_free(v, xs, where or "(none landed)")
        if r:
            broken(f"{r} [{hits} interrupts in {i} life cycles]")
    if os.environ.get("SHOW"):
        print(sorted(places.items(), key=lambda kv: -kv[1]))
    held(f"{hits} Ctrl-C at random points in {i} {what} ({len(places)} distinct landing lines), "
         "memory always free afterwards, no hang, no other error")

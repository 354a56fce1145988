"""Real Ctrl-C for the 30Xb fuzzers: SIGINT sent to the main thread at a random moment, handled by
whatever handler Python has after `import safetile` (safetile's: nothing here installs one).

`interrupted(fn, delay)` runs fn() with a SIGINT due `delay` seconds in, and returns
(result or None, the KeyboardInterrupt or None, where it landed). A deferred interrupt must
arrive within a few milliseconds after fn's critical section: `fn` is followed by a short
sleep inside the same try, and an interrupt arriving later than that is a finding (LATE)."""
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

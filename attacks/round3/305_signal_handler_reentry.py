"""Promise (safety.md G6): 'While a Shared handle lives, nothing writes its memory' /
'a view taken before .shared() cannot be partitioned'; G4: checking and moving is 'one step
under one lock'; G9: 'Any host thread may launch, sync or read at any time'.

Python runs signal handlers on the main thread between any two bytecodes, also inside
safetile's own critical sections (the claims lock is re-entrant). A SIGALRM handler that
shares a view of the memory (`v.shared()`) while the main thread is inside
`t.partition(64)` / a launch can end with a live Shared *and* a writable partition of the
same bytes: a launch then writes the Shared. (A handler firing inside the facts interning
deadlocks instead; the handler skips those moments, see 304.) Fuzz: random timer, handler shares `v`; after
each cycle, if a Shared was made, it must be unchanged by the launch that follows."""
import random
import signal
import time
import warnings

from _r3 import *


def body():
    warnings.simplefilter("ignore")
    xs = ct.ones(256).sync().shared()
    rng = random.Random(3)
    state = {}

    def handler(signum, frame):
        v = state.get("v")
        if v is None:
            return
        f = frame
        names = []
        while f:
            names.append(f.f_code.co_name)
            f = f.f_back
        if "intern" in names:
            return   # sharing from inside safetile's facts interning deadlocks the thread (see 304)
        try:
            state["s"] = (v.shared(), " > ".join(reversed(names[:6])))
        except Exception:  # noqa: BLE001
            pass

    signal.signal(signal.SIGALRM, handler)
    t = ct.zeros(256).sync()
    fill(t.partition(64), xs).sync()
    t0 = time.perf_counter()
    for _ in range(5):
        ct.zeros(256).sync().partition(64)
    dur = (time.perf_counter() - t0) / 5
    end = time.time() + 12
    n = 0
    while time.time() < end:
        n += 1
        t = ct.zeros(256).sync()
        state.clear()
        state["v"] = t[:]
        signal.setitimer(signal.ITIMER_REAL, rng.uniform(0, dur * 1.2))
        try:
            p = t.partition(64)
        except Exception:  # noqa: BLE001
            p = None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            state.pop("v", None)
        if p is None or "s" not in state:
            continue
        s, where = state["s"]
        before = s.to_numpy().copy()
        try:
            fill(p, xs).sync()
        except Exception:  # noqa: BLE001
            continue
        if not np.array_equal(before, s.to_numpy()):
            broken(f"cycle {n}: a signal handler ran v.shared() inside {where}; t.partition() was still granted "
                   f"and fill() on it wrote the live Shared ({before[:2]} -> {s.to_numpy()[:2]})")
    held(f"{n} cycles: no Shared made by a signal handler was written")


run_guarded(body, "signal handler re-entry")

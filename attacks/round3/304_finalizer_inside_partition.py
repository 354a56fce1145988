"""Promise (safety.md G6): 'While a Shared handle lives, nothing writes its memory'; 'A new
claim overlapping a live claim of the other kind is refused with an AliasError ..., so a view
taken before .shared() cannot be partitioned'. G4: 'Every ownership transition — checking
that a value is usable and moving it — is one step under one lock'. G9: any host thread may
launch at any time (claims: 'a finalizer ... may run inside any allocation, also under it').

A garbage collection can run a user finalizer (weakref.finalize, __del__) in the middle of
`t.partition(64)`. If that finalizer makes a Shared of a view of the same memory
(`v.shared()`), the partition that was being made is still granted: a writable partition and
a live Shared of the same bytes coexist, and a launch on the partition writes the Shared.
(The collection is steered with gc.set_threshold; a finalizer that instead calls
`t.partition()` re-entrantly, during `t.partition()`, deadlocks the thread: reported too.)"""
import gc
import sys
import weakref
import warnings

from _r3 import *


class Bait:
    pass


def attempt(N, xs, found, skip):
    t = ct.zeros(256).sync()
    v = t[:]
    stolen = []

    def cb():
        f = sys._getframe(1)
        names = []
        while f:
            names.append(f.f_code.co_name)
            f = f.f_back
        if skip & set(names):
            return
        try:
            stolen.append((v.shared(), " > ".join(reversed(names[:6]))))
        except Exception:  # noqa: BLE001
            pass

    gc.collect()
    gc.disable()
    b = Bait()
    b.self = b
    weakref.finalize(b, cb)
    del b
    gc.set_threshold(gc.get_count()[0] + N, 1000, 1000)
    gc.enable()
    try:
        p = t.partition(64)
    except Exception:  # noqa: BLE001
        return
    finally:
        gc.set_threshold(700, 10, 10)
    if not stolen:
        return
    s, where = stolen[0]
    before = s.to_numpy().copy()
    try:
        p, _ = fill(p, xs).sync()
    except Exception:  # noqa: BLE001
        return
    after = s.to_numpy()
    if not np.array_equal(before, after):
        found.append(f"N={N}: finalizer ran v.shared() inside {where}; the partition was still granted and "
                     f"fill() on it changed the live Shared from {before[:2]} to {after[:2]}")


def body():
    warnings.simplefilter("ignore")
    xs = ct.ones(256).sync().shared()
    found = []
    for N in range(1, 120):
        attempt(N, xs, found, {"intern"})
        if found:
            break
    # the re-entrant deadlock: a finalizer calling t.partition() inside t.partition()
    hung = []

    def dead():
        for N in range(1, 80):
            t = ct.zeros(256).sync()

            def cb(t=t):
                try:
                    t.partition(64)
                except Exception:  # noqa: BLE001
                    pass
            gc.collect()
            gc.disable()
            b = Bait()
            b.self = b
            weakref.finalize(b, cb)
            del b
            gc.set_threshold(gc.get_count()[0] + N, 1000, 1000)
            gc.enable()
            try:
                t.partition(64)
            except Exception:  # noqa: BLE001
                pass
            finally:
                gc.set_threshold(700, 10, 10)
        hung.append(False)
    th = threading.Thread(target=dead, daemon=True)
    th.start()
    th.join(6)
    if th.is_alive():
        found.append("a finalizer calling t.partition() while t.partition() runs deadlocks the thread (instead of one of them being refused)")
    if found:
        broken("; ".join(found))
    held("finalizers running inside partition() cannot make a Shared beside the new partition")


run_guarded(body, "finalizer inside partition")

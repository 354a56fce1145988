"""semantics.md ("A place read twice in one compile that gave two values (changed mid-compile ... by
another thread) makes that compiled code mix the two: it runs for the launch that compiled it ... and
is never reused (the next launch compiles again)"), G9; round-6 attack 628's racy form. 24 fresh entry
kernels each read the global SCALE twice (a + b); a thread flips SCALE between 1.0 and 2.0 while the
main thread launches each kernel once; after the flipper stops with SCALE = 1.0, every kernel launched
again must compute 11.0 (1 + 10), whatever mixed code an earlier launch compiled. Both paths."""
from _r7 import *
import time

SCALE = 1.0


def make():
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"]):
        a = ct.full((B,), 1.0, ct.float32) * SCALE
        b = ct.full((B,), 10.0, ct.float32) * SCALE
        z.store(a + b)
    return k


def scenario():
    global SCALE
    ks = [make() for _ in range(24)]
    stop = threading.Event()

    def flip():
        global SCALE
        i = 0
        while not stop.is_set():
            SCALE = 2.0 if i % 2 else 1.0
            i += 1
            time.sleep(0.00005)
    th = threading.Thread(target=flip, daemon=True)
    th.start()
    first = []
    for k in ks:
        p = ct.zeros(16).sync().partition(16)
        (p,) = k(p).sync()
        first.append(float(p.unpartition().to_numpy()[0]))
    stop.set()
    th.join(5)
    SCALE = 1.0
    after = []
    for k in ks:
        p = ct.zeros(16).sync().partition(16)
        (p,) = k(p).sync()
        after.append(float(p.unpartition().to_numpy()[0]))
    return {"first values seen": sorted(set(first)), "after settling": sorted(set(after))}


def judge(c, py):
    for name, o in (("C", c), ("Python", py)):
        if o["after settling"] != [11.0]:
            return "BROKEN", f"{name} path: after SCALE settled at 1.0 kernels compute {o['after settling']}"
    return "HELD", f"first launches saw {c['first values seen']}; after settling all compute 11.0"


differential(scenario, judge, ignore=("first values seen",))

"""Promise (safe.md): "Leaving the block always ends the borrow ...: it waits for launches still
running on the partition ..., and cancels launches built in the block that never ran ...: they can
never write `t` afterwards"; safety.md G6: "While a `Shared` handle lives, nothing writes its
memory"; G4: ownership holds across a launch.

Attack (found while writing 512): a second thread repeats `p, _ = inc(p, x).sync()` on the
borrowed partition while the main thread leaves `with ct.borrow_mut(t)`. A launch the thread
builds *while the exit runs* (after the exit looked for unrun launches, before it released the
partition) is neither cancelled nor waited for: the exit returns, `t` is usable again, and that
launch then runs and writes `t`. Here, right after the exit returns, `s = t.shared()` succeeds
(nothing claims the memory any more) and the late launch writes the Shared's memory: seen through
the NumPy array `t` wraps (raw) and through the safe API: when the thread waits a little between
building a launch and running it (here: once it sees the block being left), `s.to_numpy()` of the
live Shared reads 1.0 and, later, 2.0. 30 rounds, with the C twin on and off.

Minimal reproducer (inc: z = z + x; fails in nearly every run, C twin on or off):
    x = ct.from_dlpack(np.ones(256, np.float32)).shared(); t = ct.from_dlpack(np.zeros(256, np.float32))
    leaving = [False]
    def hammer(p):
        while True:
            op = inc(p, x)                  # may be built while the block is being left
            if leaving[0]: time.sleep(0.05)
            p, _ = op.sync()                # refused once released ... except the one built in the window
    with ct.borrow_mut(t) as b:
        th = threading.Thread(target=hammer, args=(b.partition(64),)); th.start(); time.sleep(0.002)
        leaving[0] = True
    s = t.shared(); a = s.to_numpy()[0]; th.join(); b = s.to_numpy()[0]
    assert a == b                           # fails: 1.0 then 2.0 — a launch wrote a live Shared
"""
from _r5 import *

import random
import threading
import time


def scenario(rec):
    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load() + ct.load_tile_like(x, z))
    N = 256
    x = ct.from_dlpack(np.ones(N, np.float32)).shared()
    rnd = random.Random(5)
    raw_changed, api_changed, shared_refused, rounds = 0, 0, 0, 30
    other = []
    for r in range(rounds):
        mem = np.zeros(N, np.float32)
        t = ct.from_dlpack(mem)
        box = {}
        started = threading.Event()
        leaving = [False]

        def hammer():
            p = box["p"]
            started.set()
            while True:
                try:
                    op = inc(p, x)
                    if leaving[0]:
                        time.sleep(0.05)
                    p, _ = op.sync()
                except BaseException as e:  # noqa: BLE001
                    if not is_safetile_error(e):
                        other.append(exc_str(e)[:200])
                    break
        with ct.borrow_mut(t) as b:
            box["p"] = b.partition(64)
            th = threading.Thread(target=hammer)
            th.start()
            started.wait()
            time.sleep(rnd.uniform(0.001, 0.005))
            leaving[0] = True
        # the borrow is over: t is ours; freeze it
        try:
            s = t.shared()
        except BaseException as e:  # noqa: BLE001
            shared_refused += 1
            if not is_safetile_error(e):
                other.append(exc_str(e)[:200])
            th.join()
            continue
        raw0 = mem.copy()
        a = s.to_numpy().copy()
        th.join()
        b = s.to_numpy().copy()
        raw_changed += not np.array_equal(raw0, mem)
        api_changed += not np.array_equal(a, b)
        s.try_unwrap()
    rec("rounds", rounds)
    rec("t.shared() refused right after the exit", shared_refused)
    rec("Shared memory written after .shared() returned (raw view)", raw_changed)
    rec("two s.to_numpy() of a live Shared differ", api_changed)
    rec("other", other[:2])


def check(log):
    d = dict(log)
    if "SCENARIO-RAISED" in d:
        return [d["SCENARIO-RAISED"][:300]]
    bad = []
    n = d["rounds"]
    if d["Shared memory written after .shared() returned (raw view)"] or d["two s.to_numpy() of a live Shared differ"]:
        bad.append(f"after leaving `with ct.borrow_mut(t)`, a launch built during the exit ran later: t.shared() "
                   f"succeeded and the Shared's memory was then written in "
                   f"{d['Shared memory written after .shared() returned (raw view)']}/{n} rounds (raw view); two "
                   f"s.to_numpy() of the live Shared differed in {d['two s.to_numpy() of a live Shared differ']}/{n}")
    if d["other"]:
        bad.append(f"non-safetile: {d['other']}")
    return bad


def main():
    problems, logs = each_mode(__file__, scenario, check, "borrow exit window")
    if problems:
        broken("; ".join(problems[:2]))
    held("borrow exit: no launch writes t after the exit returned (60 rounds, C twin on and off)")


run_guarded(main, "520")

"""G4 "a launch runs once" vs the borrow exit: a launch built inside `with ct.borrow_mut(t)` is raced by
thread A calling op.sync(), thread B calling op.cancel(), thread C building a *second* launch on the same
partition (refused: moved, or succeeding after the cancel gave it back) and syncing it, and thread D dropping
its only reference to a third op built on the partition after the cancel (LaunchDroppedWarning path), while
the owner leaves the block at a random moment.
Expect: t = POISON + (number of successful syncs) exactly; after the exit nothing writes t; at most one of
sync/cancel wins for the op; every loser gets a safetile error; no hang; t usable.
Run with the C fast path on and off."""
from _r10 import *
import random

both_ways()
native_loaded()
rnd = random.Random(os.getpid())
problems = []
stats = {"sync_ok": 0, "cancel_ok": 0, "both": 0, "c_ok": 0, "d_ok": 0}


def run(f, out, key):
    try:
        f()
        out[key] = "ok"
    except Exception as e:  # noqa
        out[key] = e
        if not st_err(e):
            problems.append(f"{key}: raw {err(e)}")


for r in range(40):
    t = poisoned(64)
    out = {}
    ops = {}
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        op = inc(p)
        go = threading.Barrier(5)

        def a():
            go.wait()
            time.sleep(rnd.uniform(0, 0.004))
            run(lambda: op.sync(), out, "A")

        def bb():
            go.wait()
            time.sleep(rnd.uniform(0, 0.004))
            run(lambda: op.cancel(), out, "B")

        def c():
            go.wait()
            for _ in range(20):
                try:
                    o2 = inc(p)
                except Exception as e:  # noqa
                    if not st_err(e):
                        problems.append(f"C build raw {err(e)}")
                    time.sleep(0.0003)
                    continue
                run(lambda: o2.sync(), out, "C")
                return

        def d():
            go.wait()
            for _ in range(20):
                try:
                    o3 = inc(p)
                except Exception as e:  # noqa
                    if not st_err(e):
                        problems.append(f"D build raw {err(e)}")
                    time.sleep(0.0003)
                    continue
                if rnd.random() < 0.5:
                    del o3            # dropped unrun: gives p back (warning)
                    gc.collect()
                    out["D"] = "dropped"
                else:
                    run(lambda: o3.sync(), out, "D")
                return
        ths = [threading.Thread(target=f, daemon=True) for f in (a, bb, c, d)]
        for th in ths:
            th.start()
        go.wait()
        time.sleep(rnd.uniform(0, 0.006))
    at_exit = t.to_numpy().copy()
    for th in ths:
        th.join(10)
    if any(th.is_alive() for th in ths):
        threads_dump()
        broke(f"round {r}: hang")
    time.sleep(0.01)
    fin = t.to_numpy()
    if not np.array_equal(at_exit, fin):
        broke(f"round {r}: t written after the exit: {at_exit[0]} -> {fin[0]} ({out})")
    n_ok = sum(1 for k in ("A", "C", "D") if out.get(k) == "ok")
    if fin[0] - POISON != n_ok or not (fin == fin[0]).all():
        broke(f"round {r}: t = POISON+{fin[0] - POISON} but {n_ok} syncs succeeded ({ {k: (v if v == 'ok' or v == 'dropped' else type(v).__name__) for k, v in out.items()} })")
    if out.get("A") == "ok" and out.get("B") == "ok":
        stats["both"] += 1
    stats["sync_ok"] += out.get("A") == "ok"
    stats["cancel_ok"] += out.get("B") == "ok"
    stats["c_ok"] += out.get("C") == "ok"
    stats["d_ok"] += out.get("D") == "ok"
    try:
        q = t.partition(16)
        q, = inc(q).sync()
        q.unpartition().shared()
    except Exception as e:  # noqa
        broke(f"round {r}: t unusable after: {err(e)}")
if stats["both"]:
    problems.append(f"{stats['both']} rounds where both sync and cancel of one op succeeded")
if problems:
    broke("; ".join(sorted(set(problems))[:4]))
held(f"native={NATIVE}: 40 rounds exact: {stats}")

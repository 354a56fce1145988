"""Promise (safe.md): op.shared() 'runs at most once however many consumers'; a launch runs
once. 8 threads drive one shared op and 8 threads sync one LaunchOp concurrently: the work
runs exactly once, the losers get safetile errors, nothing hangs."""
import threading

from _common import *

x = ct.rand(256, seed=1).sync()
bad = []
for rnd in range(10):
    calls = []
    sop = ct.zeros(256).inspect(lambda v: calls.append(1)).shared()
    bar = threading.Barrier(8)
    res = []

    def drive():
        bar.wait()
        try:
            res.append(sop.sync())
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                bad.append(f"shared: non-safetile {type(e).__name__}: {e}")
    ths = [threading.Thread(target=drive) for _ in range(8)]
    [t.start() for t in ths]
    [t.join(30) for t in ths]
    if any(t.is_alive() for t in ths):
        broken("shared op: hang")
    if len(calls) != 1:
        bad.append(f"round {rnd}: shared op body ran {len(calls)} times")
    op = fill(ct.zeros(256).sync().partition(64), x)
    runs = []
    bar2 = threading.Barrier(8)

    def sync_it():
        bar2.wait()
        try:
            runs.append(op.sync())
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                bad.append(f"launch: non-safetile {type(e).__name__}: {e}")
    ths = [threading.Thread(target=sync_it) for _ in range(8)]
    [t.start() for t in ths]
    [t.join(30) for t in ths]
    if any(t.is_alive() for t in ths):
        broken("launch sync: hang")
    if len(runs) != 1:
        bad.append(f"round {rnd}: one LaunchOp ran {len(runs)} times")
if bad:
    broken("; ".join(bad[:5]))
held("shared ops and launches run once under thread contention")

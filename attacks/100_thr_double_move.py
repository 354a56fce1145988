"""Promise (DESIGN): 'All of this holds with many host threads at once: registry updates,
moves and compiles are atomic'. 8 threads race to move one tensor (partition / shared /
borrow / launch build); exactly one may win each round."""
import threading

from _common import *

x = ct.rand(256, seed=1).sync()
bad = []
for rnd in range(40):
    t = ct.zeros(256).sync()
    wins = []
    bar = threading.Barrier(8)
    kind = rnd % 4

    def go(i):
        bar.wait()
        try:
            if kind == 0:
                wins.append(("partition", t.partition(64)))
            elif kind == 1:
                wins.append(("shared", t.shared()))
            elif kind == 2:
                wins.append(("borrow", ct.borrow_mut(t).partition(64)))
            else:
                wins.append(("mixed", t.partition(64) if i % 2 else t.shared()))
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                bad.append(f"non-safetile {type(e).__name__}: {e}")
    ths = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    [th.start() for th in ths]
    [th.join() for th in ths]
    if len(wins) != 1:
        bad.append(f"round {rnd} ({['partition','shared','borrow','mixed'][kind]}): {len(wins)} threads moved the same tensor")
# launch build race on one partition
for rnd in range(20):
    p = ct.zeros(256).sync().partition(64)
    ops = []
    bar = threading.Barrier(8)

    def build():
        bar.wait()
        try:
            ops.append(fill(p, x))
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                bad.append(f"build: non-safetile {type(e).__name__}")
    ths = [threading.Thread(target=build) for _ in range(8)]
    [th.start() for th in ths]
    [th.join() for th in ths]
    if len(ops) != 1:
        bad.append(f"launch round {rnd}: {len(ops)} launches built over one partition")
    for op in ops:
        op.cancel()
if bad:
    broken("; ".join(bad[:6]))
held("moves are atomic across threads")

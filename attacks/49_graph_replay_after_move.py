"""Promise (DESIGN): 'Using a host tensor after it was moved into a launch and before the
launch returned it: an error naming the launch, not silent garbage.' A graph replay is a
use of its captured arguments: after g.launch() hands back z, moving z into another launch
(unrun) or into a Shared/borrow, a replay must refuse rather than write that memory."""
from _common import *

x = ct.rand(256, seed=1).sync()
z = ct.zeros(256).sync().partition(64)
g = fill(z, x).graph()
z2, x2 = g.launch()
fails = []
# 1) z2 moved into an unrun launch
op = fill(z2, ct.zeros(256).sync())
try:
    g.launch()
    fails.append("replay ran while its output partition was moved into unrun launch 'fill' (wrote memory owned by that launch)")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"non-safetile {type(e).__name__}")
op.cancel()
# 2) z2's tensor mutably borrowed elsewhere
t = z2.unpartition()
with ct.borrow_mut(t) as b:
    p = b.partition(128)
    before = p.to_numpy().copy()
    try:
        g.launch()
        if not np.array_equal(p.to_numpy(), before):
            fails.append("replay wrote memory that is mutably borrowed by another partition")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"non-safetile {type(e).__name__}")
# 3) a graph captured inside a borrow_mut block outlives the borrow
t3 = ct.zeros(256).sync()
with ct.borrow_mut(t3) as b3:
    g3 = fill(b3.partition(64), x).graph()
p3 = t3.partition(64)                 # the borrow ended: t3 is ours again, re-partitioned
op3 = fill(p3, ct.zeros(256).sync())  # ... and moved into an unrun launch
before3 = t3 if False else None
try:
    g3.launch()
    fails.append("a graph captured on a borrowed partition replayed after the borrow ended, writing memory now owned by another (unrun) launch")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"borrow graph: non-safetile {type(e).__name__}")
op3.cancel()
g.close()
try:
    g.launch()
    fails.append("closed graph replayed")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"closed graph: non-safetile {type(e).__name__}")
if fails:
    broken("; ".join(fails))
held("replays refuse while their arguments are moved elsewhere")

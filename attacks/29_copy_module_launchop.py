"""Promise (help(LaunchOp), help(Graph.close)): 'cancel(): Give the arguments back without running (the op can
never run afterwards)'; safe.md: 'a launch runs once'. A copy.copy of a LaunchOp must not
run after the original ran or was cancelled (it would write arguments that were already
given back to their owner), in particular not into memory that has since become Shared. Same for a copy of a Graph after
g.close() ('Release the graph: it can no longer be replayed, and its memory may become Shared')."""
import copy

from _common import *

x = ct.rand(256, seed=1).sync()
fails = []
p = ct.zeros(256).sync().partition(64)
op = fill(p, x)
oc = copy.copy(op)
op.sync()
try:
    oc.sync()
    fails.append("copy of a LaunchOp ran after the original had run (a launch ran twice)")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"non-safetile {type(e).__name__}")
p2 = ct.zeros(256).sync().partition(64)
op = fill(p2, x)
oc = copy.copy(op)
op.cancel()
t = p2.unpartition()
s = t.shared()
before = snap(s)
try:
    oc.sync()
    if snap(s) != before:
        fails.append("copy of a cancelled LaunchOp ran and wrote into memory that is now Shared")
    else:
        fails.append("copy of a cancelled LaunchOp ran")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"non-safetile {type(e).__name__}")
# a copy of a Graph outlives g.close() ('its memory may become Shared' after close)
p3 = ct.zeros(256).sync().partition(64)
g = fill(p3, x).graph()
gcopy = copy.copy(g)
g.close()
s3 = p3.unpartition().shared()
b3 = snap(s3)
try:
    gcopy.launch()
    if snap(s3) != b3:
        fails.append("copy of a closed Graph replayed and wrote into memory that became Shared after g.close()")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"graph copy: non-safetile {type(e).__name__}")
if fails:
    broken("; ".join(fails))
held("LaunchOp copies cannot resurrect a launch")

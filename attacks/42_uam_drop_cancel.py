"""Promise (help(LaunchOp)): built -> cancelled ('cancel()', dropped unrun, or its borrow
ended); cancel gives the arguments back and the op can never run afterwards. A dropped
unrun op must give its arguments back untouched (and warn), not lose them."""
import gc
import warnings as w

from _common import *

x = ct.rand(256, seed=1).sync()
z = ct.zeros(256).sync().partition(64)
before = snap(z)
op = fill(z, x)
with w.catch_warnings(record=True) as rec:
    w.simplefilter("always")
    del op
    gc.collect()
try:
    after = snap(z)
except Exception as e:  # noqa: BLE001
    broken(f"argument lost after the op was dropped unrun: {type(e).__name__}: {e}")
if after != before:
    broken("dropped op wrote")
if not any(issubclass(r.category, ct.LaunchDroppedWarning) for r in rec):
    print("note: no LaunchDroppedWarning on drop")
op = fill(z, x)
got = op.cancel()
if snap(z) != before:
    broken("cancel wrote")
expect_refusal(lambda: op.sync(), None, [], "sync after cancel")
if snap(z) != before or z.is_moved:
    broken("sync after cancel touched z")
op2 = fill(z, x)
op2.sync()
expect_refusal(lambda: op2.cancel(), None, [], "cancel after run")
held("drop/cancel give args back; cancelled ops never run")

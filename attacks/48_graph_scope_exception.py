"""Promise: a rejected launch moves nothing; graph capture refuses allocating ops with
GraphCaptureError. An exception inside `with ct.graph_scope()` after recording a launch,
and a refused allocating op inside the scope, must leave the arguments usable."""
from _common import *

x = ct.rand(256, seed=1).sync()
z = ct.zeros(256).sync().partition(64)
fails = []
try:
    with ct.graph_scope() as s:
        z, x = s.record(fill(z, x))
        raise RuntimeError("user error inside scope")
except RuntimeError:
    pass
for nm, v in [("z", z), ("x", x)]:
    try:
        v.to_numpy()
    except Exception as e:  # noqa: BLE001
        fails.append(f"{nm} unusable after an exception in graph_scope: {type(e).__name__}: {str(e)[:120]}")
z2 = ct.zeros(256).sync().partition(64)
try:
    with ct.graph_scope() as s:
        s.record(ct.zeros(256))
    fails.append("allocating op recorded into a graph")
except Exception as e:  # noqa: BLE001
    if not isinstance(e, ct.GraphCaptureError):
        fails.append(f"allocating op in graph: {type(e).__name__} not GraphCaptureError: {e}")
for name, op in [("dup", lambda: x.dup()), ("to_host", lambda: x.to_host()), ("from_numpy", lambda: ct.from_numpy(np.zeros(4)))]:
    try:
        op().graph()
        fails.append(f"{name} captured into a graph")
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, ct.GraphCaptureError):
            fails.append(f"{name}: {type(e).__name__} not GraphCaptureError")
if fails:
    broken("; ".join(fails))
held("graph scopes leave args usable; allocations refused")

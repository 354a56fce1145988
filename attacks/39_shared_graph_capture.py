"""Promise (DESIGN): 'A Shared value has no mutable alias anywhere, before or after capture
into a graph'; Graph.close(): 'its memory may become Shared' (only then). After capturing a
launch that writes z, z's memory must not become Shared while the graph can replay, and a
Shared read by a graph must not be unwrapped into a writable tensor while the graph lives."""
from _common import *

x = ct.rand(256, seed=1).sync()
z = ct.zeros(256).sync().partition(64)
g = fill(z, x).graph()
z2, x2 = g.launch()
fails = []
try:
    t = z2.unpartition()
    try:
        s = t.shared()
        before = snap(s)
        g.launch()
        if snap(s) != before:
            fails.append("graph replay wrote into a Shared made from its output after capture")
        else:
            fails.append("output of a live graph became Shared")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"non-safetile {type(e).__name__}")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"unpartition: non-safetile {type(e).__name__}")
# Shared input captured by a graph, then unwrapped and written while the graph lives
s = ct.full(256, 1.0).sync().shared()
g2 = fill(ct.zeros(256).sync().partition(64), s).graph()
try:
    u = s.try_unwrap()
    fill(u.partition(64), x).sync()
    fails.append("a Shared captured by a live graph was unwrapped into a mutable tensor and written")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"try_unwrap: non-safetile {type(e).__name__}")
if fails:
    broken("; ".join(fails))
held("graph-held memory never a mutable alias of a Shared")

"""Promise (safe.md, Graphs): "refresh inputs with ct.memcpy(input_buffer, new_data).sync()
before g.launch()"; "A replay waits for conflicting unfinished work and registers itself in
the in-flight registry once, over the graph's distinct memory extents". G5: "no write touches
the memory it reads" while a replay runs.

Attack: the documented refresh pattern done from other threads while replays run. Thread R
replays g (a two-launch graph: y = x + 1, then z = y + 1, reading the input x at the
*start* and the output y in the second launch) in a loop and copies z out after each replay
(under the replay's own ordering: g.launch() returns, then z.to_numpy()). Threads W1/W2
refresh x with ct.memcpy(x, full(k)) (W1 with even k, W2 with odd) and also with a safe launch
on a partition of a view of x; thread V reads a view of the graph's *output* y while replays
write it. Every z must be a whole k + 2 (a replay saw one input version); every read of y a
whole k + 1; no deadlock. A second graph sharing the same input replays from a fourth thread.
"""
from _r4 import *

import threading
import time

SRC = '''
@ct.entry
def inc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)

@ct.entry
def setv(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    z.store(ct.full((B,), 1.0, ct.float32) * v)
'''
K = kernel_from_source(SRC, tag="r4_402")
N = 1 << 16
xbuf = ct.zeros(N).sync()
xviews = [xbuf[:], xbuf[:]]
x2 = xbuf[:]
ybuf = ct.zeros(N).sync()
yview = ybuf[:]
zbuf = ct.zeros(N).sync()
zview = zbuf[:]
w2buf = ct.zeros(N).sync()

with ct.graph_scope() as sc:
    yp, x = sc.record(K["inc"](ybuf.partition(1024), xbuf))
    zp, yt = sc.record(K["inc"](zbuf.partition(1024), yp.unpartition()))
g = sc.graph
g2 = K["inc"](w2buf.partition(1024), x2).graph()
bad = []
stop = time.perf_counter() + 6
counts = {"r": 0, "w": 0, "v": 0, "g2": 0}


def guard(f):
    def body(*a):
        try:
            f(*a)
        except Exception as e:  # noqa: BLE001
            bad.append(f"{f.__name__}: {type(e).__name__}: {str(e)[:160]}")
    return body


def replayer():
    while time.perf_counter() < stop and not bad:
        g.launch()
        z = zview.to_numpy()
        u = np.unique(z)
        if len(u) != 1:
            bad.append(f"replay output z torn: {u[:5]}")
        counts["r"] += 1


def writer(parity):
    k = parity
    xview = xviews[parity]
    while time.perf_counter() < stop and not bad:
        if k % 4 < 2:
            ct.memcpy(xview, ct.full(N, float(k)).sync()).sync()
        else:
            p, _ = K["setv"](xview.partition(1024), float(k)).sync()
            xview = p.unpartition()
        k += 2
        counts["w"] += 1


def viewer():
    while time.perf_counter() < stop and not bad:
        u = np.unique(yview.to_numpy())
        if len(u) != 1:
            bad.append(f"host read of the graph's y saw a replay half done: {u[:5]}")
        counts["v"] += 1


def other_graph():
    while time.perf_counter() < stop and not bad:
        g2.launch()
        counts["g2"] += 1


ths = [threading.Thread(target=guard(f), args=a, daemon=True) for f, a in
       [(replayer, ()), (writer, (0,)), (writer, (1,)), (viewer, ()), (other_graph, ())]]
for th in ths:
    th.start()
for th in ths:
    th.join(15)
if any(th.is_alive() for th in ths):
    broken(f"deadlock: threads still running after 15 s ({counts})")
if bad:
    broken("; ".join(bad[:3]) + f" ({counts})")
held(f"replays see whole input versions; reads see whole replays {counts}")

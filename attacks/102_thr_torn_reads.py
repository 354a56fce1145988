"""Promise (safe.md): 'Host reads never race a launch: a moved tensor raises; a view taken
before the move waits for the unfinished launch that writes that memory'. One thread
launches uniform writes (value k) through a partition; another reads a pre-move view in a
loop: every read must be uniform (never half-old/half-new)."""
import threading

from _common import *

N = 1 << 19


@ct.entry
def setv(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    acc = ct.full((B,), 0.0, ct.float32)
    for i in range(40):
        acc = acc * 0.0 + v
    z.store(acc)


t = ct.zeros(N).sync()
view = t[0:N]
p = t.partition(4096)
p, _ = setv(p, 0.0).sync()
stop = threading.Event()
bad = []


def writer():
    global p
    for k in range(1, 12):
        p, _ = setv(p, float(k)).sync()
    stop.set()


def reader():
    n = 0
    while not stop.is_set():
        a = view.to_numpy()
        u = np.unique(a)
        n += 1
        if len(u) != 1:
            bad.append(f"torn read #{n}: {len(u)} distinct values {u[:4]}")
            return


tw = threading.Thread(target=writer)
tr = threading.Thread(target=reader)
tr.start(); tw.start()
tw.join(60); tr.join(60)
if tw.is_alive() or tr.is_alive():
    broken("hang")
if bad:
    broken(bad[0])
held("reads of a pre-move view never torn")

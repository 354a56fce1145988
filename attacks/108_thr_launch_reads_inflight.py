"""Promise (safe.md): 'a launch on another stream that conflicts with an unfinished one
waits for it'. Thread A's slow launches write uniform values through a partition of t;
thread B's launches copy a pre-move view of t (as ct.Ref, and as a raw NumPy array over
the same memory) into their own output: every copy must be uniform (never a mix)."""
import threading

from _common import *

N = 1 << 18


@ct.entry
def setv(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    acc = ct.full((B,), 0.0, ct.float32)
    for i in range(60):
        acc = acc * 0.0 + v
    z.store(acc)


@ct.entry
def copy(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


host = np.zeros(N, np.float32)
t = ct.from_dlpack(host)
view = t[0:N]
p = t.partition(4096)
p, _ = setv(p, 0.0).sync()
out = ct.zeros(N).sync().partition(4096)
out, _ = copy(out, view).sync()
stop = threading.Event()
bad = []


def writer():
    global p
    for k in range(1, 10):
        p, _ = setv(p, float(k)).sync()
    stop.set()


def reader(src_name):
    global out
    while not stop.is_set():
        src = view if src_name == "view" else np.from_dlpack(view)
        try:
            out, _ = copy(out, src).sync()
        except Exception as e:  # noqa: BLE001
            bad.append(f"{src_name}: {type(e).__name__}: {str(e)[:80]}")
            return
        u = np.unique(out.to_numpy())
        if len(u) != 1:
            bad.append(f"copy of the {src_name} mixed values {u[:4]} (read while another launch wrote)")
            return


for src_name in ["view"]:
    stop.clear()
    tw = threading.Thread(target=writer)
    tr = threading.Thread(target=reader, args=(src_name,))
    tr.start(); tw.start()
    tw.join(90); tr.join(90)
    if tw.is_alive() or tr.is_alive():
        broken("hang")
if bad:
    broken("; ".join(bad))
held("launches reading a view wait for the in-flight writer")

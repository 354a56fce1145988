"""Promise (safe.md): try_unwrap gives the tensor back only 'once no launch holds the
handle'. Thread A repeatedly launches slow copies reading Shared s; thread B loops on
s.try_unwrap() and, when it succeeds, overwrites the memory. Every output of A must be
uniform (it read s entirely before or entirely after a write — never during)."""
import threading

from _common import *

N = 1 << 18


@ct.entry
def slowcopy(z: ct.Mut[ct.f32, "B"], s: ct.Ref[ct.f32, -1]):
    acc = ct.load_tile_like(s, z)
    for i in range(60):
        acc = acc * 1.0
    z.store(acc)


@ct.entry
def setv(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    z.store(ct.full((B,), 1.0, ct.float32) * v)


s = ct.zeros(N).sync().shared()
out = ct.zeros(N).sync().partition(4096)
out, s = slowcopy(out, s).sync()
bad = []
lock = threading.Lock()
state = {"s": s, "done": False}


def reader():
    global out
    for i in range(25):
        with lock:
            cur = state["s"]
        try:
            out, _ = slowcopy(out, cur).sync()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                bad.append(f"reader: {type(e).__name__}")
            continue
        u = np.unique(out.to_numpy())
        if len(u) != 1:
            bad.append(f"reader saw a Shared change mid-launch: {u[:4]}")
            break
    state["done"] = True


def writer():
    k = 1.0
    while not state["done"]:
        with lock:
            cur = state["s"]
        try:
            t = cur.try_unwrap()
        except Exception:  # noqa: BLE001
            continue
        p, _ = setv(t.partition(4096), k).sync()
        k += 1
        with lock:
            state["s"] = p.unpartition().shared()


tr, tw = threading.Thread(target=reader), threading.Thread(target=writer)
tr.start(); tw.start()
tr.join(90); tw.join(90)
if tr.is_alive() or tw.is_alive():
    broken("hang")
if bad:
    broken("; ".join(bad[:3]))
held("try_unwrap never overlaps a reading launch")

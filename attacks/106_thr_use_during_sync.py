"""Promise (safe.md): arguments belong to the running terminal until it ends; 'another
thread while a sync runs' gets UseAfterMoveError. While thread A syncs a slow launch on p
and x (Ref tensor) and s (Shared), thread B reads p, launches with p, unpartitions p, and
try_unwraps s: each must raise (not return data being written)."""
import threading
import time

from _common import *

N = 1 << 20


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], s: ct.Ref[ct.f32, -1]):
    acc = ct.load_tile_like(x, z)
    for i in range(150):
        acc = acc * 0.5 + ct.load_tile_like(s, z)
    z.store(acc)


p = ct.zeros(N).sync().partition(4096)
x = ct.ones(N).sync()
s = ct.ones(N).sync().shared()
p, x, s = slow(p, x, s).sync()
started = threading.Event()
bad = []


def a():
    global p, x, s
    op = slow(p, x, s).inspect(lambda v: None)
    started.set()
    p, x, s = op.sync()


ta = threading.Thread(target=a)
ta.start()
started.wait()
time.sleep(0.05)
for name, use in [("read p", lambda: p.to_numpy()), ("launch p", lambda: fill(p, ct.zeros(N).sync())),
                  ("unpartition p", lambda: p.unpartition()), ("try_unwrap s", lambda: s.try_unwrap()),
                  ("x.partition", lambda: x.partition(64))]:
    if not ta.is_alive():
        print("note: launch finished before probe", name)
        break
    try:
        r = use()
        bad.append(f"{name}: allowed while another thread's sync runs")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            bad.append(f"{name}: non-safetile {type(e).__name__}")
ta.join(60)
if ta.is_alive():
    broken("hang")
if bad:
    broken("; ".join(bad))
held("values in use by another thread's sync are unusable")

"""Promise (safe.md): 'A launch that passes these checks and then fails while running ... is
not a rejected launch ... the arguments are given back as usual'; (G9) any thread may
launch, sync or read at any time.

An asynchronous exception (PyThreadState_SetAsyncExc(KeyboardInterrupt)) is thrown into a
safetile stream worker thread while it executes a launch. The waiting sync must end (with
an error), the arguments must come back, a view of the memory must be readable and
writable by a new launch, and the stream must keep working."""
import ctypes
import threading
import time

from _r2 import *


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], v: ct.f32):
    acc = ct.load_tile_like(x, z)
    for i in range(4000):
        acc = acc * 0.5 + v
    z.store(acc)


def body():
    N = 1 << 18
    x = ct.zeros(N).sync()
    t = ct.zeros(N).sync()
    view = t[:]
    p = t.partition(4096)
    p, x, _ = slow(p, x, 1.0).sync()
    s = ct.Stream("cpu")
    s.submit(lambda: time.sleep(0.05))
    before = set(threading.enumerate())
    injected = []

    def inject():
        time.sleep(0.15)
        for th in threading.enumerate():
            if th.name.startswith("safetile-stream") and th.is_alive():
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(th.ident), ctypes.py_object(KeyboardInterrupt))
                injected.append(th.name)

    threading.Thread(target=inject, daemon=True).start()
    op = slow(p, x, 7.0)
    try:
        op.sync_on(s)
    except BaseException:  # noqa: BLE001
        pass
    if not injected:
        inconclusive("no stream worker found")
    problems = []
    for what, f in [("p.to_numpy()", lambda: p.to_numpy()), ("view.to_numpy()", lambda: view.to_numpy()),
                    ("stream reuse", lambda: ct.zeros(4).sync_on(s)),
                    ("launch on p", lambda: fill_bid(p, ct.zeros(4).sync()).sync())]:
        th_out = []
        th = threading.Thread(target=lambda: th_out.append(T(what, f)), daemon=True)
        th.start()
        th.join(10)
        if th.is_alive():
            problems.append(f"{what} hangs")
        elif isinstance(th_out[0], Exception):
            problems.append(f"{what}: {type(th_out[0]).__name__}: {str(th_out[0])[:90]}")
    if problems:
        broken("after an async exception in a stream worker: " + "; ".join(problems))
    held("an exception inside a stream worker fails the launch and gives everything back")


run_guarded(body, "async exc in stream worker")

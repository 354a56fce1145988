"""Promise (safe.md): 'Leaving the block always ends the borrow, also by an exception: it
waits for launches still running on the partition'; (safety.md G4) 'Leaving
`with ct.borrow_mut(t)` always ends the borrow'.

A launch on the borrowed partition runs in another thread; the main thread leaves the
`with` block and, while the exit waits for that launch, a SIGINT (KeyboardInterrupt)
arrives. Once the launch has finished, t must be usable again (the borrow ended)."""
import signal
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
    with ct.borrow_mut(t) as b:
        p = b.partition(4096)
        p, x, _ = slow(p, x, 1.0).sync()
        p.release()
    res = []
    main = threading.main_thread().ident
    try:
        with ct.borrow_mut(t) as b:
            p = b.partition(4096)
            op = slow(p, x, 7.0)
            th = threading.Thread(target=lambda: res.append(op.sync()), daemon=True)
            th.start()
            time.sleep(0.05)
            threading.Timer(0.1, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
        inconclusive("interrupt missed (the launch finished before the exit wait)")
    except KeyboardInterrupt:
        pass
    th.join(15)
    if not res:
        inconclusive("the launch did not finish")
    try:
        a = t.to_numpy()
    except Exception as e:  # noqa: BLE001
        broken(f"after a KeyboardInterrupt during the borrow block's exit wait, t is still borrowed once the "
               f"launch finished: {type(e).__name__}: {str(e)[:120]}")
    held(f"borrow ended ({np.unique(a)[:2]})")


run_guarded(body, "ki borrow exit")

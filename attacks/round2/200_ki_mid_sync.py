"""Promise (safety.md G4): 'an unrun operation does not keep its arguments forever' and
(safe.md) 'the terminal's result hands them back for good'; (G9) 'Any host thread may
launch, sync or read at any time'.

A KeyboardInterrupt (a real SIGINT to the main thread) arrives while `op.sync_on(s)` waits
for its launch queued behind earlier work on the stream. The interrupted terminal never
returns a result. Once the stream has drained, the arguments must be usable again (or
recoverable through op.cancel()/the op), and a view taken before the partition must be
readable (no in-flight registry entry left behind)."""
import signal
import threading
import time

from _r2 import *


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], v: ct.f32):
    acc = ct.load_tile_like(x, z)
    for i in range(400):
        acc = acc * 0.5 + v
    z.store(acc)


def body():
    N = 1 << 18
    x = ct.zeros(N).sync()
    t = ct.zeros(N).sync()
    view = t[0:16]                      # another object over the same memory
    p = t.partition(4096)
    p, x, _ = slow(p, x, 1.0).sync()
    s = ct.Stream("cpu")
    s.submit(lambda: time.sleep(0.4))   # the launch queues behind this
    main = threading.main_thread().ident
    threading.Timer(0.15, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
    op = slow(p, x, 7.0)
    try:
        op.sync_on(s)
        inconclusive("the interrupt did not arrive during sync_on")
    except KeyboardInterrupt:
        pass
    s.synchronize()
    time.sleep(0.2)
    # recover in every documented way
    errs = []
    for what, f in [("p.to_numpy()", lambda: p.to_numpy()), ("op.cancel()", lambda: op.cancel()),
                    ("op.sync()", lambda: op.sync())]:
        try:
            f()
            break
        except Exception as e:  # noqa: BLE001
            errs.append(f"{what}: {type(e).__name__}: {str(e)[:110]}")
    else:
        out = []
        th = threading.Thread(target=lambda: out.append(view.to_numpy()), daemon=True)
        th.start()
        th.join(5)
        extra = "; a view taken before the partition also blocks forever" if th.is_alive() else ""
        broken("after a KeyboardInterrupt in sync_on, the launch ran on the stream but its "
               "arguments stay lent to the dead terminal forever: " + " | ".join(errs) + extra)
    held("arguments recoverable after an interrupted sync")


run_guarded(body, "ki mid sync")

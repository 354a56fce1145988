"""Promise (help(Graph.launch)): the replay 'claims its memory in the in-flight registry
(CPU and GPU alike): conflicting launches, replays and host reads wait for it'; (safe.md)
'a graph replay (CPU or GPU) is registered for its whole duration'.

A SIGINT (KeyboardInterrupt) reaches the main thread while g.launch() waits for a replay
running on the graph's stream (queued behind earlier work). A launch on a view of the
memory the replay writes must then wait for the replay (last write wins); the graph must
stay usable (or closable) and its values recoverable."""
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
    view = t[:]
    s = ct.Stream("cpu")
    g = slow(t.partition(4096), x, 7.0).graph_on(s)
    s.submit(lambda: time.sleep(0.05))
    main = threading.main_thread().ident
    threading.Timer(0.2, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
    t0 = time.perf_counter()
    try:
        g.launch()
        inconclusive("interrupt missed")
    except KeyboardInterrupt:
        pass
    problems = []
    q, _ = fill_bid(view.partition(4096), ct.zeros(8).sync()).sync()   # block b writes b + 1
    t_second = time.perf_counter()
    s.synchronize()
    t_end = time.perf_counter()
    final = q.unpartition().to_numpy()
    want = np.repeat(np.arange(1, 65, dtype=np.float32), 4096)
    if not np.array_equal(final, want):
        problems.append(f"write-write race: a launch on a view finished {t_end - t_second:.3f}s before "
                        f"the interrupted replay, which then overwrote it (final {np.unique(final)[:3]})")
    try:
        g.launch()
    except Exception as e:  # noqa: BLE001
        try:
            g.close()
        except Exception as e2:  # noqa: BLE001
            problems.append(f"graph unusable and unclosable after the interrupt: {type(e).__name__}: "
                            f"{str(e)[:80]} / close: {type(e2).__name__}: {str(e2)[:80]}")
    if problems:
        broken("; ".join(problems))
    held("interrupted replay stays registered; graph usable")


run_guarded(body, "ki mid replay")

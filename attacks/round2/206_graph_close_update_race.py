"""Promise (Graph.close docstring): 'it can no longer be replayed, its memory may become
Shared ... (waits for a replay running in another thread)'; (Graph.update) 'what the old
capture held is released'; (safety.md G6) 'While a Shared handle lives, nothing writes its
memory'.

Thread A replays a graph (z += 1 over a partition) in a loop. Thread B closes it (or
re-captures it with update() onto other memory) and at once unpartitions the old output
and makes it Shared. After that moment the Shared's bytes must never change, and no replay
of the old capture may end after close()/update() returned."""
import threading
import time

from _r2 import *


@ct.entry
def step(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    acc = z.load()
    for i in range(60):
        acc = acc * 1.0
    z.store(acc + v)


def trial(mode):
    z = ct.zeros(1 << 16).sync().partition(1024)
    g = step(z, 1.0).graph()
    ends, stop, other = [], [], []

    def replays():
        while not stop:
            try:
                g.launch()
                ends.append(time.perf_counter())
            except Exception as e:  # noqa: BLE001
                if not is_safetile_error(e):
                    other.append(f"{type(e).__name__}: {e}")
                if mode == "close":
                    return
                time.sleep(0.001)

    th = threading.Thread(target=replays)
    th.start()
    time.sleep(0.05)
    if mode == "close":
        g.close()
    else:
        z_new = ct.zeros(1 << 16).sync().partition(1024)
        g.update(step(z_new, 5.0))
    t_done = time.perf_counter()
    # now the old output is ours to freeze
    try:
        s = z.unpartition().shared()
    except Exception as e:  # noqa: BLE001
        stop.append(1)
        th.join(10)
        return f"{mode}: old output not freezable after {mode}(): {type(e).__name__}: {str(e)[:100]}"
    a0 = s.to_numpy().copy()
    changed = None
    for _ in range(40):
        a = s.to_numpy()
        if not np.array_equal(a, a0):
            changed = (np.unique(a0)[:3], np.unique(a)[:3])
            break
        time.sleep(0.002)
    stop.append(1)
    th.join(10)
    if other:
        return f"{mode}: non-safetile error {other[0][:120]}"
    late = [e for e in ends if e > t_done]
    if changed:
        return f"{mode}: a Shared's bytes changed from {changed[0]} to {changed[1]} (replay after {mode}())"
    if mode == "close" and late:
        return f"close: {len(late)} replay(s) ended after close() returned"
    return None


def body():
    problems = []
    for mode in ("close", "update"):
        for _ in range(3):
            r = trial(mode)
            if r:
                problems.append(r)
                break
    if problems:
        broken("; ".join(problems))
    held("close/update wait for running replays; the freed output stays frozen")


run_guarded(body, "graph close/update race")

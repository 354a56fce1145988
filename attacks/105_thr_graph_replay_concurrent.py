"""Promise (help(Graph.launch)): 'The replay claims its memory in the in-flight registry for
its whole duration: conflicting launches, replays and host reads wait for it'. Replays of
one graph from 4 threads at once must serialize: z = z*0.5 + 1 applied exactly
4*reps times (a lost update would leave a different fixed-point distance)."""
import threading

from _common import *


@ct.entry
def step(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    z.store(z.load() + v)


z = ct.zeros(4096).sync().partition(256)
g = step(z, 1.0).graph()
bad = []
REPS = 10


def replay():
    for _ in range(REPS):
        try:
            g.launch()
        except Exception as e:  # noqa: BLE001
            bad.append(f"{type(e).__name__}: {str(e)[:120]}")
            return


ths = [threading.Thread(target=replay) for _ in range(4)]
[t.start() for t in ths]
[t.join(60) for t in ths]
if any(t.is_alive() for t in ths):
    broken("concurrent replays hung")
if bad:
    broken("; ".join(bad[:3]))
zz = g.launch()[0]
a = zz.to_numpy()
want = 4 * REPS + 1
if not np.all(a == want):
    broken(f"lost updates: z = {np.unique(a)[:5]} after {want} replays of z += 1 (want all {want})")
held("concurrent replays serialize")

"""Promise (safety.md G5): 'While a launch (or a graph replay) runs, no other launch,
replay or host read touches the memory it writes'; (Graph docstring) each replay 'takes
every tensor and partition it was captured with, as a launch does'.

Two graphs captured over the same partition on two different streams (and a third over a
view of the same memory, on the default pool) are replayed from three threads at once,
while a fourth thread runs ordinary launches on the partition, each doing z += 1. No
update may be lost: the final value equals the number of replays and launches that
succeeded."""
import threading

from _r2 import *


@ct.entry
def step(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    acc = z.load()
    for i in range(20):
        acc = acc * 1.0
    z.store(acc + v)


def body():
    t = ct.zeros(1 << 16).sync()
    view = t[:]
    z = t.partition(1024)
    s1, s2 = ct.Stream("cpu"), ct.Stream("cpu")
    g1 = step(z, 1.0).graph_on(s1)
    g2 = step(z, 1.0).graph_on(s2)
    zv = view.partition(1024)
    g3 = step(zv, 1.0).graph()
    counts = {"g1": 0, "g2": 0, "g3": 0, "launch": 0}
    refusals, other = [], []
    REPS = 25

    def replay(name, g):
        for _ in range(REPS):
            try:
                g.launch()
                counts[name] += 1
            except Exception as e:  # noqa: BLE001
                (refusals if is_safetile_error(e) else other).append(f"{type(e).__name__}: {str(e)[:100]}")

    def launches():
        nonlocal z
        for _ in range(REPS):
            try:
                (z2,), = [step(z, 1.0).sync()[:1]]
                counts["launch"] += 1
            except Exception as e:  # noqa: BLE001
                (refusals if is_safetile_error(e) else other).append(f"{type(e).__name__}: {str(e)[:100]}")

    ths = [threading.Thread(target=replay, args=("g1", g1)), threading.Thread(target=replay, args=("g2", g2)),
           threading.Thread(target=replay, args=("g3", g3)), threading.Thread(target=launches)]
    [t.start() for t in ths]
    [t.join(40) for t in ths]
    if any(t.is_alive() for t in ths):
        broken("hang between concurrent replays of graphs on different streams")
    if other:
        broken("non-safetile error: " + other[0])
    g1.close(); g2.close(); g3.close()
    total = sum(counts.values())
    a = z.unpartition().to_numpy()
    if not np.all(a == total):
        broken(f"lost updates: memory holds {np.unique(a)[:4]} after {total} successful increments {counts}")
    print(sorted(set(r[:150] for r in refusals))[:4])
    held(f"graphs on different streams serialize ({counts}, {len(refusals)} refusals)")


run_guarded(body, "two graphs two streams")

"""G6 ("While a Shared handle lives, nothing writes its memory"; "writable by ... live Graph (for
the memory its replays write)"). A graph's host closures run once, at capture. Here the closure
(the user's own, so its moves are its own) turns the launch's *output* into a Shared handle:
`k(z, x).map(lambda r: r[0].unpartition().shared()).graph()`. If the capture is accepted, every
replay writes the memory of that live Shared. Variants: the closure shares a second wrapper of the
output's memory, a view of it, and graph_scope with the Shared made between two records."""
from _r6 import *


@ct.entry
def bump(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


results = []


def check(name, build):
    base = arr(64)
    try:
        g, s = build(base)
    except Exception as e:  # noqa
        results.append((name, "refused", f"{type(e).__name__}" if is_st(e) else f"RAW {type(e).__name__}: {e}"))
        return
    before = s.to_numpy().copy()
    try:
        g.launch()
        g.launch()
    except Exception as e:  # noqa
        results.append((name, "replay refused", type(e).__name__))
        return
    after = s.to_numpy()
    results.append((name, "WROTE" if not np.array_equal(before, after) else "same", f"{before[0]}->{after[0]}"))


def v1(base):
    z = ct.from_dlpack(base).partition(16)
    box = {}
    g = bump(z).map(lambda r: box.setdefault("s", r[0].unpartition().shared())).graph()
    return g, box["s"]


def v2(base):
    z = ct.from_dlpack(base).partition(16)
    other = ct.from_dlpack(base)          # second wrapper of the same NumPy memory
    box = {}
    g = bump(z).inspect(lambda r: box.setdefault("s", other.shared())).graph()
    return g, box["s"]


def v3(base):
    z = ct.from_dlpack(base).partition(16)
    box = {}
    g = bump(z).then(lambda r: ct.value(r)).map(lambda r: box.setdefault("s", r[0].unpartition()[0:32].shared())).graph()
    return g, box["s"]


def v4(base):
    z = ct.from_dlpack(base).partition(16)
    other = ct.from_dlpack(base[32:])
    with ct.graph_scope() as sc:
        (z,) = sc.record(bump(z))
        s = other.shared()
        (z,) = sc.record(bump(z))
    return sc.graph, s


for name, b in (("map unpartition().shared()", v1), ("inspect other-wrapper.shared()", v2),
                ("then/map view.shared()", v3), ("graph_scope share between records", v4)):
    check(name, b)
wrote = [r for r in results if r[1] == "WROTE" or "RAW" in r[2]]
if wrote:
    broken("a live Shared was written by replays of a graph accepted at capture: " + "; ".join(map(str, wrote)) + " | all: " + "; ".join(map(str, results)))
held("; ".join(map(str, results)))

"""G4/G6 (new): after `with ct.borrow_mut(t)` ends, is t *fully* usable while objects made inside the block are
still referenced? Each holder below can never write t again (the exit released/cancelled it), so per G4
("leaving the block always ends the borrow") t should be usable in every way, `t.shared()` included.
Holders kept alive across the exit: (a) the partition, (b) a mapped partition, (c) a launch built and never
run (cancelled by the exit), (d) a memcpy op into the partition built and never run, (e) a graph captured
over the partition (op.graph()), (f) a graph from ct.graph_scope(), (g) a graph captured in the block and closed.
For each, after the exit: every use of the holder on t is a safetile refusal, t.partition works, and
t.shared() works (claims of holders that can never write t must not keep t's memory writable-claimed)."""
from _r10 import *

both_ways()
native_loaded()
res = {}
bad = []
for kind in "abcdefg":
    t = poisoned(64)
    src = ct.ones(64).sync()
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        if kind == "a":
            h = p
        elif kind == "b":
            h = p.map(2)
        elif kind == "c":
            h = inc(p)
        elif kind == "d":
            h = ct.memcpy(p, src)
        elif kind == "e":
            h = inc(p).graph()
        elif kind == "f":
            with ct.graph_scope() as sc:
                sc.record(inc(p))
            h = sc.graph
        elif kind == "g":
            h = inc(p).graph()
            h.launch()
            h.close()
    # the holder cannot write t any more
    try:
        if kind in "ab":
            (inc if kind == "a" else inc_m)(h).sync()
        elif kind in "cd":
            h.sync()
        else:
            h.launch()
        bad.append(f"{kind}: holder wrote t after the exit")
    except Exception as e:  # noqa
        if not st_err(e):
            bad.append(f"{kind}: raw {err(e)}")
    before = t.to_numpy().copy()
    try:
        s = t.shared()
        t = s.try_unwrap()
        res[kind] = "ok"
    except Exception as e:  # noqa
        res[kind] = err(e, 150)
    try:
        q = t.partition(16)
        q, = inc(q).sync()
        t = q.unpartition()
        if not np.array_equal(t.to_numpy(), before + 1):
            bad.append(f"{kind}: t wrong after the exit")
    except Exception as e:  # noqa
        bad.append(f"{kind}: t.partition after the exit: {err(e)}")
    del h, p
    gc.collect()
refused = {k: v for k, v in res.items() if v != "ok"}
if bad:
    broke("; ".join(bad))
if refused:
    broke(f"native={NATIVE}: after the borrow ended, t.shared() refused while a holder made in the block lives "
          f"(holders that can never write t): {refused}")
held(f"native={NATIVE}: t fully usable after the exit with every holder alive")

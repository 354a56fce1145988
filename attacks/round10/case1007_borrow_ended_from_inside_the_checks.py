"""G4 (new) on one thread: the borrow is ended *by code the launch itself runs* while the launch is being made
or run: (a) a callable precondition calls p.release(); (b) a callable precondition calls the `with` block's
__exit__ directly (ct.borrow_mut(t).__exit__); (c) a ct.Constant value whose __hash__ calls p.release()
(run while the plan is looked up; repeated so the C twin has the plan); (d) a then-closure between two launches
of a chain releases the partition, then returns the next launch on it; (e) an inspect closure releases it;
(f) a map closure of an op.graph() capture releases it, then the graph is replayed.
Expect: no deadlock; either the release is refused with a safetile error, or the launch that would write t
after the borrow ended is refused (OwnershipError) with everything given back; t is written only by launches
that completed before the release; t fully usable afterwards. Run with the C fast path on and off."""
from _r10 import *

both_ways()
native_loaded()
results = {}
problems = []
REL = {}


def pre_release(z):
    REL["p"].release()
    return True


def pre_exit(z):
    REL["cm"].__exit__(None, None, None)
    return True


@ct.entry(preconditions=[pre_release])
def inc_pr(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


@ct.entry(preconditions=[pre_exit])
def inc_pe(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


class Releaser:
    armed = False

    def __hash__(self):
        if Releaser.armed:
            Releaser.armed = False
            REL["p"].release()
        return 7

    def __eq__(self, o):
        return isinstance(o, Releaser)


@ct.entry
def inc_k(z: ct.Mut[ct.f32, "B"], k: ct.Constant[Releaser]):
    z.store(z.load() + 1.0)


def attempt(kind):
    t = poisoned(64)
    cm = ct.borrow_mut(t)
    b = cm.__enter__()
    p = b.partition(16)
    REL["p"], REL["cm"] = p, cm
    released_at = [None]
    outcome = None
    try:
        if kind == "pre_release":
            outcome = inc_pr(p).sync()
        elif kind == "pre_exit":
            outcome = inc_pe(p).sync()
        elif kind == "const_hash":
            k = Releaser()
            for _ in range(3):
                p, _k = inc_k(p, k).sync()     # warm: the C twin gets this plan
            Releaser.armed = True
            outcome = inc_k(p, k).sync()
        elif kind == "then_release":
            def f(v):
                v[0].release()
                released_at[0] = t_read()
                return inc(v[0])
            outcome = inc(p).then(f).sync()
        elif kind == "inspect_release":
            outcome = inc(p).inspect(lambda v: v[0].release()).then(lambda v: inc(v[0])).sync()
        elif kind == "graph_map_release":
            g = inc(p).map(lambda v: (v[0].release(), v)[1]).graph()
            outcome = g.launch()
    except Exception as e:  # noqa
        outcome = e
    try:
        cm.__exit__(None, None, None)
    except Exception as e:  # noqa
        if not st_err(e):
            problems.append(f"{kind}: exit raw {err(e)}")
    a = t.to_numpy().copy()
    out = err(outcome, 90) if isinstance(outcome, BaseException) else "ran"
    if isinstance(outcome, BaseException) and not st_err(outcome):
        problems.append(f"{kind}: raw {err(outcome)}")
    # after everything: nothing may write t any more; t usable
    for f in (lambda: inc(p).sync(), lambda: p.unpartition()):
        try:
            f()
            problems.append(f"{kind}: released partition still usable")
        except Exception as e:  # noqa
            if not st_err(e):
                problems.append(f"{kind}: raw {err(e)}")
    if not np.array_equal(t.to_numpy(), a):
        broke(f"{kind}: t written after the borrow ended")
    try:
        q = t.partition(16)
        q, = inc(q).sync()
        if not np.array_equal(q.unpartition().to_numpy(), a + 1):
            problems.append(f"{kind}: t wrong afterwards")
    except Exception as e:  # noqa
        problems.append(f"{kind}: t unusable afterwards: {err(e)}")
    k = a[0] - POISON
    results[kind] = f"t+={k:g} ({out})"
    return k, outcome, released_at[0]


def t_read():
    return None


for kind in ("pre_release", "pre_exit", "const_hash", "then_release", "inspect_release", "graph_map_release"):
    k, outcome, _ = attempt(kind)
    # a launch whose checks ended the borrow must not have run (pre_*, const_hash): t unchanged
    if kind in ("pre_release", "pre_exit") and k != 0:
        problems.append(f"{kind}: the launch whose precondition ended the borrow still wrote t (t+={k:g}, {results[kind]})")
    if kind == "const_hash" and k != 3:
        problems.append(f"{kind}: the launch whose Constant hash ended the borrow wrote t (t+={k:g}, {results[kind]})")
    if kind in ("then_release", "inspect_release") and k > 1:
        problems.append(f"{kind}: the launch after the closure released the partition ran (t+={k:g})")
if problems:
    broke("; ".join(problems[:4]) + f" | {results}")
held(f"native={NATIVE}: {results}")

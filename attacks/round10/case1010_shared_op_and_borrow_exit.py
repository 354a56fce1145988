"""G4 (new): `op.shared()` holding a borrowed partition across the borrow's exit. Inside
`with ct.borrow_mut(t)`: sh = inc(p).map(lambda v: 42).shared() (its value holds no partition, so the sharing
itself is allowed); consumers sh.map(...) are synced (a) never inside the block, only by 4 threads after the
exit; (b) by 4 threads racing the exit; (c) a consumer chain that re-launches on the partition returned through
the value: sh2 = inc(p).shared() consumers (refused: borrowed) racing the exit; (d) ct.zip(inc(q), inc(p)).shared()
with q an ordinary partition: refused midway (q given back per G4's failed-terminal rules).
Expect: nothing writes t after the exit (the shared op runs at most once, inside the borrow or never);
every consumer gets the same value or a safetile error; t fully usable; q's tensor recoverable.
Run with the C fast path on and off."""
from _r10 import *
import random

both_ways()
native_loaded()
rnd = random.Random(os.getpid())
problems = []
res = {}


def consumers(sh, outs, n=4, delay=0.0):
    def c():
        time.sleep(delay * rnd.random())
        try:
            outs.append(sh.map(lambda v: v).sync())
        except Exception as e:  # noqa
            outs.append(e)
    ths = [threading.Thread(target=c, daemon=True) for _ in range(n)]
    for th in ths:
        th.start()
    return ths


def check_after(kind, t, a, outs):
    time.sleep(0.05)
    if not np.array_equal(t.to_numpy(), a):
        broke(f"{kind}: t written after the borrow ended: {a[:2]} -> {t.to_numpy()[:2]} ({[err(o, 60) if isinstance(o, BaseException) else o for o in outs]})")
    vals = {repr(o) for o in outs if not isinstance(o, BaseException)}
    if len(vals) > 1:
        problems.append(f"{kind}: consumers saw different values {vals}")
    for o in outs:
        if isinstance(o, BaseException) and not st_err(o):
            problems.append(f"{kind}: raw {err(o)}")
    k = a[0] - POISON
    if k not in (0, 1):
        problems.append(f"{kind}: shared op ran {k:g} times")
    if k == 0 and vals:
        problems.append(f"{kind}: consumers got a value {vals} but t was never written")
    try:
        q = t.partition(16)
        q, = inc(q).sync()
        if not np.array_equal(q.unpartition().to_numpy(), a + 1):
            problems.append(f"{kind}: t wrong afterwards")
    except Exception as e:  # noqa
        problems.append(f"{kind}: t unusable: {err(e)}")
    return f"t+={k:g} outs={sorted({(type(o).__name__ if isinstance(o, BaseException) else 'v') for o in outs})}"


for rep in range(3):
    # (a) never run inside the block
    t = poisoned(64)
    outs = []
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        sh = inc(p).map(lambda v: 42).shared()
    a = t.to_numpy().copy()
    ths = consumers(sh, outs)
    for th in ths:
        th.join(10)
    res["a"] = check_after("a", t, a, outs)
    # (b) consumers racing the exit
    t = poisoned(64)
    outs = []
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        sh = slow_inc(p, 20000).map(lambda v: 42).shared()
        ths = consumers(sh, outs, delay=0.05)
        time.sleep(rnd.uniform(0, 0.06))
    a = t.to_numpy().copy()
    for th in ths:
        th.join(10)
    if any(th.is_alive() for th in ths):
        broke("b: consumer hangs")
    res["b"] = check_after("b", t, a, outs)
    # (c) shared op whose value is the borrowed partition itself
    t = poisoned(64)
    outs = []
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        sh = inc(p).shared()
        ths = consumers(sh, outs, delay=0.02)
        time.sleep(rnd.uniform(0, 0.03))
    a = t.to_numpy().copy()
    for th in ths:
        th.join(10)
    res["c"] = check_after("c", t, a, outs)
    # (d) zip with an ordinary partition, refused midway
    t = poisoned(64)
    u = ct.zeros(64).sync()
    q = u.partition(16)
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        try:
            ct.zip(inc(q), inc(p)).shared().sync()
            problems.append("d: zip(...).shared() with a borrowed partition was not refused")
        except Exception as e:  # noqa
            if not st_err(e):
                problems.append(f"d: raw {err(e)}")
    a = t.to_numpy().copy()
    res["d"] = check_after("d", t, a, [])
    try:
        U = q.unpartition()
        if U.to_numpy()[0] not in (0.0, 1.0):
            problems.append("d: q's tensor has an odd value")
        U.shared().try_unwrap()
    except Exception as e:  # noqa
        problems.append(f"d: q's tensor not recoverable: {err(e)}")
if problems:
    broke("; ".join(sorted(set(problems))[:4]))
held(f"native={NATIVE}: {res}")

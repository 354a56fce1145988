"""G4 ("a launch runs once"; "A launch dropped unrun gives its arguments back"; "A launch's state
... is changed under the same lock, so a launch runs once") against LaunchOp.__del__, now a C
method descriptor, called explicitly: on a built op (then run it), twice, on a done op, on a
cancelled op, on the next op inside a then-closure before returning it, and from another thread
racing op.sync() (200 rounds: the run must happen exactly when the arguments did not come back
through __del__, and the memory is written at most once). Compared with the Python path."""
from _r7 import *
import threading, time


def scenario():
    out = {}

    def tr(name, f):
        try:
            r = f()
            out[name] = "ok " + type(r).__name__
        except BaseException as e:  # noqa
            out[name] = err(e, 60)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = arr(64)
        p = ct.from_dlpack(a).partition(16)
        op = inc(p)
        tr("del built", lambda: op.__del__())
        tr("p after del", lambda: p.grid())
        tr("op.sync after del", lambda: op.sync())
        tr("p after sync", lambda: p.grid())
        out["a0"] = float(a[0])
        tr("del again", lambda: op.__del__())
        q = ct.from_dlpack(arr(64)).partition(16)
        op2 = inc(q)
        (q,) = op2.sync()
        tr("del done", lambda: op2.__del__())
        tr("q after del done", lambda: q.grid())
        b = arr(64)
        r = ct.from_dlpack(b).partition(16)

        def f(res):
            nxt = inc(res[0])
            nxt.__del__()
            return nxt
        tr("chain del next", lambda: inc(r).then(f).sync())
        tr("r after", lambda: r.grid())
        out["b0"] = float(b[0])
        s = ct.from_dlpack(arr(64)).partition(16)
        op3 = inc(s)
        op3.cancel()
        tr("del cancelled", lambda: op3.__del__())
        tr("s after", lambda: s.grid())
        out["warnings"] = sorted(set(x.category.__name__ for x in w))
    # race: __del__ from another thread against sync
    bad = []
    ran = 0
    c = arr(64)
    t = ct.from_dlpack(c).partition(16)
    for i in range(200):
        before = float(c[0])
        op = inc(t)
        go = threading.Event()

        def killer():
            go.wait()
            op.__del__()
        th = threading.Thread(target=killer)
        th.start()
        go.set()
        try:
            (t2,) = op.sync()
            ok = True
        except ct.DeviceOpError:
            ok = False
        except BaseException as e:  # noqa
            bad.append(err(e))
            ok = False
        th.join(5)
        if th.is_alive():
            bad.append("killer thread stuck")
            break
        after = float(c[0])
        if ok:
            ran += 1
            if after != before + 1:
                bad.append(f"ran but wrote {after - before}")
            t = t2
        elif after != before:
            bad.append(f"refused but memory changed by {after - before}")
        try:
            t.grid()
        except BaseException as e:  # noqa
            bad.append("partition unusable: " + err(e))
            break
    out["race bad"] = bad[:3]
    out["race some ran"] = "yes" if 0 < ran else "none"
    del op
    return out


def judge(c, py):
    for name, o in (("C", c), ("Python", py)):
        if o.get("race bad"):
            return "BROKEN", f"{name} path: {o['race bad']}"
        if o.get("a0") != 0.0:
            return "BROKEN", f"{name} path: a launch whose arguments were given back by __del__ still ran"
    return "HELD", "explicit __del__ behaves as a drop on both paths; a racing __del__ and sync: exactly one wins"


differential(scenario, judge, ignore=("race some ran",))

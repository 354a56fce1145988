"""Promise (safe.md): "The caches hold facts, not arguments: they keep no tensor alive"; G4: "the
arguments point back to the launch weakly, so dropping it frees it at once"; G8 "The common case
in C" (hand-written reference counting in C: `slot_set`, `Py_INCREF`/`DECREF` on every path).

Attack, with the C twin on and off: 5000 repeated launches (sync, `then` chains, built then
cancelled, built then dropped, refused for a moved argument, refused for a wrong grid) over one
partition, one tensor, one Shared and float scalars; afterwards sys.getrefcount of every
argument (and of the scalar object passed) must equal its value before the loop, the number of
live LaunchOp objects must not grow, the arguments' memory must be freed when the user drops
them (a weakref to the NumPy base dies), and the Shared must unwrap.
"""
from _r5 import *

import gc
import weakref


def scenario(rec):
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], s: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a + ct.load_tile_like(s, z))

    class Base(np.ndarray):
        pass
    N = 64
    zbase = np.zeros(N, np.float32).view(Base)
    xbase = np.ones(N, np.float32).view(Base)
    sbase = np.full(N, 2, np.float32).view(Base)
    wz, wx, ws = weakref.ref(zbase), weakref.ref(xbase), weakref.ref(sbase)
    z = ct.from_dlpack(zbase).partition(16)
    x = ct.from_dlpack(xbase)
    s = ct.from_dlpack(sbase).shared()
    del zbase, xbase, sbase
    a = float("1.5")  # a distinct object, so its refcount is ours alone
    for _ in range(20):
        z, x, s, _ = k(z, x, s, a).sync()
    gc.collect()

    def launch_ops():
        return sum(1 for o in gc.get_objects() if type(o).__name__ == "LaunchOp")
    before = {n: sys.getrefcount(v) for n, v in (("z", z), ("x", x), ("s", s), ("a", a))}
    ops_before = launch_ops()
    for i in range(1000):
        z, x, s, _ = k(z, x, s, a).sync()
    for i in range(100):
        op = k(z, x, s, a)
        for _ in range(9):
            op = op.then(lambda v: k(v[0], v[1], v[2], a))
        z, x, s, _ = op.sync()
    for i in range(500):
        op = k(z, x, s, a)
        op.cancel()
    import warnings as _w
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        for i in range(500):
            op = k(z, x, s, a)
            del op
    for i in range(500):
        op = k(z, x, s, a)
        try:
            k(z, x, s, a)
        except ct.UseAfterMoveError:
            pass
        op.cancel()
    for i in range(500):
        try:
            k.grid((2, 1, 1))(z, x, s, a)
        except ct.GridError:
            pass
    op = None
    gc.collect()
    after = {n: sys.getrefcount(v) for n, v in (("z", z), ("x", x), ("s", s), ("a", a))}
    rec("refcounts before", before)
    rec("refcounts after", after)
    rec("LaunchOps alive growth", launch_ops() - ops_before)
    try:
        t = s.try_unwrap()
        rec("unwrap", "ok")
    except BaseException as e:  # noqa: BLE001
        rec("unwrap", exc_str(e))
        t = None
    ok = bool(np.allclose(z.to_numpy() if False else 0, 0))
    del z, x, s, t
    gc.collect()
    rec("memory freed", [wz() is None, wx() is None, ws() is None])


def check(log):
    d = dict((k, v) for k, v in log)
    bad = []
    if "SCENARIO-RAISED" in d:
        bad.append(d["SCENARIO-RAISED"][:300])
        return bad
    b, a = d["refcounts before"], d["refcounts after"]
    for n in b:
        if b[n] != a[n]:
            bad.append(f"refcount of {n}: {b[n]} before, {a[n]} after 3600 launches")
    if d["LaunchOps alive growth"] > 2:
        bad.append(f"{d['LaunchOps alive growth']} LaunchOps still alive")
    if d["unwrap"] != "ok":
        bad.append(f"Shared does not unwrap: {d['unwrap']}")
    if d["memory freed"] != [True, True, True]:
        bad.append(f"argument memory kept alive after the user dropped it: {d['memory freed']}")
    return bad


def main():
    problems, logs = each_mode(__file__, scenario, check, "refcounts")
    if problems:
        broken("; ".join(problems[:5]))
    held("refcounts unchanged after 3600 launches, no LaunchOp kept, memory freed: "
         + str({k: dict(v)["refcounts after"] for k, v in logs.items()}))


run_guarded(main, "505")

"""Promise (safety.md G4): "A launch dropped unrun gives its arguments back with a
LaunchDroppedWarning; op.cancel() does it explicitly; the arguments point back to the launch
weakly, so dropping it frees it at once"; failed terminals undo; G8 "The common case in C": the
C twin builds the same LaunchOp the Python path builds (it "moves ownership ... exactly as
LaunchOp._take does"), and decides nothing differently.

Attack: launches built by the C twin (repeats of the latest plan) put through every life-cycle
turn, run with the C twin on and off, every observation compared (results vs NumPy, error class
and message, warnings and their text, argument states by repr, gc-collectability of the op):
reconfigured after build (`op.grid` right and wrong, `op.generics`), cancelled then run, dropped
(refcount and cycle), collected inside a `then` chain, a `then` closure raising between repeated
launches, `op.shared()` consumed twice, `ct.zip` of two launches sharing a Shared, a graph of a
repeated launch replayed after its inputs were changed through memcpy, `op.partition`, `inspect`,
`map`, and `sync_on` a private stream.
"""
from _r5 import *

import gc
import warnings as _w
import weakref


def scenario(rec):
    @ct.entry
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], a: ct.f32):
        z.store(ct.load_tile_like(x, z) * a + 1.0)

    @ct.entry
    def k2(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"], s: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(s, z) + 2.0)
        w.store(ct.load_tile_like(s, w) + 3.0)

    N = 64
    xa = np.linspace(-2, 2, N).astype(np.float32)
    zb = np.full(N, np.nan, np.float32)
    x = ct.from_dlpack(xa.copy())
    z = ct.from_dlpack(zb).partition(16)

    def warm():
        nonlocal z, x
        for _ in range(3):
            z, x, _ = k(z, x, 2.0).sync()

    def attempt(label, f):
        with _w.catch_warnings(record=True) as ws:
            _w.simplefilter("always")
            try:
                r = f()
                rec(label, "ok")
            except BaseException as e:  # noqa: BLE001
                rec(label, "EXC " + exc_str(e))
                r = e
            gc.collect()
        rec(label + " warnings", [f"{w.category.__name__}: {w.message}" for w in ws])
        return r

    def states(label):
        rec(label, [repr(z), repr(x)])

    def res(label, scale):
        rec(label, bool(np.allclose(zb, xa * scale + 1)))

    # reconfigure a C-built op
    warm()
    op = k(z, x, 2.0)
    r = attempt("op.grid right", lambda: op.grid((4, 1, 1)))
    if isinstance(r, ct.DeviceOp) if hasattr(ct, "DeviceOp") else False:
        attempt("run reconfigured", lambda: r.sync())
    states("after op.grid right")
    attempt("cancel", lambda: op.cancel())
    states("after cancel")
    warm()
    op = k(z, x, 2.0)
    attempt("op.grid wrong", lambda: op.grid((2, 1, 1)))
    states("after op.grid wrong")
    attempt("run after wrong grid", lambda: op.sync())
    states("after run after wrong grid")
    attempt("cancel 2", lambda: op.cancel())
    states("after cancel 2")
    warm()
    op = k(z, x, 2.0)
    attempt("op.generics", lambda: op.generics(B=16))
    attempt("cancel 3", lambda: op.cancel())
    # drop by refcount and as part of a cycle
    warm()
    zb[:] = np.nan

    def drop():
        o = k(z, x, 3.0)
        wr = weakref.ref(o)
        del o
        rec("dropped op freed at once", wr() is None)
    rec("dropped op freed at once", attempt("drop", drop))
    gc.collect()
    states("after drop")
    rec("nothing ran after drop", bool(np.isnan(zb).all()))
    warm()

    def drop_cycle():
        o = k(z, x, 3.0)
        cyc = [o]
        cyc.append(cyc)
        del o, cyc
    attempt("drop in a cycle", drop_cycle)
    states("after drop cycle")
    # a then closure raising between repeated launches
    warm()
    zb[:] = np.nan
    calls = [0]

    def step(zx):
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("closure boom")
        return k(zx[0], zx[1], 5.0)
    op = k(z, x, 4.0)
    for _ in range(5):
        op = op.then(step)
    attempt("then chain raising", op.sync)
    states("after then raising")
    rec("zb after then raising (ran twice)", bool(np.allclose(zb, xa * 5 + 1)))
    warm()
    # op.shared consumed twice
    zb[:] = np.nan
    sh = k(z, x, 6.0).shared()

    def two():
        a = sh.map(lambda v: v).sync()
        b = sh.map(lambda v: v).sync()
        return a, b
    r = attempt("op.shared twice", two)
    res("op.shared ran", 6.0)
    states("after op.shared")
    if isinstance(r, tuple):
        rec("op.shared values", [repr(r[0]), r[0][0] is r[1][0]])
        try:
            z = r[0][0].try_unwrap().partition(16)
            x = r[0][1].try_unwrap()
            rec("unwrap op.shared result", "ok")
        except BaseException as e:  # noqa: BLE001
            rec("unwrap op.shared result", exc_str(e))
    # zip of two launches sharing a Shared
    s = ct.from_dlpack(xa.copy()).shared()
    wb1, wb2, wb3, wb4 = (np.zeros(N, np.float32) for _ in range(4))
    p1, p2, p3, p4 = (ct.from_dlpack(b).partition(16) for b in (wb1, wb2, wb3, wb4))
    for i in range(3):
        r = attempt(f"zip {i}", lambda: ct.zip(k2(p1, p2, s), k2(p3, p4, s)).sync())
        if isinstance(r, tuple):
            (p1, p2, _), (p3, p4, _) = r
        rec(f"zip {i} results", [bool(np.allclose(wb1, xa + 2)), bool(np.allclose(wb4, xa + 3))])
    attempt("zip with one partition twice", lambda: ct.zip(k2(p1, p2, s), k2(p1, p4, s)).sync())
    rec("after zip twice", [repr(p1), repr(p2), repr(p4), repr(s)])
    # graph of a repeated launch
    warm()
    src = ct.from_dlpack(xa.copy())
    g = attempt("graph", lambda: k(z, src, 2.0).graph())
    if not isinstance(g, BaseException):
        for i in range(3):
            attempt(f"replay {i}", g.launch)
            res(f"replay {i} result", 2.0)
        rec("graph repr", repr(g))
        attempt("launch while graph lives", lambda: k(z, src, 2.0).sync())
        attempt("g.close", g.close)
    states("after graph")
    # op.partition / inspect / map / sync_on
    warm()
    seen = []
    r = attempt("inspect+map", lambda: k(z, x, 7.0).inspect(lambda v: seen.append(len(v))).map(lambda v: v).sync())
    res("inspect+map result", 7.0)
    if isinstance(r, tuple):
        z, x, _ = r
    st = ct.Stream("cpu") if hasattr(ct, "Stream") else None
    if st is not None:
        for i in range(3):
            r = attempt(f"sync_on {i}", lambda: k(z, x, 8.0).sync_on(st))
            if isinstance(r, tuple):
                z, x, _ = r
        res("sync_on result", 8.0)
    states("final")


def check(log):
    bad = []
    for label, val in log:
        if label == "SCENARIO-RAISED":
            bad.append(val[:300])
        if label.endswith("result") and val is False:
            bad.append(f"{label}: wrong")
        if isinstance(val, str) and val.startswith("EXC") and "safetile" not in val.split(":")[0] \
                and "closure boom" not in val:
            bad.append(f"{label}: non-safetile {val[:150]}")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "built-op life cycle")
    if problems:
        broken("; ".join(problems[:4]))
    held(f"{len(on)} observations identical with the C twin on and off (C build [calls, hits]: {differential.hits})")


run_guarded(main, "504")

"""G7/G8 differential: one deterministic single-thread script of launches (warm, so the C twin takes the
repeats) and refusals — use after move, cancelled op, alias with a view, grid mismatch, scalar out of range,
keyword argument, raw read-only NumPy as Mut, precondition, released borrow, Shared held by a built op, a
dropped op's warning, then-closure errors, nested sync, graph replay of a moved partition — run with the C
fast path on and off in two processes. Expect: identical results, error classes, messages (op numbers
included) and op ids; every refusal a safetile error; arguments byte-identical after each refusal."""
from _r10 import *
import re


@ct.entry(preconditions=["dim(x, 0) == 64"])
def addpre(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(z.load() + ct.load_tile_like(x, z))


@ct.entry
def two(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"]):
    z.store(w.load())
    w.store(z.load())


def scenario():
    native_loaded()
    log = []

    def rec(name, f):
        try:
            with warnings.catch_warnings(record=True) as wl:
                warnings.simplefilter("always")
                r = f()
                gc.collect()
            ws = [f"{w.category.__name__}: {w.message}" for w in wl]
            log.append((name, "ok", repr(r), ws))
            return r
        except Exception as e:  # noqa
            log.append((name, type(e).__name__ + ("" if is_st(e) else "(RAW)"), str(e), []))
            return None

    x = ct.arange(64).sync() if False else ct.full(64, 2.0).sync()
    t = ct.zeros(64).sync()
    v = t[0:32]
    p = t.partition(16)
    for i in range(4):
        p, _ = rec(f"warm{i}", lambda: addk(p, x).sync())
    op = addk(p, x)
    rec("ids", lambda: op.id)
    rec("uam", lambda: addk(p, x))
    rec("uam_read", lambda: p.to_numpy())
    rec("cancel", lambda: op.cancel())
    rec("after_cancel_sync", lambda: op.sync())
    p, _ = rec("again", lambda: addk(p, x).sync())
    rec("alias_view", lambda: addk(p, v))
    rec("scalar_big", lambda: slow_inc(p, 2 ** 40))
    rec("scalar_float", lambda: slow_inc(p, 1.5))
    rec("kwarg", lambda: addk(p, x=x))
    ro = np.zeros(64, np.float32)
    ro.flags.writeable = False
    rec("ro_numpy_mut", lambda: inc(ro))
    rec("raw_ref", lambda: addk(p, np.ones(64, np.float32)).sync())
    q = ct.zeros(128).sync().partition(16)
    rec("grid", lambda: two(p, q))
    rec("pre_fail", lambda: addpre(p, ct.zeros(32).sync()))
    p, _ = rec("pre_ok", lambda: addpre(p, x).sync())
    s = ct.ones(64).sync().shared()
    held_op = rec("held_build", lambda: addk(p, s))
    rec("unwrap_held", lambda: s.try_unwrap())
    rec("drop", lambda: held_op.__class__ and None)
    del held_op
    gc.collect()
    rec("after_drop_unwrap", lambda: s.try_unwrap())
    rec("then_bad", lambda: addk(p, x).then(lambda vv: 1 / 0).sync())
    rec("after_then_bad", lambda: addk(p, x).sync())
    rec("nested", lambda: addk(p, x).then(lambda vv: addk(vv[0], x).sync()).sync())
    rec("after_nested", lambda: addk(p, x).sync())
    tb = ct.zeros(64).sync()
    with ct.borrow_mut(tb) as b:
        bp = b.partition(16)
        rec("borrowed_t", lambda: tb.to_numpy())
        rec("borrow_run", lambda: inc(bp).sync())
    rec("released", lambda: inc(bp))
    rec("released2", lambda: bp.unpartition())
    g = rec("graph", lambda: addk(p, x).graph())
    rec("graph_launch", lambda: g.launch())
    T = rec("unpart", lambda: p.unpartition())
    rec("graph_after_unpart", lambda: g.launch())
    rec("final", lambda: T.to_numpy().tolist())
    rec("tb", lambda: tb.to_numpy().tolist())
    rec("id_after", lambda: inc(ct.zeros(16).sync().partition(16)).id)
    out = []
    for name, kind, msg, ws in log:
        msg = re.sub(r"0x[0-9a-f]+", "0x?", msg)
        out.append([name, kind, msg, [re.sub(r"0x[0-9a-f]+", "0x?", w) for w in ws]])
    return {"log": out}


nat, py = differential(scenario)
if "__crash__" in nat or "__crash__" in py:
    inconclusive(f"crash: {nat.get('__crash__')} / {py.get('__crash__')}")
diffs = []
raw = []
for a, b in zip(nat["log"], py["log"]):
    if a != b:
        diffs.append(f"{a[0]}: C={a[1]}:{a[2][:110]!r} {a[3][:1]} | Py={b[1]}:{b[2][:110]!r} {b[3][:1]}")
    for r in (a, b):
        if "(RAW)" in r[1] and r[0] != "then_bad":  # (the closure's own exception propagates: expected)
            raw.append(f"{r[0]}: {r[1]} {r[2][:80]}")
if len(nat["log"]) != len(py["log"]):
    diffs.append("different number of steps")
if diffs or raw:
    broke(f"{len(diffs)} differences C vs Python: " + " || ".join(diffs[:3]) + (f"; raw: {raw[:2]}" if raw else ""))
held(f"{len(nat['log'])} steps identical on both paths")

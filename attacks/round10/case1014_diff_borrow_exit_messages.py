"""G4/G7/G8 differential (deterministic, one thread): what leaving a borrow does to everything made inside it,
with the C fast path on and off: warnings at the exit (LaunchDroppedWarning for each unrun launch, naming the op
number), the errors of every later use (launch sync, chain sync, memcpy, mapped launch, graph replay,
op.shared() consumer, cancel, unpartition, release, holder/repr of the partition), op ids, the values.
Warm launches first so that the C twin takes the repeats. Expect: both paths identical (classes, messages with
op numbers, warnings, values); every refusal a safetile error; nothing writes t after the exit."""
from _r10 import *
import re


def scenario():
    native_loaded()
    log = []

    def rec(name, f):
        try:
            with warnings.catch_warnings(record=True) as wl:
                warnings.simplefilter("always")
                r = f()
            log.append([name, "ok", repr(r), [f"{w.category.__name__}: {w.message}" for w in wl]])
            return r
        except Exception as e:  # noqa
            log.append([name, type(e).__name__ + ("" if is_st(e) else "(RAW)"), str(e), []])
            return None

    x = ct.full(64, 2.0).sync()
    src = ct.ones(64).sync()
    for i in range(3):
        w = ct.zeros(64).sync().partition(16)
        rec(f"warm{i}", lambda: addk(w, x).sync())
    t = ct.zeros(64).sync()
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always")
        with ct.borrow_mut(t) as b:
            p = b.partition(16)
            for i in range(3):
                p, _ = rec(f"in{i}", lambda: addk(p, x).sync())
            op1 = rec("op1", lambda: addk(p, x))
            ch = rec("chain", lambda: op1.then(lambda v: addk(v[0], x)))
            rec("p_holder", lambda: p.holder)
            rec("p_repr", lambda: repr(p))
    log.append(["exit_warnings", "ok", "", [f"{w.category.__name__}: {w.message}" for w in wl]])
    rec("after_op1", lambda: op1.sync())
    rec("after_chain", lambda: ch.sync())
    rec("after_cancel", lambda: op1.cancel())
    rec("after_p_repr", lambda: repr(p))
    rec("after_p_holder", lambda: p.holder)
    rec("after_launch", lambda: addk(p, x))
    rec("after_memcpy", lambda: ct.memcpy(p, src).sync())
    rec("after_map", lambda: p.map(2))
    rec("after_unpartition", lambda: p.unpartition())
    rec("after_release", lambda: p.release())
    t2 = ct.zeros(64).sync()
    with ct.borrow_mut(t2) as b:
        p2 = b.partition(16)
        m = p2.map(2)
        m, = rec("m_in", lambda: inc_m(m).sync())
        p2 = rec("m_unmap_in", lambda: m.unmap())
        m = rec("m_again", lambda: p2.map(2))    # a mapped partition alive at the exit
        p2 = m.unmap()
        m2 = p2.map(2)
        p2 = m2.unmap()
        g = rec("g", lambda: addk(p2, x).graph())
        sh = rec("sh", lambda: addk(p2, x).map(lambda v: 1).shared())
    t3 = ct.zeros(64).sync()
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always")
        with ct.borrow_mut(t3) as b:
            p3 = b.partition(16)
            mc = rec("mc", lambda: ct.memcpy(p3, src))
    log.append(["exit_warnings3", "ok", "", [f"{w.category.__name__}: {w.message}" for w in wl]])
    rec("m_after", lambda: inc_m(m).sync())
    rec("m2_after", lambda: inc_m(m2).sync())
    rec("m_unmap_after", lambda: m.unmap())
    rec("g_after", lambda: g.launch())
    rec("sh_after", lambda: sh.sync())
    rec("mc_after", lambda: mc.sync())
    rec("t", lambda: t.to_numpy().tolist())
    rec("t2", lambda: t2.to_numpy().tolist())
    rec("t3", lambda: t3.to_numpy().tolist())
    rec("next_id", lambda: addk(ct.zeros(64).sync().partition(16), x).id)
    for e in log:
        e[2] = re.sub(r"0x[0-9a-f]+", "0x?", e[2])
        e[3] = [re.sub(r"0x[0-9a-f]+", "0x?", s) for s in e[3]]
    return {"log": log}


nat, py = differential(scenario)
if "__crash__" in nat or "__crash__" in py:
    inconclusive(f"crash: {nat.get('__crash__')} {nat.get('tb', '')[-300:]} / {py.get('__crash__')}")
diffs, raw = [], []
for a, b in zip(nat["log"], py["log"]):
    if a != b:
        diffs.append(f"{a[0]}: C={a[1]}:{a[2][:120]!r} {a[3][:2]} | Py={b[1]}:{b[2][:120]!r} {b[3][:2]}")
    for r in (a, b):
        if "(RAW)" in r[1]:
            raw.append(f"{r[0]}: {r[1]} {r[2][:80]}")
t_final = [e for e in nat["log"] if e[0] == "t"][0][2]
if diffs or raw:
    broke(f"{len(diffs)} differences C vs Python: " + " || ".join(diffs[:3]) + (f"; raw: {raw[:2]}" if raw else ""))
held(f"{len(nat['log'])} steps identical on both paths")

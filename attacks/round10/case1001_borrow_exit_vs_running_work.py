"""G4 (new): leave `with ct.borrow_mut(t)` while other threads run work on its partition, for each kind the
docs name: a long launch running, a then-chain of long launches, a long launch on a mapped partition
(`p.map(2)`), a memcpy into the borrowed partition (large), a memcpy op built in the block and run only after
the exit, a mapped partition made in the block and launched after the exit, a launch built in the block and
synced after the exit. Expect: the exit waits for what is running, cancels what never ran; after it nothing
writes t, every late attempt is a safetile error, t is fully usable; t's value = what ran (inside the borrow).
Run with the C fast path on and off."""
from _r10 import *

both_ways()
native_loaded()
N = 64
BIG = 1 << 22  # 16 MB: a memcpy that takes a while
problems = []
LONG = 40000

# warm the kernels (first compile outside the measured window)
_w = ct.zeros(N).sync().partition(16)
_w, _ = slow_inc(_w, 1).sync()
_m = _w.map(2)
_m, _ = slow_inc_m(_m, 1).sync()
_w = _m.unmap()
_w, = inc(_w).sync()


def worker(p, how, out, go):
    try:
        if how == "run":
            out.append(("ran", slow_inc(p, LONG).sync()))
        elif how == "chain":
            out.append(("ran", slow_inc(p, LONG // 4).then(lambda v: slow_inc(v[0], LONG // 4))
                        .then(lambda v: slow_inc(v[0], LONG // 4)).sync()))
        elif how == "mapped":
            m = p.map(2)
            out.append(("ran", slow_inc_m(m, LONG // 2).sync()))
        elif how == "memcpy":
            src = ct.ones(BIG).sync()
            go.set()
            out.append(("ran", ct.memcpy(p, src).sync()))
        elif how == "memcpy_late":
            src = ct.ones(N).sync()
            op = ct.memcpy(p, src)
            go.set()
            time.sleep(0.3)          # the owner leaves the block meanwhile
            out.append(("ran", op.sync()))
        elif how == "mapped_late":
            m = p.map(2)
            go.set()
            time.sleep(0.3)
            out.append(("ran", inc_m(m).sync()))
        elif how == "built_late":
            op = inc(p)
            go.set()
            time.sleep(0.3)
            out.append(("ran", op.sync()))
    except BaseException as e:  # noqa
        out.append(("err", e))
    go.set()


def one(how):
    n = BIG if how == "memcpy" else N
    t = poisoned(n)
    out = []
    go = threading.Event()
    with ct.borrow_mut(t) as b:
        p = b.partition(16 if n == N else 1 << 16)
        th = threading.Thread(target=worker, args=(p, how, out, go), daemon=True)
        th.start()
        if how in ("run", "chain", "mapped"):
            time.sleep(0.08)
        else:
            go.wait(10)
            time.sleep(0.002 if how == "memcpy" else 0)
    a = t.to_numpy().copy()
    th.join(15)
    if th.is_alive():
        threads_dump()
        broke(f"{how}: the worker hangs after the borrow ended")
    time.sleep(0.05)
    c = t.to_numpy()
    res = [(k, err(x) if isinstance(x, BaseException) else "ok") for k, x in out]
    if not np.array_equal(a, c):
        d = np.nonzero(a != c)[0]
        broke(f"{how}: t was written after its borrow ended at {len(d)} elements, e.g. [{d[0]}] {a[d[0]]} -> "
              f"{c[d[0]]} (worker: {res})")
    for k, x in out:
        if k == "err" and not st_err(x):
            problems.append(f"{how}: raw {err(x)}")
    if how.endswith("_late") and any(k == "ran" for k, _ in out):
        problems.append(f"{how}: an op made inside the borrow ran after the exit")
    if how.endswith("_late") and not np.all(a == POISON):
        broke(f"{how}: t changed by work that never ran inside the borrow: {a[:3]}")
    if how == "memcpy" and not (np.all(a == POISON) or np.all(a == 1.0)):
        broke(f"{how}: t half copied after the exit: {np.unique(a)[:4]}")
    try:
        q = t.partition(16 if n == N else 1 << 16)
        q, = inc(q).sync()
        r = q.unpartition().to_numpy()
        if not np.array_equal(r, a + 1):
            broke(f"{how}: t computes wrong after the borrow")
        s = ct.shared(q.unpartition() if False else ct.from_numpy(r).sync())  # noqa (sharing unrelated memory works)
    except Exception as e:  # noqa
        broke(f"{how}: t unusable after the borrow: {err(e)}")
    try:
        inc(p).sync()
        broke(f"{how}: stale partition launched after the borrow")
    except Exception as e:  # noqa
        if not st_err(e):
            problems.append(f"{how}: stale partition raw {err(e)}")
    return res


summary = {}
for how in ("run", "chain", "mapped", "memcpy", "memcpy_late", "mapped_late", "built_late") * 2:
    summary[how] = one(how)[-1][1][:40] if True else None
if problems:
    broke("; ".join(sorted(set(problems))[:3]))
held(f"native={NATIVE}: no write after any exit; outcomes {summary}")

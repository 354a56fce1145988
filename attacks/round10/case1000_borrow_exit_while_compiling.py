"""G4 (new): leave `with ct.borrow_mut(t)` while another thread is still *making* a launch on its partition
(partition moved in, kernel compiling for the first time: a fresh Constant makes a fresh specialisation whose
`ct.static_eval` sleeps; or a callable precondition that sleeps, run inside the checks).
Expect (docs/safety.md G4): that launch refuses itself with an OwnershipError when it would become built,
everything given back; nothing writes t after the exit; t is fully usable at once; the stale partition is
refused with a safetile error. Also a then-chain whose *second* launch is the compiling one.
Run with the C fast path on and off."""
from _r10 import *
import random

both_ways()
native_loaded()
rnd = random.Random(os.getpid())
SLEEP = 0.35


@ct.entry
def inc_sc(z: ct.Mut[ct.f32, "B"], k: ct.Constant[int]):
    ct.static_eval(time.sleep(SLEEP))
    z.store(z.load() + 1.0)


def slow_pre(z):
    time.sleep(SLEEP)
    return True


@ct.entry(preconditions=[slow_pre])
def inc_pre(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


problems = []


def worker(p, how, out):
    try:
        if how == "compile":
            op = inc_sc(p, rnd.randrange(1 << 50))
            out.append(("built", None))
            v = op.sync()
        elif how == "pre":
            op = inc_pre(p)
            out.append(("built", None))
            v = op.sync()
        else:  # chain: first launch runs at once, the second compiles
            k = rnd.randrange(1 << 50)
            v = inc(p).then(lambda v: inc_sc(v[0], k)).sync()
        out.append(("ran", v))
    except BaseException as e:  # noqa
        out.append(("err", e))


def one(how):
    t = poisoned(64)
    out = []
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        th = threading.Thread(target=worker, args=(p, how, out), daemon=True)
        th.start()
        time.sleep(SLEEP / 3 if how != "chain" else SLEEP / 2)
    a = t.to_numpy().copy()          # the borrow has ended: from here nothing may write t
    th.join(15)
    if th.is_alive():
        threads_dump()
        broke(f"{how}: the worker hangs after the borrow ended")
    time.sleep(0.05)
    c = t.to_numpy()
    if not np.array_equal(a, c):
        broke(f"{how}: t was written after its borrow ended: {a[:2]} -> {c[:2]} (worker: {[(k, err(x) if isinstance(x, BaseException) else x) for k, x in out]})")
    ran = [x for k, x in out if k == "ran"]
    errs = [x for k, x in out if k == "err"]
    for e in errs:
        if not st_err(e):
            problems.append(f"{how}: raw {err(e)}")
    # what did t get: at most the launches that ran inside the borrow
    k = float(a[0] - POISON)
    if not (a == a[0]).all():
        broke(f"{how}: t torn: {a}")
    if how in ("compile", "pre") and k not in (0.0,) and not ran:
        broke(f"{how}: t = POISON+{k} but the launch was refused ({[err(e) for e in errs]})")
    if how in ("compile", "pre") and k != 0.0:
        problems.append(f"{how}: launch made while the borrow ended still ran (t=POISON+{k})")
    # t fully usable
    try:
        q = t.partition(16)
        q, = inc(q).sync()
        t2 = q.unpartition()
        r = t2.to_numpy()
        if not np.allclose(r, a + 1):
            broke(f"{how}: t after the borrow computes wrong: {r[:2]} vs {a[:2]}+1")
    except Exception as e:  # noqa
        broke(f"{how}: t unusable after the borrow: {err(e)}")
    # the stale partition is refused with a safetile error
    try:
        inc(p).sync()
        broke(f"{how}: the partition of an ended borrow was launched again")
    except Exception as e:  # noqa
        if not st_err(e):
            problems.append(f"{how}: stale partition: raw {err(e)}")
    return errs[0] if errs else None


seen = {}
for how in ("compile", "pre", "chain") * 3:
    e = one(how)
    seen.setdefault(how, set()).add(type(e).__name__ if e is not None else "ran")
if problems:
    broke("; ".join(sorted(set(problems))[:3]))
held(f"native={NATIVE}: nothing written after the exit, t usable; outcomes {dict((k, sorted(v)) for k, v in seen.items())}")

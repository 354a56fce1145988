"""G9 fork (new mechanisms): os.fork() from the main thread while other threads are (1) leaving a
`with ct.borrow_mut(t1)` block and waiting for (2) a long launch on t1's partition, (3) replaying a graph
captured inside a borrow of t2, (4) making a launch whose kernel compiles for the first time (static_eval sleeps)
on a borrowed partition of t3. In the child: no hang (each step bounded), every call on t1/t2/t3 and their
partitions either works or is a safetile error (ForkError for memory being written at the fork), fresh memory
and new launches work, a new borrow works. In the parent: everything completes as without the fork.
Several forks at staggered moments. Run with the C fast path on and off."""
from _r10 import *
import random

both_ways()
native_loaded()
rnd = random.Random(os.getpid())
LONG = 30000
_w = ct.zeros(64).sync().partition(16)
_w, _ = slow_inc(_w, 1).sync()


@ct.entry
def inc_sc(z: ct.Mut[ct.f32, "B"], k: ct.Constant[int]):
    ct.static_eval(time.sleep(0.3))
    z.store(z.load() + 1.0)


def child_body(T):
    out = []
    import signal as _s
    _s.alarm(8)                      # the child must finish within 8 s
    for name, t in T.items():
        try:
            a = t.to_numpy()
            out.append(f"{name}:read={a[0] - POISON:g}")
        except Exception as e:  # noqa
            out.append(f"{name}:{type(e).__name__}")
            if not st_err(e):
                return 2, f"raw {err(e)}"
        try:
            q = t.partition(16)
            q, = inc(q).sync()
            t = q.unpartition()
        except Exception as e:  # noqa
            if not st_err(e):
                return 2, f"raw {err(e)}"
    f = ct.zeros(64).sync()
    with ct.borrow_mut(f) as b:
        p = b.partition(16)
        p, _ = slow_inc(p, 10).sync()
        g = inc(p).graph()
        g.launch()
    if f.to_numpy()[0] != 2:
        return 2, "fresh memory computed wrong in the child"
    return 0, ",".join(out)


def parent_round(r):
    t1, t2, t3 = poisoned(64), poisoned(64), poisoned(64)
    outs = {"x": [], "y": [], "z": [], "z_at_exit": None}
    started = threading.Event()

    def x():   # borrow t1, long launch on another thread, leave (waits)
        with ct.borrow_mut(t1) as b:
            p = b.partition(16)
            th = threading.Thread(target=lambda: outs["x"].append(safe(lambda: slow_inc(p, LONG).sync())))
            th.start()
            started.set()
            time.sleep(0.03)
        th.join()

    def y():   # replays of a graph captured inside a borrow of t2
        with ct.borrow_mut(t2) as b:
            p = b.partition(16)
            g = slow_inc(p, LONG // 3).graph()
            for _ in range(4):
                outs["y"].append(safe(lambda: g.launch()))

    def z():   # a launch still being made (first compile) when its borrow ends
        with ct.borrow_mut(t3) as b:
            p = b.partition(16)
            th = threading.Thread(target=lambda: outs["z"].append(safe(lambda: inc_sc(p, rnd.randrange(1 << 50)).sync())))
            th.start()
            time.sleep(0.1)
        outs["z_at_exit"] = t3.to_numpy()[0] - POISON     # what t3 holds once the exit returned
        th.join()

    ths = [threading.Thread(target=f, daemon=True) for f in (x, y, z)]
    for th in ths:
        th.start()
    started.wait(5)
    time.sleep(rnd.uniform(0.0, 0.15))
    pid = os.fork()
    if pid == 0:
        try:
            code, msg = child_body({"t1": t1, "t2": t2, "t3": t3})
        except BaseException as e:  # noqa
            code, msg = 2, f"child crashed: {err(e)}"
        sys.stdout.write(f"CHILD {code} {msg}\n")
        sys.stdout.flush()
        os._exit(code)
    deadline = time.time() + 12
    status = None
    while time.time() < deadline:
        wp, st = os.waitpid(pid, os.WNOHANG)
        if wp:
            status = st
            break
        time.sleep(0.02)
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        return f"round {r}: child hung (killed)"
    for th in ths:
        th.join(15)
    if any(th.is_alive() for th in ths):
        threads_dump()
        broke(f"round {r}: parent thread hangs after the fork")
    for k, v in outs.items():
        for o in (v if isinstance(v, list) else []):
            if isinstance(o, BaseException) and not st_err(o):
                return f"round {r}: parent raw {err(o)}"
    if os.WIFSIGNALED(status):
        return f"round {r}: child killed by signal {os.WTERMSIG(status)} (alarm: hang)"
    if os.WEXITSTATUS(status) != 0:
        return f"round {r}: child failed ({os.WEXITSTATUS(status)}), see stdout"
    a1, a2, a3 = (t.to_numpy()[0] - POISON for t in (t1, t2, t3))
    if a3 != outs["z_at_exit"]:
        broke(f"round {r}: t3 written after its borrow ended (+{outs['z_at_exit']} at the exit, +{a3} later; "
              f"launch: {[err(o) if isinstance(o, BaseException) else 'ran' for o in outs['z']]})")
    if a1 != 1 or a2 != sum(1 for o in outs["y"] if not isinstance(o, BaseException)):
        return f"round {r}: parent results t1+{a1} t2+{a2} t3+{a3} (y={len(outs['y'])})"
    return None


def safe(f):
    try:
        return f()
    except BaseException as e:  # noqa
        return e


bad = []
for r in range(5):
    m = parent_round(r)
    if m:
        bad.append(m)
if bad:
    broke("; ".join(bad[:3]))
held(f"native={NATIVE}: 5 forks during borrow exits / replays / compiles: children bounded and correct, parent exact")

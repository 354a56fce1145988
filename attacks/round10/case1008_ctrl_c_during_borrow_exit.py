"""G4 Ctrl-C (new): a KeyboardInterrupt (real SIGINT sent to the main thread with signal.pthread_kill from a timer thread, or
_thread.interrupt_main) arrives while the main thread is leaving `with ct.borrow_mut(t)` and waiting for work
another thread runs on the borrowed partition: (A/B) a long launch, (E) a graph replay of a graph captured in the
block; or while main itself runs work on it: (C) a long sync(), (D) a long g.launch() replay; then the block is
left by the KeyboardInterrupt.
Expect (G4: "a KeyboardInterrupt arriving during that wait is held back until the running work has ended and the
borrow is over, then raised"): the KI is raised; by then the other thread's work has ended (t final) and nothing
writes t afterwards; the borrowed partition is refused afterwards; t fully usable; no hang; no raw error.
Run with the C fast path on and off."""
from _r10 import *
import _thread
import signal

both_ways()
native_loaded()
LONG = 60000
_w = ct.zeros(64).sync().partition(16)
_w, _ = slow_inc(_w, 1).sync()
problems = []
res = {}


def fire(how, delay):
    def f():
        time.sleep(delay)
        if how == "signal":
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)   # a real SIGINT to the main thread
        else:
            _thread.interrupt_main()
    threading.Thread(target=f, daemon=True).start()


def one(kind):
    t = poisoned(64)
    out = []
    th = None
    ki_at = None
    t_at_ki = None
    try:
        with ct.borrow_mut(t) as b:
            p = b.partition(16)
            if kind in ("A", "B"):
                th = threading.Thread(target=lambda: out.append(safe(lambda: slow_inc(p, LONG).sync())), daemon=True)
                th.start()
                time.sleep(0.05)
                fire("signal" if kind == "A" else "main", 0.05)   # lands during the exit's wait
            elif kind == "E":
                g = slow_inc(p, LONG).graph()
                th = threading.Thread(target=lambda: out.append(safe(lambda: g.launch())), daemon=True)
                th.start()
                time.sleep(0.05)
                fire("signal", 0.05)
            elif kind == "C":
                fire("signal", 0.08)
                slow_inc(p, LONG).sync()
                time.sleep(1.0)
            elif kind == "D":
                g = slow_inc(p, LONG).graph()
                fire("main", 0.08)
                g.launch()
                time.sleep(1.0)
        time.sleep(1.0)          # not interrupted yet? the KI must come within this
        return f"no KeyboardInterrupt at all (out={out})"
    except KeyboardInterrupt:
        ki_at = time.time()
        t_at_ki = t.to_numpy().copy() if kind not in ("C", "D") else None
    if th is not None:
        alive_at_ki = th.is_alive()
        th.join(15)
        if th.is_alive():
            threads_dump()
            broke(f"{kind}: worker hangs")
    a = t.to_numpy().copy()
    if t_at_ki is not None and not np.array_equal(a, t_at_ki):
        broke(f"{kind}: t written after the KeyboardInterrupt left the borrow: {t_at_ki[:2]} -> {a[:2]} ({out})")
    time.sleep(0.05)
    if not np.array_equal(a, t.to_numpy()):
        broke(f"{kind}: t written after the borrow ended")
    for o in out:
        if isinstance(o, BaseException) and not st_err(o):
            problems.append(f"{kind}: raw {err(o)}")
    try:
        inc(p).sync()
        problems.append(f"{kind}: partition usable after the borrow")
    except Exception as e:  # noqa
        if not st_err(e):
            problems.append(f"{kind}: raw {err(e)}")
    try:
        q = t.partition(16)
        q, = inc(q).sync()
        if not np.array_equal(q.unpartition().to_numpy(), a + 1):
            problems.append(f"{kind}: t wrong afterwards")
    except Exception as e:  # noqa
        problems.append(f"{kind}: t unusable afterwards: {err(e)}")
    return f"t+={a[0] - POISON:g}, worker {[err(o, 50) if isinstance(o, BaseException) else 'ok' for o in out]}"


def safe(f):
    try:
        return f()
    except BaseException as e:  # noqa
        return e


for kind in "ABCDE" * 2:
    r = one(kind)
    if r.startswith("no KeyboardInterrupt"):
        problems.append(f"{kind}: {r}")
    res[kind] = r
if problems:
    broke("; ".join(problems[:4]))
held(f"native={NATIVE}: {res}")

"""G4/G9 Ctrl-C: a KeyboardInterrupt (a real SIGINT sent to the main thread by signal.pthread_kill from a timer thread, and
_thread.interrupt_main) lands while the main thread is making a launch on a borrowed partition whose kernel
compiles for the first time (`ct.static_eval` sleeps: compilation is @interruptible per the docs), so the
`with ct.borrow_mut(t)` block is left by the KeyboardInterrupt.
Expect: the KI is raised promptly (compilation is interruptible); the launch gave back what it took; t is
unchanged and fully usable (partition, launch, shared); the kernel's compile lock is not left held: the same
kernel compiles afterwards, from this thread and from another thread, within bounded time; no raw error.
Run with the C fast path on and off."""
from _r10 import *
import _thread
import signal
import random

both_ways()
native_loaded()
rnd = random.Random(os.getpid())


@ct.entry
def inc_sc(z: ct.Mut[ct.f32, "B"], k: ct.Constant[int]):
    ct.static_eval(time.sleep(0.6))
    z.store(z.load() + 1.0)


def fire(how, delay):
    def f():
        time.sleep(delay)
        if how == "signal":
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)   # a real SIGINT to the main thread
        else:
            _thread.interrupt_main()
    threading.Thread(target=f, daemon=True).start()


problems = []
lat = []
for how in ("signal", "main", "signal", "main"):
    t = poisoned(64)
    t0 = time.time()
    got = None
    try:
        with ct.borrow_mut(t) as b:
            p = b.partition(16)
            fire(how, 0.2)
            inc_sc(p, rnd.randrange(1 << 50)).sync()
            time.sleep(2.0)
    except KeyboardInterrupt:
        got = time.time() - t0
    except Exception as e:  # noqa
        problems.append(f"{how}: {err(e)} instead of KeyboardInterrupt")
    if got is None:
        problems.append(f"{how}: no KeyboardInterrupt")
        continue
    lat.append(round(got, 2))
    a = t.to_numpy()
    if not np.all(a == POISON):
        problems.append(f"{how}: t changed by the interrupted launch: {a[:2]}")
    # t fully usable, and the kernel compiles again (its compile lock was released)
    res = []

    def other():
        try:
            q = ct.zeros(64).sync().partition(16)
            q, _ = inc_sc(q, rnd.randrange(1 << 50)).sync()
            res.append(q.unpartition().to_numpy()[0])
        except BaseException as e:  # noqa
            res.append(e)
    th = threading.Thread(target=other, daemon=True)
    th.start()
    th.join(8)
    if th.is_alive():
        threads_dump()
        broke(f"{how}: another thread cannot compile the kernel after the interrupted compile (lock left held?)")
    if res != [1.0]:
        problems.append(f"{how}: other thread's compile: {res}")
    try:
        q = t.partition(16)
        q, _ = inc_sc(q, rnd.randrange(1 << 50)).sync()
        t2 = q.unpartition()
        if not np.all(t2.to_numpy() == POISON + 1):
            problems.append(f"{how}: t wrong after")
        t2.shared().try_unwrap()
    except Exception as e:  # noqa
        problems.append(f"{how}: t not usable after the interrupted borrow: {err(e)}")
    try:
        inc(p).sync()
        problems.append(f"{how}: the borrow's partition is still usable")
    except Exception as e:  # noqa
        if not st_err(e):
            problems.append(f"{how}: raw {err(e)}")
if problems:
    broke("; ".join(problems[:4]))
held(f"native={NATIVE}: KI latencies {lat} s (fired at 0.2 s); t unchanged and usable; kernel compiles again")

"""Promise (safety.md G4, 'Interrupted waiters'): 'Work running on the interrupted thread itself
(nothing was queued) is interrupted with it: the launch fails, as on any exception.' G9: 'Any
host thread may launch, sync or read at any time.'

Focused form of 301(c): a KeyboardInterrupt (SIGALRM) lands at a random moment while `op.sync()`
runs a CPU kernel inline on the main thread (60 trials). Afterwards: a launch on *fresh, unrelated* memory must
run (not hang), and the interrupted launch's memory must be readable and reusable."""
import gc
import signal
import time
import warnings

from _r3 import *


class Boom(KeyboardInterrupt):
    pass


def body():
    warnings.simplefilter("ignore")
    n = 1 << 16
    xs = ct.ones(n).sync().shared()
    fill(ct.zeros(n).sync().partition(256), xs).sync()       # compile
    t0 = time.perf_counter()
    fill(ct.zeros(n).sync().partition(256), xs).sync()
    dur = time.perf_counter() - t0

    def handler(signum, frame):
        raise Boom()
    signal.signal(signal.SIGALRM, handler)
    outcomes = []
    import random
    rng = random.Random(7)
    for frac in [rng.uniform(0.02, 1.0) for _ in range(60)]:
        t = ct.zeros(n).sync()
        v = t[:]
        op = fill(t.partition(256), xs)
        STAGE[0] = f"sync interrupted {frac:.0%} in (trial {len(outcomes)})"
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, dur * frac)
                op.sync()
                outcomes.append("finished")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except Boom:
            outcomes.append("interrupted")
        STAGE[0] = f"after trial {len(outcomes) - 1} ({outcomes[-1]} at {frac:.0%}): the main thread's next call"
        del op, t
        gc.collect()
        res = []

        def later():
            try:
                fill(ct.zeros(1024).sync().partition(256), ct.ones(1024).sync()).sync()
                res.append("fresh ok")
                v.to_numpy()
                res.append("view ok")
                v.partition(256).unpartition().shared()
                res.append("reclaim ok")
            except Exception as e:  # noqa: BLE001
                res.append(f"{type(e).__name__}: {str(e)[:150]}")
        th = threading.Thread(target=later, daemon=True)
        th.start()
        th.join(3)
        if th.is_alive():
            broken(f"after a KeyboardInterrupt {frac:.0%} into an inline sync() ({outcomes[-1]}), a later launch "
                   f"or read hangs (got only {res})")
        if res[-1] != "reclaim ok":
            broken(f"after a KeyboardInterrupt {frac:.0%} into an inline sync(): {res[-1]}")
    held(f"{outcomes.count('interrupted')} interrupted inline syncs of {len(outcomes)}: later launches, reads and reuse all work")


STAGE = ["setup"]


def _main_thread_hang():
    import faulthandler
    print(f"BROKEN: the main thread hangs ({STAGE[0]}) after a KeyboardInterrupt landed in an inline sync(); "
          "stack:")
    sys.stdout.flush()
    faulthandler.dump_traceback(all_threads=True)
    os._exit(1)


_wd = threading.Timer(16, _main_thread_hang)
_wd.daemon = True
_wd.start()
run_guarded(body, "KeyboardInterrupt inside an inline kernel")

"""307 with a real Ctrl-C. Promise (safety.md G4, "Ctrl-C"): a Ctrl-C while `op.sync()` runs a CPU
kernel inline on the main thread stops the kernel promptly (a kernel body is an interruptible
point); the launch fails with KeyboardInterrupt as on any exception and gives everything back: a
launch on fresh, unrelated memory then runs, and the interrupted launch's memory is readable and
reusable (partitioned again and shared once the op and its values are dropped).

Fuzz: SIGINT to the main thread (signal.pthread_kill) at a random moment of an inline sync()."""
import gc
import random
import time
import warnings

from _ctrl_c import *
from _ctrl_c import CAUGHT, SENT, assert_handler_is_safetiles, interrupted, late_is_broken


def body():
    assert_handler_is_safetiles()
    warnings.simplefilter("ignore")
    rng = random.Random(int(os.environ.get("SEED", time.time_ns() % 100000)))
    n = 1 << 21  # a kernel of some ms, so most signals arrive while it runs
    xs = ct.ones(n).sync().shared()
    fill(ct.zeros(n).sync().partition(256), xs).sync()  # compile
    durs = []
    for _ in range(3):
        op = fill(ct.zeros(n).sync().partition(256), xs)
        t0 = time.perf_counter()
        op.sync()
        durs.append(time.perf_counter() - t0)
    dur = min(durs)
    outcomes = []
    slow = 0.0
    end = time.time() + 7
    while time.time() < end and len(outcomes) < 80:
        t = ct.zeros(n).sync()
        v = t[:]
        op = fill(t.partition(256), xs)
        try:
            _, err, (where, _) = interrupted(op.sync, rng.uniform(0.0, 1.05) * dur)
        except Exception as e:  # noqa: BLE001
            broken(f"an interrupted inline sync() failed with {type(e).__name__} (not KeyboardInterrupt): "
                   f"{str(e)[:200]}")
        outcomes.append("interrupted" if err is not None else "finished")
        if err is not None:
            slow = max(slow, CAUGHT[0] - SENT[0])
        del op, t, err
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
            broken(f"after a Ctrl-C in an inline sync() ({outcomes[-1]}), a later launch or read hangs (got {res})")
        if res[-1] != "reclaim ok":
            broken(f"after a Ctrl-C in an inline sync() ({outcomes[-1]}): {res[-1]}")
    k = outcomes.count("interrupted")
    if k == 0:
        inconclusive(f"no Ctrl-C landed in {len(outcomes)} inline syncs")
    if slow > 0.25:
        broken(f"a Ctrl-C took {slow * 1e3:.0f} ms to stop a {dur * 1e3:.0f} ms inline kernel")
    held(f"{k} interrupted inline syncs of {len(outcomes)} (kernel {dur * 1e3:.0f} ms; Ctrl-C to KeyboardInterrupt "
         f"at most {slow * 1e3:.0f} ms): later launches, reads and reuse all work")


watch_main_thread(18)
run_guarded(late_is_broken(body), "Ctrl-C inside an inline kernel")

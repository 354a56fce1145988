"""Promise (safety.md G9, "Across os.fork()"): around every fork the runtime's process-wide locks
are taken in one fixed order, released after in the parent, "and made fresh in the child, so the
child never inherits a lock held by a thread it does not have"; memory being written at the fork
is refused in the child with a ForkError "at once instead of waiting forever"; all other memory
stays usable. (The C twin takes the ownership lock itself, through objects it found once.)

Attack, with the C twin on and off: two threads run tight loops of repeated launches (the C
twin's case; one of them reads a Shared); the main thread forks 25 times meanwhile. Each child,
under an alarm, must (1) run 20 repeated launches of the same kernel on memory that was not in
flight (its own partition, prepared before the fork), (2) run a launch on fresh memory, (3) read
the Shared, and (4) answer a read of a hammered partition's memory with its data or a ForkError,
all within 5 s; then exit 0. The parent's threads must end with right results.
"""
from _r5 import *

import threading
import time


def scenario(rec):
    @ct.entry
    def inc(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(z.load() + ct.load_tile_like(x, z))
    nat = native_module()
    N = 256
    s = ct.from_dlpack(np.ones(N, np.float32)).shared()
    mine_b = np.zeros(N, np.float32)
    mine = [ct.from_dlpack(mine_b).partition(64)]
    for _ in range(200):
        mine[0], _ = inc(mine[0], s).sync()
        if nat.FAST.build is not None or os.environ.get("SAFETILE_SAFE_NATIVE") == "0":
            break
        time.sleep(0.02)
    bufs = [np.zeros(N, np.float32) for _ in range(2)]
    views = [ct.from_dlpack(b) for b in bufs]
    runs = [0, 0]
    stop = threading.Event()
    errs = []

    def hammer(i):
        try:
            z = ct.from_dlpack(bufs[i]).partition(64)
            xs = s if i == 0 else ct.from_dlpack(np.ones(N, np.float32))
            while not stop.is_set():
                z, xs = inc(z, xs).sync()
                runs[i] += 1
        except BaseException as e:  # noqa: BLE001
            errs.append(exc_str(e)[:200])
    ths = [threading.Thread(target=hammer, args=(i,)) for i in range(2)]
    [t.start() for t in ths]
    time.sleep(0.1)
    statuses = []
    for f in range(25):
        before = float(mine_b[0])
        pid = os.fork()
        if pid == 0:
            import signal
            signal.signal(signal.SIGALRM, lambda *a: os._exit(17))
            signal.alarm(5)
            try:
                z = mine[0]
                for _ in range(20):
                    z, _ = inc(z, s).sync()
                if float(mine_b[0]) != before + 20:
                    os._exit(11)
                fz = ct.from_dlpack(np.zeros(64, np.float32)).partition(64)
                fz, _ = inc(fz, ct.from_dlpack(np.ones(64, np.float32))).sync()
                s.to_numpy()
                try:
                    views[0].to_numpy()
                except ct.ForkError if hasattr(ct, "ForkError") else Exception:
                    pass
                os._exit(0)
            except BaseException:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                os._exit(12)
        _, st = os.waitpid(pid, 0)
        statuses.append(os.waitstatus_to_exitcode(st))
        time.sleep(0.01)
    stop.set()
    [t.join() for t in ths]
    rec("child exit codes (0 ok, 17 hung, 11 wrong, 12 raised)", sorted(set(statuses)))
    rec("parent thread errors", errs[:2])
    rec("parent hammer results whole", [bool(np.all(bufs[i] == runs[i])) for i in range(2)])


def check(log):
    d = dict(log)
    if "SCENARIO-RAISED" in d:
        return [d["SCENARIO-RAISED"][:300]]
    bad = []
    if d["child exit codes (0 ok, 17 hung, 11 wrong, 12 raised)"] != [0]:
        bad.append(f"children: exit codes {d['child exit codes (0 ok, 17 hung, 11 wrong, 12 raised)']} (17: hung 5 s)")
    if d["parent thread errors"]:
        bad.append(f"parent: {d['parent thread errors']}")
    if d["parent hammer results whole"] != [True, True]:
        bad.append("parent results wrong")
    return bad


def main():
    problems, logs = each_mode(__file__, scenario, check, "fork", timeout=200)
    if problems:
        broken("; ".join(problems[:4]))
    held("25 forks during tight repeated-launch loops: every child launches, reads and exits promptly")


run_guarded(main, "513")

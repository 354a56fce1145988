"""G9 fork safety: user code that runs while safetile holds OWNERSHIP (a launch argument's __class__, read
by isinstance in LaunchOp._take; a finalizer collected there would do the same) calls os.fork(). The forking
thread holds the lock at depth >= 1 when the fork handlers run; the child re-initialises it (free, depth 0)
while the forking thread's frames still expect to release it.
Expect in the child: the interrupted launch ends with a safetile error or a refusal (never a raw
RuntimeError from releasing a lock), the tensor it took is usable or reported moved, and fresh launches,
partitions and reads work; in the parent everything goes on normally."""
from _r9 import *

require_c_lock()
forked = {}


class Forker:
    @property
    def __class__(self):
        if ownership.OWNERSHIP._is_owned() and "pid" not in forked:
            forked["pid"] = os.fork()
            if forked["pid"] == 0:
                threading.Timer(15, lambda: os._exit(9)).start()
        return Forker


t = ct.from_dlpack(np.zeros(64, np.float32))
p = t.partition(16)
outcome = None
try:
    addk(p, Forker())
    outcome = "accepted"
except Exception as e:  # noqa
    outcome = err(e, 200)
pid = forked.get("pid")
if pid == 0:  # child
    report = [f"launch: {outcome}"]
    code = 0
    if "(RAW)" in outcome:
        code = 2
    try:
        z = poisoned(64).partition(16)
        (z,) = inc(z).sync()
        ok = z.unpartition().to_numpy()[0] == POISON + 1
        report.append(f"fresh launch ok={ok}")
        if not ok:
            code = 5
        try:
            (p,) = inc(p).sync()
            report.append(f"p usable, {p.unpartition().to_numpy()[0]}")
        except Exception as e:  # noqa
            report.append(f"p: {err(e, 100)}")
            if not is_st(e):
                code = 2
        report.append(f"lock after: {ownership.OWNERSHIP!r}")
        lk = ownership.OWNERSHIP
        if (lk.locked() if hasattr(lk, "locked") else "count=0" not in repr(lk)):
            code = code or 7
    except BaseException as e:  # noqa
        report.append(f"child failed: {err(e)}")
        code = 6
    with open(f"/tmp/r9_904_{os.getppid()}.txt", "w") as fh:
        fh.write(" | ".join(report))
    os._exit(code)
if pid is None:
    inconclusive(f"the fork did not happen inside the locked section ({outcome})")
_, st = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(st)
rep = open(f"/tmp/r9_904_{os.getpid()}.txt").read() if os.path.exists(f"/tmp/r9_904_{os.getpid()}.txt") else "(no report)"
print(f"parent launch: {outcome}; child exit {code}: {rep}")
if "(RAW)" in outcome:
    broke(f"parent: raw error {outcome}")
z = poisoned(64).partition(16)
(z,) = inc(z).sync()
(p,) = inc(p).sync()
if code == 2:
    broke(f"({lock_kind()}) child: a raw error escaped where the fork happened inside OWNERSHIP, and the "
          f"tensor that launch took stays moved into a launch that no longer exists: {rep}")
if code == 7:
    broke(f"({lock_kind()}) child: OWNERSHIP left held: {rep}")
if code != 0:
    broke(f"({lock_kind()}) child exit {code}: {rep}")
held(f"({lock_kind()}) child: {rep}")

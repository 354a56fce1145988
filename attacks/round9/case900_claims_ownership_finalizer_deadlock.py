"""G9 (and G4: dropping an op gives its arguments back). Lock order: a partition (and shared(), a graph's
hold, a DLPack export) takes OWNERSHIP, then the claims lock. A dropped partition's claim ends in a finalizer
(weakref.finalize -> Claims._forget) that takes the claims lock *without* OWNERSHIP, and allocates under it
(a dict view), so the cyclic collector can run there; a LaunchOp dropped unrun in a reference cycle is
collected by it and gives its arguments back under OWNERSHIP (LaunchOp.__del__, C op_del). Two threads,
public API only: A partitions/unpartitions one tensor in a loop; B drops partitions and drops unrun launches
kept in reference cycles. Expect: both threads keep making progress (no deadlock)."""
from _r9 import *

require_c_lock()
N, TILE = 64, 16
gc.collect()
gc.freeze()               # the import-time heap out of the collector's way: young collections stay cheap
gc.set_threshold(1, 2, 2)  # a collection at (nearly) every container allocation (public knob)
sys.setswitchinterval(1e-5)
prog = {"A": 0, "B": 0}
inside = {"gc_in_forget": 0}


def _gc_cb(phase, info):  # diagnostics only: how often a collection starts inside Claims._forget
    if phase == "start":
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_name == "_forget":
                inside["gc_in_forget"] += 1
                break
            f = f.f_back


gc.callbacks.append(_gc_cb)
stop = threading.Event()
errors = []


def thread_a():
    t = ct.from_dlpack(np.zeros(N, np.float32))
    try:
        while not stop.is_set():
            p = t.partition(TILE)
            t = p.unpartition()
            prog["A"] += 1
    except BaseException as e:  # noqa
        errors.append("A: " + err(e))


def thread_b():
    try:
        while not stop.is_set():
            u = ct.from_dlpack(np.zeros(N, np.float32))
            op = inc(u.partition(TILE))  # built, never run
            op.cyc = op                   # only the cyclic collector frees it: LaunchOp.__del__ gives back
            del op
            v = ct.from_dlpack(np.zeros(N, np.float32))
            q = v.partition(TILE)
            del q                         # Claims._forget runs now, on this thread, claims lock only
            prog["B"] += 1
    except BaseException as e:  # noqa
        errors.append("B: " + err(e))


ths = [threading.Thread(target=thread_a, daemon=True), threading.Thread(target=thread_b, daemon=True)]
for th in ths:
    th.start()
t_end = time.time() + 30
last = dict(prog)
last_t = time.time()
while time.time() < t_end:
    time.sleep(0.5)
    if errors:
        break
    if prog != last:
        last, last_t = dict(prog), time.time()
    elif time.time() - last_t > 6:
        print(f"no progress for 6 s after A={prog['A']} B={prog['B']} iterations ({lock_kind()}); OWNERSHIP: "
              f"{ownership.OWNERSHIP!r}; collections started inside Claims._forget: {inside['gc_in_forget']}; threads:")
        sys.stdout.flush()
        fmt_threads()
        broke(f"deadlock: A (partition: OWNERSHIP -> claims lock) and B (dropped partition's finalizer "
              f"holding the claims lock -> GC -> dropped LaunchOp.__del__ -> OWNERSHIP) wait on each other "
              f"after A={prog['A']}, B={prog['B']} iterations")
stop.set()
for th in ths:
    th.join(5)
if errors:
    broke("a thread failed: " + "; ".join(errors))
held(f"no deadlock in 30 s ({lock_kind()}): A={prog['A']} partition/unpartition, B={prog['B']} dropped ops and "
     f"partitions, {inside['gc_in_forget']} collections inside Claims._forget")

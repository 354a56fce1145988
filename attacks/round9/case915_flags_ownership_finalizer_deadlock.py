"""G9: a second lock-order inversion through finalizers, between OWNERSHIP and the in-flight waiters' lock
(memory._FLAGS). A dropped unrun LaunchOp collected by the cyclic collector gives its arguments back under
OWNERSHIP and then notifies waiters (notify_all takes _FLAGS); when that collection runs inside another
OWNERSHIP section (a partition), _FLAGS is taken under OWNERSHIP. A host read waiting for a launch tests its
condition under _FLAGS (wait_until), and a collection there runs the same finalizer, which takes OWNERSHIP
under _FLAGS. Public API only: A launches with a raw NumPy input (the Python take); B drops unrun launches (on partitions
made up front, so no claim ends in this run) kept in reference cycles;
C launches chains on a buffer that D reads through a second wrapper (so D waits in wait_until).
Expect: all threads keep making progress."""
from _r9 import *

require_c_lock()
N, TILE = 4096, 256
arr = np.zeros(N, np.float32)
gc.collect()
gc.freeze()
gc.set_threshold(1, 2, 2)
sys.setswitchinterval(1e-5)
prog = {"A": 0, "B": 0, "C": 0, "D": 0}
stop = threading.Event()
errors = []


def a():
    pa = ct.from_dlpack(np.zeros(64, np.float32)).partition(16)
    raw = np.ones(64, np.float32)
    while not stop.is_set():
        (pa, _) = addk(pa, raw).sync()  # a raw NumPy Ref: the Python path's _take (allocates under OWNERSHIP)
        prog["A"] += 1


POOL = [ct.from_dlpack(np.zeros(64, np.float32)).partition(16) for _ in range(64)]


def b():
    i = 0
    while not stop.is_set():
        try:
            op = inc(POOL[i % len(POOL)])  # partitions made up front: no claims traffic in this loop
        except Exception:  # noqa (still held by a dropped op not yet collected)
            i += 1
            continue
        op.cyc = op
        del op
        i += 1
        prog["B"] += 1


def c():
    zp = ct.from_dlpack(arr).partition(TILE)
    while not stop.is_set():
        (zp,) = inc(zp).then(lambda v: inc(*v)).sync()
        prog["C"] += 1


def d():
    r = ct.from_dlpack(arr)
    while not stop.is_set():
        r.to_numpy()  # waits for C's launches on the same memory (wait_until, its test under _FLAGS)
        prog["D"] += 1


def guard(f, name):
    def g():
        try:
            f()
        except BaseException as e:  # noqa
            errors.append(f"{name}: {err(e)}")
    return g


ths = [threading.Thread(target=guard(f, n), daemon=True) for f, n in ((a, "A"), (b, "B"), (c, "C"), (d, "D"))]
for th in ths:
    th.start()
t_end = time.time() + 30
last = dict(prog)
last_t = {k: time.time() for k in prog}
while time.time() < t_end and not errors:
    time.sleep(0.5)
    for k in prog:
        if prog[k] != last[k]:
            last[k], last_t[k] = prog[k], time.time()
    if any(time.time() - last_t[k] > 6 for k in prog):
        print(f"a thread made no progress for 6 s: {prog} ({lock_kind()}); OWNERSHIP {ownership.OWNERSHIP!r}; threads:")
        sys.stdout.flush()
        fmt_threads()
        broke(f"deadlock after {prog}: see the threads above")
stop.set()
for th in ths:
    th.join(5)
if errors:
    broke("; ".join(errors))
held(f"no deadlock in 30 s: {prog}")

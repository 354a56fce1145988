"""G9 fork safety with the C lock: 4 threads churn C-twin launches, then-chains, partitions, shared handles
and dropped ops (taking OWNERSHIP, the claims lock and the registry lock all the time) while the main thread
forks 15 times. Expect: every child launches on fresh memory with the right result and exits promptly (no
inherited held lock: a fork waits for each lock at most 2 s, then re-initialises it in the child); in the
parent no thread stalls and all results equal the NumPy reference."""
from _r9 import *

require_c_lock()
N, TILE, FORKS = 64, 16, 15
stop = threading.Event()
prog = [0] * 4
bad = []


def churn(i):
    z = poisoned(N).partition(TILE)
    x = ct.from_dlpack(np.full(N, 1.0, np.float32)).shared()
    n = 0
    try:
        while not stop.is_set():
            z, x = addk(z, x).then(lambda v: addk(*v)).sync()
            (z,) = inc(z).sync()
            u = ct.from_dlpack(np.zeros(N, np.float32))
            op = inc(u.partition(TILE))
            del op  # dropped unrun: given back with a warning
            n += 1
            prog[i] = n
        got = z.unpartition().to_numpy()
        if not np.array_equal(got, np.full(N, POISON + 3 * n, np.float32)):
            bad.append(f"thread {i}: {got[0]} != {POISON + 3 * n}")
        x.try_unwrap()
    except BaseException as e:  # noqa
        bad.append(f"thread {i}: {err(e)}")


ths = [threading.Thread(target=churn, args=(i,), daemon=True) for i in range(4)]
for th in ths:
    th.start()
time.sleep(0.3)
codes = []
slow = []
for f in range(FORKS):
    time.sleep(0.05)
    t0 = time.time()
    pid = os.fork()
    if pid == 0:
        threading.Timer(10, lambda: os._exit(9)).start()
        try:
            z = poisoned(N).partition(TILE)
            x = ct.from_dlpack(np.full(N, 2.0, np.float32)).shared()
            z, x = addk(z, x).then(lambda v: addk(*v)).sync()
            ok = np.array_equal(z.unpartition().to_numpy(), np.full(N, POISON + 4, np.float32))
            x.try_unwrap()
            os._exit(0 if ok else 5)
        except BaseException:  # noqa
            os._exit(6)
    fork_s = time.time() - t0
    if fork_s > 1.0:
        slow.append(round(fork_s, 2))
    deadline = time.time() + 15
    code = None
    while time.time() < deadline:
        r, st = os.waitpid(pid, os.WNOHANG)
        if r:
            code = os.waitstatus_to_exitcode(st)
            break
        time.sleep(0.02)
    if code is None:
        os.kill(pid, 9)
        code = "hung"
    codes.append(code)
before = list(prog)
time.sleep(0.5)
stalled = [i for i in range(4) if prog[i] == before[i]]
stop.set()
for th in ths:
    th.join(15)
print(f"child exits {codes}; slow forks {slow}; parent progress {prog}")
if stalled:
    broke(f"parent threads {stalled} stalled after the forks")
if bad:
    broke("; ".join(bad[:3]))
if any(c != 0 for c in codes):
    broke(f"children failed: {codes} (9/hung: hung, 5: wrong values, 6: exception)")
held(f"{FORKS} forks under churn: every child launched correctly; parent threads exact")

"""G4 "Ctrl-C anywhere" + G9 with the C lock: the main thread is mostly *blocked* on OWNERSHIP (another thread
holds it in ~30 ms stretches: user code that runs under it, a launch argument's __class__ read by isinstance
in LaunchOp._take) while it builds C-twin launches, chains, cancels and partitions, and real SIGINTs arrive
every few ms. A Ctrl-C may now end such a wait (a KeyboardInterrupt out of the C build's lock, out of
`with OWNERSHIP`, ...). Expect: never a raw error; no lock left held (the holder thread keeps going; both
locks free at the end); after the storm (dropped ops collected) the main thread's partition and Shared are
usable, and the partition's value is POISON + an integer no larger than the launches started."""
from _r9 import *
import random
import signal

require_c_lock()
N, TILE, SECS = 64, 16, 8.0
stop = threading.Event()
hold_rounds = [0]


class Slow:
    @property
    def __class__(self):
        if ownership.OWNERSHIP._is_owned():  # (only to aim: user code that takes its time under the lock)
            time.sleep(0.03)
        return Slow


def holder():
    t = ct.from_dlpack(np.zeros(N, np.float32))
    p = t.partition(TILE)
    while not stop.is_set():
        try:
            addk(p, Slow())
        except Exception:  # noqa (refused after the sleeps: not a tensor)
            pass
        hold_rounds[0] += 1
        time.sleep(0.01)  # let the main thread in between (case911 is about what happens without this)


main_id = threading.main_thread().ident
kills = [0]


def killer():
    rnd = random.Random(10)
    while not stop.is_set():
        time.sleep(rnd.uniform(0.003, 0.04))
        signal.pthread_kill(main_id, signal.SIGINT)
        kills[0] += 1


h = threading.Thread(target=holder, daemon=True)
h.start()
time.sleep(0.2)
p = poisoned(N).partition(TILE)
s = ct.from_dlpack(np.full(N, 1.0, np.float32)).shared()
k = threading.Thread(target=killer, daemon=True)
k.start()
bad = []
counts = {"ki": 0, "ok": 0, "started": 0}
t_end = time.time() + SECS
j = 0


def one():
    global p, s, j
    m = j % 5
    j += 1
    counts["started"] += 2 if m in (0, 3) else 1
    try:
        if m == 0:
            p, s = addk(p, s).then(lambda v: inc(v[0])).then(lambda v: (v[0], s)).sync()
        elif m == 1:
            inc(p).cancel()
        elif m == 2:
            (p,) = inc(p).sync()
        elif m == 3:
            p, s = addk(p, s).then(lambda v: addk(*v)).sync()
        else:
            t = p.unpartition()
            p = t.partition(TILE)
        counts["ok"] += 1
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa
        if not is_st(e):
            bad.append(f"raw {err(e)}")


while True:
    try:
        try:
            if time.time() >= t_end:
                break
            one()
        except KeyboardInterrupt:
            counts["ki"] += 1
    except KeyboardInterrupt:
        counts["ki"] += 1
while True:
    try:
        stop.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        break
    except KeyboardInterrupt:
        counts["ki"] += 1
h.join(10)
if h.is_alive():
    fmt_threads()
    broke(f"the holder thread is stuck ({ownership.OWNERSHIP!r})")
for _ in range(3):
    gc.collect()
    time.sleep(0.1)
print(f"{kills[0]} SIGINTs, {counts}, holder rounds {hold_rounds[0]}")
if bad:
    broke("; ".join(bad[:3]))
if ownership.OWNERSHIP.locked() or memory.REGISTRY._lock.locked():
    broke(f"a lock is left held: {ownership.OWNERSHIP!r}")
try:
    v = p.to_numpy()
    (p,) = inc(p).sync()
    t = p.unpartition()
except Exception as e:  # noqa
    broke(f"the main partition is not usable after the storm: {err(e, 200)}")
try:
    s.try_unwrap()
except Exception as e:  # noqa
    broke(f"the Shared is still held after the storm: {err(e, 200)}")
kk = v[0] - POISON
if not (v == v[0]).all() or kk < 0 or kk > 2 * counts["started"]:
    broke(f"p = {v[0]}: not POISON + a plausible count")
if counts["ki"] < 20:
    inconclusive(f"only {counts['ki']} interrupts landed")
held(f"{counts['ki']} Ctrl-C while mostly blocked on OWNERSHIP: no raw error, no lock left held, values usable")

"""G4/G9 with the C lock: real Ctrl-C (SIGINT to the main thread, pthread_kill) at random moments while the
main thread runs C-twin launches and then-chains (with Shared inputs, cancel, op.shared()), and 3 worker
threads launch on their own memory all the time (taking OWNERSHIP and the registry lock constantly).
Expect: every interrupt surfaces as KeyboardInterrupt (or is absorbed), never a raw error; no lock is left
held (workers never stall > 5 s; both locks free at the end); the main thread's values come back usable
(after the interrupted work ended, dropped ops collected); worker results equal the NumPy reference."""
from _r9 import *
import random
import signal

require_c_lock()
N, TILE, SECS = 64, 16, 10.0
stop = threading.Event()
prog = [0, 0, 0]
bad = []


def worker(i):
    z = poisoned(N).partition(TILE)
    x = ct.from_dlpack(np.full(N, float(i + 1), np.float32)).shared()
    n = 0
    try:
        while not stop.is_set():
            z, x = addk(z, x).then(lambda v: addk(*v)).sync()
            (z,) = inc(z).sync()
            n += 1
            prog[i] = n
        got = z.unpartition().to_numpy()
        want = np.float32(POISON) + np.float32(n) * np.float32(2 * (i + 1) + 1)
        if not np.allclose(got, want):
            bad.append(f"worker {i}: {got[0]} != {want}")
        x.try_unwrap()
    except BaseException as e:  # noqa
        bad.append(f"worker {i}: {err(e)}")


main_id = threading.main_thread().ident
kills = [0]


def killer():
    rnd = random.Random(9)
    while not stop.is_set():
        time.sleep(rnd.uniform(0.002, 0.03))
        signal.pthread_kill(main_id, signal.SIGINT)
        kills[0] += 1


ws = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(3)]
for w in ws:
    w.start()
k = threading.Thread(target=killer, daemon=True)
k.start()
p = poisoned(N).partition(TILE)
s = ct.from_dlpack(np.full(N, 5.0, np.float32)).shared()
interrupts = raws = rounds = 0
t_end = time.time() + SECS
last = list(prog)
last_t = time.time()
j = 0
stalled = None


def one_round():
    global p, s, j, rounds, last, last_t, stalled
    m = j % 4
    j += 1
    try:
        if m == 0:
            p, s = addk(p, s).then(lambda v: inc(v[0])).then(lambda v: addk(v[0], s)).sync()
        elif m == 1:
            op = inc(p)
            op.cancel()
        elif m == 2:
            (p,) = inc(p).sync()
        else:
            p, s = addk(p, s).sync()
        rounds += 1
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa
        if not is_st(e):
            bad.append(f"main raw: {err(e)}")
    if prog != last:
        last, last_t = list(prog), time.time()
    elif time.time() - last_t > 5:
        stalled = f"workers stalled for 5 s ({ownership.OWNERSHIP!r}, registry {memory.REGISTRY._lock!r})"


while True:
    try:
        try:
            if time.time() >= t_end or stalled:
                break
            one_round()
        except KeyboardInterrupt:
            interrupts += 1
    except KeyboardInterrupt:
        interrupts += 1
while True:
    try:
        stop.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        break
    except KeyboardInterrupt:
        interrupts += 1
if stalled:
    fmt_threads()
    broke(stalled)
time.sleep(0.2)
for w in ws:
    w.join(10)

gc.collect()
time.sleep(0.3)
gc.collect()
locked = ownership.OWNERSHIP.locked() or memory.REGISTRY._lock.locked()
usable = None
try:
    (p,) = inc(p).sync()
    usable = "ok"
except Exception as e:  # noqa
    usable = err(e, 150)
print(f"{kills[0]} SIGINTs, {interrupts} KeyboardInterrupts, {rounds} main rounds, workers {prog}, p: {usable}")
if bad:
    broke("; ".join(bad[:3]))
if locked:
    broke(f"a lock is left held: {ownership.OWNERSHIP!r} {memory.REGISTRY._lock!r}")
if usable != "ok":
    broke(f"the main thread's partition is not usable after the fuzz: {usable}")
try:
    s.try_unwrap()
except Exception as e:  # noqa
    broke(f"the Shared input cannot be unwrapped after the fuzz: {err(e)}")
if interrupts < 20:
    inconclusive(f"only {interrupts} interrupts landed")
held(f"{interrupts} Ctrl-C interrupts during C-twin launches: no lock left held, values usable, workers exact")

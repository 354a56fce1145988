"""G4/G5/G9 with the C lock: a captured graph (two launches on partition p reading a Shared s) is replayed
by 4 threads at once while 2 threads launch on p directly (C-twin build) and 2 threads read p on the host.
Expect: replays of one graph run one at a time; a direct launch either wins p or is refused with a safetile
error; every host read sees whole replays/launches (all elements equal, POISON + an integer); the final p
equals POISON + 3*replays + direct launches (NumPy reference); s unchanged and unwrappable after close()."""
from _r9 import *

require_c_lock()
N, TILE, SECS = 64, 16, 8.0
p = poisoned(N).partition(TILE)
s = ct.from_dlpack(np.full(N, 2.0, np.float32)).shared()
(p,) = inc(p).sync()  # warm: the C build has a plan for inc(p)
g = addk(p, s).then(lambda v: inc(v[0])).graph()
base = POISON + 1.0
stop = threading.Event()
counts = {"replay": 0, "direct": 0, "read": 0, "refused": 0}
problems = []


def replayer():
    while not stop.is_set():
        try:
            g.launch()
            counts["replay"] += 1
        except Exception as e:  # noqa
            counts["refused"] += 1
            if not is_st(e):
                problems.append(f"replay raw {err(e)}")


def direct():
    while not stop.is_set():
        try:
            op = inc(p)
        except Exception as e:  # noqa
            counts["refused"] += 1
            if not is_st(e):
                problems.append(f"direct raw {err(e)}")
            continue
        op.sync()
        counts["direct"] += 1


def reader():
    while not stop.is_set():
        try:
            v = p.to_numpy()
        except Exception as e:  # noqa
            counts["refused"] += 1
            if not is_st(e):
                problems.append(f"read raw {err(e)}")
            continue
        counts["read"] += 1
        if not (v == v[0]).all() or (v[0] - base) != int(v[0] - base):
            problems.append(f"torn read {v[:3]}")


ths = [threading.Thread(target=f, daemon=True) for f in [replayer] * 4 + [direct] * 2 + [reader] * 2]
for th in ths:
    th.start()
time.sleep(SECS)
stop.set()
for th in ths:
    th.join(15)
if any(th.is_alive() for th in ths):
    fmt_threads()
    broke("a thread hangs")
g.close()
want = np.full(N, base + 3.0 * counts["replay"] + counts["direct"], np.float32)
got = p.unpartition().to_numpy()
sv = s.try_unwrap().to_numpy()
print(counts)
if problems:
    broke("; ".join(problems[:3]))
if not np.array_equal(got, want):
    broke(f"p = {got[0]} but reference {want[0]} ({counts})")
if not (sv == 2.0).all():
    broke("s changed")
if counts["replay"] < 20 or counts["direct"] < 20:
    inconclusive(f"too little contention {counts}")
held(f"{counts}: every replay and launch counted once, reads whole")

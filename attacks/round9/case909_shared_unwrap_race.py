"""G4/G6 with the C lock: a Shared s (its tensor holds a version number v in every element) is read by 5
threads launching copyk(z_i, s) (C-twin build: the Shared's hold count is bumped in C under OWNERSHIP) and
chains, while 3 threads race s.try_unwrap(): the winner writes v+1 into the tensor (a launch on its
partition) and publishes a fresh Shared. Expect: try_unwrap never succeeds while a launch holds s (a
reader's copy is always uniform: one version, never a mix); each Shared is unwrapped at most once; losers
and late readers get safetile errors; at the end the version equals the number of successful unwraps
(reference) and the last Shared unwraps."""
from _r9 import *

require_c_lock()
N, TILE, SECS = 4096, 256, 8.0
state = {"s": ct.from_dlpack(np.zeros(N, np.float32)).shared()}
unwraps = [0]
reads = [0]
problems = []
stop = threading.Event()
seen_unwrapped = set()
glock = threading.Lock()


def reader(i):
    z = poisoned(N).partition(TILE)
    while not stop.is_set():
        s = state["s"]
        try:
            op = copyk(z, s)
        except Exception as e:  # noqa
            if not is_st(e):
                problems.append(f"reader raw {err(e)}")
            continue
        if i % 2:
            op = op.then(lambda v: copyk(*v))
        z, _ = op.sync()
        v = z.to_numpy()
        if not (v == v[0]).all():
            problems.append(f"torn read: versions {sorted(set(v.tolist()))[:4]}")
        reads[0] += 1


def unwrapper():
    while not stop.is_set():
        s = state["s"]
        try:
            t = s.try_unwrap()
        except Exception as e:  # noqa
            if not is_st(e):
                problems.append(f"unwrap raw {err(e)}")
            continue
        with glock:
            if id(s) in seen_unwrapped:
                problems.append("one Shared unwrapped twice")
            seen_unwrapped.add(id(s))
        (p,) = inc(t.partition(TILE)).sync()
        unwraps[0] += 1
        state["s"] = p.unpartition().shared()
        seen_unwrapped.discard(id(s))  # (ids may be reused once s is gone)


ths = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(5)] + \
      [threading.Thread(target=unwrapper, daemon=True) for _ in range(3)]
for th in ths:
    th.start()
time.sleep(SECS)
stop.set()
for th in ths:
    th.join(15)
if any(th.is_alive() for th in ths):
    fmt_threads()
    broke("a thread hangs")
final = state["s"].try_unwrap().to_numpy()
print(f"reads {reads[0]}, unwraps {unwraps[0]}")
if problems:
    broke("; ".join(problems[:3]))
if not (final == unwraps[0]).all():
    broke(f"version {final[0]} != unwraps {unwraps[0]}")
if unwraps[0] < 10 or reads[0] < 100:
    inconclusive(f"too little contention: reads {reads[0]}, unwraps {unwraps[0]}")
held(f"{reads[0]} reads, {unwraps[0]} unwraps: never unwrapped while held, reads whole, versions exact")

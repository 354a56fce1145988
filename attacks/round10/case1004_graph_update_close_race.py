"""G4/G5/G9: one graph, many threads. 2 threads replay it (g.launch()), 1 thread re-points it with
g.update(inc(pa)) / g.update(inc(pb)) alternately (pa, pb partitions of two tensors), 1 thread launches
inc(pa) / inc(pb) directly, 1 thread reads A and B as host copies (whole launches only: all elements equal),
and at the end (after the updater stopped) main closes the graph while replays continue.
Expect: no raw error, no hang; A + B increments == successful replays + successful direct launches (no lost
update, no phantom replay); reads never torn; after g.close() no replay succeeds; A and B usable at the end.
Run with the C fast path on and off."""
from _r10 import *
import random

both_ways()
native_loaded()
rnd = random.Random(os.getpid())
N = 4096
A = ct.zeros(N).sync()
B = ct.zeros(N).sync()
vA, vB = A[0:N], B[0:N]   # views taken before the partitions: host reads wait for launches/replays
pa, pb = A.partition(256), B.partition(256)
problems = []
counts = {"replay": 0, "direct": 0, "update": 0, "after_close": 0}
lk = threading.Lock()
stop = threading.Event()
closed = threading.Event()
closed2 = threading.Event()
g = inc(pa).graph()


def bump(k):
    with lk:
        counts[k] += 1


def note(e, where):
    if not st_err(e):
        problems.append(f"{where}: raw {err(e)}")


def replayer():
    while not stop.is_set():
        try:
            was_closed = closed2.is_set()
            g.launch()
            bump("replay")
            if was_closed:
                bump("after_close")
        except Exception as e:  # noqa
            note(e, "replay")


def updater():
    i = 0
    while not stop.is_set() and not closed.is_set():
        i += 1
        p = pa if i % 2 else pb
        try:
            op = inc(p)
        except Exception as e:  # noqa
            note(e, "update build")
            continue
        try:
            g.update(op)
            bump("update")
        except Exception as e:  # noqa
            note(e, "update")
            try:
                op.cancel()
            except Exception as e2:  # noqa
                note(e2, "cancel")
        time.sleep(0.001)


def direct():
    while not stop.is_set():
        p = pa if rnd.random() < 0.5 else pb
        try:
            inc(p).sync()
            bump("direct")
        except Exception as e:  # noqa
            note(e, "direct")


def reader():
    while not stop.is_set():
        for v in (vA, vB):
            x = v.to_numpy()
            if not (x == x[0]).all():
                problems.append(f"torn host read: {np.unique(x)[:4]}")
        bump("reads")


counts["reads"] = 0
ths = [threading.Thread(target=f, daemon=True) for f in (replayer, replayer, updater, direct, reader)]
for th in ths:
    th.start()
time.sleep(4)
upd_stop = True
closed.set()          # the updater stops first: g.update() after g.close() re-opens the graph (see README)
ths[2].join(10)
g.close()
closed2.set()
time.sleep(1)
stop.set()
for th in ths:
    th.join(10)
if any(th.is_alive() for th in ths):
    threads_dump()
    broke("a thread hangs")
a = pa.unpartition().to_numpy()
b = pb.unpartition().to_numpy()
if not ((a == a[0]).all() and (b == b[0]).all()):
    broke(f"torn result: A {np.unique(a)[:4]} B {np.unique(b)[:4]}")
total = int(a[0] + b[0])
if total != counts["replay"] + counts["direct"]:
    broke(f"A+B = {total} but {counts['replay']} replays + {counts['direct']} direct launches succeeded ({counts})")
if counts["after_close"]:
    problems.append(f"{counts['after_close']} replays succeeded after g.close() returned")
if problems:
    broke("; ".join(sorted(set(problems))[:4]))
held(f"native={NATIVE}: counts exact {counts}")

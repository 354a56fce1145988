"""G4/G5/G6: a graph g = addk(pz, x).graph() (adds the Shared x = 5 to z) is replayed by 2 threads. Racing it:
a thread calling x.try_unwrap() in a loop (must be refused while g lives: "held by live graph(s)"), a thread
launching copyk(w, vz) (vz a view of z taken before partitioning; a Ref read must see whole replays only), and
main, which calls pz.unpartition() mid-way (replays after it must be refused), then g.close() (after which
try_unwrap must succeed, and the unwrapper then writes x's memory with a launch; no replay may read x then).
Expect: no raw errors or hangs; z = 5 * successful replays; every read of vz a multiple of 5, uniform;
try_unwrap never succeeds while g is open; x's memory written only after try_unwrap succeeded.
Run with the C fast path on and off."""
from _r10 import *

both_ways()
native_loaded()
N = 2048
problems = []
xs = ct.full(N, 5.0).sync()
x = xs.shared()
z = ct.zeros(N).sync()
vz = z[0:N]
pz = z.partition(256)
g = addk(pz, x).graph()
lk = threading.Lock()
cnt = {"replay": 0, "reads": 0, "after_unpart": 0, "unwrap_tries": 0}
state = {"unpartitioned": False, "closed": False, "unwrapped_at": None}
stop = threading.Event()


def note(e, where):
    if not st_err(e):
        problems.append(f"{where}: raw {err(e)}")


def replayer():
    while not stop.is_set():
        try:
            was = state["unpartitioned"]
            g.launch()
            with lk:
                cnt["replay"] += 1
                if was:
                    cnt["after_unpart"] += 1
        except Exception as e:  # noqa
            note(e, "replay")
            time.sleep(0.0005)


def unwrapper():
    while not stop.is_set():
        was_closed = state["closed"]
        try:
            tx = x.try_unwrap()
        except Exception as e:  # noqa
            note(e, "try_unwrap")
            cnt["unwrap_tries"] += 1
            time.sleep(0.0005)
            continue
        if not was_closed and not state["closed"]:
            problems.append("x.try_unwrap() succeeded while the graph reading it was open")
        state["unwrapped_at"] = time.time()
        p = tx.partition(256)
        p, = inc(p).sync()       # writes x's memory: no replay may read it now
        return


def reader():
    while not stop.is_set():
        w = ct.zeros(N).sync().partition(256)
        try:
            w, _ = copyk(w, vz).sync()
        except Exception as e:  # noqa
            note(e, "reader")
            continue
        a = w.unpartition().to_numpy()
        if not ((a == a[0]).all() and a[0] % 5 == 0):
            problems.append(f"torn/odd read of z: {np.unique(a)[:4]}")
        with lk:
            cnt["reads"] += 1


ths = [threading.Thread(target=f, daemon=True) for f in (replayer, replayer, unwrapper, reader)]
for th in ths:
    th.start()
time.sleep(2.5)
unpart_refusals = 0
while True:
    try:
        Z = pz.unpartition()     # refused (UseAfterMoveError) while a replay holds pz: try again
        break
    except Exception as e:  # noqa
        note(e, "unpartition")
        unpart_refusals += 1
        if unpart_refusals > 200000:
            broke("pz.unpartition() never got pz back from the replayers (starved)")
state["unpartitioned"] = True
cnt["unpart_refusals"] = unpart_refusals
time.sleep(0.5)
g.close()
state["closed"] = True
time.sleep(1.0)
stop.set()
for th in ths:
    th.join(10)
if any(th.is_alive() for th in ths):
    threads_dump()
    broke("a thread hangs")
a = Z.to_numpy()
if not (a == a[0]).all() or a[0] != 5 * cnt["replay"]:
    broke(f"z = {np.unique(a)[:4]} but {cnt['replay']} replays succeeded (x 5)")
if cnt["after_unpart"]:
    problems.append(f"{cnt['after_unpart']} replays succeeded after pz.unpartition() returned")
if state["unwrapped_at"] is None:
    problems.append("x.try_unwrap() never succeeded after g.close()")
if problems:
    broke("; ".join(sorted(set(problems))[:4]))
held(f"native={NATIVE}: {cnt}")

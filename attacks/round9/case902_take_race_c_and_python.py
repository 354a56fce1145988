"""G4: two threads can never both take one value; a launch runs once. 10 threads race for one partition p
(and one Shared x): some launch through the C twin's build (same plan as the last launch: `inc(p)`,
`addk(p, x)`), some through the Python path (`addk(p, raw numpy)`, a new key; `ct.zeros(..)` chains), some
through partition transfers (unpartition/partition of its tensor by the winner), cancel() instead of run,
then-chains. A winner adds a known amount; losers must get a safetile UseAfterMoveError/OwnershipError.
Expect: the final p equals the NumPy reference (poison + sum of the winners' increments), each attempt
either won or was refused with a safetile error, no refused attempt wrote anything, x is unchanged and
unwrappable at the end."""
from _r9 import *

require_c_lock()
N, TILE, THREADS, SECS = 64, 16, 10, 8.0
sys.setswitchinterval(2e-5)
state = {"p": poisoned(N).partition(TILE)}
xs = np.full(N, 2.0, np.float32)
x = ct.from_dlpack(xs.copy()).shared()
raw = np.full(N, 3.0, np.float32)
added = [0.0] * THREADS
wins = [0] * THREADS
refusals = [0] * THREADS
problems = []
stop = threading.Event()


def attempt(i, k):
    p = state["p"]
    mode = k % 6
    try:
        if mode == 0:
            op = inc(p)                      # C build (same plan as before)
        elif mode == 1:
            op = addk(p, x)                  # C build with a Shared
        elif mode == 2:
            op = addk(p, raw)                # raw numpy Ref: the Python path
        elif mode == 3:
            op = inc(p).then(lambda v: inc(*v)).then(lambda v: addk(v[0], x))
        elif mode == 4:
            op = inc(p)
        else:
            op = addk(p, x)
    except Exception as e:  # noqa
        if not is_st(e):
            problems.append(f"t{i} raw refusal {err(e)}")
        refusals[i] += 1
        return
    amount = {0: 1.0, 1: 2.0, 2: 3.0, 3: 4.0, 4: 0.0, 5: 2.0}[mode]
    if mode == 4:
        op.cancel()                          # given back without running
    else:
        op.sync()
    added[i] += amount
    wins[i] += 1
    if mode == 5:                            # re-partition the tensor (a transfer) and publish the new partition
        try:
            t = p.unpartition()              # may lose to another thread that took p after our sync
        except Exception as e:  # noqa
            if not is_st(e):
                problems.append(f"t{i} raw unpartition refusal {err(e)}")
            return
        state["p"] = t.partition(TILE)


def worker(i):
    k = i
    while not stop.is_set():
        attempt(i, k)
        k += 1


ths = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(THREADS)]
for th in ths:
    th.start()
time.sleep(SECS)
stop.set()
for th in ths:
    th.join(10)
if any(th.is_alive() for th in ths):
    broke("a worker is stuck after the stop")
p = state["p"]
got = p.unpartition().to_numpy()
want = np.full(N, POISON, np.float32) + np.float32(sum(added))
xv = x.try_unwrap().to_numpy()
print(f"wins {sum(wins)}, refusals {sum(refusals)}, added {sum(added)}")
if problems:
    broke("; ".join(problems[:3]))
if not np.array_equal(got, want):
    broke(f"p = {got[:3]} but the winners added {sum(added)} (want {want[:3]}): a double take or a lost update")
if not np.array_equal(xv, xs):
    broke("the Shared x changed")
if sum(wins) < 50:
    inconclusive(f"too few wins ({sum(wins)})")
held(f"{sum(wins)} takes won, {sum(refusals)} refused with safetile errors; p matches the sequential sum")

"""G4 with the C lock: `with ct.borrow_mut(t) as b: p = b.partition(16)`; p is handed to 6 other threads
that build, run (C-twin build, chains) and cancel launches on it, while the owner leaves the block at a
random moment. Expect: after the block ends, nothing ever writes t (t's bytes stay fixed while the threads
keep trying), every late attempt on p is a safetile error, t is usable at once after the block, and t's
value equals POISON + the increments whose syncs completed (+ at most one per then-chain refused midway
because the exit released p while its first launch ran: it had run inside the borrow)."""
from _r9 import *
import random

require_c_lock()
N, TILE, ROUNDS, THREADS = 64, 16, 60, 6
rnd = random.Random(909)
problems = []
total_refusals = 0
partial = 0


def user(p, done, lock, stop):
    """done: [increments completed, refusals at build, chains refused midway (their first launch ran)]"""
    while not stop.is_set():
        try:
            op = inc(p)
        except Exception as e:  # noqa
            done[1] += 1
            if not is_st(e):
                problems.append(f"raw {err(e)}")
            continue
        n = 1
        if rnd.random() < 0.3:
            op = op.then(lambda v: inc(*v))
            n = 2
        if n == 1 and rnd.random() < 0.15:
            try:
                op.cancel()
            except Exception as e:  # noqa (the exit cancelled it first)
                if not is_st(e):
                    problems.append(f"raw {err(e)}")
            continue
        try:
            op.sync()
        except Exception as e:  # noqa
            if not is_st(e):
                problems.append(f"raw {err(e)}")
            elif n == 2:  # the chain's first launch may have run before the exit; its second was refused
                with lock:  # ("released (its borrow ended)") or cancelled by the exit ("has been cancelled")
                    done[2] += 1
            continue
        with lock:
            done[0] += n


for r in range(ROUNDS):
    t = poisoned(N)
    done = [0, 0, 0]
    stop = threading.Event()
    lock = threading.Lock()
    with ct.borrow_mut(t) as b:
        p = b.partition(TILE)
        ths = [threading.Thread(target=user, args=(p, done, lock, stop), daemon=True) for _ in range(THREADS)]
        for th in ths:
            th.start()
        time.sleep(rnd.uniform(0.0, 0.03))
    # the block has ended: from here nothing may write t
    a = t.to_numpy()
    time.sleep(0.03)
    b2 = t.to_numpy()
    stop.set()
    for th in ths:
        th.join(10)
    if any(th.is_alive() for th in ths):
        fmt_threads()
        broke(f"round {r}: a thread hangs")
    c = t.to_numpy()
    completed = done[0]
    total_refusals += done[1]
    if not (np.array_equal(a, b2) and np.array_equal(a, c)):
        broke(f"round {r}: t was written after its borrow ended ({a[0]} -> {b2[0]} -> {c[0]})")
    k = a[0] - POISON
    if not (a == a[0]).all() or not (completed <= k <= completed + done[2]) or k != int(k):
        broke(f"round {r}: t = {a[0]} but {completed} increments completed and {done[2]} chains were cut "
              "midway (reference)")
    partial += done[2]
    (tt,) = (t.partition(TILE),)
    tt.unpartition()
if problems:
    broke("; ".join(problems[:3]))
held(f"{ROUNDS} borrows ended under {THREADS} racing threads: no write after the exit, {total_refusals} safetile "
     f"refusals, {partial} then-chains refused midway after their first launch (see README)")

"""G6/G4 "Ctrl-C anywhere": a claim "never exists without what ends it" and claims "end when their holder ...
is collected". A partition's claim ends in a weakref.finalize callback; a real Ctrl-C (SIGINT to the main
thread) that arrives while that callback starts runs in the standard library's weakref.py frame, which the
interrupt gate walks past (not a safetile module), so it is raised there and the callback (Claims._forget)
never runs. The main thread wraps one NumPy array again and again, partitions it and drops the partition
(no unpartition), under a SIGINT storm. Expect: once every partition is gone, `ct.from_dlpack(arr).shared()`
succeeds (no claim outlives its holder)."""
from _r9 import *
import random
import signal

require_c_lock()
N, TILE, SECS = 64, 16, 6.0
sys.setswitchinterval(1e-4)  # the killer thread gets the GIL often enough
arr = np.zeros(N, np.float32)
main_id = threading.main_thread().ident
kills = [0]


def killer():
    rnd = random.Random(12)
    t_end = time.time() + SECS
    while time.time() < t_end:
        time.sleep(rnd.uniform(0.0005, 0.004))
        signal.pthread_kill(main_id, signal.SIGINT)
        kills[0] += 1


def one():
    t = ct.from_dlpack(arr)
    p = t.partition(TILE)
    del p, t  # the partition is collected here: its claim's finalizer runs


def storm():
    """Partition drops until the killer has stopped (and 0.3 s more); KeyboardInterrupts counted."""
    global ki, rounds
    quiet_since = None
    while True:
        try:
            try:
                try:
                    if not k.is_alive():
                        quiet_since = quiet_since or time.time()
                        if time.time() - quiet_since > 0.3:
                            return
                    one()
                    rounds += 1
                except KeyboardInterrupt:
                    ki += 1
            except KeyboardInterrupt:
                ki += 1
        except KeyboardInterrupt:
            ki += 1


k = threading.Thread(target=killer, daemon=True)
ki = rounds = 0
k.start()
for _ in range(5):
    try:
        storm()
        break
    except KeyboardInterrupt:
        ki += 1
signal.signal(signal.SIGINT, signal.SIG_IGN)
k.join(5)
for _ in range(3):
    gc.collect()
print(f"{kills[0]} SIGINTs, {ki} KeyboardInterrupts, {rounds} rounds")
try:
    s = ct.from_dlpack(arr).shared()
except Exception as e:  # noqa
    if is_st(e) and "overlaps" in str(e):
        broke(f"a claim outlived its collected holder (its finalizer was cut by Ctrl-C in weakref.py), so the memory "
              f"can never be shared again: {err(e, 220)}")
    broke(f"unexpected: {err(e)}")
if ki < 20:
    inconclusive(f"only {ki} interrupts landed")
held(f"{ki} Ctrl-C among {rounds} partition drops: every claim ended with its holder")

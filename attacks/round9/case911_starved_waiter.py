"""G9 "any host thread may launch ... at any time" with the C lock: the docs say a holder "may release the GIL
(torch calls do) and other threads still wait on it". The C lock wakes a waiter on release, but the waiter
must get the GIL back before it can take the lock, while the releasing thread (which has the GIL) may take
it again first. Thread H loops on launches whose locked section releases the GIL (user code under
OWNERSHIP: a launch argument's __class__, read by isinstance in LaunchOp._take, sleeps 2 ms, as a GIL-free
torch call would take its time); the main thread wants OWNERSHIP once (a partition).
Expect: the main thread gets the lock within ~1 s while H keeps going (threading.RLock: well under that)."""
from _r9 import *

require_c_lock()
stop = threading.Event()
rounds = [0]


class GilFree:
    @property
    def __class__(self):
        if ownership.OWNERSHIP._is_owned():  # (only to aim: inside the launch's take)
            time.sleep(0.002)                # releases the GIL while OWNERSHIP is held
        return GilFree


def hog():
    p = ct.from_dlpack(np.zeros(64, np.float32)).partition(16)
    while not stop.is_set():
        try:
            addk(p, GilFree())
        except Exception:  # noqa (refused afterwards: not a tensor)
            pass
        rounds[0] += 1


h = threading.Thread(target=hog, daemon=True)
h.start()
time.sleep(0.3)
waits = []
for i in range(5):
    t = ct.from_dlpack(np.zeros(64, np.float32))
    done = threading.Event()
    t0 = time.time()
    res = {}

    def take():
        res["p"] = t.partition(16)
        done.set()
    th = threading.Thread(target=take, daemon=True)
    th.start()
    got = done.wait(8.0)
    waits.append(time.time() - t0 if got else None)
    if not got:
        break
stop.set()
h.join(10)
kind = lock_kind()
print(f"({kind}) waits: {[None if w is None else round(w, 3) for w in waits]}; hog rounds {rounds[0]}")
if any(w is None for w in waits):
    broke(f"({kind}) a thread wanting OWNERSHIP was starved for 8 s (and until the other thread stopped) while "
          f"the holder re-took the lock {rounds[0]} times: the woken waiter needs the GIL before it can take the "
          "lock, and the releasing thread takes it again first")
if max(waits) > 1.0:
    broke(f"({kind}) a waiter starved {max(waits):.1f} s")
held(f"({kind}) max wait {max(waits) * 1000:.0f} ms")

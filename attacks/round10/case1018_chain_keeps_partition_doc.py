"""G4 doc check: safe.md says of leaving a borrow: "a terminal already running with it, e.g. a `then` chain,
keeps it until that terminal ends". Thread X runs a then-chain of 3 long launches on the borrowed partition;
the owner leaves the block while the chain's FIRST launch runs (deterministic: 0.05 s into a ~0.2 s launch).
Per that sentence the exit should wait for the whole chain (t = POISON + 3 at the exit, the chain succeeds).
Safety is checked too: nothing writes t after the exit. Run with the C fast path on and off.
Verdict: HELD if the chain is kept; INCONCLUSIVE (doc vs behaviour, safety intact) if it is cut midway."""
from _r10 import *

both_ways()
native_loaded()
_w = ct.zeros(64).sync().partition(16)
_w, _ = slow_inc(_w, 1).sync()
LONG = 30000
outs = []
for r in range(3):
    t = poisoned(64)
    out = []

    def x(p):
        try:
            out.append(slow_inc(p, LONG).then(lambda v: slow_inc(v[0], LONG)).then(lambda v: slow_inc(v[0], LONG)).sync())
        except Exception as e:  # noqa
            out.append(e)
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        th = threading.Thread(target=x, args=(p,), daemon=True)
        th.start()
        time.sleep(0.05)
    a = t.to_numpy().copy()
    th.join(15)
    time.sleep(0.02)
    if not np.array_equal(a, t.to_numpy()):
        broke("t written after the borrow ended")
    if isinstance(out[0], BaseException) and not st_err(out[0]):
        broke(f"raw {err(out[0])}")
    outs.append((float(a[0] - POISON), err(out[0], 110) if isinstance(out[0], BaseException) else "chain ran"))
if all(o[1] == "chain ran" and o[0] == 3 for o in outs):
    held(f"native={NATIVE}: the exit waited for the whole chain: {outs}")
inconclusive(f"native={NATIVE}: chain cut midway, not kept until it ends (safe.md wording; safety intact): {outs[0]}")

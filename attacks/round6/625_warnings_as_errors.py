"""G4 ("A launch dropped unrun gives its arguments back with a LaunchDroppedWarning"; "Leaving
`with ct.borrow_mut(t)` always ends the borrow ... cancels launches built in the block that never
ran (warning)") under `warnings.simplefilter("error")` (pytest -W error, a common CI setting): the
warning becomes an exception raised from a finalizer / from __exit__. The give-back and the end of
the borrow must not depend on the warning call returning: z must be usable after the drop, t
after the borrow (also with a mapped partition and with an exception already leaving the block),
and the cancelled launch must never run."""
from _r6 import *
import gc
import warnings

warnings.resetwarnings()
warnings.simplefilter("error")
bad, notes = [], []
# 1. dropped launch
z = ct.from_dlpack(arr(64)).partition(16)
op = inc(z)
del op
gc.collect()
try:
    z.unpartition()
    notes.append("dropped launch: z given back")
except Exception as e:  # noqa
    bad.append(f"dropped launch: z unusable: {type(e).__name__}: {str(e)[:80]}")
# 2. borrow exit with an unrun launch, with a mapped partition, and with an exception in flight
for variant in ("plain", "mapped", "exception in flight"):
    tb = arr(64)
    t = ct.from_dlpack(tb)
    op2 = None
    try:
        with ct.borrow_mut(t) as b:
            p = b.partition(16)
            if variant == "mapped":
                @ct.entry
                def km(c: ct.MappedMut[ct.f32, "B"]):
                    for idx in c.iter_indices():
                        c.store(ct.full((B,), 5.0, ct.float32), idx)
                op2 = km(p.map(2))
            else:
                op2 = inc(p)
            if variant == "exception in flight":
                raise KeyError("boom")
    except BaseException as e:  # noqa
        notes.append(f"{variant}: exit raised {type(e).__name__}")
    try:
        t.to_numpy()
        q = t.partition(16)
        (q,) = inc(q).sync()
        q.unpartition()
    except Exception as e:  # noqa
        bad.append(f"{variant}: t still borrowed/unusable: {type(e).__name__}: {str(e)[:80]}")
    try:
        op2.sync()
        bad.append(f"{variant}: the launch built in the block ran after the borrow ended")
    except Exception:
        pass
    if not (tb == 1.0).all():
        bad.append(f"{variant}: t holds {tb[:2]} (expected only our own +1)")
if bad:
    broken("; ".join(bad) + " || " + "; ".join(notes))
held("; ".join(notes))

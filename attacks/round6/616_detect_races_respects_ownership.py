"""G6 / G4 for ct.detect_races, which *runs* the kernel on the CPU. ct.launch of an unchecked kernel
refuses frozen, borrowed and moved safetile memory (round 2, attack 207). Does ct.detect_races?
An unchecked writer is given (a) a Shared handle, (b) a safetile view taken before .shared()
(frozen memory), (c) a tensor moved into an unrun launch, (d) a tensor borrowed by
ct.borrow_mut; and an entry kernel is given (e) a partition moved into an unrun launch. None may
be written."""
from _r6 import *


@ct.kernel
def writer(a):
    ct.store(a, index=(ct.bid(0),), tile=ct.full((16,), 9.0, ct.float32))


res, bad = {}, []


def attempt(name, fn, watch):
    before = watch.copy()
    try:
        fn()
        res[name] = "ran"
    except Exception as e:  # noqa
        res[name] = f"refused {type(e).__name__}" if is_st(e) else f"RAW {type(e).__name__}: {str(e)[:60]}"
    if not np.array_equal(before, watch):
        bad.append(f"{name}: memory written ({res[name]})")


# (a) Shared handle
b1 = arr(64)
s1 = ct.from_dlpack(b1).shared()
attempt("Shared handle", lambda: ct.detect_races(writer, (4, 1, 1), (s1,), raise_on_race=False), b1)
# (b) view taken before sharing
b2 = arr(64)
t2 = ct.from_dlpack(b2)
v2 = t2[0:64]
s2 = t2.shared()
attempt("view of a Shared's memory", lambda: ct.detect_races(writer, (4, 1, 1), (v2,), raise_on_race=False), b2)
# (c) tensor moved into an unrun launch
b3 = arr(64)
t3 = ct.from_dlpack(b3)
z3 = ct.from_dlpack(arr(64)).partition(16)
op3 = fill1(z3, t3)
attempt("tensor moved into unrun launch", lambda: ct.detect_races(writer, (4, 1, 1), (t3,), raise_on_race=False), b3)
op3.cancel()
# (d) borrowed tensor
b4 = arr(64)
t4 = ct.from_dlpack(b4)
with ct.borrow_mut(t4) as bm:
    p4 = bm.partition(16)
    attempt("borrowed tensor", lambda: ct.detect_races(writer, (4, 1, 1), (t4,), raise_on_race=False), b4)
    p4.release()
# (e) entry kernel, partition moved into an unrun launch
b5 = arr(64)
p5 = ct.from_dlpack(b5).partition(16)
op5 = inc(p5)
attempt("entry kernel, partition moved into unrun launch", lambda: ct.detect_races(inc, None, (p5,), raise_on_race=False), b5)
op5.cancel()
if bad:
    broken("; ".join(bad) + f" || {res}")
held(str(res))

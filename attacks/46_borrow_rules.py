"""Promise (safe.md): ct.borrow_mut(t).partition(shape) partitions in place; t is unusable
(BorrowError) until release / end of the with-block; leaving the block waits for launches
still using the partition and cancels unrun ones (the op can never run afterwards)."""
import warnings as w

from _common import *

x = ct.rand(256, seed=1).sync()
t = ct.zeros(256).sync()
fails = []
with ct.borrow_mut(t) as b:
    p = b.partition(64)
    for name, use in [("to_numpy", lambda: t.to_numpy()), ("partition", lambda: t.partition(64)),
                      ("shared", lambda: t.shared()), ("slice", lambda: t[0:4]),
                      ("borrow again", lambda: ct.borrow_mut(t).partition(64)),
                      ("second partition of the borrow", lambda: b.partition(128)),
                      ("memcpy into t", lambda: ct.memcpy(t, ct.zeros(256).sync()).sync())]:
        try:
            use()
            fails.append(f"{name}: allowed while borrowed")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{name}: non-safetile {type(e).__name__}")
    op = fill(p, x)                          # built, never run
    expect_refusal(lambda: p.release(), None, [], "release while an unrun launch holds the partition")
with w.catch_warnings():
    w.simplefilter("ignore")
try:
    op.sync()
    fails.append("an op built inside the borrow block ran after the block ended")
except Exception as e:  # noqa: BLE001
    if not is_safetile_error(e):
        fails.append(f"op after block: non-safetile {type(e).__name__}")
a = t.to_numpy()
if np.any(a != 0):
    fails.append("cancelled op wrote t")
if fails:
    broken("; ".join(fails))
held("borrow rules enforced")

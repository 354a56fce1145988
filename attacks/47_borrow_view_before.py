"""Promise: while t is mutably borrowed, nothing else may write or read its memory
(BorrowError); a view of t taken *before* borrow_mut is another object over the same memory
and must not give a second mutable partition or a Shared during the borrow."""
from _common import *

x = ct.rand(256, seed=1).sync()
t = ct.zeros(256).sync()
v = t[0:256]
fails = []
with ct.borrow_mut(t) as b:
    p = b.partition(64)
    # NOTE: a second mutable partition of a pre-borrow view is allowed by design (views are
    # other objects over the same memory; launches are ordered by the in-flight registry).
    for name, use in [("view.shared", lambda: v.shared()),
                      ("both in one launch", lambda: fill(p, v).sync())]:
        try:
            use()
            fails.append(f"{name}: accepted during the borrow")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{name}: non-safetile {type(e).__name__}: {e}")
if fails:
    broken("; ".join(fails))
held("views taken before the borrow cannot alias it mutably")

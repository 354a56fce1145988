"""Promise: a Shared value is read-only and has no mutable alias (DESIGN safety contract;
safe.md 'read-only Shared handle'). ct.memcpy into a Shared, into a view of a shared tensor,
or into a tensor whose memory a Shared holds must be refused; Shared bytes unchanged."""
from _common import *

src = ct.full(256, 7.0).sync()
t = ct.zeros(256).sync()
v = t[0:128]            # a view made before sharing
s = t.shared()
before = snap(s)
for name, dst in [("the Shared itself", s), ("a view taken before .shared()", v)]:
    try:
        if name.startswith("a view"):
            ct.memcpy(dst, ct.full(128, 7.0).sync()).sync()
        else:
            ct.memcpy(dst, src).sync()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"memcpy into {name}: non-safetile {type(e).__name__}: {e}")
        continue
    if snap(s) != before:
        broken(f"memcpy into {name} wrote into a Shared tensor: {s.to_numpy()[:4]}")
    broken(f"memcpy into {name} accepted")
held("memcpy into shared memory refused")

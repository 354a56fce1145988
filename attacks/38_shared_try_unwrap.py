"""Promise (safe.md): s.try_unwrap() gives the tensor back only once no launch holds the
handle; a clone must not survive as a readable 'Shared' over memory that is now mutable."""
from _common import *

x = ct.rand(256, seed=1).sync()
t = ct.zeros(256).sync()
s = t.shared()
c = s.clone()
op = fill(ct.zeros(256).sync().partition(64), s)       # a launch holds s (unrun)
expect_refusal(lambda: s.try_unwrap(), ct.OwnershipError, [], "try_unwrap while an unrun launch holds the handle")
expect_refusal(lambda: c.try_unwrap(), ct.OwnershipError, [], "clone try_unwrap while a launch holds it")
op.sync()
u = s.try_unwrap()
p = u.partition(64)
fill(p, x).sync()
for name, h in [("s", s), ("clone", c)]:
    try:
        h.to_numpy()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            broken(f"{name}: non-safetile error {type(e).__name__}")
        continue
    broken(f"{name} still readable as Shared after try_unwrap while the memory is mutable")
held("try_unwrap respects holders; handles die with the unwrap")

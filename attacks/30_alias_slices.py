"""Promise (safe.md 4): a mutable argument may not overlap any other argument; refused
naming both arguments (AliasError). Mut = t[0:128], Ref = t[64:192], t.reshape views,
t.slice, and the base tensor itself."""
from _common import *

t = ct.rand(256, seed=2).sync()
cases = [
    ("t[64:192]", lambda: t[64:192]),
    ("t.slice(0, 127, 128)", lambda: t.slice(0, 127, 128)),
    ("t.reshape(16,16)[7:8].reshape(16)", lambda: t.reshape(16, 16)[7:8].reshape(16)),
    ("t itself", lambda: t),
]
for name, mk in cases:
    z = t[0:128].partition(64)
    x = mk()
    before = snap(t)
    expect_refusal(lambda: fill(z, x).sync(), ct.AliasError, ["'z'", "'x'"], f"Mut t[0:128] vs Ref {name}")
    if snap(t) != before:
        broken(f"{name}: refused launch wrote")
    if z.is_moved:
        broken(f"{name}: refused launch moved z")
held("overlapping slices refused naming both")

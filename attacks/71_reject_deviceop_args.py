"""Promise (safe.md): 'Arguments given as DeviceOps (add(ct.zeros(n).partition(128), x, y))
are validated when the op runs'; a rejected launch moves nothing — the plain arguments
passed alongside must come back usable and byte-identical."""
from _common import *

x = ct.rand(256, seed=1).sync()
s = ct.rand(256, seed=2).sync().shared()
before = snap(x, s)
fails = []
for name, mk in [
    ("grid", lambda: fill(ct.zeros(256).partition(64), x).grid((8, 1, 1))),
    ("alias via op", lambda: fill(ct.value(x).map(lambda t: t[0:128]).partition(64), x)),
    ("dtype via op", lambda: fill(ct.zeros(256, dtype=ct.float64).partition(64), x)),
    ("Shared as Mut via op", lambda: fill(ct.value(s), x)),
]:
    try:
        op = mk()
        op.sync()
        fails.append(f"{name}: not refused")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{name}: non-safetile {type(e).__module__}.{type(e).__name__}: {str(e)[:100]}")
    try:
        if snap(x, s) != before:
            fails.append(f"{name}: x or s changed")
    except Exception as e:  # noqa: BLE001
        fails.append(f"{name}: x/s unusable after the refusal: {type(e).__name__}: {str(e)[:120]}")
        x = ct.rand(256, seed=1).sync()
if fails:
    broken("; ".join(fails))
held("DeviceOp-argument refusals leave the other arguments usable")

"""(g) wrong results silently / G7 "says why". safe.md: `np.asarray(t)` is a host copy. NumPy 2's
array protocol gives callers a way to insist on no copy: `np.asarray(t, copy=False)` and
`t.__array__(copy=False)` must return a view or raise ValueError ("Unable to avoid copy").
If safetile silently returns a copy there, a program that writes through what NumPy promised is a
view loses its writes without any error (the tensor never changes). Held if those calls raise
(or return a true alias that safetile claims); also for a Shared."""
from _r6 import *

res, bad = {}, []
base = arr(8)
t = ct.from_dlpack(base)
for name, fn in (("np.asarray(t, copy=False)", lambda: np.asarray(t, copy=False)),
                 ("t.__array__(copy=False)", lambda: t.__array__(copy=False)),
                 ("np.array(t, copy=False)", lambda: np.array(t, copy=False))):
    try:
        a = fn()
    except ValueError as e:
        res[name] = f"raised {type(e).__name__}"
        continue
    except Exception as e:  # noqa
        res[name] = f"raised {type(e).__name__}"
        continue
    a[0] = 5.0 if a.flags.writeable else a[0]
    aliased = np.shares_memory(a, base)
    res[name] = f"returned {'an alias' if aliased else 'a silent copy'} (writeable={a.flags.writeable})"
    if not aliased:
        bad.append(f"{name} returned a copy: a write through it is lost (t[0] = {t.to_numpy()[0]})")
sb = arr(8)
s = ct.from_dlpack(sb).shared()
try:
    a = np.asarray(s, copy=False)
    res["np.asarray(Shared, copy=False)"] = f"returned (alias={np.shares_memory(a, sb)}, writeable={a.flags.writeable})"
    if not np.shares_memory(a, sb):
        bad.append("np.asarray(Shared, copy=False) returned a copy instead of raising")
    elif a.flags.writeable:
        bad.append("np.asarray(Shared, copy=False) returned a WRITABLE ALIAS of a Shared")
except Exception as e:  # noqa
    res["np.asarray(Shared, copy=False)"] = f"raised {type(e).__name__}"
if bad:
    broken("; ".join(bad) + f" || {res}")
held(str(res))

"""Promise (semantics.md): '... a redefined helper function, a new global that shadows a
builtin ..., a rebound closure variable' are tracked and recompiled. The same changes seen
through @ct.entry kernels (helper redefined, closure variable rebound, builtin shadowed)."""
# BACKENDS: cpu triton
from _common import *


def helper(t):
    return t * 2.0


def make(s):
    @ct.entry
    def closed(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) * s)

    def rebind(v):
        nonlocal s
        s = v
    return closed, rebind


@ct.entry
def uses_helper(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(helper(ct.load_tile_like(x, z)))


@ct.entry
def uses_builtin(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) * float(abs(-2)))


def run(k):
    z, _ = k(ct.zeros(64).sync().partition(64), ct.ones(64).sync()).sync()
    return float(z.to_numpy()[0])


fails = []
a = run(uses_helper)


def helper(t):  # noqa: F811  (redefinition)
    return t * 7.0


b = run(uses_helper)
if (a, b) != (2.0, 7.0):
    fails.append(f"redefined helper: {a}, {b}")
closed, rebind = make(2.0)
a = run(closed); rebind(5.0); b = run(closed)
if (a, b) != (2.0, 5.0):
    fails.append(f"rebound closure variable: {a}, {b}")
a = run(uses_builtin)
globals()["abs"] = lambda v: 9
b = run(uses_builtin)
del globals()["abs"]
if (a, b) != (2.0, 9.0):
    fails.append(f"global shadowing a builtin: {a}, {b}")
if fails:
    broken("@ct.entry kernels keep stale compiled code: " + "; ".join(fails))
held("entry kernels track helpers, closures and builtins")

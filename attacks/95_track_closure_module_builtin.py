"""Promise (semantics.md): tracked — a rebound closure variable (also inside an inlined
helper), a user module attribute, a new global shadowing a builtin (and its removal),
nested attribute chains, a global named inside ct.static_eval."""
import types

# BACKENDS: cpu triton
from _common import *

x = np.ones(64, np.float32)
z = np.zeros(64, np.float32)


def run(k):
    ct.launch(None, (1,), k, (z, x))
    return float(z[0])


fails = []


def make():
    s = 2.0

    def hh(t):
        return t * s

    def setter(v):
        nonlocal s
        s = v
    return hh, setter


hh, setter = make()


@ct.kernel
def k_closure(z, x):
    ct.store(z, index=(0,), tile=hh(ct.load(x, index=(0,), shape=(64,))))


a = run(k_closure); setter(9.0); b = run(k_closure)
if (a, b) != (2.0, 9.0):
    fails.append(f"helper closure: {a}, {b}")

mod = types.ModuleType("cfgmod")
mod.W = 2.0


@ct.kernel
def k_mod(z, x):
    ct.store(z, index=(0,), tile=ct.full((64,), 1.0, ct.float32) * mod.W)


a = run(k_mod); mod.W = 3.0; b = run(k_mod)
if (a, b) != (2.0, 3.0):
    fails.append(f"module attribute: {a}, {b}")


@ct.kernel
def k_builtin(z, x):
    ct.store(z, index=(0,), tile=ct.full((64,), 1.0, ct.float32) * float(abs(-3)))


a = run(k_builtin)
globals()["abs"] = lambda v: 5
b = run(k_builtin)
del globals()["abs"]
c = run(k_builtin)
if (a, b, c) != (3.0, 5.0, 3.0):
    fails.append(f"builtin shadow/unshadow: {a}, {b}, {c}")


class A:
    pass


obj = A(); obj.b = A(); obj.b.c = 2.0


@ct.kernel
def k_nested(z, x):
    ct.store(z, index=(0,), tile=ct.full((64,), 1.0, ct.float32) * obj.b.c)


a = run(k_nested); obj.b.c = 3.0; b = run(k_nested); obj.b = A(); obj.b.c = 4.0; c = run(k_nested)
if (a, b, c) != (2.0, 3.0, 4.0):
    fails.append(f"nested attributes: {a}, {b}, {c}")

N = 2


@ct.kernel
def k_static(z, x):
    ct.store(z, index=(0,), tile=ct.full((64,), 1.0, ct.float32) * ct.static_eval(N * 1.0))


a = run(k_static); N = 3; b = run(k_static)
if (a, b) != (2.0, 3.0):
    fails.append(f"static_eval global: {a}, {b}")
if fails:
    broken("; ".join(fails))
held("closure/module/builtin/nested/static_eval changes tracked")

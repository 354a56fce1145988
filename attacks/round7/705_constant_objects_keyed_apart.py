"""semantics.md ("Constants passed as ct.Constant arguments compile apart whenever they compute
differently, even where == calls them equal ... objects of a class with an __eq__ of its own, which
are keyed on every attribute (their __dict__ and slots; each must be hashable, else the launch is
refused naming it)"), G8 (a reused kernel/plan only when every fact is unchanged) and G7 (refusals
are safetile errors; arguments usable).
(a) Instances of subclasses of Python's value types carrying their own attributes -- int, float,
str, frozenset and namedtuple subclasses with `x.scale = ...` -- compare equal by the base value but
compute differently (the kernel reads c.scale). Each must compile apart (a fresh kernel is the
reference). Controls: a class with its own __eq__, a subclass inheriting it, a nested custom-eq
object, slots, -0.0 in a field (all held when written).
(b) A custom-eq Constant whose attributes refer back to itself, or hold an object whose __hash__
raises RuntimeError: must be a safetile refusal with the partition usable."""
from _r7 import *
import collections


def mk():
    @ct.entry
    def kd(z: ct.Mut[ct.f32, "B"], c: ct.Constant[object]):
        z.store(ct.full((B,), 1.0, ct.float32) * c.scale)
    return kd


class Base:
    def __init__(s, n, scale): s.n, s.scale = n, scale
    def __eq__(s, o): return isinstance(o, Base) and o.n == s.n
    def __hash__(s): return hash(s.n)


class Derived(Base):
    pass


class I(int): pass
class F(float): pass
class S(str): pass
class FS(frozenset): pass
class NT(collections.namedtuple("NT", "n")): pass


def attr(x, v):
    x.scale = v
    return x


CASES = {"own __eq__ (control)": lambda v: Base(1, v), "inherited __eq__": lambda v: Derived(1, v),
         "int subclass": lambda v: attr(I(1), v), "float subclass": lambda v: attr(F(1.0), v),
         "str subclass": lambda v: attr(S("a"), v), "frozenset subclass": lambda v: attr(FS([1]), v),
         "namedtuple subclass": lambda v: attr(NT(1), v)}


def run(k, c, z=None):
    z = z or ct.zeros(16).sync().partition(16)
    try:
        z = k(z, c).sync()[0]
        return float(z.unpartition().to_numpy()[0]), None
    except Exception as e:  # noqa
        return err(e, 70), z


def scenario():
    out = {}
    for name, f in CASES.items():
        k = mk()
        a, _ = run(k, f(2.0))
        b, _ = run(k, f(9.0))
        out["a " + name] = f"{a} then {b} (fresh kernel: {run(mk(), f(9.0))[0]})"
    r = Base(1, 2.0)
    r.me = r
    res, z = run(mk(), r)
    out["b self-reference"] = res
    out["b self-reference z usable"] = "yes" if z is None or z.grid() else "?"

    class BadHash:
        def __hash__(s): raise RuntimeError("hash says no")
    h = Base(1, 2.0)
    h.bad = BadHash()
    res, z = run(mk(), h)
    out["b field hash raises"] = res
    try:
        z is None or z.grid()
        out["b field hash raises z usable"] = "yes"
    except Exception as e:  # noqa
        out["b field hash raises z usable"] = err(e, 50)
    return out


def judge(c, py):
    bad = []
    for k, v in c.items():
        if k.startswith("a "):
            if not v.startswith("2.0 then 9.0"):
                bad.append(f"{k}: {v}")
        elif "(raw)" in v or (k.endswith("usable") and v != "yes"):
            bad.append(f"{k}: {v}")
    if bad:
        return "BROKEN", "; ".join(bad)
    return "HELD", "all keyed apart, odd fields refused"


differential(scenario, judge)

"""Promise (safe.md): "One kernel compiles once per specialisation: element types, ranks,
partition shapes, static sizes, generics, constants"; safety.md G8: the plan is "keyed on exactly
those facts (... scalar and constant values)"; semantics.md: captured values "compare by type and
value". A compiled specialisation may depend on everything Python can see of a constant (its
type, its sign), since tile code runs arbitrary Python on it at compile time (`ct.static_eval`).

Attack: repeated launches of one kernel whose constant compares equal (and hashes equal) to the
previous one but is a different value: True after 1, 1 after True, 1.0 after 1, (True,) after
(1,), (-0.0, 1.0) after (0.0, 1.0), in both orders, and a frozen-dataclass config `Cfg(n=1, scale=3.0)`
after `Cfg(n=1, scale=2.0)` whose `scale` is `field(compare=False)`; the kernel's compile-time code looks at the
value's type (`isinstance(c, bool)`, `isinstance(c, float)`) or sign (`math.copysign`). Each
result must be what a fresh compile for that value gives (computed here in Python). Run with the
C twin on and off.
"""
from _r5 import *

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Cfg:
    """A hashable config whose equality ignores a field (a common Python pattern)."""
    n: int
    scale: float = dataclasses.field(compare=False, default=1.0)


def expect(kind, v):
    if kind == "int-or-bool":
        return 2.0 if isinstance(v, bool) else 3.0
    if kind == "num-type":
        return 5.0 if isinstance(v, float) else 7.0
    if kind == "tuple-bool":
        return 2.0 if isinstance(v[0], bool) else 3.0
    if kind == "tuple-sign":
        return math.copysign(1.0, v[0])
    if kind == "dataclass":
        return v.scale
    raise AssertionError(kind)


def scenario(rec):
    @ct.entry
    def kb(z: ct.Mut[ct.f32, "B"], c: ct.Constant[int]):
        z.store(ct.full((B,), 1.0, ct.float32) * ct.static_eval(2.0 if isinstance(c, bool) else 3.0))

    @ct.entry
    def kn(z: ct.Mut[ct.f32, "B"], c: ct.Constant[float]):
        z.store(ct.full((B,), 1.0, ct.float32) * ct.static_eval(5.0 if isinstance(c, float) else 7.0))

    @ct.entry
    def ktb(z: ct.Mut[ct.f32, "B"], c: ct.Constant[tuple]):
        z.store(ct.full((B,), 1.0, ct.float32) * ct.static_eval(2.0 if isinstance(c[0], bool) else 3.0))

    @ct.entry
    def kts(z: ct.Mut[ct.f32, "B"], c: ct.Constant[tuple]):
        z.store(ct.full((B,), 1.0, ct.float32) * ct.static_eval(math.copysign(1.0, c[0])))

    @ct.entry
    def kd(z: ct.Mut[ct.f32, "B"], c: ct.Constant[Cfg]):
        z.store(ct.full((B,), 1.0, ct.float32) * ct.static_eval(c.scale))

    cases = [("dataclass", kd, [Cfg(1, 2.0), Cfg(1, 3.0)]), ("int-or-bool", kb, [1, True, 1, True]), ("int-or-bool", kb, [True, 1]),
             ("num-type", kn, [1.0, 1, 1.0]), ("num-type", kn, [1, 1.0]),
             ("tuple-bool", ktb, [(1,), (True,)]), ("tuple-bool", ktb, [(True,), (1,)]),
             ("tuple-sign", kts, [(0.0, 1.0), (-0.0, 1.0)]), ("tuple-sign", kts, [(-0.0, 1.0), (0.0, 1.0)])]
    for kind, kern, seq in cases:
        # a fresh kernel object per sequence: nothing compiled before it
        fresh = ct.entry(kern.fn) if hasattr(kern, "fn") else kern
        base = np.full(8, np.nan, np.float32)
        z = ct.from_dlpack(base).partition(8)
        for v in seq:
            base[:] = np.nan
            try:
                z, _ = fresh(z, v).sync()
                got = float(base[0])
                rec(f"{kind} {seq}: c={v!r}", [got, expect(kind, v)])
            except BaseException as e:  # noqa: BLE001
                rec(f"{kind} {seq}: c={v!r}", "EXC " + exc_str(e))


def check(log):
    bad = []
    for k, v in log:
        if k == "SCENARIO-RAISED":
            bad.append(v[:300])
        elif isinstance(v, list) and v[0] != v[1]:
            bad.append(f"{k} ran the specialisation of an earlier equal constant (got {v[0]}, a fresh compile gives {v[1]})")
        elif isinstance(v, str) and v.startswith("EXC") and "safetile" not in v.split(":")[0]:
            bad.append(f"{k}: {v[:150]}")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "equal constants")
    if problems:
        both = sorted(set(p.split("] ", 1)[1] for p in problems if p.startswith("[native on]")) &
                      set(p.split("] ", 1)[1] for p in problems if p.startswith("[native off]")))
        if both:
            broken("C twin on and off alike: " + "; ".join(both[:4]) + (f" (+{len(both) - 4} more)" if len(both) > 4 else ""))
        broken("; ".join(problems[:4]))
    held(f"{len(on)} launches: every equal-but-different constant got its own specialisation")


run_guarded(main, "509")

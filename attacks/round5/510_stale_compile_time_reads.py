"""Promise (semantics.md, "Python values read at compile time"): "safetile records every such read
(the namespace or closure cell, the name, the value seen) with the compiled kernel, and before a
launch reuses compiled code it checks that each still holds the same value. If one changed
(`SCALE = 3.0` after a launch, ..., `cfg.width = 16` on a user object or module, ...), the
kernel's compiled code is dropped and the next launch compiles again." Not tracked (documented):
library modules, properties/`__getattr__`, and changes inside a mutable object that is not an
attribute namespace (a list element). safety.md G8 "The common case in C": the C twin reuses the
latest plan only with "the captured Python state identical".

Attack: repeated launches of kernels that read an attribute of an ordinary user object, then the
attribute changes between launches in ways that are plain Python: (a) a `@dataclass(slots=True)`
config (`cfg.scale = 3.0`); (b) a `__slots__` class; (c) the object's `__dict__` replaced
(`obj.__dict__ = {...}`); (d) the object's class swapped (`obj.__class__ = Other`); (e) the same
attribute read inside `ct.static_eval`; controls: a plain attribute, a module global. Each launch
after the change must use the new value (NumPy reference); run with the C twin on and off.
"""
from _r5 import *

import dataclasses


@dataclasses.dataclass(slots=True)
class SlotCfg:
    scale: float


class Slotted:
    __slots__ = ("scale",)


class Plain:
    def __init__(self):
        self.scale = 2.0


class Two:
    scale = 2.0


class Three:
    scale = 3.0


SCALE = 2.0
dc = SlotCfg(2.0)
sl = Slotted()
sl.scale = 2.0
pd = Plain()
sw = Two()
se = Plain()
pl = Plain()


def scenario(rec):
    global SCALE

    @ct.entry
    def k_dc(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32) * dc.scale)

    @ct.entry
    def k_sl(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32) * sl.scale)

    @ct.entry
    def k_pd(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32) * pd.scale)

    @ct.entry
    def k_sw(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32) * sw.scale)

    @ct.entry
    def k_se(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32) * ct.static_eval(se.scale * 1.0))

    @ct.entry
    def k_pl(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32) * pl.scale)

    @ct.entry
    def k_gl(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.full((B,), 1.0, ct.float32) * SCALE)

    def ch_dc():
        dc.scale = 3.0

    def ch_sl():
        sl.scale = 3.0

    def ch_pd():
        pd.__dict__ = {"scale": 3.0}

    def ch_sw():
        sw.__class__ = Three

    def ch_se():
        se.scale = 3.0

    def ch_pl():
        pl.scale = 3.0

    def ch_gl():
        global SCALE
        SCALE = 3.0
    for name, kern, change in (("dataclass(slots=True) attribute", k_dc, ch_dc), ("__slots__ attribute", k_sl, ch_sl),
                               ("obj.__dict__ replaced", k_pd, ch_pd), ("obj.__class__ swapped", k_sw, ch_sw),
                               ("attribute read in static_eval", k_se, ch_se), ("control: plain attribute", k_pl, ch_pl),
                               ("control: module global", k_gl, ch_gl)):
        base = np.full(8, np.nan, np.float32)
        z = ct.from_dlpack(base).partition(8)
        got = []
        for i in range(4):
            if i == 2:
                change()
            base[:] = np.nan
            (z,) = kern(z).sync()
            got.append(float(base[0]))
        rec(name, [got, [2.0, 2.0, 3.0, 3.0]])


def check(log):
    bad = []
    for k, v in log:
        if k == "SCENARIO-RAISED":
            bad.append(v[:300])
        elif v[0] != v[1]:
            bad.append(f"{k}: launches gave {v[0]}, want {v[1]}")
    return bad


def main():
    problems, on, off = differential(__file__, scenario, check, "stale reads")
    if problems:
        both = sorted(set(p.split("] ", 1)[1] for p in problems if p.startswith("[native on]")) &
                      set(p.split("] ", 1)[1] for p in problems if p.startswith("[native off]")))
        if both:
            broken("C twin on and off alike, stale compiled code: " + "; ".join(both))
        broken("; ".join(problems[:4]))
    held(f"{len(on)} kinds of compile-time read: a change recompiles")


run_guarded(main, "510")

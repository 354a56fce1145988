"""G7 ("PreconditionError (also for a precondition that raises or gives no truth value)"; "a
refused launch gives back what it took") and G4. Callable preconditions that raise the odd ones:
StopIteration (inside a generator that builds the launch: PEP 479 territory), GeneratorExit,
SystemExit, KeyboardInterrupt, a BaseException subclass, an exception whose __str__ raises, a
result whose __bool__ raises, and one that returns a NumPy bool array. After each: the arguments
are not moved, byte-identical, and a correct launch on them runs."""
from _r6 import *


class Weird(BaseException):
    pass


class BadStr(Exception):
    def __str__(self):
        raise RuntimeError("no str for you")


class BadBool:
    def __bool__(self):
        raise ValueError("no truth")


def raiser(exc):
    def pre(x):
        raise exc
    return pre


CASES = {
    "StopIteration": raiser(StopIteration()),
    "GeneratorExit": raiser(GeneratorExit()),
    "SystemExit": raiser(SystemExit(3)),
    "KeyboardInterrupt": raiser(KeyboardInterrupt()),
    "BaseException subclass": raiser(Weird()),
    "exception with raising __str__": raiser(BadStr()),
    "result with raising __bool__": lambda x: BadBool(),
    "numpy bool array result": lambda x: np.array([True, False]),
    "RecursionError": raiser(RecursionError()),
}
problems, notes = [], []
for name, pre in CASES.items():
    @ct.entry(preconditions=[pre])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z) + 1.0)

    zb, xb = arr(64), arr(64, 2.0)
    z, x = ct.from_dlpack(zb).partition(16), ct.from_dlpack(xb)
    snap = (zb.copy(), xb.copy())

    def gen():
        yield k(z, x)
    try:
        if name == "StopIteration":
            op = next(gen())
        else:
            op = k(z, x)
        op.sync()
        problems.append(f"{name}: launch ran")
    except BaseException as e:  # noqa
        notes.append(f"{name}->{type(e).__name__}")
        if name not in ("KeyboardInterrupt", "SystemExit", "GeneratorExit", "BaseException subclass") and not is_st(e):
            problems.append(f"{name}: RAW {type(e).__name__}")
    if not (np.array_equal(zb, snap[0]) and np.array_equal(xb, snap[1])):
        problems.append(f"{name}: bytes changed")
    for v, nm in ((z, "z"), (x, "x")):
        if getattr(v, "is_moved", False):
            problems.append(f"{name}: {nm} left moved ({v.holder})")
    try:
        @ct.entry
        def ok(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
            z.store(ct.load_tile_like(x, z) + 1.0)
        z, x = ok(z, x).sync()
        if not (zb == 3.0).all():
            problems.append(f"{name}: follow-up launch wrong")
    except Exception as e:  # noqa
        problems.append(f"{name}: follow-up launch refused: {type(e).__name__}: {str(e)[:80]}")
if problems:
    broken("; ".join(problems) + " || " + ", ".join(notes))
held(", ".join(notes))

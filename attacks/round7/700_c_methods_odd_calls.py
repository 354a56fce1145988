"""G8 (the C path: "While it is loaded, the four methods around it (EntryKernel.__call__,
LaunchOp._run, LaunchOp.__del__, DeviceOp.then) are C method descriptors that do the common case
and otherwise call the Python definition they replaced, so the Python definitions remain the whole
behaviour") and G7 (odd calls answered, never a crash). Every odd way of calling the four methods --
bound and unbound, wrong self objects, keyword arguments, too many / too few arguments, more than
16 arguments (the C side's small-stack limit) -- is made with the C path loaded and with
SAFETILE_SAFE_NATIVE=0; the public (bound) calls must behave identically, nothing may crash, and
the partition involved must stay usable."""
from _r7 import *
from safetile.safe.launch import LaunchOp


def scenario():
    out, notes = {}, {}

    def tr(d, name, f, words=True):
        try:
            r = f()
            d[name] = "ok " + type(r).__name__
        except BaseException as e:  # noqa
            d[name] = err(e, 80) if words else err(e, 0)
    p = ct.from_dlpack(arr(64)).partition(16)
    v = ct.value(1)
    E, R, D, T = ct.EntryKernel.__call__, LaunchOp._run, LaunchOp.__del__, ct.DeviceOp.then
    # public, bound spellings a program may write
    tr(out, "op.then(f=...)", lambda: ct.value(1).then(f=lambda x: x + 1).sync())
    tr(out, "op.then(f) of a launch", lambda: inc(ct.from_dlpack(arr(64)).partition(16)).then(lambda r: r).sync())
    tr(out, "op.then()", lambda: ct.value(1).then(), False)  # arity wording may differ
    tr(out, "op.then(f, 1)", lambda: ct.value(1).then(print, 1), False)
    tr(out, "op.then(5)", lambda: ct.value(1).then(5))
    tr(out, "kernel(z=p)", lambda: inc(z=p))
    tr(out, "kernel(p, 20 extra)", lambda: inc(p, *range(20)))
    tr(out, "kernel(20 args, kw)", lambda: inc(*range(20), z=1))
    tr(out, "kernel()", lambda: inc())
    tr(out, "kernel(**{})", lambda: inc(p, **{}).cancel())
    tr(out, "p usable after", lambda: p.grid())
    # unbound, odd self (notes: compared but only a crash counts)
    for name, f in {"E()": lambda: E(), "E(5)": lambda: E(5), "E(None,p)": lambda: E(None, p),
                    "R(5)": lambda: R(5), "R(v)": lambda: R(v), "R(v,None)": lambda: R(v, None),
                    "D(5)": lambda: D(5), "D(v)": lambda: D(v), "T(5,print)": lambda: T(5, print),
                    "T(inc,print)": lambda: T(inc, print), "T(v,f=)": lambda: T(v, f=print),
                    "E.__get__(5)": lambda: E.__get__(5, int)}.items():
        tr(notes, name, f)
    tr(out, "p usable at end", lambda: p.grid())
    out["notes"] = notes
    return out


def judge(c, py):
    nd = diff(c.get("notes", {}), py.get("notes", {}))
    if nd:
        print("unbound-call differences (not counted):", nd)
    return None


differential(scenario, judge, ignore=("notes",))

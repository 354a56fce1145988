"""G8's C-path claim ("the C code decides nothing the Python path would decide differently"; the four
methods are C method descriptors that otherwise call the Python definitions) against subclasses, the
way Python resolves methods: a DeviceOp subclass overriding then (and calling super().then), a
subclass of EntryKernel overriding __call__ / adding state, and a kernel instance given a `then` or
`__call__` attribute. The override must win on both paths and super() must reach the library's
behaviour; anything that cannot be subclassed must refuse the same way on both paths."""
from _r7 import *


def scenario():
    out = {}
    try:
        class MyOp(ct.DeviceOp):
            calls = 0

            def then(self, f):
                MyOp.calls += 1
                return super().then(f)
        out["subclass DeviceOp"] = "made"
        try:
            m = MyOp()
            out["MyOp()"] = "made"
            try:
                out["MyOp().then(f).sync"] = repr(m.then(lambda v: 1).sync())
            except Exception as e:  # noqa
                out["MyOp().then(f).sync"] = err(e, 60)
            out["override called"] = MyOp.calls
        except Exception as e:  # noqa
            out["MyOp()"] = err(e, 60)
    except Exception as e:  # noqa
        out["subclass DeviceOp"] = err(e, 60)
    try:
        class MyVal(type(ct.value(1))):
            def then(self, f):
                return ct.value("overridden")
        out["subclass Value"] = "made"
    except Exception as e:  # noqa
        out["subclass Value"] = err(e, 60)
    try:
        class MyEntry(ct.EntryKernel):
            def __call__(self, *a):
                return "overridden"
        out["subclass EntryKernel"] = "made"
        try:
            k = MyEntry(inc.__wrapped__ if hasattr(inc, "__wrapped__") else None)
            out["MyEntry(...)()"] = repr(k(ct.from_dlpack(arr(16)).partition(16)))
        except Exception as e:  # noqa
            out["MyEntry(...)()"] = err(e, 60)
    except Exception as e:  # noqa
        out["subclass EntryKernel"] = err(e, 60)
    # instance attribute named then on an op
    op = ct.value(1)
    try:
        op.then = lambda f: "instance attr"
        out["op.then = ..."] = repr(op.then(print))
    except Exception as e:  # noqa
        out["op.then = ..."] = err(e, 60)
    try:
        inc.__call__ = lambda *a: "instance attr"
        out["kernel.__call__ = ..."] = "assigned"
    except Exception as e:  # noqa
        out["kernel.__call__ = ..."] = err(e, 60)
    p = ct.from_dlpack(arr(16)).partition(16)
    try:
        (p,) = inc(p).sync()
        out["inc still launches"] = float(p.unpartition().to_numpy()[0])
    except Exception as e:  # noqa
        out["inc still launches"] = err(e, 60)
    return out


differential(scenario)

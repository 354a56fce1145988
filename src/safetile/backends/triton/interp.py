"""Support for running generated kernels under Triton's interpreter (``TRITON_INTERPRET=1``).

The interpreter cannot call CUDA's libdevice, so generated sources reach the few libdevice
functions they use through ``_ld``, which in interpreter mode is ``libdevice_shim``: the same
functions computed with NumPy. ``install()`` also makes the interpreter's tensor ``__index__``
work with NumPy 2 (it converts one-element arrays with ``int()``, which NumPy 2 rejects), so
``range(lo, hi)`` with run-time bounds works, and ``jit_calls_interpreted`` lets Triton's own
library functions run interpreted even when triton was imported in compiled mode.
"""
from __future__ import annotations

import contextlib

import numpy as np
from ...locks import FORK_LOCKS

_installed = False
_lock = FORK_LOCKS.new(reentrant=True)
_interpreted: dict = {}


def install() -> None:
    global _installed
    if _installed:
        return
    from triton.runtime import interpreter as interp
    original = interp._patch_lang_tensor

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    interp._patch_lang_tensor = patched
    # The interpreter hands NumPy arrays to its C++ memory routines as raw buffers; a
    # broadcast (stride-0) view then reads garbage. Pass contiguous copies.
    interp._interpreter = _Contiguous(interp._interpreter)
    _installed = True


class _Contiguous:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        fn = getattr(self._inner, name)
        if not callable(fn):
            return fn

        def call(*args):
            return fn(*(np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a for a in args))
        return call


@contextlib.contextmanager
def jit_calls_interpreted():
    """Run ``@triton.jit`` device functions that were compiled-mode objects (Triton's own
    ``tl.sum``, ``tl.cumsum``... when triton was imported without TRITON_INTERPRET=1)
    through the interpreter for the duration of an interpreted launch."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    def call(self, *args, **kwargs):
        f = _interpreted.get(self.fn)
        if f is None:
            f = _interpreted[self.fn] = InterpretedFunction(self.fn)
        return f(*args, **kwargs)

    from triton.runtime import interpreter as interp_mod

    def device_call(self, *args, **kwargs):
        # as InterpretedFunction.__call__, but undoing its patches of triton.language afterwards
        # (left in place they break later compiled-mode kernels in the same process)
        scope = interp_mod._patch_lang(self.fn)
        try:
            return self.rewrite()(*args, **kwargs)
        except Exception as e:
            raise interp_mod.InterpreterError(repr(e)) from e
        finally:
            scope.restore()

    with _lock:
        saved = JITFunction.__call__, InterpretedFunction.__call__
        JITFunction.__call__ = call
        InterpretedFunction.__call__ = device_call
        try:
            yield
        finally:
            JITFunction.__call__, InterpretedFunction.__call__ = saved


def _np_fn(fn):
    def apply(*args):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle
        x = args[0]
        data = [a.handle.data for a in args]
        with np.errstate(all="ignore"):
            out = fn(*data).astype(data[0].dtype, copy=False)
        shape_src = max(args, key=lambda a: len(a.shape) if a.type.is_block() else 0)
        return tl.core.tensor(TensorHandle(out, x.handle.dtype), shape_src.type)
    return staticmethod(apply)


def _rounded(op: str, mode: str):
    """libdevice's directed-rounding arithmetic (``add_rz``...), exactly as numerics.py defines it."""
    def fn(*xs):
        from ... import dtypes as dt
        from ... import numerics
        d = dt.as_dtype(xs[0].dtype)
        hi, sign = numerics.exact_op(op, *(x.astype(np.float64) for x in xs))
        return numerics.round_to(hi, sign, d, mode)
    return fn


def _narrowed(mode: str):
    """libdevice's double2float_rz/rd/ru."""
    def fn(x):
        from ... import dtypes as dt
        from ... import numerics
        return numerics.round_to(x.astype(np.float64), np.zeros(x.shape), dt.float32, mode)
    return fn


def _np_fn_as(fn, dtype):
    """Like ``_np_fn`` but with a fixed result dtype (float64 → float32 conversions)."""
    def apply(*args):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle
        data = [a.handle.data for a in args]
        with np.errstate(all="ignore"):
            out = fn(*data).astype(dtype, copy=False)
        return tl.core.tensor(TensorHandle(out, tl.float32), args[0].type.with_element_ty(tl.float32)
                              if args[0].type.is_block() else tl.float32)
    return staticmethod(apply)


class libdevice_shim:  # noqa: N801 - stands in for a module
    tanh = _np_fn(np.tanh)
    tan = _np_fn(np.tan)
    sinh = _np_fn(np.sinh)
    cosh = _np_fn(np.cosh)
    atan2 = _np_fn(np.arctan2)
    pow = _np_fn(np.power)
    rint = _np_fn(np.rint)


for _op, _name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"), ("sqrt", "sqrt")):
    for _suffix, _mode in (("rz", "zero"), ("rd", "negative_inf"), ("ru", "positive_inf")):
        setattr(libdevice_shim, f"{_name}_{_suffix}", _np_fn(_rounded(_op, _mode)))
for _suffix, _mode in (("rz", "zero"), ("rd", "negative_inf"), ("ru", "positive_inf")):
    setattr(libdevice_shim, f"double2float_{_suffix}", _np_fn_as(_narrowed(_mode), np.float32))

"""Launch arguments: classifying host values into specialisation specs and runtime data.

Arrays come in as NumPy arrays, anything with ``__dlpack__`` (CPU torch tensors are
viewed without a copy), or CUDA arrays for the GPU backend. Python and NumPy scalars
become typed scalars; ``Constant`` parameters become part of the specialisation key.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..errors import LaunchTypeError
from ..frontend.kernel import ArraySpec, ConstSpec, ScalarSpec, TileKernel

SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


def is_cuda(x: Any) -> bool:
    """Whether ``x`` lives in CUDA memory (torch CUDA tensors, CuPy arrays, ...)."""
    if hasattr(x, "__cuda_array_interface__"):
        return True
    dev = getattr(x, "device", None)
    if dev is not None and getattr(dev, "type", None) == "cuda":
        return True
    if hasattr(x, "__dlpack_device__"):
        try:
            return x.__dlpack_device__()[0] in (2, 3, 13)  # CUDA, CUDA host, CUDA managed
        except Exception:  # noqa: BLE001
            return False
    return False


def as_numpy(x: Any) -> np.ndarray:
    """A NumPy view of a host array (no copy), including bfloat16/float8 torch tensors."""
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("torch"):
        name = str(x.dtype).rsplit(".", 1)[-1]
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            import torch
            raw = x.view(torch.int16 if name == "bfloat16" else torch.uint8)
            return np.from_dlpack(raw).view(dt.as_dtype(name).np_dtype)
        return np.from_dlpack(x.detach()) if x.requires_grad else np.from_dlpack(x)
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    if hasattr(x, "__array_interface__"):
        return np.asarray(x)
    raise TypeError(f"expected an array, got {type(x).__name__}")


def is_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) or hasattr(x, "__dlpack__") or hasattr(x, "__cuda_array_interface__") \
        or hasattr(x, "__array_interface__")


_DTYPES: dict[Any, dt.DType] = {}  # array dtype objects (NumPy, torch) -> DType


def array_dtype(x: Any) -> dt.DType:
    key = (type(x.dtype), x.dtype)
    try:
        return _DTYPES[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable dtype object
        return dt.as_dtype(x.dtype)
    d = dt.as_dtype(x.dtype)  # TypeError for unsupported dtypes: not memoised
    if len(_DTYPES) < 256:
        _DTYPES[key] = d
    return d


def scalar_spec(x: Any) -> dt.DType:
    if isinstance(x, (bool, np.bool_)):
        return dt.bool_
    if isinstance(x, (np.integer, np.floating)):
        return dt.as_dtype(x.dtype)
    if isinstance(x, int):
        return dt.int32 if -(2**31) <= x < 2**31 else dt.int64
    return dt.float32


def arg_specs(kernel: TileKernel, args: tuple) -> tuple:
    """The specialisation key of a launch: one spec per kernel parameter (full checks)."""
    specs = []
    for p, ann, is_const, a in zip(kernel.params, kernel.annotations, kernel.constant_params, args):
        if is_const:
            _check_constant(p, ann, a)
            specs.append(ConstSpec.of(_freeze(a)))
        elif isinstance(a, SCALAR_TYPES):
            specs.append(ScalarSpec(scalar_spec(a)))
        elif is_array(a):
            try:
                d = array_dtype(a)
            except TypeError as e:
                raise LaunchTypeError(f"argument {p.name!r}: {e}") from None
            # a read-only NumPy array compiles as a read-only parameter: storing to it is a
            # compile-time error at the store, not a NumPy error halfway through the launch
            readonly = isinstance(a, np.ndarray) and not a.flags.writeable
            specs.append(ArraySpec(d, len(a.shape), readonly))
        else:
            raise LaunchTypeError(f"argument {p.name!r}: expected an array, a number or a Constant, "
                                  f"got {type(a).__name__}")
    return tuple(specs)


def _check_constant(p, ann: Any, value: Any) -> None:
    """A ``ct.Constant[int]`` (or ``[float]``, ``[bool]``...) parameter must get that type.

    The outcome depends only on ``type(value)`` (the dispatch signature relies on this)."""
    from ..frontend.kernel import ConstantAnnotation
    expected = ann.type if isinstance(ann, ConstantAnnotation) else None
    if not isinstance(expected, type):
        return
    is_bool = isinstance(value, (bool, np.bool_))
    if expected is int:
        ok = isinstance(value, (int, np.integer)) and not is_bool
    elif expected is float:
        ok = isinstance(value, (int, float, np.integer, np.floating)) and not is_bool
    elif expected is bool:
        ok = is_bool
    else:
        ok = isinstance(value, expected)
    if not ok:
        raise LaunchTypeError(f"argument {p.name!r} is a ct.Constant[{expected.__name__}], got "
                              f"{type(value).__name__} {value!r}")


# ----------------------------------------------------------------------------- dispatch signature
#
# ``signature(kernel, args)`` is a cheap summary of a launch's arguments such that two launches
# with equal signatures get equal ``arg_specs`` (and pass or fail the same argument checks) and
# the same ``is_cuda`` answers. It reads attributes only: for torch tensors the exact type, dtype,
# rank and ``is_cuda``; for NumPy arrays dtype, rank and writeability; for scalars the exact
# type (and, for Python ints, whether the value fits in int32); for Constant parameters the exact
# type and the value (tuples with the types of their items, so 1, 1.0 and True stay apart).
# ``None`` means "no signature": the launch takes the fully checked path every time.

_PLAIN_CONSTS = frozenset({int, float, bool, str, type(None)})
_NP_SCALARS: set = set()  # NumPy scalar types seen (each has one fixed dtype)


def _torch_key(a):
    return (type(a), a.dtype, a.ndim, a.is_cuda)


def _numpy_key(a):
    return (np.ndarray, a.dtype, a.ndim, a.flags.writeable)


_KEYERS: dict[type, Any] = {np.ndarray: _numpy_key}  # torch.Tensor (and subclasses) on first use


def _const_key(a: Any) -> Any:
    t = type(a)
    if t in _PLAIN_CONSTS:
        return (t, a)
    if t is tuple or t is list:
        frozen = _freeze(a)
        return (t, frozen, _type_signature(frozen))
    hash(a)  # TypeError: no signature (the checked path reports it)
    return (t, a)


def signature(kernel: TileKernel, args: tuple) -> tuple | None:
    """The dispatch signature of ``args`` for ``kernel`` (see above), or None."""
    out = []
    for is_const, a in zip(kernel.constant_params, args):
        t = type(a)
        if is_const:
            try:
                out.append(_const_key(a))
            except TypeError:
                return None
        elif t is int:
            out.append((int, -2147483648 <= a < 2147483648))
        elif t is float or t is bool or t in _NP_SCALARS:
            out.append(t)
        else:
            f = _KEYERS.get(t)
            if f is None:
                return _register(kernel, args)
            out.append(f(a))
    return tuple(out)


def _register(kernel: TileKernel, args: tuple) -> tuple | None:
    """Teach ``signature`` the types of NumPy scalars and torch tensor subclasses, then retry."""
    learned = False
    for a in args:
        t = type(a)
        if t in _KEYERS or t in _NP_SCALARS:
            continue
        if isinstance(a, (np.bool_, np.integer, np.floating)):
            _NP_SCALARS.add(t)
            learned = True
        elif t.__module__.startswith("torch"):  # never imports torch itself
            torch = sys.modules.get("torch")
            if torch is not None and isinstance(a, torch.Tensor):
                _KEYERS[t] = _torch_key
                learned = True
    if not learned:
        return None
    return signature(kernel, args)


def _type_signature(value: Any) -> Any:
    from ..frontend.kernel import _type_signature as ts
    return ts(value)


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    try:
        hash(v)
    except TypeError:
        raise LaunchTypeError(f"Constant arguments must be hashable, got {type(v).__name__}") from None
    return v

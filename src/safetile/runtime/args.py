"""Launch arguments: classifying host values into specialisation specs and runtime data.

Arrays come in as NumPy arrays, anything with ``__dlpack__`` (CPU torch tensors are
viewed without a copy), or CUDA arrays for the GPU backend. Python and NumPy scalars
become typed scalars; ``Constant`` parameters become part of the specialisation key.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any

import numpy as np

from ..errors import ArgumentError
from .. import dtypes as dt
from ..errors import LaunchTypeError, TileTypeError
from ..frontend.annotations import ANY, ArrayAnnotation, Kind, param_kind
from ..frontend.dataclass_values import dataclass_problem
from ..frontend.kernel import (ArgSpec, ArraySpec, ConstSpec, DataclassSpec, ScalarSpec, TileKernel, TupleSpec,
                               const_signature)

SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


def is_cuda(x: Any) -> bool:
    """Whether ``x`` lives in CUDA memory (torch CUDA tensors, CuPy arrays, ...).

    torch tensors are asked directly: their ``__cuda_array_interface__`` raises for dtypes it
    cannot describe (bfloat16, float8), so it is never touched for them."""
    if type(x).__module__.startswith("torch"):
        return bool(getattr(x, "is_cuda", False))
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
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"):
            import torch
            raw = x.view(torch.int16 if name == "bfloat16" else torch.uint8)
            return np.from_dlpack(raw).view(dt.as_dtype(name).np_dtype)
        return np.from_dlpack(x.detach()) if x.requires_grad else np.from_dlpack(x)
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    if hasattr(x, "__array_interface__"):
        return np.asarray(x)
    raise ArgumentError(f"expected an array, got {type(x).__name__}")


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
    specs: list[ArgSpec] = []
    for p, ann, kind, a in zip(kernel.params, kernel.annotations, kernel.kinds, args):
        if kind.kind == "constant":
            _check_constant(p, ann, a)
            specs.append(ConstSpec.of(_freeze(a)))
        else:
            specs.append(_spec(p.name, kind, a))
    return tuple(specs)


def _spec(name: str, kind: Kind, a: Any) -> ArgSpec:
    """The spec of one (non-constant) argument or tuple element, as its annotation ``kind`` says."""
    if kind.kind == "constant":
        return ConstSpec.of(_freeze(a))
    if isinstance(a, SCALAR_TYPES):
        if kind.kind in ("array", "tuple", "list"):
            raise LaunchTypeError(f"argument {name!r}: expected {'an array' if kind.kind == 'array' else 'a tuple'}, "
                            f"got {type(a).__name__}")
        if isinstance(a, int) and not isinstance(a, bool) and not -(2**63) <= a < 2**63:
            raise LaunchTypeError(f"argument {name!r}: the integer {a} does not fit in 64 bits")
        d = scalar_spec(a)
        if kind.scalar is not None and d.is_int:  # ct.ScalarInt64
            d = kind.scalar.dtype
            if isinstance(a, (int, np.integer)) and not np.iinfo(d.np_dtype).min <= int(a) <= np.iinfo(d.np_dtype).max:
                raise LaunchTypeError(f"argument {name!r}: {a} does not fit {d.name}")
        return ScalarSpec(d)
    if isinstance(a, (tuple, list)) and kind.kind in ("any", "tuple", "list"):
        items = kind.items if kind.items is not None and len(kind.items) == len(a) else (ANY,) * len(a)
        if kind.items is not None and len(kind.items) != len(a):
            raise LaunchTypeError(f"argument {name!r}: the annotation has {len(kind.items)} elements, got {len(a)}")
        elem = Kind("array", array=kind.array) if kind.kind == "list" and kind.array is not None else None
        return TupleSpec(tuple(_spec(f"{name}[{i}]", elem or k, x) for i, (k, x) in enumerate(zip(items, a))))
    if dataclasses.is_dataclass(a) and not isinstance(a, type) and kind.kind == "any":
        problem = dataclass_problem(type(a))
        if problem:
            raise TileTypeError(f"argument {name!r}: {problem}")
        hints = _field_kinds(type(a))
        return DataclassSpec(type(a), tuple(_spec(f"{name}.{f.name}", hints.get(f.name, ANY), getattr(a, f.name))
                                            for f in dataclasses.fields(a)))
    if is_array(a):
        if _is_torch_tensor(a):
            problem = torch_kind_problem(a)
            if problem is not None:
                raise LaunchTypeError(f"argument {name!r}: {problem}")
        try:
            d = array_dtype(a)
        except TypeError as e:
            raise LaunchTypeError(f"argument {name!r}: {e}") from None
        # a read-only NumPy array compiles as a read-only parameter: storing to it is a
        # compile-time error at the store, not a NumPy error halfway through the launch
        readonly = isinstance(a, np.ndarray) and not a.flags.writeable
        return _array_spec(name, a, d, readonly, kind.array)
    raise LaunchTypeError(f"argument {name!r}: expected an array, a number, a tuple or a Constant, "
                          f"got {type(a).__name__}")


def _array_spec(name: str, a: Any, d: dt.DType, readonly: bool, ann: ArrayAnnotation | None) -> ArraySpec:
    """An ArraySpec with the sizes/strides ``ann`` makes compile-time constants."""
    ndim = len(a.shape)
    if ann is None:
        return ArraySpec(d, ndim, readonly)

    def dims(listed, values, what):
        out: list[int | None] = [None] * ndim
        for i in listed:
            if not -ndim <= i < ndim:
                raise LaunchTypeError(f"argument {name!r}: {what} dimension {i} is out of range "
                                      f"for an array of rank {ndim}")
            out[i % ndim] = int(values[i % ndim])
        return tuple(out) if listed else None

    shape = dims(ann.static_shape_dims, tuple(a.shape), "static_shape_dims")
    strides = dims(ann.static_stride_dims, element_strides(a), "static_stride_dims")
    return ArraySpec(d, ndim, readonly, shape, strides, ann.index_dtype is dt.int64)


def element_strides(a: Any) -> tuple:
    """Strides in elements of a NumPy array, a torch tensor or another array object."""
    if isinstance(a, np.ndarray):
        return tuple(s // a.itemsize for s in a.strides)
    stride = getattr(a, "stride", None)
    if callable(stride):  # torch
        return tuple(stride())
    return tuple(s // a.itemsize for s in as_numpy(a).strides)


def _field_kinds(cls: type) -> dict:
    import typing
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable annotations say nothing
        return {}
    return {k: param_kind(v) for k, v in hints.items()}


def flat_runtime_args(specs: tuple, args: tuple) -> tuple:
    """The runtime leaves (arrays and scalars) of ``args`` in parameter order, as the compiled
    Function's runtime parameters expect them (tuples and dataclasses element by element)."""
    out: list = []
    for spec, a in zip(specs, args):
        _runtime_leaves(spec, a, out)
    return tuple(out)


def _runtime_leaves(spec: ArgSpec, a: Any, out: list) -> None:
    # a module function, not a closure calling itself: that closure would be a reference cycle
    # keeping every argument (an array exported from a tensor: claims.py) alive until a collection
    if isinstance(spec, TupleSpec):
        for s, x in zip(spec.items, a):
            _runtime_leaves(s, x, out)
    elif isinstance(spec, DataclassSpec):
        for s, f in zip(spec.items, dataclasses.fields(a)):
            _runtime_leaves(s, getattr(a, f.name), out)
    elif not isinstance(spec, ConstSpec):
        out.append(a)


def has_aggregates(specs: tuple) -> bool:
    return any(isinstance(s, (TupleSpec, DataclassSpec)) for s in specs)


def _check_constant(p, ann: Any, value: Any) -> None:
    """A ``ct.Constant[int]`` (or ``[float]``, ``[bool]``...) parameter must get that type.

    The outcome depends only on ``type(value)`` (the dispatch signature relies on this)."""
    from ..frontend.annotations import param_kind
    expected = param_kind(ann).constant_type
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


def torch_kind_problem(a: Any) -> str | None:
    """Why a torch tensor is not plain strided memory holding the values it shows (DLPack, NumPy and
    the GPU launchers read its memory as is), worded for an error message; None when it is."""
    if a.is_nested or a.layout is not sys.modules["torch"].strided or a.device.type == "meta" or a.is_quantized:
        kind = ("nested" if a.is_nested else "quantized" if a.is_quantized else
                "on the meta device (no data)" if a.device.type == "meta" else f"with layout {a.layout}")
        return (f"a torch tensor {kind} is not plain strided memory; safetile tensors wrap strided memory "
                "(convert it first, e.g. .to_dense())")
    if a.is_conj() or a.is_neg():
        bit, fix = ("conjugate", "resolve_conj") if a.is_conj() else ("negative", "resolve_neg")
        return (f"the torch tensor has its lazy {bit} bit set (its memory does not hold the values it shows); "
                f"materialise it first with .{fix}()")
    return None


def _torch_key(a):
    if torch_kind_problem(a) is not None:
        return None  # the checked path refuses it
    return (type(a), a.dtype, a.ndim, a.is_cuda)


def _numpy_key(a):
    return (np.ndarray, a.dtype, a.ndim, a.flags.writeable)


_KEYERS: dict[type, Any] = {np.ndarray: _numpy_key}  # torch.Tensor (and subclasses) on first use


def _const_key(a: Any) -> Any:
    """A Constant's dispatch key: its type and value, and what ``==`` ignores (``const_signature``:
    the sign of a zero float, element types, dataclass fields outside ``__eq__``)."""
    t = type(a)
    if t in _PLAIN_CONSTS and not (t is float and a == 0.0):
        return (t, a)
    if t is tuple or t is list:
        frozen = _freeze(a)
        return (t, frozen, const_signature(frozen))
    hash(a)  # TypeError: no signature (the checked path reports it)
    try:
        return (t, a, const_signature(a))
    except ArgumentError:
        raise TypeError("unhashable field") from None  # the checked path reports it


def signature(kernel: TileKernel, args: tuple) -> tuple | None:
    """The dispatch signature of ``args`` for ``kernel`` (see above), or None."""
    if kernel.static_arrays:  # array sizes/strides in the key: every launch is checked
        return None
    out = []
    for is_const, a in zip(kernel.constant_params, args):
        t = type(a)
        if is_const:
            try:
                out.append(_const_key(a))
            except TypeError:
                return None
        elif t is int:
            if not -9223372036854775808 <= a < 9223372036854775808:
                return None  # the checked path refuses it
            out.append((int, -2147483648 <= a < 2147483648))
        elif t is float or t is bool or t in _NP_SCALARS:
            out.append(t)
        else:
            f = _KEYERS.get(t)
            if f is None:
                return _register(kernel, args)
            k = f(a)
            if k is None:
                return None
            out.append(k)
    return tuple(out)


def _is_torch_tensor(a: Any) -> bool:
    torch = sys.modules.get("torch")  # never imports torch itself
    return torch is not None and type(a).__module__.startswith("torch") and isinstance(a, torch.Tensor)


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


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    try:
        hash(v)
    except TypeError:
        raise LaunchTypeError(f"Constant arguments must be hashable, got {type(v).__name__}") from None
    return v

"""Launch arguments: classifying host values into specialisation specs and runtime data.

Arrays come in as NumPy arrays, anything with ``__dlpack__`` (CPU torch tensors are
viewed without a copy), or CUDA arrays for the GPU backend. Python and NumPy scalars
become typed scalars; ``Constant`` parameters become part of the specialisation key.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from ..frontend.kernel import ArraySpec, ConstSpec, Kernel, ScalarSpec

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


def array_dtype(x: Any) -> dt.DType:
    if isinstance(x, np.ndarray):
        return dt.as_dtype(x.dtype)
    return dt.as_dtype(x.dtype)


def scalar_spec(x: Any) -> dt.DType:
    if isinstance(x, (bool, np.bool_)):
        return dt.bool_
    if isinstance(x, (np.integer, np.floating)):
        return dt.as_dtype(x.dtype)
    if isinstance(x, int):
        return dt.int32 if -(2**31) <= x < 2**31 else dt.int64
    return dt.float32


def arg_specs(kernel: Kernel, args: tuple) -> tuple:
    """The specialisation key of a launch: one spec per kernel parameter."""
    specs = []
    for p, is_const, a in zip(kernel.params, kernel.constant_params, args):
        if is_const:
            _check_constant(kernel, p, a)
            specs.append(ConstSpec.of(_freeze(a)))
        elif isinstance(a, SCALAR_TYPES):
            specs.append(ScalarSpec(scalar_spec(a)))
        elif is_array(a):
            try:
                d = array_dtype(a)
            except TypeError as e:
                raise TypeError(f"argument {p.name!r}: {e}") from None
            # a read-only NumPy array compiles as a read-only parameter: storing to it is a
            # compile-time error at the store, not a NumPy error halfway through the launch
            readonly = isinstance(a, np.ndarray) and not a.flags.writeable
            specs.append(ArraySpec(d, len(a.shape), readonly))
        else:
            raise TypeError(f"argument {p.name!r}: expected an array, a number or a Constant, "
                            f"got {type(a).__name__}")
    return tuple(specs)


def _check_constant(kernel: Kernel, p, value: Any) -> None:
    """A ``ct.Constant[int]`` (or ``[float]``, ``[bool]``...) parameter must get that type."""
    from ..frontend.kernel import ConstantAnnotation
    ann = kernel._annotation(p)
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
        raise TypeError(f"argument {p.name!r} is a ct.Constant[{expected.__name__}], got "
                        f"{type(value).__name__} {value!r}")


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"Constant arguments must be hashable, got {type(v).__name__}") from None
    return v

"""Parameter annotations of cuTile Python kernels, and what each parameter is.

``ct.Constant[T]`` is ``Annotated[T, ConstantAnnotation()]`` (as in cuTile Python), so
``typing.Annotated`` metadata written by hand works too. ``ArrayAnnotation`` makes array
sizes or strides compile-time constants or indexes an array with int64, ``ScalarAnnotation``
(``ct.ScalarInt64``) types an integer scalar as int64, and ``ListAnnotation`` describes a list
of arrays. ``param_kind`` reads one parameter's annotation into a ``Kind`` tree that the
runtime uses to classify launch arguments (tuples of arrays and scalars included).
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, TypeVar

from .. import dtypes as dt
from ..errors import ArgumentError


class ConstantAnnotation:
    """``typing.Annotated`` metadata: the parameter is a compile-time constant (embedded in the
    compiled code; each distinct value compiles a specialisation)."""

    def __repr__(self) -> str:
        return "ConstantAnnotation()"

    def __eq__(self, other) -> bool:
        return isinstance(other, ConstantAnnotation)

    def __hash__(self) -> int:
        return hash(ConstantAnnotation)


T = TypeVar("T")
Constant = Annotated[T, ConstantAnnotation()]


@dataclass(frozen=True, kw_only=True)
class ArrayAnnotation:
    """``typing.Annotated`` metadata for an array parameter.

    ``index_dtype`` (int32 or int64) types its shape and strides inside the kernel;
    ``static_shape_dims``/``static_stride_dims`` list dimensions whose size/stride become
    compile-time constants (each distinct value compiles a specialisation).
    """

    index_dtype: dt.DType = dt.int32
    static_shape_dims: tuple[int, ...] = ()
    static_stride_dims: tuple[int, ...] = ()

    def __post_init__(self):
        if self.index_dtype not in (dt.int32, dt.int64):
            raise ArgumentError(f"`index_dtype` must be int32 or int64, got {self.index_dtype}")
        for field in ("static_shape_dims", "static_stride_dims"):
            dims = getattr(self, field)
            if not isinstance(dims, tuple):
                raise ArgumentError(f"`{field}` must be a tuple of integers")
            for i, d in enumerate(dims):
                if isinstance(d, bool) or not isinstance(d, int):
                    raise ArgumentError(f"Element #{i} of `{field}` must be int, got {d}")


@dataclass(frozen=True, kw_only=True)
class ScalarAnnotation:
    """``typing.Annotated`` metadata for a scalar parameter: its dtype (int32 or int64)."""

    dtype: dt.DType

    def __post_init__(self):
        if self.dtype not in (dt.int32, dt.int64):
            raise ArgumentError(f"`dtype` must be int32 or int64, got {self.dtype}")


@dataclass(frozen=True, kw_only=True)
class ListAnnotation:
    """``typing.Annotated`` metadata for a list-of-arrays parameter: the arrays' annotation."""

    element: Any

    def __post_init__(self):
        element = self.element
        if typing.get_origin(element) is Annotated:
            found = [m for m in element.__metadata__ if isinstance(m, ArrayAnnotation)]
            if len(found) != 1:
                raise ArgumentError(f"`element` must contain exactly one ArrayAnnotation, found {len(found)} in "
                                    f"{element!r}")
            element = found[0]
            object.__setattr__(self, "element", element)
        if not isinstance(element, ArrayAnnotation):
            raise ArgumentError(f"`element` must be an ArrayAnnotation, got {type(element).__name__}")


IndexedWithInt64 = Annotated[T, ArrayAnnotation(index_dtype=dt.int64)]
ScalarInt64 = Annotated[T, ScalarAnnotation(dtype=dt.int64)]


class ScalarProtocol(Protocol):
    """A run-time scalar inside a kernel (a 0-d tile)."""

    def __index__(self) -> int: ...


Scalar = int | float | ScalarProtocol


# ----------------------------------------------------------------------------- parameter kinds

@dataclass(frozen=True)
class Kind:
    """What one kernel parameter (or tuple element) is: ``constant``, ``array`` (with its
    ArrayAnnotation), ``scalar`` (with its ScalarAnnotation), ``tuple`` (``items``: a Kind per
    element, or None when the annotation does not say), ``list`` (of arrays) or ``any``
    (decided by the argument: an array, a scalar or a tuple)."""

    kind: str
    array: ArrayAnnotation | None = None
    scalar: ScalarAnnotation | None = None
    items: tuple | None = None
    constant_type: Any = None


ANY = Kind("any")


def param_kind(ann: Any) -> Kind:
    """The Kind an annotation declares (unknown or absent annotations are ``any``)."""
    if ann is None or ann is typing.Any or isinstance(ann, TypeVar):
        return ANY
    if typing.get_origin(ann) is Annotated:
        base, *meta = typing.get_args(ann)
        if any(isinstance(m, ConstantAnnotation) for m in meta):
            return Kind("constant", constant_type=None if isinstance(base, TypeVar) else base)
        for m in meta:
            if isinstance(m, ArrayAnnotation):
                return Kind("array", array=m)
            if isinstance(m, ScalarAnnotation):
                return Kind("scalar", scalar=m)
            if isinstance(m, ListAnnotation):
                return Kind("list", array=m.element)
        return param_kind(base)
    origin = typing.get_origin(ann)
    if origin is tuple:
        args = typing.get_args(ann)
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return Kind("tuple")
        return Kind("tuple", items=tuple(param_kind(a) for a in args))
    if origin is list:
        return Kind("list")
    if dataclasses.is_dataclass(ann) and isinstance(ann, type):
        return ANY
    return ANY


def is_constant_annotation(ann: Any) -> bool:
    return param_kind(ann).kind == "constant"

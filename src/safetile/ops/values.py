"""Symbolic values that kernel code manipulates while the front end builds IR.

``Tile`` wraps an SSA value of tile type and gives Python operators their tile meaning;
``Array`` wraps a kernel array parameter. Python constants (ints, floats, bools) stay
plain Python objects until an op needs them as tiles, so constant folding is free.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes as dt
from ..errors import TileTypeError, TileValueError
from ..ir.builder import emit, runtime_sources
from ..ir.core import Value
from ..ir.types import ArrayType, TileType

CONST_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)
if TYPE_CHECKING:
    from typing import TypeAlias

    # what a tile operator takes on its other side: a tile or a Python/NumPy constant
    Operand: TypeAlias = "Tile | bool | int | float | np.bool_ | np.integer[Any] | np.floating[Any]"


def is_const(x: Any) -> bool:
    return isinstance(x, CONST_TYPES)


class Tile:
    """An immutable tile inside a kernel (a scalar is a 0-d tile)."""

    __slots__ = ("value",)
    __array_priority__ = 1000  # so numpy scalars defer to tile operators

    def __init__(self, value: Value):
        assert isinstance(value.type, TileType)
        self.value = value

    @property
    def type(self) -> TileType:
        t = self.value.type
        assert isinstance(t, TileType)  # checked in __init__; a Value's type never changes
        return t

    @property
    def dtype(self) -> dt.DType:
        return self.value.type.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __bool__(self):
        raise TileTypeError("a tile value has no compile-time truth value; use it in an "
                            "if/while condition directly or use ct.where")

    def __iter__(self):
        raise TileTypeError("tiles are not iterable")

    def __repr__(self) -> str:
        return f"Tile({self.type})"

    # Operators are defined by ops.elementwise (attached there to keep one definition); these
    # declarations tell type checkers what they take and give: a tile, as comparisons do too.
    if TYPE_CHECKING:
        def __add__(self, other: Operand, /) -> Tile: ...
        def __radd__(self, other: Operand, /) -> Tile: ...
        def __sub__(self, other: Operand, /) -> Tile: ...
        def __rsub__(self, other: Operand, /) -> Tile: ...
        def __mul__(self, other: Operand, /) -> Tile: ...
        def __rmul__(self, other: Operand, /) -> Tile: ...
        def __truediv__(self, other: Operand, /) -> Tile: ...
        def __rtruediv__(self, other: Operand, /) -> Tile: ...
        def __floordiv__(self, other: Operand, /) -> Tile: ...
        def __rfloordiv__(self, other: Operand, /) -> Tile: ...
        def __mod__(self, other: Operand, /) -> Tile: ...
        def __rmod__(self, other: Operand, /) -> Tile: ...
        def __pow__(self, other: Operand, /) -> Tile: ...
        def __rpow__(self, other: Operand, /) -> Tile: ...
        def __and__(self, other: Operand, /) -> Tile: ...
        def __rand__(self, other: Operand, /) -> Tile: ...
        def __or__(self, other: Operand, /) -> Tile: ...
        def __ror__(self, other: Operand, /) -> Tile: ...
        def __xor__(self, other: Operand, /) -> Tile: ...
        def __rxor__(self, other: Operand, /) -> Tile: ...
        def __lshift__(self, other: Operand, /) -> Tile: ...
        def __rlshift__(self, other: Operand, /) -> Tile: ...
        def __rshift__(self, other: Operand, /) -> Tile: ...
        def __rrshift__(self, other: Operand, /) -> Tile: ...
        def __eq__(self, other: Operand, /) -> Tile: ...  # type: ignore[override]  # a tile of bools
        def __ne__(self, other: Operand, /) -> Tile: ...  # type: ignore[override]  # a tile of bools
        def __lt__(self, other: Operand, /) -> Tile: ...
        def __le__(self, other: Operand, /) -> Tile: ...
        def __gt__(self, other: Operand, /) -> Tile: ...
        def __ge__(self, other: Operand, /) -> Tile: ...
        def __neg__(self) -> Tile: ...
        def __pos__(self) -> Tile: ...
        def __abs__(self) -> Tile: ...
        def __invert__(self) -> Tile: ...
        def __matmul__(self, other: Tile, /) -> Tile: ...
        def __rmatmul__(self, other: Tile, /) -> Tile: ...

    def astype(self, dtype, *, rounding_mode=None) -> Tile:
        from .elementwise import astype
        return astype(self, dtype, rounding_mode=rounding_mode)

    def reshape(self, *shape, **kwargs) -> Tile:
        """``t.reshape(shape)``, ``t.reshape(shape=...)`` or ``t.reshape(2, 4)``."""
        from .shape import reshape
        if kwargs:
            if shape or set(kwargs) != {"shape"}:
                raise TileTypeError(f"reshape() takes a shape, got {', '.join(kwargs)}")
            return reshape(self, kwargs["shape"])
        return reshape(self, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)

    def insert(self, index, value) -> Tile:
        from .shape import insert
        return insert(self, index, value)

    def permute(self, axes) -> Tile:
        from .shape import permute
        return permute(self, axes)

    def transpose(self, axis0=None, axis1=None) -> Tile:
        from .shape import transpose
        return transpose(self, axis0, axis1)

    def broadcast_to(self, shape) -> Tile:
        from .shape import broadcast_to
        return broadcast_to(self, shape)

    def expand_dims(self, axis) -> Tile:
        from .shape import expand_dims
        return expand_dims(self, axis)

    def item(self) -> Tile:
        from .shape import item
        return item(self)

    def extract(self, index, shape) -> Tile:
        from .shape import extract
        return extract(self, index, shape)

    def sum(self, axis=None, keepdims=False) -> Tile:
        from .reduction import sum as _sum
        return _sum(self, axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False) -> Tile:
        from .reduction import max as _max
        return _max(self, axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False) -> Tile:
        from .reduction import min as _min
        return _min(self, axis, keepdims=keepdims)

    def __getitem__(self, key) -> Tile:
        from .shape import index_tile
        return index_tile(self, key)

    @property
    def T(self) -> Tile:
        from .shape import transpose
        return transpose(self)


class Array:
    """A global-memory array passed to the kernel; its sizes are known only at run time."""

    __slots__ = ("value", "name")

    def __init__(self, value: Value, name: str = ""):
        assert isinstance(value.type, ArrayType)
        self.value = value
        self.name = name

    @property
    def type(self) -> ArrayType:
        t = self.value.type
        assert isinstance(t, ArrayType)  # checked in __init__; a Value's type never changes
        return t

    @property
    def dtype(self) -> dt.DType:
        return self.value.type.dtype

    @property
    def ndim(self) -> int:
        return self.value.type.ndim

    @property
    def shape(self) -> tuple:
        from .memory import array_dim
        return tuple(array_dim(self, axis) for axis in range(self.ndim))

    @property
    def strides(self) -> tuple:
        from .memory import array_stride
        return tuple(array_stride(self, axis) for axis in range(self.ndim))

    def tiled_view(self, tile_shape, *, padding_mode=None, traversal_steps=None):
        from .memory import TiledView
        return TiledView(self, tile_shape, padding_mode=padding_mode, traversal_steps=traversal_steps)

    def slice(self, axis, start, stop) -> ArraySlice:
        """A view of this array restricted to [start, stop) along ``axis`` (no copy).

        ``axis`` is a constant (negative counts from the end); ``start``/``stop`` are integers
        (Python ints or 0-d integer tiles, run-time values allowed). Bounds outside
        ``0 <= start <= stop <= N`` are clamped into that range, so a view never reaches
        outside the array it was taken from. See ``ops.memory.slice_array``.
        """
        from .memory import slice_array
        return slice_array(self, axis, start, stop)

    def __repr__(self) -> str:
        return f"Array({self.type})"


class ArraySlice(Array):
    """An array seen through ``Array.slice``: a window of ``base`` (the kernel parameter).

    It shares ``base``'s IR value, so dtype, rank and strides are the base's; the window is
    front-end data: per axis an element offset and a size (int32 scalar tiles), or None for
    an axis left whole. Memory ops (``ops.memory``) turn element indices of the view into
    indices of ``base`` and treat indices outside the window as out of bounds, so every op
    that accepts an array accepts a slice without a new IR op.
    """

    __slots__ = ("base", "offsets", "sizes", "static_sizes")

    def __init__(self, base: Array, offsets: tuple[Tile | None, ...], sizes: tuple[Tile | None, ...],
                 static_sizes: tuple[int | None, ...] | None = None):
        assert not isinstance(base, ArraySlice) and len(offsets) == len(sizes) == base.ndim
        super().__init__(base.value, base.name)
        self.base = base
        self.offsets = offsets
        self.sizes = sizes
        # per axis the size known at compile time (constant slice bounds), else None
        self.static_sizes = static_sizes if static_sizes is not None else (None,) * base.ndim

    def __repr__(self) -> str:
        return f"ArraySlice({self.type})"


def const_tile(value: Any, dtype: dt.DType) -> Tile:
    """Materialise a Python constant as a 0-d tile of ``dtype``."""
    if dtype.is_bool:
        value = bool(value)
    elif dtype.is_int:
        if isinstance(value, (float, np.floating)):
            value = int(value)
        value = int(value)
        info = np.iinfo(dtype.np_dtype)
        if not info.min <= value <= info.max:
            raise TileValueError(f"constant {value} does not fit in {dtype.name}")
    else:
        value = float(value)
        if dtype.name in ("float8_e8m0fnu", "float8_e5m3fnu") and math.copysign(1.0, value) < 0:
            raise TileValueError(f"negative values cannot be represented in {dtype.name}")
        if dtype.name == "float4_e2m1fn" and math.isnan(value):
            raise TileValueError(f"NaN cannot be represented in {dtype.name}")
    return Tile(emit("constant", [], {"value": value, "dtype": dtype, "shape": ()}).result)


def as_tile(x: Any, dtype: dt.DType | None = None) -> Tile:
    """A Tile for ``x``: tiles pass through; constants become 0-d tiles."""
    if isinstance(x, Tile):
        return x
    if is_const(x):
        return const_tile(x, dtype if dtype is not None else dt.scalar_dtype(x))
    raise TileTypeError(f"expected a tile or a number, got {_describe(x)}")


def _describe(x: Any) -> str:
    if isinstance(x, ArraySlice):
        return "an array slice (load a tile from it first)"
    if isinstance(x, Array):
        return "an array (load a tile from it first)"
    if isinstance(x, tuple):
        return f"a tuple {x!r}" if len(repr(x)) < 60 else "a tuple"
    if x is None:
        return "None"
    if isinstance(x, Tile):
        return f"a {x.type}"
    return f"{type(x).__name__} {x!r}" if len(repr(x)) < 60 else type(x).__name__


def describe(x: Any) -> str:
    return _describe(x)


def not_constant(what: str, x: Tile | Array) -> TileTypeError:
    """The error for a run-time value where a compile-time constant is needed; when the value
    comes from run-time scalar parameters, it names them and the annotation that fixes it."""
    message = f"{what} must be a compile-time constant, got a run-time {x.type}"
    params = runtime_sources(x.value) if isinstance(x, Tile) else []
    if params:
        kind = "bool" if x.dtype is dt.bool_ else "float" if x.dtype.is_float else "int"
        fixes = ", ".join(f"`{p}: ct.Constant[{kind}]`" for p in params)
        which = f"parameter {params[0]!r}" if len(params) == 1 else \
            "parameters " + ", ".join(repr(p) for p in params)
        message += (f"; it comes from {which}, a run-time argument: annotate it as {fixes} to make it a "
                    "compile-time constant")
    return TileTypeError(message)


def static_int(x: Any, what: str) -> int:
    """A compile-time integer (shapes, axes); tiles are rejected with a clear message."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        if isinstance(x, Tile):
            raise not_constant(what, x)
        raise TileTypeError(f"{what} must be an integer constant, got {_describe(x)}")
    return int(x)


def static_shape(shape: Any, what: str = "shape") -> tuple[int, ...]:
    """Normalise a tile shape argument (int or tuple of ints) and check powers of two."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    if not isinstance(shape, (tuple, list)):
        raise TileTypeError(f"{what} must be a tuple of integer constants, got {_describe(shape)}")
    dims = tuple(static_int(n, f"{what} dimension") for n in shape)
    for n in dims:
        if not dt.is_pow2(n):
            raise TileTypeError(f"tile dimensions must be powers of two, got {what} {dims}")
    return dims


def static_dtype(x: Any, what: str = "dtype") -> dt.DType:
    try:
        return dt.as_dtype(x)
    except TypeError:
        raise TileTypeError(f"{what} must be a dtype, got {_describe(x)}") from None


def normalize_axis(axis: Any, ndim: int, what: str = "axis") -> int:
    a = static_int(axis, what)
    if not -ndim <= a < max(ndim, 1) or ndim == 0:
        raise TileTypeError(f"{what} {a} is out of range for a tile of rank {ndim}")
    return a % ndim

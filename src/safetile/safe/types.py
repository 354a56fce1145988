"""Parameter annotations of ``@ct.entry`` kernels and short element-type names.

``ct.Mut[ct.f32, "B"]``            one block's mutable sub-tensor of a host partition
``ct.Ref[ct.f32, (-1, "K")]``      a read-only tensor (shared by every block)
``ct.MappedMut[ct.f32, ("BM", "BN")]`` a mapped mutable partition (persistent kernels)
``alpha: ct.f32``                  a run-time scalar
``n: ct.Constant[int]``            a compile-time constant

A shape entry is a static size (``64``), a named const generic (``"B"``, bound from the
arguments or given with ``kernel.generics(B=...)``) or ``-1`` (dynamic: never recompiles).
The element type may be a named generic too (``ct.Ref["E", -1]``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import dtypes as dt
from ..errors import TileDeclarationError
from ..frontend.kernel import is_constant_annotation
from ..frontend.source import caller_loc

# short element-type names (cuTile Rust spelling)
f16, bf16, f32, f64, tf32 = dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.tfloat32
i8, i16, i32, i64 = dt.int8, dt.int16, dt.int32, dt.int64
u8, u16, u32, u64 = dt.uint8, dt.uint16, dt.uint32, dt.uint64

SHORT_NAMES = {"f16": f16, "bf16": bf16, "f32": f32, "f64": f64, "tf32": tf32, "i8": i8, "i16": i16,
               "i32": i32, "i64": i64, "u8": u8, "u16": u16, "u32": u32, "u64": u64}

Dim = int | str  # static size, -1 (dynamic) or a generic name


def _declaration_error(message: str) -> TileDeclarationError:
    """A malformed annotation, located at the user's line that wrote it."""
    return TileDeclarationError(message, caller_loc())


@dataclass(frozen=True)
class TensorParam:
    """A tensor parameter annotation: kind ('mut' | 'ref' | 'mapped'), element type, shape."""

    kind: str
    dtype: Any  # DType or generic name (str)
    shape: tuple[Dim, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def mutable(self) -> bool:
        return self.kind in ("mut", "mapped")

    def __repr__(self) -> str:
        name = {"mut": "Mut", "ref": "Ref", "mapped": "MappedMut"}[self.kind]
        d = self.dtype if isinstance(self.dtype, str) else self.dtype.name
        return f"ct.{name}[{d}, {self.shape}]"


def parse_dtype(x: Any, what: str) -> Any:
    """A DType, or a generic element-type name (a string that names no dtype)."""
    if isinstance(x, str):
        if x in SHORT_NAMES:
            return SHORT_NAMES[x]
        try:
            return dt.as_dtype(x)
        except TypeError:
            if not x.isidentifier():
                raise _declaration_error(f"{what}: element type {x!r} is neither a dtype nor a generic name") from None
            return x
    try:
        return dt.as_dtype(x)
    except TypeError:
        raise _declaration_error(f"{what}: {x!r} is not an element type") from None


def parse_shape(shape: Any, what: str) -> tuple[Dim, ...]:
    if isinstance(shape, (int, str)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not shape:
        raise _declaration_error(f"{what}: shape must be a size, a generic name or a tuple of them, got {shape!r}")
    out = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, str)):
            raise _declaration_error(f"{what}: shape entries are sizes, -1 or generic names, got {d!r}")
        if isinstance(d, int) and d < 1 and d != -1:
            raise _declaration_error(f"{what}: static sizes must be positive (or -1 for dynamic), got {d}")
        if isinstance(d, str) and not d.isidentifier():
            raise _declaration_error(f"{what}: generic name {d!r} is not an identifier")
        out.append(d)
    return tuple(out)


class _TensorAnnotation:
    _kind = ""

    def __class_getitem__(cls, item):
        if not isinstance(item, tuple) or len(item) != 2:
            raise _declaration_error(f"ct.{cls.__name__}[element_type, shape], e.g. ct.{cls.__name__}[ct.f32, \"B\"]")
        what = f"ct.{cls.__name__}"
        return TensorParam(cls._kind, parse_dtype(item[0], what), parse_shape(item[1], what))

    def __init__(self, *a, **k):
        name = type(self).__name__
        raise _declaration_error(f"ct.{name} is an annotation: write ct.{name}[dtype, shape]")


class Mut(_TensorAnnotation):
    """``z: ct.Mut[dtype, shape]`` — this block's exclusive sub-tensor of a host partition.

    The block may ``z.load()`` it and ``z.store(tile)`` a tile of exactly its shape; there
    is no index, so two blocks can never write the same element.
    """
    _kind = "mut"


class Ref(_TensorAnnotation):
    """``x: ct.Ref[dtype, shape]`` — a read-only tensor shared by every block (never stored to)."""
    _kind = "ref"


class MappedMut(_TensorAnnotation):
    """``z: ct.MappedMut[dtype, tile_shape]`` — a mapped mutable partition (persistent kernels).

    Pass ``t.partition(tile_shape).map(num_tile_blocks)``; iterate ``for idx in z.iter_indices():``
    and ``z.store(tile, idx)``: only indices produced by that iterator are accepted.
    """
    _kind = "mapped"


@dataclass(frozen=True)
class ScalarParam:
    dtype: Any  # DType or generic name


@dataclass(frozen=True)
class ConstParam:
    pass


def parse_annotation(ann: Any, name: str, kernel: str) -> TensorParam | ScalarParam | ConstParam:
    """Classify one ``@ct.entry`` parameter annotation."""
    what = f"kernel {kernel!r}, parameter {name!r}"
    if isinstance(ann, TensorParam):
        return ann
    if is_constant_annotation(ann):
        return ConstParam()
    if isinstance(ann, type) and issubclass(ann, _TensorAnnotation):
        raise _declaration_error(f"{what}: write ct.{ann.__name__}[dtype, shape], not a bare ct.{ann.__name__}")
    if ann is None or ann is Any:
        raise _declaration_error(f"{what}: @ct.entry parameters need an annotation (ct.Mut[...], ct.Ref[...], "
                        "a scalar type such as ct.f32, or ct.Constant[int])")
    try:
        return ScalarParam(parse_dtype(ann, what))
    except TypeError:
        raise _declaration_error(f"{what}: unsupported annotation {ann!r}; use ct.Mut[...], ct.Ref[...], "
                        "ct.MappedMut[...], a scalar type (ct.f32, int, float) or ct.Constant[int]") from None

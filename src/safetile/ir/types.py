"""IR types: tiles (static shape) and arrays (global memory, dynamic shape)."""
from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import DType, Shape


@dataclass(frozen=True)
class TileType:
    """An immutable tile: element type and a static, power-of-two shape (``()`` = scalar)."""

    dtype: DType
    shape: Shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = "x".join(str(n) for n in self.shape)
        return f"tile<{dims + 'x' if dims else ''}{self.dtype.name}>"


@dataclass(frozen=True)
class ArrayType:
    """A kernel array parameter in global memory: element type and rank; sizes are dynamic.

    ``readonly`` marks safe-style shared inputs; ``static_shape`` holds sizes known at
    compile time (``None`` per dynamic axis).
    """

    dtype: DType
    ndim: int
    readonly: bool = False
    static_shape: tuple[int | None, ...] | None = None
    # strides known at compile time (``ct.ArrayAnnotation(static_stride_dims=...)``), and the
    # dtype of sizes and strides inside the kernel (int64 for ``ct.IndexedWithInt64``)
    static_strides: tuple[int | None, ...] | None = None
    index_int64: bool = False

    def __str__(self) -> str:
        dims = ",".join("?" if s is None else str(s) for s in (self.static_shape or (None,) * self.ndim))
        return f"array<{dims}:{self.dtype.name}{',ro' if self.readonly else ''}>"


IRType = TileType | ArrayType


def scalar(dtype: DType) -> TileType:
    return TileType(dtype, ())

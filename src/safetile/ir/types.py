"""IR types: tiles (static shape) and arrays (global memory, dynamic shape)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..dtypes import DType, Shape
from ..errors import TileValueError

# The most elements one tile may have (2**24: a 4096 x 4096 tile). A tile lives in one block's
# registers and shared memory; far smaller tiles already spill on every GPU, and a larger one would
# take the CPU backend minutes or all of memory. Refused at compile time, located at the op.
MAX_TILE_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class TileType:
    """An immutable tile: element type and a static, power-of-two shape (``()`` = scalar)."""

    dtype: DType
    shape: Shape

    def __post_init__(self) -> None:
        if math.prod(self.shape) > MAX_TILE_ELEMENTS:
            raise TileValueError(f"a tile of shape {tuple(self.shape)} has {math.prod(self.shape)} elements; a tile "
                                 f"holds at most {MAX_TILE_ELEMENTS} (2**24): split the work over more blocks or "
                                 "loop over smaller tiles")

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

"""Matrix multiply: ``mma`` (multiply-accumulate, no promotion) and ``matmul``/``@``."""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import TileTypeError
from ..ir.builder import emit
from ..ir.catalogue import declare
from ..ir.types import TileType
from .elementwise import cast
from .values import Tile, describe

FAMILY = "matmul"

# operand dtype -> accumulator dtypes mma accepts
MMA_ACC = {
    "float16": ("float16", "float32"),
    "bfloat16": ("float32",),
    "float32": ("float32",),
    "tfloat32": ("float32",),
    "float64": ("float64",),
    "float8_e4m3fn": ("float16", "float32"),
    "float8_e5m2": ("float16", "float32"),
    "int8": ("int32",),
    "uint8": ("int32",),
    "int32": ("int32",),
    "int64": ("int64",),
}


def _mm_shape(a: TileType, b: TileType) -> tuple[int, ...]:
    if a.ndim not in (2, 3) or b.ndim != a.ndim:
        raise TileTypeError(f"matrix multiply needs two rank-2 (or two rank-3 batched) tiles, got {a} and {b}")
    if a.shape[-1] != b.shape[-2]:
        raise TileTypeError(f"inner dimensions differ: {a} @ {b} ({a.shape[-1]} != {b.shape[-2]})")
    if a.ndim == 3 and a.shape[0] != b.shape[0] and 1 not in (a.shape[0], b.shape[0]):
        raise TileTypeError(f"batch dimensions differ: {a} @ {b}")
    batch = (max(a.shape[0], b.shape[0]),) if a.ndim == 3 else ()
    return batch + (a.shape[-2], b.shape[-1])


def _mma_rule(types, attrs):
    a, b, acc = types
    if a.dtype is not b.dtype:
        raise TileTypeError(f"mma operands must share one dtype, got {a.dtype.name} and {b.dtype.name}")
    shape = _mm_shape(a, b)
    if acc.shape != shape:
        raise TileTypeError(f"mma accumulator shape {acc.shape} must be {shape} for {a} @ {b}")
    if acc.dtype.name not in MMA_ACC.get(a.dtype.name, ()):
        raise TileTypeError(f"mma of {a.dtype.name} operands cannot accumulate in {acc.dtype.name}; "
                            f"allowed: {', '.join(MMA_ACC.get(a.dtype.name, ())) or 'none'}")
    return [acc]


declare("mma", FAMILY, "acc + a @ b (2-d or batched 3-d); operands share a dtype, the accumulator "
        "type follows the mma table", _mma_rule)


def mma(x, y, acc, /) -> Tile:
    """Matrix multiply-accumulate ``x @ y + acc`` with no type promotion."""
    for name, t in (("x", x), ("y", y), ("acc", acc)):
        if not isinstance(t, Tile):
            raise TileTypeError(f"mma: {name} must be a tile, got {describe(t)}")
    return Tile(emit("mma", [x.value, y.value, acc.value]).result)


def matmul(x, y, /) -> Tile:
    """``x @ y``: operands promoted to a common dtype, result in that dtype.

    Floats accumulate in float32 (float64 for float64); integers compute in int32 (int64
    for 64-bit operands).
    """
    if not isinstance(x, Tile) or not isinstance(y, Tile):
        raise TileTypeError(f"matmul expects two tiles, got {describe(x)} and {describe(y)}")
    d = dt.promote(x.dtype, y.dtype)
    if d.is_bool:
        raise TileTypeError("matmul of bool tiles is not supported")
    if d.is_float:
        acc_d = dt.float64 if d is dt.float64 else dt.float32
        out_d = dt.float32 if d is dt.tfloat32 else d
    else:
        acc_d = out_d = dt.int64 if d.bits == 64 else dt.int32
        d = acc_d if d.bits > 8 else d
    from .factories import zeros
    x, y = cast(x, d), cast(y, d)
    out = mma(x, y, zeros(_mm_shape(x.type, y.type), acc_d))
    return cast(out, out_d)

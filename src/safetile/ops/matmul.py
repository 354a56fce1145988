"""Matrix multiply: ``mma`` (multiply-accumulate, no promotion), ``matmul``/``@`` and the
block-scaled ``mma_scaled``.

The public functions apply cuTile Python's rules (operand and accumulator dtypes, NumPy-style
broadcasting of batch dimensions, 1-d operands for ``matmul``) and emit ops whose operands
already have equal batch shapes, so backends only multiply.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import TileTypeError
from ..ir.builder import emit
from ..ir.catalogue import declare
from ..ir.types import TileType
from .elementwise import cast
from .rounding import check_flag
from .values import Tile, describe

FAMILY = "matmul"

# operand dtype -> accumulator dtypes cuTile Python's mma accepts (the first is matmul's)
MMA_TABLE = {
    "float16": ("float16", "float32"),
    "bfloat16": ("float32",),
    "float32": ("float32",),
    "tfloat32": ("float32",),
    "float64": ("float64",),
    "float8_e4m3fn": ("float16", "float32"),
    "float8_e5m2": ("float16", "float32"),
    "int8": ("int32",),
    "uint8": ("int32",),
}
# what the IR op accepts: the table plus wider integers (BASIC's MMA, mixed int8/uint8 operands)
MMA_ACC = {**MMA_TABLE, "int16": ("int32",), "int32": ("int32",), "int64": ("int64",)}

# block-scaled mma: operand dtype -> {scale dtype: scaling block sizes} (accumulator float32)
MMA_SCALED: dict[str, dict[str, tuple[int, ...]]] = {
    "float8_e4m3fn": {"float8_e8m0fnu": (32,)},
    "float8_e5m2": {"float8_e8m0fnu": (32,)},
    "float4_e2m1fn": {"float8_e8m0fnu": (16, 32), "float8_e4m3fn": (16,), "float8_e5m3fnu": (16, 32)},
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


def _scaled_rule(types, attrs):
    x, xs, y, ys, acc = types
    blocks = MMA_SCALED.get(x.dtype.name, {}).get(xs.dtype.name)
    if y.dtype is not x.dtype or ys.dtype is not xs.dtype or blocks is None or acc.dtype is not dt.float32:
        raise TileTypeError(f"mma_scaled: unsupported dtypes {x}, {xs}, {y}, {ys}, {acc}")
    shape = _mm_shape(x, y)
    if acc.shape != shape or x.shape[:-1] != xs.shape[:-1] \
            or y.shape[:-2] + y.shape[-1:] != ys.shape[:-2] + ys.shape[-1:]:
        raise TileTypeError(f"mma_scaled: shapes do not fit: {x}, {xs}, {y}, {ys}, {acc}")
    if x.shape[-1] % xs.shape[-1] or x.shape[-1] // xs.shape[-1] not in blocks or xs.shape[-1] != ys.shape[-2]:
        raise TileTypeError(f"mma_scaled: scale tiles {xs}, {ys} do not fit K = {x.shape[-1]}")
    return [acc]


declare("mma", FAMILY, "acc + a @ b (2-d or batched 3-d, equal batch sizes or 1); operands share a dtype, "
        "the accumulator type follows the mma table", _mma_rule)
declare("mma_scaled", FAMILY, "acc + (x * expand(x_scale)) @ (y * expand(y_scale)): each scale element covers "
        "B = K / K_s consecutive elements along K (x_scale [..., M, K_s], y_scale [..., K_s, N]); float32 "
        "accumulator; operands have equal batch shapes", _scaled_rule)


def _broadcast_mm(x: Tile, y: Tile, fn: str):
    """(x, y, result shape, x 1-d?, y 1-d?) with 1-d operands made 2-d and batch dims broadcast
    (NumPy's matmul rules, as cuTile Python's)."""
    from .shape import broadcast_to, reshape
    xs, ys = x.shape, y.shape
    x1, y1 = len(xs) == 1, len(ys) == 1
    if x1:
        xs = (1,) + xs
    if y1:
        ys = ys + (1,)
    if len(xs) < 2 or len(ys) < 2 or xs[-1] != ys[-2]:
        raise TileTypeError(f"Incompatible shapes for matrix mul on tiles: {x.shape}, {y.shape}.")
    try:
        batch = dt.broadcast_shapes(xs[:-2], ys[:-2])
    except ValueError:
        raise TileTypeError(f"Incompatible shapes for matrix mul on tiles: {x.shape}, {y.shape}.") from None
    if len(batch) > 1:
        raise TileTypeError(f"{fn}: at most one batch dimension is supported, got {x.shape} and {y.shape}")
    x = broadcast_to(reshape(x, xs), batch + xs[-2:])
    y = broadcast_to(reshape(y, ys), batch + ys[-2:])
    return x, y, batch + (xs[-2], ys[-1]), x1, y1


def emit_mma(x: Tile, y: Tile, acc: Tile) -> Tile:
    """The ``mma`` op on operands the IR rule accepts (no cuTile-level checks; BASIC's MMA)."""
    return Tile(emit("mma", [x.value, y.value, acc.value]).result)


def mma(x, y, /, acc, *, use_fast_acc=False) -> Tile:
    """Matrix multiply-accumulate ``x @ y + acc`` with no type promotion (accumulator dtypes per
    cuTile Python's table; int8 and uint8 operands may be mixed). ``use_fast_acc`` (fp8 only)
    allows a faster, less precise accumulation on Hopper; safetile always accumulates fully,
    which the flag permits."""
    for name, t in (("x", x), ("y", y), ("acc", acc)):
        if not isinstance(t, Tile):
            raise TileTypeError(f"mma: {name} must be a tile, got {describe(t)}")
    fast = check_flag(use_fast_acc, "use_fast_acc")
    for name, t in (("x", x), ("y", y)):
        if t.ndim < 2:
            raise TileTypeError(f"Expect shape of `{name}` to be at least 2D, got {t.shape}")
    if fast and x.dtype.name not in ("float8_e4m3fn", "float8_e5m2"):
        raise TileTypeError(f"use_fast_acc is only supported for fp8 input dtypes (float8_e4m3fn, float8_e5m2), "
                            f"got {x.dtype.name}")
    ints = ("int8", "uint8")
    if x.dtype is not y.dtype and not (x.dtype.name in ints and y.dtype.name in ints):
        raise TileTypeError(f"x and y must have the same dtype unless they are int8/uint8, got {x.dtype.name} "
                            f"{y.dtype.name}")
    if x.dtype.name not in MMA_TABLE:
        raise TileTypeError(f"Unsupported input dtype {x.dtype.name}, supported dtypes are {', '.join(MMA_TABLE)}")
    if acc.dtype.name not in MMA_TABLE[x.dtype.name]:
        raise TileTypeError(f"Unsupported acc dtype {acc.dtype.name}, supported dtypes are "
                            f"{MMA_TABLE[x.dtype.name]}")
    x, y, shape, _, _ = _broadcast_mm(x, y, "mma")
    if acc.shape != shape:
        raise TileTypeError(f"Expect acc shape to be {shape}, got {acc.shape}")
    if x.dtype is not y.dtype:  # int8 with uint8: both fit int16 exactly
        x, y = cast(x, dt.int16), cast(y, dt.int16)
    return emit_mma(x, y, acc)


def matmul(x, y, /) -> Tile:
    """``x @ y`` with NumPy's matmul shapes (1-d operands, broadcast batch): operands promoted to a
    common dtype, result in that dtype. Floats accumulate in float32 (float64 for float64),
    int8/uint8 in int32."""
    if not isinstance(x, Tile) or not isinstance(y, Tile):
        raise TileTypeError(f"matmul expects two tiles, got {describe(x)} and {describe(y)}")
    d = dt.promote(x.dtype, y.dtype)
    if d.name not in MMA_TABLE:
        raise TileTypeError(f"Unsupported input dtype {d.name}, supported dtypes are {', '.join(MMA_TABLE)}")
    x, y, shape, x1, y1 = _broadcast_mm(cast(x, d), cast(y, d), "matmul")
    acc_d = dt.float64 if d is dt.float64 else dt.float32 if d.is_float else dt.int32
    from .factories import zeros
    from .shape import reshape
    out = cast(emit_mma(x, y, zeros(shape, acc_d)), dt.float32 if d is dt.tfloat32 else d)
    if x1:
        out = reshape(out, out.shape[:-2] + out.shape[-1:])
    if y1:
        out = reshape(out, out.shape[:-1])
    return out


def mma_scaled(x, x_scale, y, y_scale, /, acc) -> Tile:
    """Block-scaled ``acc + (x * x_scale) @ (y * y_scale)``: each element of ``x_scale``
    ([..., M, K_s]) scales B = K // K_s consecutive elements of a row of ``x`` ([..., M, K]),
    each of ``y_scale`` ([..., K_s, N]) B elements of a column of ``y``; accumulates in float32.
    Dtypes and block sizes follow cuTile Python's table. Computed exactly from the decoded
    values (the GPU backend emulates it; no block-scaled tensor-core instruction is used)."""
    names = ("x", "x_scale", "y", "y_scale", "acc")
    vals = (x, x_scale, y, y_scale, acc)
    for name, t in zip(names, vals):
        if not isinstance(t, Tile):
            raise TileTypeError(f"mma_scaled: {name} must be a tile, got {describe(t)}")
        if t.ndim not in (2, 3):
            raise TileTypeError(f"Expect shape of `{name}` to be 2D or 3D, got {t.shape}")
    if x.dtype is not y.dtype:
        raise TileTypeError(f"x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name}")
    if x_scale.dtype is not y_scale.dtype:
        raise TileTypeError(f"x_scale and y_scale must have the same dtype, got {x_scale.dtype.name} and "
                            f"{y_scale.dtype.name}")
    if x.dtype.name not in MMA_SCALED:
        raise TileTypeError(f"Unsupported input dtype {x.dtype.name} for mma_scaled, supported input dtypes are "
                            f"{', '.join(MMA_SCALED)}")
    blocks = MMA_SCALED[x.dtype.name].get(x_scale.dtype.name)
    if blocks is None:
        raise TileTypeError(f"Unsupported scale dtype {x_scale.dtype.name} for input dtype {x.dtype.name}, "
                            f"supported scale dtypes are {', '.join(MMA_SCALED[x.dtype.name])}")
    if acc.dtype is not dt.float32:
        raise TileTypeError(f"Unsupported acc dtype {acc.dtype.name} for mma_scaled, expected float32")
    for t, s, k, name, sname in ((x, x_scale, -1, "x", "x_scale"), (y, y_scale, -2, "y", "y_scale")):
        ka = k % t.ndim
        if s.ndim != t.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, s.shape)) if i != ka):
            raise TileTypeError(f"{sname} shape {s.shape} is not compatible with {name} shape {t.shape}. All "
                                f"dimensions except K axis {ka} must match")
        block, rem = divmod(t.shape[ka], s.shape[ka])
        if rem or block not in blocks:
            raise TileTypeError(f"For mma_scaled with dtype={x.dtype.name}, scale_dtype={x_scale.dtype.name}: "
                                f"{name}.shape[{ka}] must be an exact multiple of {sname}.shape[{ka}] with scaling "
                                f"block size B = K // K_s in {set(blocks)}, got {name}.shape[{ka}] = "
                                f"{t.shape[ka]} and {sname}.shape[{ka}] = {s.shape[ka]}")
    from .shape import broadcast_to
    xb, yb, shape, _, _ = _broadcast_mm(x, y, "mma_scaled")
    if acc.shape != shape:
        raise TileTypeError(f"Expect acc shape to be {shape}, got {acc.shape}")
    batch = shape[:-2]
    xs = broadcast_to(x_scale, batch + x_scale.shape[-2:])
    ys = broadcast_to(y_scale, batch + y_scale.shape[-2:])
    return Tile(emit("mma_scaled", [xb.value, xs.value, yb.value, ys.value, acc.value]).result)

"""Element types, type promotion, and tile-shape rules.

A ``DType`` names an element type the way kernels see it and knows its NumPy storage
type (``ml_dtypes`` supplies bfloat16 and the float8 formats). ``tfloat32`` is stored as
float32 and marks operands that matrix units may round to 10 mantissa bits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from .errors import DTypeError, TileTypeError, TileValueError


@dataclass(frozen=True, eq=False)
class DType:
    name: str
    kind: str  # 'b' bool, 'i' signed, 'u' unsigned, 'f' float
    bits: int
    np_dtype: np.dtype
    mantissa: int = 0  # float mantissa bits (precision), used for promotion
    storage_only: bool = False  # narrow floats: load/store/convert/mma only
    # float8_e5m3fnu has no NumPy type: its values are kept as their raw bits (``np_dtype`` is
    # uint8) and ``convert`` encodes/decodes them
    raw_bits: bool = False

    def __repr__(self) -> str:
        return f"safetile.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))

    @property
    def bitwidth(self) -> int:
        """Bits per element (cuTile's ``DType.bitwidth``: a bool is 8 bits)."""
        return 8 if self.kind == "b" else self.bits

    @property
    def itemsize(self) -> int:
        return max(self.bits // 8, 1)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind == "i"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    def info(self):
        return np.finfo(self.np_dtype) if self.is_float else np.iinfo(self.np_dtype)


def _d(name, kind, bits, np_dtype, mantissa=0, storage_only=False, raw_bits=False) -> DType:
    return DType(name, kind, bits, np.dtype(np_dtype), mantissa, storage_only, raw_bits)


bool_ = _d("bool_", "b", 1, np.bool_)
int8 = _d("int8", "i", 8, np.int8)
int16 = _d("int16", "i", 16, np.int16)
int32 = _d("int32", "i", 32, np.int32)
int64 = _d("int64", "i", 64, np.int64)
uint8 = _d("uint8", "u", 8, np.uint8)
uint16 = _d("uint16", "u", 16, np.uint16)
uint32 = _d("uint32", "u", 32, np.uint32)
uint64 = _d("uint64", "u", 64, np.uint64)
float16 = _d("float16", "f", 16, np.float16, 11)
bfloat16 = _d("bfloat16", "f", 16, ml_dtypes.bfloat16, 8)
float32 = _d("float32", "f", 32, np.float32, 24)
float64 = _d("float64", "f", 64, np.float64, 53)
tfloat32 = _d("tfloat32", "f", 32, np.float32, 11)
float8_e4m3fn = _d("float8_e4m3fn", "f", 8, ml_dtypes.float8_e4m3fn, 4, True)
float8_e5m2 = _d("float8_e5m2", "f", 8, ml_dtypes.float8_e5m2, 3, True)
# block-scale formats (mma_scaled): unsigned powers of two, and an unsigned 5-bit-exponent float
float8_e8m0fnu = _d("float8_e8m0fnu", "f", 8, ml_dtypes.float8_e8m0fnu, 1, True)
float8_e5m3fnu = _d("float8_e5m3fnu", "f", 8, np.uint8, 4, True, raw_bits=True)
float4_e2m1fn = _d("float4_e2m1fn", "f", 4, ml_dtypes.float4_e2m1fn, 2, True)

ALL_DTYPES: tuple[DType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64, tfloat32, float8_e4m3fn, float8_e5m2,
    float8_e8m0fnu, float8_e5m3fnu, float4_e2m1fn,
)
# float formats with no sign bit (negative values cannot be represented)
UNSIGNED_FLOATS = (float8_e8m0fnu, float8_e5m3fnu)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"bool": bool_, "float": float32, "int": int32, "half": float16,
                 "float8_e4m3": float8_e4m3fn, "double": float64})
# NumPy storage dtype -> DType (tfloat32 and raw-bit formats are never inferred from storage).
_BY_NP = {d.np_dtype: d for d in ALL_DTYPES if d is not tfloat32 and not d.raw_bits}


def as_dtype(x: Any) -> DType:
    """Accept a safetile DType, a NumPy dtype or scalar type, a torch dtype, or a name."""
    if isinstance(x, DType):
        return x
    if x is bool:
        return bool_
    if x is int:
        return int32
    if x is float:
        return float32
    if isinstance(x, str):
        if x in _BY_NAME:
            return _BY_NAME[x]
        raise DTypeError(f"unknown dtype name {x!r}")
    if type(x).__module__.startswith("torch"):  # torch.float16 etc., without importing torch
        name = str(x).rsplit(".", 1)[-1]
        name = {"bool": "bool_", "float8_e4m3fn": "float8_e4m3fn"}.get(name, name)
        if name in _BY_NAME:
            return _BY_NAME[name]
        raise DTypeError(f"unsupported torch dtype {x}")
    try:
        npd = np.dtype(x)
    except (TypeError, ValueError):
        raise DTypeError(f"not a dtype: {x!r}") from None
    if npd in _BY_NP:
        return _BY_NP[npd]
    raise DTypeError(f"unsupported dtype {npd}")


def is_dtype_like(x: Any) -> bool:
    try:
        as_dtype(x)
        return True
    except TypeError:
        return False


# ---------------------------------------------------------------------------------
# Promotion
# ---------------------------------------------------------------------------------

def is_restricted(d: DType) -> bool:
    """Formats without arithmetic of their own (tfloat32, the 8- and 4-bit floats): they never
    take part in implicit promotion, only in explicit conversions and matrix multiplies."""
    return d.storage_only or d is tfloat32


def is_float_arith(d: DType) -> bool:
    """A float type with arithmetic of its own (float16, bfloat16, float32, float64)."""
    return d.is_float and not is_restricted(d)


def _category(d: DType) -> int:
    return {"b": 0, "u": 1, "i": 1, "f": 2}[d.kind]


def try_promote(a: DType, b: DType) -> DType | None:
    """The common dtype of two tiles, or None where cuTile requires an explicit cast."""
    if a is b:
        return a
    if is_restricted(a) or is_restricted(b):
        return None
    if a.is_bool or b.is_bool:
        return b if a.is_bool else a
    if _category(a) != _category(b):
        return a if _category(a) > _category(b) else b
    if a.is_float:
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return None
        return a if a.bits > b.bits else b
    if a.kind != b.kind:  # signed with unsigned
        return None
    return a if a.bits >= b.bits else b


def promote(a: DType, b: DType) -> DType:
    """Tile∘tile promotion (cuTile Python's table): bool < integers < floats, and within a
    category the wider type wins. Mixing signed with unsigned integers, float16 with
    bfloat16, or any restricted format (tfloat32, float8, float4) with another type needs an
    explicit cast: ``TileTypeError``."""
    d = try_promote(a, b)
    if d is not None:
        return d
    if is_restricted(a) or is_restricted(b):
        raise TileTypeError(f"Implicit promotion of {a.name} and {b.name} is not supported as it involves "
                            "restricted float dtypes. Please perform an explicit cast instead.")
    raise TileTypeError(f"Implicit promotion of {a.name} and {b.name} is not supported. Please perform an "
                        "explicit cast instead.")


def promote_constant(d: DType, value: Any, force_float: bool = False) -> DType:
    """Tile∘constant promotion: a Python constant of the tile's category takes the tile's
    dtype (an integer constant must fit it: ``TileValueError`` otherwise); a constant of a
    stronger category wins with its default dtype (``int32 tile + 2.5`` is float32)."""
    loose = scalar_dtype(value)
    cat = _category(d)
    if _category(loose) == cat:
        out = d
        if d.is_int and not force_float and not isinstance(value, (bool, np.bool_)):
            info = np.iinfo(d.np_dtype)
            if not info.min <= int(value) <= info.max:
                raise TileValueError(f"Integer constant {int(value)} is out of range of {d.name}")
    else:
        out = loose if _category(loose) > cat else d
    return out if not force_float or out.is_float else float32


def representable(value: Any, d: DType) -> bool:
    """Whether a Python scalar is exactly representable in ``d`` (for scalar∘tile)."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, (int, np.integer)):
        if d.is_float:
            return True  # integer constants are loosely typed against float tiles
        if d.is_bool:
            return value in (0, 1)
        info = np.iinfo(d.np_dtype)
        return info.min <= int(value) <= info.max
    if isinstance(value, (float, np.floating)):
        if d.is_float:
            return True  # float constants are loosely typed against float tiles
        return False
    return False


def fits(value: Any, d: DType) -> bool:
    """Whether a launch's scalar argument holds in ``d``: ``representable``, and for a float type
    without overflow (a finite value stays finite, though it may round; inf and NaN pass as given)."""
    if not representable(value, d):
        return False
    if d.is_float and not isinstance(value, (bool, np.bool_)):
        try:
            v = float(value)
        except OverflowError:  # an int beyond every float
            return False
        try:
            largest = float(ml_dtypes.finfo(d.np_dtype).max)
        except ValueError:  # a storage-only type (no NumPy float type of its own): no scalar of it
            return True
        return not math.isfinite(v) or abs(v) <= largest
    return True


def scalar_dtype(value: Any) -> DType:
    """The default dtype of a Python constant when it must become a tile on its own."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, np.generic):
        return as_dtype(value.dtype)
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return int32
        if -(2**63) <= value < 2**63:
            return int64
        if 0 <= value < 2**64:
            return uint64
        raise TileValueError(f"Constant {value} is out of range of any supported integer type")
    if isinstance(value, float):
        return float32
    raise DTypeError(f"not a scalar constant: {value!r}")


def promote_with_scalar(tile: DType, value: Any) -> DType:
    """Scalar∘tile promotion: keep the tile's type if the scalar fits, else promote (used where a
    value must be widened to hold a constant, e.g. a loop-carried variable)."""
    if representable(value, tile):
        return tile
    return try_promote(tile, scalar_dtype(value)) or promote(tile, scalar_dtype(value))


# ---------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------

Shape = tuple[int, ...]


def is_pow2(n: int) -> bool:
    return isinstance(n, (int, np.integer)) and n >= 1 and (n & (n - 1)) == 0


def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy broadcasting; raises ValueError naming both shapes when incompatible."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            if out[i] == 1:
                out[i] = n
            elif n != 1 and n != out[i]:
                raise ValueError(f"shapes {' and '.join(str(tuple(x)) for x in shapes)} do not broadcast")
    return tuple(out)


def numel(shape: Shape) -> int:
    return math.prod(shape)


def round_tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 values to TF32's 10-bit mantissa (nearest, ties to even)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    lsb = (bits >> np.uint32(13)) & np.uint32(1)
    rounded = (bits + np.uint32(0xFFF) + lsb) & np.uint32(0xFFFFE000)
    finite = np.isfinite(x)
    return np.where(finite, rounded.view(np.float32), x)


def convert(x: np.ndarray, target: DType, source: DType | None = None, rounding: str | None = None) -> np.ndarray:
    """Value conversion with safetile's ``astype`` rules, on NumPy arrays (both backends fold
    constants with it): float to int truncates toward zero, saturates at the target's range
    and maps NaN to 0; to bool is ``!= 0``; to tfloat32 rounds the mantissa to 10 bits.
    ``source`` names the dtype of raw-bit arrays (float8_e5m3fnu); ``rounding`` is a float→float
    rounding mode other than to-nearest-even (``numerics.RZ`` etc.)."""
    from . import numerics
    if source is not None and source.raw_bits:
        x = numerics.decode(x, source)
    dst = target.np_dtype
    if rounding is not None or target.raw_bits or target.name in ("float8_e8m0fnu", "float4_e2m1fn"):
        x64 = np.asarray(x).astype(np.float64)
        return numerics.round_to(x64, np.zeros_like(x64), target, rounding or numerics.RN)
    if target.name == "tfloat32":
        return round_tf32(x.astype(np.float32))
    if target.is_bool:
        return x != 0
    if target.is_int and x.dtype.kind in "fV":  # NumPy floats, and bfloat16/float8 (ml_dtypes)
        f = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
        info = np.iinfo(dst)
        hi, lo = float(info.max), float(info.min)
        inside = np.where((f < hi) & (f > lo), f, 0).astype(dst)
        return np.where(f >= hi, info.max, np.where(f <= lo, info.min, inside)).astype(dst)
    return x.astype(dst)

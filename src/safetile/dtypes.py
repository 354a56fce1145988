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


@dataclass(frozen=True, eq=False)
class DType:
    name: str
    kind: str  # 'b' bool, 'i' signed, 'u' unsigned, 'f' float
    bits: int
    np_dtype: np.dtype
    mantissa: int = 0  # float mantissa bits (precision), used for promotion
    storage_only: bool = False  # float8: load/store/convert/mma only

    def __repr__(self) -> str:
        return f"safetile.{self.name}"

    __str__ = lambda self: self.name  # noqa: E731

    def __reduce__(self):
        return (as_dtype, (self.name,))

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


def _d(name, kind, bits, np_dtype, mantissa=0, storage_only=False) -> DType:
    return DType(name, kind, bits, np.dtype(np_dtype), mantissa, storage_only)


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

ALL_DTYPES: tuple[DType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64, tfloat32, float8_e4m3fn, float8_e5m2,
)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"bool": bool_, "float": float32, "int": int32, "half": float16,
                 "float8_e4m3": float8_e4m3fn, "double": float64})
# NumPy storage dtype -> DType (tfloat32 is never inferred from storage).
_BY_NP = {d.np_dtype: d for d in ALL_DTYPES if d is not tfloat32}


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
        raise TypeError(f"unknown dtype name {x!r}")
    if type(x).__module__.startswith("torch"):  # torch.float16 etc., without importing torch
        name = str(x).rsplit(".", 1)[-1]
        name = {"bool": "bool_", "float8_e4m3fn": "float8_e4m3fn"}.get(name, name)
        if name in _BY_NAME:
            return _BY_NAME[name]
        raise TypeError(f"unsupported torch dtype {x}")
    try:
        npd = np.dtype(x)
    except TypeError:
        raise TypeError(f"not a dtype: {x!r}") from None
    if npd in _BY_NP:
        return _BY_NP[npd]
    raise TypeError(f"unsupported dtype {npd}")


def is_dtype_like(x: Any) -> bool:
    try:
        as_dtype(x)
        return True
    except TypeError:
        return False


# ---------------------------------------------------------------------------------
# Promotion
# ---------------------------------------------------------------------------------

def _rank(d: DType) -> tuple[int, int, int]:
    order = {"b": 0, "u": 1, "i": 1, "f": 2}[d.kind]
    return (order, d.bits, d.mantissa)


def promote(a: DType, b: DType) -> DType:
    """Tile∘tile promotion: the type with more precision or range wins.

    bool < integers < floats. Between integers the wider wins; a signed and an unsigned
    integer of the same width promote to the next wider signed type (int64 + uint64 →
    int64). Between floats the wider wins; float16 with bfloat16 gives float32, and
    tfloat32 with float32 gives float32.
    """
    if a is b:
        return a
    if a.is_float and b.is_float:
        if a.bits == b.bits:
            return float32 if a.bits == 16 else (float32 if a.bits == 32 else a if a.mantissa >= b.mantissa else b)
        return a if a.bits > b.bits else b
    if a.is_float or b.is_float:
        return a if a.is_float else b
    if a.is_bool or b.is_bool:
        return b if a.is_bool else a
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    return {8: int16, 16: int32, 32: int64, 64: int64}[unsigned.bits]


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


def scalar_dtype(value: Any) -> DType:
    """The default dtype of a Python constant when it must become a tile on its own."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int32 if -(2**31) <= int(value) < 2**31 else int64
    if isinstance(value, (float, np.floating)):
        return float32
    raise TypeError(f"not a scalar constant: {value!r}")


def promote_with_scalar(tile: DType, value: Any) -> DType:
    """Scalar∘tile promotion: keep the tile's type if the scalar fits, else promote."""
    if representable(value, tile):
        return tile
    return promote(tile, scalar_dtype(value))


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


def convert(x: np.ndarray, target: DType) -> np.ndarray:
    """Value conversion with safetile's ``astype`` rules, on NumPy arrays (both backends fold
    constants with it): float to int truncates toward zero, saturates at the target's range
    and maps NaN to 0; to bool is ``!= 0``; to tfloat32 rounds the mantissa to 10 bits."""
    dst = target.np_dtype
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

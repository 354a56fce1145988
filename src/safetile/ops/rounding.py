"""``ct.RoundingMode`` and the ``rounding_mode=``/``flush_to_zero=`` keywords.

Each op accepts only the modes cuTile Python accepts for it, and both backends honour every
mode they accept (``numerics.py`` has the exact reference): directed IEEE rounding for
add/sub/mul/truediv/sqrt and float conversions, ``FULL``/``APPROX`` for float32 division,
square root, ``exp`` and ``tanh`` (``APPROX`` may be faster and less accurate on the GPU;
the CPU backend computes it exactly, which the mode allows), and ``flush_to_zero`` (float32
subnormal inputs and results become zero of the same sign).
"""
from __future__ import annotations

import enum
from typing import Any

from .. import dtypes as dt
from ..errors import TileTypeError
from .values import describe


class RoundingMode(enum.Enum):
    """Rounding mode of a floating-point operation."""

    RN = "nearest_even"
    RZ = "zero"
    RM = "negative_inf"
    RP = "positive_inf"
    RA = "nearest_away"
    FULL = "full"
    APPROX = "approx"
    RZI = "nearest_int_to_zero"


_IEEE = (RoundingMode.RN, RoundingMode.RZ, RoundingMode.RM, RoundingMode.RP)
# op -> rounding modes it accepts (cuTile Python 1.7), and whether it takes flush_to_zero
MODES: dict[str, tuple[RoundingMode, ...]] = {
    "add": _IEEE, "sub": _IEEE, "mul": _IEEE,
    "truediv": _IEEE + (RoundingMode.FULL, RoundingMode.APPROX),
    "sqrt": _IEEE + (RoundingMode.APPROX,),
    "tanh": (RoundingMode.FULL, RoundingMode.APPROX),
    "exp": (RoundingMode.FULL, RoundingMode.APPROX),
}
FTZ = {"add", "sub", "mul", "truediv", "minimum", "maximum", "exp2", "sqrt", "rsqrt"}


def rounding_attrs(fn: str, rounding_mode: Any, flush_to_zero: Any, dtype: dt.DType) -> dict[str, Any]:
    """The IR attributes for ``rounding_mode``/``flush_to_zero`` of op ``fn`` on ``dtype``
    (nothing for the defaults); a mode the op does not support is a ``TileTypeError``."""
    mode = check_mode(rounding_mode)
    ftz = check_flag(flush_to_zero, "flush_to_zero")
    attrs: dict[str, Any] = {}
    if mode is not None:
        if mode not in MODES.get(fn, ()):
            raise TileTypeError(f"Rounding mode {mode.value} is not supported for {fn}")
        if not dt.is_float_arith(dtype):
            raise TileTypeError(f"Rounding mode can only be used for unrestricted float types, but got {dtype.name}")
        if mode in (RoundingMode.APPROX, RoundingMode.FULL) and dtype is not dt.float32:
            raise TileTypeError(f"Rounding mode {mode.value} can only be used for float32 type, but got {dtype.name}")
        default = RoundingMode.FULL if fn in ("tanh", "exp") else RoundingMode.RN
        if mode is not default:
            attrs["rounding_mode"] = mode
    if ftz:
        if fn not in FTZ:
            raise TileTypeError(f"Flush to zero is not supported for {fn}")
        if dtype is not dt.float32:
            raise TileTypeError(f"Flush to zero can only be used for float32 type, but got {dtype.name}")
        attrs["flush_to_zero"] = True
    return attrs


def check_mode(rounding_mode: Any) -> RoundingMode | None:
    if rounding_mode is None or isinstance(rounding_mode, RoundingMode):
        return rounding_mode
    raise TileTypeError(f"rounding_mode must be a ct.RoundingMode or None, got {describe(rounding_mode)}")


def check_flag(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    raise TileTypeError(f"{what} must be a constant True or False, got {describe(value)}")


# (source kind, target) -> rounding modes of float→float conversions (cuTile Python 1.7)
def conversion_modes(src: dt.DType, dst: dt.DType) -> tuple[RoundingMode, ...]:
    """The rounding modes ``astype`` accepts from float ``src`` to float ``dst``."""
    RN, RZ, RM, RP, RA = (RoundingMode.RN, RoundingMode.RZ, RoundingMode.RM, RoundingMode.RP,
                          RoundingMode.RA)
    name = dst.name
    if name == "float8_e8m0fnu":
        return (RZ, RP)
    if name in ("float8_e5m3fnu", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"):
        return (RN,)
    wide_or_scale = src.name in ("float64", "float32", "tfloat32", "float8_e8m0fnu", "float8_e5m3fnu")
    if name == "float64":
        return (RN, RZ, RM, RP, RA)
    if name == "float32":
        return (RN, RZ) + (() if src.name == "float8_e8m0fnu" else (RM, RP)) + \
            (() if src.name in ("float64", "float8_e8m0fnu") else (RA,))
    if name == "tfloat32":
        return (RN, RZ) + (() if src.name in ("float64", "float8_e8m0fnu") else (RA,))
    if name == "float16":
        return (RN, RZ) + (() if wide_or_scale else (RM, RP, RA))
    if name == "bfloat16":
        return (RN, RZ)
    return (RN,)
